"""The one charged-run executor (dpcore.executor): the charge comes before any mining, the
accountant is capped at exactly the charge, the result is stored before it is returned, a
replayed charge mines nothing, a failure after the charge is recorded and re-raised, and
parameters of the wrong type are refused before anything else."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.executor import CheckedRun, check_params, execute_charged, plan_parts, run_sandbox
from dpcore.family import Release
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.params import MiningParams
from dpcore.registry import FLOOR, MCGEN, algorithm_spec
from dpcore.synthesis.params import SynthesisParams


@dataclass
class _Diagnostics:
    rows: int = 0


@dataclass
class _Result(Release):
    cap: int
    dataset: str = ""
    audience: str = ""
    diagnostics: _Diagnostics = field(default_factory=_Diagnostics)

    def to_json(self) -> str:
        return json.dumps({"cap": self.cap, "dataset": self.dataset})


class _Algorithm:
    def __init__(self, events, fails=False):
        self.events, self.fails = events, fails

    def mine(self, prepared, *, rng, accountant, run_id, seed, progress):
        self.events.append(("mine", prepared, accountant.cap_nano))
        if self.fails:
            raise RuntimeError("kernel exploded")
        return _Result(cap=accountant.cap_nano)


def _checked(events, fails=False):
    return CheckedRun(algorithm_spec(FLOOR), _Algorithm(events, fails), None, (3, 4),
                      prepared="what prepare built")


def test_charge_then_mine_then_store_with_the_charge_as_the_cap():
    events = []
    executed = execute_charged(
        _checked(events), rng=np.random.default_rng(0), dataset="d", audience="everyone",
        charge=lambda: events.append(("charge",)) or False,
        store=lambda release, diagnostics: events.append(("store", json.loads(release))),
        fail=lambda message: events.append(("fail", message)))
    assert [e[0] for e in events] == ["charge", "mine", "store"]
    assert events[1][1:] == ("what prepare built", 7), "mine gets what prepare built, cap 7"
    assert events[2][1]["family"] == algorithm_spec(FLOOR).family
    assert executed.result.dataset == "d" and executed.result.audience == "everyone"
    capped = execute_charged(_checked([]), rng=np.random.default_rng(0), cap_nano=5)
    assert capped.result.cap == 5, "a batch worker's cap is what the client charged"


def test_a_replayed_charge_mines_nothing():
    events = []
    assert execute_charged(_checked(events), rng=np.random.default_rng(0),
                           charge=lambda: True) is None
    assert events == []


def test_a_failure_after_the_charge_is_recorded_and_raised():
    events = []
    with pytest.raises(RuntimeError, match="kernel exploded"):
        execute_charged(_checked(events, fails=True), rng=np.random.default_rng(0),
                        charge=lambda: False,
                        store=lambda *a: events.append(("store",)),
                        fail=lambda message: events.append(("fail", message)))
    assert events[-1] == ("fail", "RuntimeError: kernel exploded")
    assert ("store",) not in events


def test_parameters_are_checked_by_type_value_and_plan():
    with pytest.raises(ParameterError, match="must be SynthesisParams"):
        check_params(MiningParams(algorithm=MCGEN))
    with pytest.raises(ParameterError):
        check_params(SynthesisParams(algorithm=FLOOR, epsilon=-1.0))
    assert sum(plan_parts(SynthesisParams(algorithm=FLOOR, epsilon=0.5))) == \
        epsilon_to_nano(0.5)


def test_the_sandbox_spends_exactly_the_plan():
    from dpcore.experiments.synthesis import generated_table

    params = SynthesisParams(algorithm=FLOOR, epsilon=0.5)
    result = run_sandbox(params, generated_table("pima_like", rows=100),
                         rng=np.random.default_rng(1))
    assert result.epsilon_nano == epsilon_to_nano(0.5)
