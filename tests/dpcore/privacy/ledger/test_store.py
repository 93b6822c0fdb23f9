"""dpcore.privacy.ledger.store: the Ledger's own contract on a SQLite file — open by location,
charge before noise (idempotent, capped, nothing written on refusal), results once, failures
never refunded. tests/dpcore/privacy/ledger/test_ledger.py runs the full story on both
backends."""

from __future__ import annotations

import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy.ledger.store import DEFAULT_PATH, ENV_VAR, Ledger
from dpcore.privacy.units import NANO

SCHEMA = Schema(
    name="d",
    attributes=(Attribute("A", 0, "boolean"), Attribute("B", 1, "boolean")),
    views=(ViewSpec("l", "l.csv"), ViewSpec("r", "r.csv")),
    id_column="id",
)


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    led = Ledger(tmp_path / "l.sqlite")
    led.register_dataset("d", SCHEMA, "/data/d", 1.0, actor="owner", confirmed=True)
    return led


def test_open_reads_the_environment_then_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env.sqlite"))
    assert Ledger.open().location.endswith("env.sqlite")
    assert Ledger.open(tmp_path / "x.sqlite").location.endswith("x.sqlite")
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Ledger.open().location == f"sqlite:{tmp_path / DEFAULT_PATH.removeprefix('~/')}"


def test_a_charge_is_the_sum_of_its_parts_and_replays_once(ledger):
    first = ledger.charge("r1", "d", "algo", [NANO // 4, NANO // 4], {"x": 1})
    assert first.epsilon_nano == NANO // 2 and first.parts_nano == (NANO // 4, NANO // 4)
    again = ledger.charge("r1", "d", "algo", [NANO // 2], {"x": 1})
    assert again.replayed and again.id == first.id
    assert ledger.budget("d").spent_nano == NANO // 2
    with pytest.raises(ParameterError):
        ledger.charge("r1", "d", "algo", [NANO // 3], {})  # same id, different total


def test_over_the_cap_writes_nothing(ledger):
    ledger.charge("r1", "d", "algo", [NANO - 1], {})
    with pytest.raises(BudgetExceededError):
        ledger.charge("r2", "d", "algo", [2], {})
    with pytest.raises(ParameterError):
        ledger.get_run("r2")
    assert ledger.budget("d").remaining_nano == 1
    assert ledger.charge("r3", "d", "algo", [1], {}).epsilon_nano == 1


@pytest.mark.parametrize("parts", [[], [0], [-5], [NANO, 0]])
def test_bad_parts_are_refused(ledger, parts):
    with pytest.raises(ParameterError):
        ledger.charge("r", "d", "algo", parts, {})
    assert ledger.list_runs("d") == []


def test_results_are_stored_once_and_failures_keep_their_charge(ledger):
    ledger.charge("r1", "d", "algo", [NANO // 10], {})
    assert ledger.get_result("r1") is None
    ledger.store_result("r1", '{"a": 1}', None)
    assert ledger.get_run("r1").status == "done"
    assert ledger.get_result("r1")[0] == '{"a": 1}'
    with pytest.raises(ParameterError, match="already has a stored result"):
        ledger.store_result("r1", '{"a": 2}', None)
    assert ledger.get_result("r1")[0] == '{"a": 1}'
    ledger.charge("r2", "d", "algo", [NANO // 10], {})
    ledger.mark_failed("r2", "kernel crashed")
    run = ledger.get_run("r2")
    assert run.status == "failed" and "kernel crashed" in run.error
    assert ledger.budget("d").spent_nano == 2 * NANO // 10


def test_unknown_or_unconfirmed_datasets_cannot_be_charged(ledger):
    with pytest.raises(ParameterError):
        ledger.charge("r", "nope", "algo", [1], {})
    ledger.register_dataset("u", SCHEMA, None, 1.0, actor="owner")
    with pytest.raises(ParameterError):
        ledger.charge("r", "u", "algo", [1], {})
