"""Charged runs: charge before noise, store before return, concurrent launches, failures."""

from __future__ import annotations

import threading

import pytest

from dpcore.errors import BudgetExceededError, DpcoreError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions import mining
from dpcore.redescriptions.params import MiningParams
from dpcore.runs import RunInProgressError, charge_and_mine, load_result, run_cost

SMALL = dict(in_tr=2, mc_iter=300)


@pytest.fixture()
def ledger(tmp_path, clinic_dataset):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.register_dataset("clinic", clinic_dataset.schema, None, 3.0, actor="owner",
                         confirmed=True)
    return led


def test_result_is_stored_before_it_is_returned(ledger, clinic_dataset):
    params = MiningParams(algorithm="altmcmc", epsilon=0.5, **SMALL)
    result = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="r1", seed=1)
    stored = load_result(ledger, "r1", role="analyst")
    assert stored.to_dict() == result.to_dict()
    assert ledger.get_run("r1").status == "done"
    assert ledger.budget("clinic").spent_nano == run_cost(params) == epsilon_to_nano(0.5)
    with_diagnostics = load_result(ledger, "r1", role="analyst", include_diagnostics=True)
    assert with_diagnostics.diagnostics.score_traces, "owner diagnostics are stored apart"


def test_a_replayed_run_id_charges_once_and_returns_the_stored_result(ledger, clinic_dataset):
    params = MiningParams(algorithm="altexpm", epsilon=0.25, **SMALL)
    first = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="same")
    again = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="same")
    assert again.to_dict() == first.to_dict()
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(0.25)


def test_a_failing_run_stays_charged_and_is_marked_failed(ledger, clinic_dataset,
                                                          monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr("dpcore.redescriptions.mining.mine", broken)
    params = MiningParams(epsilon=0.5, **SMALL)
    with pytest.raises(RuntimeError):
        charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="bad")
    run = ledger.get_run("bad")
    assert run.status == "failed" and "kernel exploded" in run.error
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(0.5), "never refunded"
    assert ledger.get_result("bad") is None
    with pytest.raises(DpcoreError, match="failed"):
        charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="bad")


def test_an_overspending_run_draws_no_noise(ledger, clinic_dataset, monkeypatch):
    called = []
    monkeypatch.setattr("dpcore.redescriptions.mining.mine", lambda *a, **k: called.append(1))
    with pytest.raises(BudgetExceededError, match="remains"):
        charge_and_mine(ledger, "clinic", MiningParams(epsilon=3.5), data=clinic_dataset)
    assert called == [] and ledger.budget("clinic").spent_nano == 0


def test_two_tabs_launching_at_once(ledger, clinic_dataset):
    """Sessions are threads of one server process: the nogil kernels run concurrently,
    every run is charged once, and the cap holds."""
    mining.strict_coding(clinic_dataset)  # the app warms this once per dataset too
    outcomes, barrier = {}, threading.Barrier(4)

    def launch(name, run_id, algorithm, seed):
        params = MiningParams(algorithm=algorithm, epsilon=1.0, **SMALL)
        barrier.wait()
        try:
            result = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id=run_id,
                                     seed=seed)
            outcomes[name] = ("ok", len(result.redescriptions))
        except (BudgetExceededError, RunInProgressError) as exc:
            outcomes[name] = (type(exc).__name__, str(exc))

    threads = [threading.Thread(target=launch, args=args) for args in
               [("tab1", "run-a", "mcmctreepair", 1), ("tab2", "run-b", "altmcmc", 2),
                ("tab3", "run-c", "altexpm", 3), ("tab4", "run-d", "mcmctreepair", 4)]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sorted(kind for kind, _ in outcomes.values()) == [
        "BudgetExceededError", "ok", "ok", "ok"], outcomes
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(3.0)
    done = [r for r in ledger.list_runs("clinic") if r.status == "done"]
    assert len(done) == 3 and all(load_result(ledger, r.run_id, role="analyst") for r in done)


def test_bad_parameters_charge_nothing(ledger, clinic_dataset):
    for bad in (dict(epsilon=0.0), dict(epsilon=float("nan")), dict(omega=1.5)):
        with pytest.raises(ValueError):
            charge_and_mine(ledger, "clinic", MiningParams(**bad), data=clinic_dataset)
    assert ledger.budget("clinic").spent_nano == 0
    assert ledger.list_runs("clinic") == []


def test_the_app_closes_runs_a_killed_process_left_charged(ledger):
    """components.bootstrap.close_stale_runs (called once per session by app.py)."""
    from components.bootstrap import close_stale_runs

    ledger.charge("orphan", "clinic", "altexpm", [epsilon_to_nano(0.5)], {}, actor="analyst")
    assert close_stale_runs(ledger) == [], "a fresh run is left alone"
    assert close_stale_runs(ledger, older_than_seconds=0) == ["orphan"]
    run = ledger.get_run("orphan")
    assert run.status == "failed" and "stale" in run.error
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(0.5), "never refunded"
