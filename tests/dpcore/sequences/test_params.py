"""dpcore.sequences.params: validated PFS2 parameters and a budget plan whose integer parts
sum exactly to ε."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.errors import ParameterError
from dpcore.privacy.units import epsilon_to_nano
from dpcore.registry import SEQUENCE_ALGORITHMS
from dpcore.sequences.params import (
    HELP,
    PRUNE,
    VERIFY,
    SequenceMiningParams,
    plan_budget,
    probe_count,
    run_cost_nano,
)


@settings(deadline=None)
@given(st.decimals("0.01", "20", places=3), st.sampled_from(SEQUENCE_ALGORITHMS))
def test_the_plan_sums_exactly_to_epsilon(epsilon, algorithm):
    params = SequenceMiningParams(algorithm=algorithm, epsilon=float(epsilon))
    plan = plan_budget(params)
    assert sum(s.epsilon_nano for s in plan) == epsilon_to_nano(float(epsilon))
    assert run_cost_nano(params) == epsilon_to_nano(float(epsilon))
    assert all(s.epsilon_nano > 0 for s in plan)
    assert plan[-1].phase == VERIFY


def test_only_pfs2_pays_for_pruning():
    phases = {a: [s.phase for s in plan_budget(SequenceMiningParams(algorithm=a))]
              for a in SEQUENCE_ALGORITHMS}
    assert sum(PRUNE in p for p in phases.values()) == 1


@pytest.mark.parametrize("change, match", [
    (dict(theta=0.0), "theta"), (dict(theta=1.0), "theta"), (dict(zeta=1.5), "zeta"),
    (dict(eta=0.0), "eta"), (dict(epsilon=-1.0), "epsilon"), (dict(l1=0), "l1"),
    (dict(mode="lenient"), "mode"), (dict(algorithm="apriori"), "algorithm"),
    (dict(budget_prune=0.99), "budget share"),
])
def test_bad_parameters_are_named(change, match):
    with pytest.raises(ParameterError, match=match):
        SequenceMiningParams(**change).validate()


def test_dict_round_trip_and_unknown_keys():
    params = SequenceMiningParams(theta=0.05, l1=12)
    assert SequenceMiningParams.from_dict(params.to_dict()) == params
    with pytest.raises(ParameterError, match="unknown parameter"):
        SequenceMiningParams.from_dict({**params.to_dict(), "gamma": 1})
    assert {"theta", "zeta", "eta"} <= set(HELP)


@pytest.mark.parametrize("lmax, probes", [(1, 1), (2, 1), (3, 2), (8, 3), (9, 4), (1000, 10)])
def test_probe_count_is_ceil_log2(lmax, probes):
    assert probe_count(lmax) == probes
