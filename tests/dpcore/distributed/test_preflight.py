"""dpcore.distributed.preflight on real ``dask scheduler`` / ``dask worker`` processes: a
cluster that cannot import dpcore (or runs another version), a worker with too little memory,
and a client killed mid-batch with a plan without run ids — each ends with nothing charged
that has no result, beyond the one wave the killed client had dispatched."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from dpcore.distributed.batch import run_batch
from dpcore.distributed.plan import check_plan, parse_plan
from dpcore.distributed.preflight import (
    FIXED_BYTES,
    PEAK_FACTOR,
    PreflightError,
    bytes_per_row,
    check_cluster,
    client_identity,
    data_footprint,
    estimate_peak,
)
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.registry import MCMCTREEPAIR
from tests.dpcore.distributed.test_plan import private_clinic, register

REPO = Path(__file__).resolve().parents[3]
DASK = Path(sys.executable).parent / "dask"
SMALL = {"in_tr": 1, "mc_iter": 300, "rm_iter": 1}


# ------------------------------------------------------------------ no cluster needed

def test_a_footprint_counts_a_public_size_columns_and_bytes(clinic_dataset):
    fp = data_footprint("clinic", clinic_dataset, public_demo=True)
    columns = sum(v.values.shape[0] for v in clinic_dataset.views)
    assert (fp.rows, fp.columns, fp.basis) == (clinic_dataset.n_rows, columns, "public demo")
    assert fp.data_bytes >= fp.rows * fp.columns * 8  # both views as float64, plus the ids
    assert fp.peak_bytes == FIXED_BYTES + int(PEAK_FACTOR * fp.data_bytes)
    assert estimate_peak(fp.data_bytes, 2) - FIXED_BYTES == 2 * (fp.peak_bytes - FIXED_BYTES)
    bound = data_footprint("clinic", clinic_dataset, row_bound=123_456)
    assert (bound.rows, bound.basis) == (123_456, "declared bound")
    assert bound.data_bytes == 123_456 * bytes_per_row(clinic_dataset)[0]
    private = data_footprint("clinic", clinic_dataset)       # private, no bound: no estimate
    assert (private.rows, private.data_bytes, private.peak_bytes) == (None, None, None)


def _smaller(folder: Path, keep: int) -> Path:
    """The same dataset folder with only its first ``keep`` patients (another private N)."""
    small = folder.parent / f"{folder.name}_{keep}"
    shutil.copytree(folder, small)
    lines = (small / "diagnoses.csv").read_text(encoding="utf-8").splitlines()
    ids = {line.split(",", 1)[0] for line in lines[1:keep + 1]}
    (small / "diagnoses.csv").write_text("\n".join(lines[:keep + 1]) + "\n", encoding="utf-8")
    labs = (small / "labs.csv").read_text(encoding="utf-8").splitlines()
    kept = [labs[0]] + [line for line in labs[1:] if line.split(",", 1)[0] in ids]
    (small / "labs.csv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    return small


class _OneWorker:
    """A stand-in for a ``distributed.Client``: one worker with ``limit`` bytes; the probe
    runs in this process (this dpcore), so only the memory can be a problem."""

    def __init__(self, limit: int):
        self.limit = limit

    def scheduler_info(self, n_workers=-1):
        return {"address": "tcp://sched:1",
                "workers": {"tcp://w:1": {"memory_limit": self.limit, "nthreads": 1}}}

    def run_on_scheduler(self, function, *args):
        return function(*args)

    def run(self, function, *args, on_error="return"):
        return {"tcp://w:1": function(*args)}


def test_the_memory_check_reads_the_declared_bound_never_the_private_row_count(tmp_path):
    """Two private datasets of different sizes, one declared bound: the same estimate, the
    same yes/no and the same refusal (up to the name), naming neither true row count. A
    private dataset without a bound is left unchecked, not judged on its rows."""
    ledger = Ledger(tmp_path / "ledger.sqlite")
    full = private_clinic(tmp_path)
    register(ledger, full, name="big", cap=3.0)
    small_folder = _smaller(full, 300)
    register(ledger, small_folder, name="small", cap=3.0)
    plan = {"defaults": {"epsilon": 0.25, **SMALL}, "runs": [
        {"algorithm": MCMCTREEPAIR, "dataset": "big"},
        {"algorithm": MCMCTREEPAIR, "dataset": "small"}]}
    unchecked = check_plan(ledger, parse_plan(plan), Requester())
    report = check_cluster(_OneWorker(10**6), unchecked, raise_on_problem=False)
    assert report.problems == [] and report.unchecked == ["big", "small"]
    for name in ("big", "small"):
        ledger.declare_row_bound(name, 50_000, actor="owner")
    planned = check_plan(ledger, parse_plan(plan), Requester())
    big, small = planned[0].footprint, planned[1].footprint
    assert big.data_bytes == small.data_bytes and big.rows == small.rows == 50_000
    need = big.peak_bytes
    # below the need whatever the terminate fraction (≤ 1); above it at 95 % of the limit
    for limit, refused in ((need - 2**20, True), (int(need / 0.95) + 2**20, False)):
        report = check_cluster(_OneWorker(limit), planned, raise_on_problem=False)
        assert len(report.problems) == (2 if refused else 0) and report.unchecked == []
    first, second = report_problems = check_cluster(
        _OneWorker(need - 2**20), planned, raise_on_problem=False).problems
    assert first.replace("'big'", "'small'") == second
    assert "declared bound: 50,000 rows" in first
    from dpcore.data.loading import load_dataset

    for folder in (full, small_folder):
        n = load_dataset(folder).n_rows
        assert all(f"{n:,}" not in m and f" {n} " not in m for m in report_problems)
    with pytest.raises(PreflightError, match="declared bound: 50,000 rows.*Nothing was charged"):
        check_cluster(_OneWorker(need - 2**20), planned)
    assert ledger.audit_log() == []


def test_the_client_identity_is_this_checkout():
    import dpcore

    assert client_identity() == (dpcore.__version__, dpcore.source_digest())


# ------------------------------------------------------------------ real processes

def _env(pythonpath: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return env


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def real_cluster(folder: Path, *, scheduler_path: str | None = str(REPO),
                 workers: list[dict] = ({},)):
    """``dask scheduler`` and one ``dask worker`` process per entry of ``workers`` (keys
    ``pythonpath`` — default the checkout, None for none — and ``memory_limit``), on
    127.0.0.1, started from ``folder`` (where no dpcore lives); yields (client, worker
    addresses by entry). Workers run without a nanny: one process each, half the start-up
    (the preflight reads the same limit and terminate fraction either way). Every process
    this starts is stopped by its pid."""
    import distributed

    procs: list[subprocess.Popen] = []
    log = open(folder / "cluster.log", "w", encoding="utf-8")  # noqa: SIM115
    try:
        sched_file = folder / "scheduler.json"
        procs.append(subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(sched_file)],
            cwd=folder, env=_env(scheduler_path), stdout=log, stderr=log))
        _wait_for(lambda: sched_file.exists() and sched_file.read_text().strip(), 60,
                  "the scheduler to start")
        address = json.loads(sched_file.read_text())["address"]
        for i, spec in enumerate(workers):
            procs.append(subprocess.Popen(
                [str(DASK), "worker", address, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--name", f"w{i}",
                 "--memory-limit", str(spec.get("memory_limit", "4GB"))],
                cwd=folder, env=_env(spec.get("pythonpath", str(REPO))), stdout=log,
                stderr=log))
        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(len(workers), timeout=90)
            names = {w["name"]: a for a, w in
                     client.scheduler_info(n_workers=-1)["workers"].items()}
            yield client, [names[f"w{i}"] for i in range(len(workers))]
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
        log.close()


def _sqlite_ledger(tmp_path: Path) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    register(ledger, private_clinic(tmp_path), cap=3.0)
    return ledger


PLAN = {"defaults": {"dataset": "clinic", "epsilon": 0.25, **SMALL},
        "runs": [{"algorithm": MCMCTREEPAIR}, {"algorithm": MCMCTREEPAIR, "mc_iter": 250},
                 {"algorithm": MCMCTREEPAIR, "mc_iter": 200},
                 {"algorithm": MCMCTREEPAIR, "mc_iter": 150}]}


@pytest.mark.slow
def test_a_cluster_without_this_dpcore_is_refused_before_any_charge(tmp_path):
    """The scheduler and one worker cannot import dpcore, another worker imports an edited
    copy of it, one worker is right: the batch is refused naming the three bad nodes, and
    nothing is charged."""
    ledger = _sqlite_ledger(tmp_path)
    planned = check_plan(ledger, parse_plan(PLAN), Requester())
    edited = tmp_path / "edited"
    shutil.copytree(REPO / "dpcore", edited / "dpcore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(edited / "dpcore" / "errors.py", "a", encoding="utf-8") as f:
        f.write("\n# an edit: another source digest, the same version number\n")
    with real_cluster(tmp_path, scheduler_path=None,
                      workers=[{"pythonpath": None}, {"pythonpath": str(edited)}, {}]
                      ) as (client, (bare, other, good)):
        with pytest.raises(PreflightError) as refused:
            run_batch(ledger, planned, client)
        report = check_cluster(client, planned, raise_on_problem=False)
    message = str(refused.value)
    assert "scheduler tcp://127.0.0.1" in message
    assert f"worker {bare} cannot import dpcore (ModuleNotFoundError" in message
    assert f"worker {other} runs dpcore" in message and "source digest" in message
    assert good not in message
    assert message.endswith("Nothing was charged")
    assert ledger.audit_log() == [] and ledger.list_runs("clinic") == []
    assert ledger.budget("clinic").spent_nano == 0
    by_address = {n.address: n for n in report.nodes}
    assert by_address[good].digest == client_identity()[1] and by_address[good].error is None
    assert by_address[other].version == client_identity()[0]
    assert by_address[other].digest != client_identity()[1]


@pytest.mark.slow
def test_a_worker_with_too_little_memory_is_refused_before_any_charge(tmp_path, capsys):
    """One worker's limit covers the estimate, the other's does not: refused naming the
    small worker, the dataset and its public size (the private dataset's declared bound,
    the demo's true size); nothing charged, through the API and through ``python -m dpcore
    batch`` (exit 2)."""
    from dpcore import cli
    from dpcore.data.loading import load_dataset

    ledger = _sqlite_ledger(tmp_path)
    rows = load_dataset(REPO / "sample_data" / "clinic").n_rows
    ledger.declare_row_bound("clinic", rows, actor="owner")   # the owner declares N itself
    register(ledger, REPO / "sample_data" / "clinic", name="clinic_demo", cap=3.0)
    planned = check_plan(ledger, parse_plan(PLAN), Requester())
    need = planned[0].footprint.peak_bytes
    # Dask's nanny kills a worker at 95 % of its limit (distributed.worker.memory.terminate).
    small, big = int((need - 4096) / 0.95), int((need + 2**20) / 0.95)
    with real_cluster(tmp_path, workers=[{"memory_limit": small}, {"memory_limit": big}]
                      ) as (client, (too_small, enough)):
        with pytest.raises(PreflightError) as refused:
            run_batch(ledger, planned, client)
        demo = check_plan(ledger, parse_plan({**PLAN, "defaults": {
            **PLAN["defaults"], "dataset": "clinic_demo"}}), Requester())
        with pytest.raises(PreflightError) as refused_demo:
            run_batch(ledger, demo, client)
        enough_only = check_cluster(client, planned, raise_on_problem=False)
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(PLAN), encoding="utf-8")
        capsys.readouterr()
        assert cli.main(["--ledger", str(tmp_path / "ledger.sqlite"), "batch", str(plan_file),
                         "--scheduler", client.scheduler.address]) == 2
        printed = capsys.readouterr().err
    assert f"error: the cluster cannot mine this plan: worker {too_small} has a memory " \
        "limit" in printed
    message = str(refused.value)
    fp = planned[0].footprint
    assert f"dataset 'clinic' (declared bound: {rows:,} rows × {fp.columns:,} columns" \
        in message and enough not in message
    shown = str(refused_demo.value)
    fp = demo[0].footprint
    assert f"worker {too_small} has a memory limit of" in shown
    assert f"(public demo: {fp.rows:,} rows × {fp.columns:,} columns" in shown
    assert enough not in shown
    assert ledger.audit_log() == [] and ledger.budget("clinic").spent_nano == 0
    assert ledger.budget("clinic_demo").spent_nano == 0
    limits = {n.address: n.memory_limit for n in enough_only.nodes if n.role == "worker"}
    assert limits == {too_small: small, enough: big}
    assert len(enough_only.problems) == 1


CLIENT_SCRIPT = textwrap.dedent('''
    import json
    import pathlib
    import sys
    import time

    from dpcore.distributed.batch import run_batch
    from dpcore.distributed.plan import check_plan, parse_plan
    from dpcore.privacy.ledger import Ledger
    from dpcore.privacy.policy import Requester

    ledger_path, address, plan_path, HOLD = sys.argv[1:5]


    def held(job):
        """Defined in __main__, so shipped by value: stands in for a long run."""
        folder = pathlib.Path(HOLD)
        (folder / job.run_id).write_text("started")
        while not (folder / "release").exists():
            time.sleep(0.05)
        raise RuntimeError("released unmined")


    import distributed

    ledger = Ledger(ledger_path)
    planned = check_plan(ledger, parse_plan(json.loads(pathlib.Path(plan_path).read_text())),
                         Requester())
    with distributed.Client(address, timeout="30s") as client:
        run_batch(ledger, planned, client, task=held, wave=2)
''')


@pytest.mark.slow
def test_a_killed_client_leaves_one_wave_and_a_rerun_of_the_plan_resumes_it(tmp_path):
    """A plan of 4 runs without run ids, waves of 2; the client process is SIGKILLed while
    its first wave runs: exactly that wave is charged without results. Rerunning the same
    plan finds the same (automatic) run ids, finishes those two without charging them again
    and runs the other two: 4 charges, 4 results."""
    ledger = _sqlite_ledger(tmp_path)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(PLAN), encoding="utf-8")
    hold = tmp_path / "hold"
    hold.mkdir()
    with real_cluster(tmp_path, workers=[{}, {}]) as (client, _):
        script = tmp_path / "client.py"
        script.write_text(CLIENT_SCRIPT, encoding="utf-8")
        killed = subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / "ledger.sqlite"),
             client.scheduler.address, str(plan_path), str(hold)],
            env=_env(str(REPO)), cwd=tmp_path, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        try:
            _wait_for(lambda: len(list(hold.iterdir())) == 2 or killed.poll() is not None,
                      120, "the first wave to start on the workers")
            assert killed.poll() is None, killed.stdout.read().decode()[-3000:]
            killed.send_signal(signal.SIGKILL)
            killed.wait(timeout=30)
        finally:
            if killed.poll() is None:
                killed.kill()
                killed.wait(timeout=30)
            killed.stdout.close()
        first = {e.run_id for e in ledger.audit_log()}
        assert len(first) == 2 and first == {p.name for p in hold.iterdir()}
        assert all(ledger.get_run(r).status == "charged" for r in first)
        # Let the held attempts end, and the scheduler forget them, before the rerun.
        (hold / "release").write_text("go")
        _wait_for(lambda: client.run_on_scheduler(
            lambda dask_scheduler: len(dask_scheduler.tasks)) == 0 and not any(
            client.run(lambda dask_worker: len(dask_worker.state.tasks)).values()), 60,
            "the killed client's tasks to be forgotten")

        again = check_plan(ledger, parse_plan(PLAN), Requester())
        assert {r.run_id for r in again if r.state == "charged"} == first
        assert [r.state for r in again].count("new") == 2
        outcomes = run_batch(ledger, again, client)
    assert [o.status for o in outcomes] == ["done"] * 4
    assert [o.attempts for o in outcomes] == [1] * 4
    log = ledger.audit_log()
    assert sorted(e.run_id for e in log) == sorted(r.run_id for r in again), "once each"
    assert ledger.budget("clinic").spent_nano == sum(r.cost_nano for r in again)
    assert all(ledger.get_result(r.run_id) is not None for r in again)
    replay = run_batch(ledger, check_plan(ledger, parse_plan(PLAN), Requester()), None)
    assert {o.status for o in replay} == {"replayed"} and ledger.audit_log() == log
