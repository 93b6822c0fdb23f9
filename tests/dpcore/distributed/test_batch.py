"""Batch mining on a Dask LocalCluster of separate worker processes
(dpcore.distributed.batch): every run charged once before dispatch, one stored result per
run id, a worker killed mid-run and the run retried under the same run id."""

import functools
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from dpcore.distributed.batch import _mine_charged_run as mine_charged_run
from dpcore.distributed.batch import run_batch
from dpcore.distributed.cluster import open_client
from dpcore.distributed.plan import check_plan, parse_plan
from dpcore.errors import ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.registry import ALTMCMC, MCMCTREEPAIR
from dpcore.runs import load_result
from tests.dpcore.distributed.test_plan import private_clinic, register

pytestmark = pytest.mark.slow

SMALL = {"in_tr": 1, "mc_iter": 300, "rm_iter": 1}


def held_mining(folder: str, job):
    """The real worker function, held on its first attempt until the test kills its process:
    every attempt leaves ``attempt-<pid>`` in ``folder``; only the first one waits."""
    folder = Path(folder)
    (folder / f"attempt-{os.getpid()}").write_text(job.run_id, encoding="utf-8")
    if len(list(folder.glob("attempt-*"))) == 1:
        deadline = time.monotonic() + 120
        while not (folder / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return mine_charged_run(job)


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def client():
    """One LocalCluster for the module: 2 separate worker processes, 1 thread each."""
    with open_client(None, workers=2, threads_per_worker=1) as c:
        yield c


@pytest.fixture()
def ledger(ledger_location, tmp_path):
    led = Ledger(ledger_location)
    register(led, private_clinic(tmp_path), cap=3.0)
    return led


def test_a_killed_worker_is_retried_under_the_same_run_id(ledger, tmp_path, client):
    """Three runs on 2 worker processes; the worker mining run 'held' is SIGKILLed mid-run:
    the run is retried on a fresh worker, charged exactly once, and stored once; rerunning
    the same plan replays every stored result and charges nothing."""
    plan = parse_plan({"defaults": {"dataset": "clinic", "epsilon": 0.5, **SMALL}, "runs": [
        {"run_id": "held", "algorithm": ALTMCMC},
        {"run_id": "free-1", "algorithm": MCMCTREEPAIR},
        {"run_id": "free-2", "algorithm": ALTMCMC}]})
    analyst = Requester()
    planned = check_plan(ledger, plan, analyst)
    assert ledger.audit_log() == [], "checking a plan charges nothing"
    hold = tmp_path / "hold"
    hold.mkdir()
    events: list[tuple[str, str, dict]] = []
    outcomes = {}

    # The module's cluster: a worker killed by an earlier test is restarted by its nanny,
    # which takes seconds under load.
    client.wait_for_workers(2, timeout=120)
    assert len(client.scheduler_info()["workers"]) == 2
    batch = threading.Thread(target=lambda: outcomes.update(
        {o.run_id: o for o in run_batch(
            ledger, planned, client, task=functools.partial(_dispatch, str(hold)),
            progress=lambda r, s, d: events.append((r, s, d)))}))
    batch.start()
    first = _wait_for(lambda: list(hold.glob("attempt-*")), 60, "the held run to start")
    _wait_for(lambda: ("held", "running") in [(r, s) for r, s, _ in events], 30,
              "the held run's progress event")
    pid = int(first[0].name.split("-")[1])
    # charged before it was dispatched: the charge exists while the run is held. The client
    # charges run by run as it dispatches, so the wave's second charge may land just after
    # the held run started (a PostgreSQL round trip under load): wait for it.
    _wait_for(lambda: {e.run_id for e in ledger.audit_log()} >= {"held", "free-1"},
              30, "the first wave (2 worker threads: 2 runs) to be charged")
    _wait_for(lambda: ledger.get_run("free-1").status == "done", 60, "free-1 to be stored")
    # Waves: the third run is charged only when the first wave is stored or failed.
    assert {e.run_id for e in ledger.audit_log()} == {"held", "free-1"}
    assert ledger.get_result("held") is None
    os.kill(pid, signal.SIGKILL)
    batch.join(timeout=120)
    assert not batch.is_alive()
    attempts = sorted(hold.glob("attempt-*"))
    assert len(attempts) == 2 and str(pid) in attempts[0].name + attempts[1].name
    assert {o.status for o in outcomes.values()} == {"done"}
    assert outcomes["held"].attempts == 2 and outcomes["free-1"].attempts == 1
    log = ledger.audit_log()
    assert sorted(e.run_id for e in log) == ["free-1", "free-2", "held"], "charged once each"
    assert ledger.budget("clinic").spent_nano == sum(r.cost_nano for r in planned)
    stored = load_result(ledger, "held", requester=Requester())
    assert stored.run_id == "held" and stored.to_json() == outcomes["held"].result.to_json()
    states = [s for r, s, _ in events if r == "held"]
    assert states[0] == "charged" and states[-1] == "done"
    assert [d["attempt"] for r, s, d in events if r == "held" and s == "running"] == [1, 2]
    # private data, analyst: the miners' messages (intermediate noisy values) never leave
    # the worker
    assert not [s for _, s, _ in events if s == "mining"]

    again = check_plan(ledger, plan, analyst)
    assert {r.state for r in again} == {"done"}
    replayed = run_batch(ledger, again, None)  # nothing to mine: no cluster needed
    assert {o.status for o in replayed} == {"replayed"}
    assert ledger.audit_log() == log, "a replayed plan charges nothing"
    assert replayed[0].result.to_json() == stored.to_json()


def _dispatch(folder: str, job):
    """Worker function of the kill test: hold run 'held', mine the others directly."""
    return held_mining(folder, job) if job.run_id == "held" else mine_charged_run(job)


def test_a_run_charged_without_a_result_is_finished_under_its_run_id(ledger, client):
    """A client that died after charging leaves the run 'charged': rerunning its plan mines
    it under the same run id without charging again, and stores one result."""
    plan = parse_plan({"runs": [{"run_id": "orphan", "dataset": "clinic",
                                 "algorithm": MCMCTREEPAIR, "epsilon": 0.5, **SMALL}]})
    analyst = Requester()
    (run,) = check_plan(ledger, plan, analyst)
    from dpcore.distributed.batch import _charge

    _charge(ledger, run)  # the client died here, before dispatching
    (again,) = check_plan(ledger, plan, analyst)
    assert again.state == "charged"
    (outcome,) = run_batch(ledger, [again], client)
    assert outcome.status == "done" and outcome.attempts == 1
    assert [e.run_id for e in ledger.audit_log()] == ["orphan"]
    assert ledger.get_run("orphan").status == "done"
    assert ledger.budget("clinic").spent_nano == run.cost_nano


def test_the_command_line_runs_a_plan_and_refuses_a_bad_one(ledger, ledger_location, client,
                                                           tmp_path):
    """``python -m dpcore batch PLAN --scheduler ADDRESS``: results written from the ledger;
    a bad plan exits 2 and charges nothing."""
    from dpcore import cli

    bad = tmp_path / "bad.toml"
    bad.write_text('[[runs]]\ndataset = "clinic"\nalgorithm = "altmcmc"\nepsilon = 5.0\n',
                   encoding="utf-8")
    base = ["--ledger", str(ledger_location), "batch"]
    address = client.scheduler.address
    assert cli.main(base + [str(bad), "--scheduler", address]) == 2
    assert ledger.audit_log() == []
    good = tmp_path / "plan.json"
    good.write_text(json.dumps({"defaults": {"dataset": "clinic", "epsilon": 0.25, **SMALL},
                                "runs": [{"run_id": "c1", "algorithm": MCMCTREEPAIR},
                                         {"run_id": "c2", "algorithm": ALTMCMC}]}),
                    encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    assert cli.main(base + [str(good), "--scheduler", address, "--out-dir", str(out)]) == 0
    for run_id in ("c1", "c2"):
        written = (out / f"{run_id}.json").read_text(encoding="utf-8").strip()
        assert written == load_result(ledger, run_id, requester=Requester()).to_json()
    assert ledger.budget("clinic").spent_nano == 2 * 250_000_000


def test_a_budget_spent_after_the_check_refuses_the_run_and_charges_nothing(ledger, client):
    """Another analyst spends the budget between the plan's check and its charge: the
    ledger refuses that run's charge; it is reported refused, never dispatched."""
    plan = parse_plan({"runs": [{"run_id": "late", "dataset": "clinic",
                                 "algorithm": MCMCTREEPAIR, "epsilon": 1.0, **SMALL}]})
    (run,) = check_plan(ledger, plan, Requester())
    ledger.charge("other", "clinic", MCMCTREEPAIR, [2_500_000_000], {}, actor="analyst")
    dispatched = []
    (outcome,) = run_batch(ledger, [run], client, task=lambda job: dispatched.append(job))
    assert outcome.status == "refused" and "exceed" in outcome.error.lower()
    assert outcome.attempts == 0 and dispatched == []
    assert [e.run_id for e in ledger.audit_log()] == ["other"]


def test_runs_to_mine_without_a_cluster_are_refused_before_any_charge(ledger):
    """A plan with new runs and no client: refused up front, nothing charged (it used to
    charge the first run, then fail for want of a client)."""
    plan = parse_plan({"runs": [{"dataset": "clinic", "algorithm": MCMCTREEPAIR,
                                 "epsilon": 0.5, **SMALL}]})
    planned = check_plan(ledger, plan, Requester())
    with pytest.raises(ParameterError, match="no Dask client.*Nothing was charged"):
        run_batch(ledger, planned, None)
    assert ledger.audit_log() == []
