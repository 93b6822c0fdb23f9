"""Ledger under contention and crashes, with real OS processes ('spawn' start method).

* N ≥ 16 processes released together by a barrier race to charge one small cap:
  the sum of charges never exceeds it, losers get BudgetExceededError, and the
  number of winners is exactly what fits.
* A process SIGKILLed after charging: the charge stays, fail_stale_runs marks
  the run failed, the budget stays spent.
* 8 processes save one workspace on the same revision (tabs of one analyst): exactly
  one save wins, the others are refused (WorkspaceConflict) and nothing is lost silently.
* A process SIGKILLed inside an open store_result-like transaction (result row
  inserted, not committed): no partial row is left and the result can be stored.

Every test runs on both backends (``ledger_location`` in tests/conftest.py): a SQLite file
and a fresh database of the session's PostgreSQL server; on PostgreSQL the race also covers
separate processes each holding its own :class:`Ledger` (as separate app servers do).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import BudgetExceededError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.units import NANO

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

N_PROCESSES = 16
SCHEMA = Schema(name="race",
                attributes=(Attribute("a", 0, "boolean"), Attribute("b", 1, "boolean")),
                views=(ViewSpec("L", "race.csv"), ViewSpec("R", "race.csv")))
CTX = mp.get_context("spawn")
TIMEOUT = 60


def _register(path, cap=1.0, name="race") -> Ledger:
    ledger = Ledger(path)
    ledger.register_dataset(name, SCHEMA, None, cap, actor="owner", confirmed=True)
    return ledger


# ---------------------------------------------------------------- workers (run in children)

def _charge_worker(path, run_id, parts, barrier, results):
    """Wait for everyone, then try to charge; report (run_id, outcome type name, nano)."""
    ledger = Ledger(path)
    try:
        barrier.wait(timeout=TIMEOUT)
        rec = ledger.charge(run_id, "race", "altexpm", parts, {"who": run_id})
        results.put((run_id, "ok", rec.epsilon_nano, rec.id))
    except BudgetExceededError as exc:
        results.put((run_id, type(exc).__name__, sum(parts), None))
    except BaseException as exc:  # noqa: BLE001 - report anything unexpected to the parent
        results.put((run_id, f"{type(exc).__name__}: {exc}", sum(parts), None))


def _charge_then_hang(path, run_id, parts, charged):
    """Charge, tell the parent, then 'compute' forever (until SIGKILLed)."""
    Ledger(path).charge(run_id, "race", "altexpm", parts, {})
    charged.set()
    time.sleep(600)


def _die_inside_store_result(path, run_id, inserted):
    """Do what store_result does with the raw driver, but get killed before COMMIT."""
    now = datetime.now(UTC).isoformat()
    if _on_postgres(path):
        con = psycopg.connect(path)               # a transaction opens with the first statement
        con.execute("SELECT 1 FROM runs WHERE run_id = %s FOR UPDATE", (run_id,))
        con.execute("INSERT INTO results (run_id, result_json, diagnostics_json, created_at) "
                    "VALUES (%s, %s, NULL, %s)", (run_id, '{"partial": true}', now))
        con.execute("UPDATE runs SET status = 'done', finished_at = %s WHERE run_id = %s",
                    (now, run_id))
    else:
        con = sqlite3.connect(path, isolation_level=None, timeout=30)
        con.execute("PRAGMA busy_timeout = 30000")
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = FULL")
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO results (run_id, result_json, diagnostics_json, created_at) "
                    "VALUES (?, ?, NULL, ?)", (run_id, '{"partial": true}', now))
        con.execute("UPDATE runs SET status = 'done', finished_at = ? WHERE run_id = ?",
                    (now, run_id))
    inserted.set()
    time.sleep(600)          # never commits


# ---------------------------------------------------------------- helpers (parent)

def _in_processes(target, arguments: list[tuple], *, n_results: int | None = None,
                  timeout: float = TIMEOUT) -> tuple[list[tuple], list]:
    """Start ``target(*args, barrier, results)`` in one spawned process per ``args`` (all
    released at once by the barrier), collect ``n_results`` results (default: one per
    process) and join them, killing any that hang."""
    barrier = CTX.Barrier(len(arguments))
    results = CTX.Queue()
    procs = [CTX.Process(target=target, args=(*args, barrier, results)) for args in arguments]
    for p in procs:
        p.start()
    try:
        out = [results.get(timeout=timeout) for _ in range(n_results or len(procs))]
    finally:
        for p in procs:
            p.join(timeout=TIMEOUT)
            if p.is_alive():
                p.kill()
                p.join()
    return out, procs


def _race(path, requests: dict[str, list[int]]) -> list[tuple]:
    out, procs = _in_processes(_charge_worker, [(str(path), rid, parts)
                                                for rid, parts in requests.items()])
    assert all(p.exitcode == 0 for p in procs)
    return out


def _kill(proc) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=TIMEOUT)
    assert proc.exitcode == -signal.SIGKILL


def _on_postgres(location) -> bool:
    return isinstance(location, str) and location.startswith("postgresql://")


def _scalar(location, sql: str, args=()):
    """One value read with the raw driver (no ledger code); ``?`` placeholders."""
    if _on_postgres(location):
        with psycopg.connect(location) as con:
            return con.execute(sql.replace("?", "%s"), args).fetchone()[0]
    con = sqlite3.connect(location)
    try:
        return con.execute(sql, args).fetchone()[0]
    finally:
        con.close()


def _charges_sum(path, dataset="race") -> int:
    return int(_scalar(path, "SELECT COALESCE(SUM(epsilon_nano), 0) FROM charges "
                             "WHERE dataset = ?", (dataset,)))


# ---------------------------------------------------------------- tests

def test_equal_requests_race(ledger_location):
    _equal_requests_race(ledger_location, N_PROCESSES)


@pytest.mark.slow
def test_32_processes_race_on_one_postgresql_ledger(postgres_server):
    """Twice the processes, each its own Ledger object and connection, on the shared backend."""
    _equal_requests_race(postgres_server.new_database(), 2 * N_PROCESSES)


def _equal_requests_race(path, n_processes: int) -> None:
    ledger = _register(path, cap=1.0)
    ask = 150_000_000                                   # ε = 0.15: exactly 6 fit in 1.0
    out = _race(path, {f"run-{i:02d}": [ask // 3, ask - ask // 3] for i in range(n_processes)})
    outcomes = [o[1] for o in out]
    assert set(outcomes) <= {"ok", "BudgetExceededError"}, outcomes
    winners = [o for o in out if o[1] == "ok"]
    assert len(winners) == NANO // ask == 6
    assert outcomes.count("BudgetExceededError") == n_processes - 6
    assert _charges_sum(path) == 6 * ask <= NANO
    status = ledger.budget("race")
    assert status.spent_nano == 6 * ask and status.remaining_nano == NANO - 6 * ask
    assert sorted(r.run_id for r in ledger.list_runs("race")) == sorted(o[0] for o in winners)
    assert len({o[3] for o in winners}) == 6


def test_mixed_requests_race(ledger_location):
    path = ledger_location
    ledger = _register(path, cap=1.0)
    sizes = [50_000_000, 100_000_000, 150_000_000, 230_000_000, 333_333_334]
    requests = {f"mix-{i:02d}": [sizes[i % len(sizes)]] for i in range(N_PROCESSES)}
    out = _race(path, requests)
    assert {o[1] for o in out} <= {"ok", "BudgetExceededError"}, out
    spent = sum(o[2] for o in out if o[1] == "ok")
    assert spent == _charges_sum(path) == ledger.budget("race").spent_nano
    assert spent <= NANO
    remaining = NANO - spent
    # Remaining ε only shrinks, so every refused request is still too big at the end,
    # and nothing that fit was refused: the winners are exactly what fits.
    losers = [o for o in out if o[1] == "BudgetExceededError"]
    assert sum(sum(p) for p in requests.values()) > NANO and losers
    assert all(o[2] > remaining for o in losers)


def test_same_run_id_race_charges_once(ledger_location):
    path = ledger_location
    ledger = _register(path, cap=1.0)
    out, _ = _in_processes(_charge_worker, [(str(path), "double-click", [100_000_000])] * 8)
    assert {o[1] for o in out} == {"ok"}
    assert len({o[3] for o in out}) == 1                  # one charge id for everybody
    assert ledger.budget("race").spent_nano == 100_000_000
    assert len(ledger.audit_log("race")) == 1


def test_killed_after_charge_keeps_the_charge(ledger_location):
    path = ledger_location
    ledger = _register(path, cap=1.0)
    charged = CTX.Event()
    proc = CTX.Process(target=_charge_then_hang,
                       args=(str(path), "victim", [200_000_000, 50_000_000], charged))
    proc.start()
    try:
        assert charged.wait(TIMEOUT)
    finally:
        _kill(proc)
    assert ledger.get_run("victim").status == "charged"
    assert ledger.budget("race").spent_nano == 250_000_000
    assert ledger.fail_stale_runs(0) == ["victim"]
    run = ledger.get_run("victim")
    assert run.status == "failed" and "stale" in run.error
    assert ledger.budget("race").spent_nano == 250_000_000       # never refunded
    assert ledger.get_result("victim") is None
    assert ledger.charge("victim", "race", "altexpm", [250_000_000], {}).replayed
    assert ledger.budget("race").spent_nano == 250_000_000
    assert ledger.fail_stale_runs(0) == []


def test_killed_inside_store_result_leaves_no_partial_row(ledger_location):
    path = ledger_location
    ledger = _register(path, cap=1.0)
    ledger.charge("half", "race", "altexpm", [100_000_000], {})
    inserted = CTX.Event()
    proc = CTX.Process(target=_die_inside_store_result, args=(str(path), "half", inserted))
    proc.start()
    try:
        assert inserted.wait(TIMEOUT)
        # While the writer holds its open transaction, readers see the old state.
        assert ledger.get_result("half") is None
        assert ledger.get_run("half").status == "charged"
    finally:
        _kill(proc)
    assert _scalar(path, "SELECT COUNT(*) FROM results") == 0
    if not _on_postgres(path):
        assert _scalar(path, "PRAGMA integrity_check") == "ok"
    assert ledger.get_run("half").status == "charged"
    assert ledger.get_result("half") is None
    # The dead writer's lock is gone: the real store_result now works.
    ledger.store_result("half", '{"run_id": "half", "epsilon_nano": 100000000}', None)
    assert ledger.get_run("half").status == "done"
    assert ledger.get_result("half") == ('{"run_id": "half", "epsilon_nano": 100000000}', None)
    assert ledger.budget("race").spent_nano == 100_000_000


def test_queue_is_drained_helper_sanity():
    """The barrier/queue plumbing itself works with spawn (guards against silent hangs)."""
    q = CTX.Queue()
    q.put(1)
    assert q.get(timeout=5) == 1
    with pytest.raises(queue.Empty):
        q.get(timeout=0.01)


# ---------------------------------------------------------------- two app servers, one ledger

def _app_server(url, server, data_folder, barrier, results):
    """One 'app server': its own process and its own Ledger per launch (as each Streamlit
    session holds one), launching 4 runs at once through dpcore.runs.charge_and_mine."""
    from concurrent.futures import ThreadPoolExecutor

    from dpcore.data.loading import load_dataset
    from dpcore.redescriptions.params import TreeParams
    from dpcore.registry import ALTEXPM
    from dpcore.runs import charge_and_mine

    data = load_dataset(data_folder)
    params = TreeParams(algorithm=ALTEXPM, epsilon=0.25, in_tr=2, mc_iter=300)

    def launch(i):
        run_id = f"{server}-{i}"
        try:
            result = charge_and_mine(Ledger(url), "clinic", params, data=data, run_id=run_id)
            return run_id, "ok", result.epsilon_nano
        except BudgetExceededError:
            return run_id, "BudgetExceededError", 0
        except BaseException as exc:  # noqa: BLE001 - report anything unexpected
            return run_id, f"{type(exc).__name__}: {exc}", 0

    try:
        barrier.wait(timeout=TIMEOUT)
        with ThreadPoolExecutor(4) as pool:
            for outcome in pool.map(launch, range(4)):
                results.put(outcome)
    except BaseException as exc:  # noqa: BLE001 - a broken barrier must not hang the parent
        results.put((server, f"{type(exc).__name__}: {exc}", 0))


@pytest.mark.slow
def test_two_app_servers_race_launches_on_one_postgresql_ledger(postgres_server,
                                                                clinic_dataset):
    """Two processes, each launching 4 runs of ε = 0.25 at once on a cap of ε = 1: exactly
    4 runs are charged, mined and stored, the other 4 are refused and charge nothing."""
    from dpcore.runs import load_result

    url = postgres_server.new_database()
    ledger = Ledger(url)
    ledger.register_dataset("clinic", clinic_dataset.schema, None, 1.0, actor="owner",
                            confirmed=True)
    folder = Path(__file__).resolve().parents[4] / "sample_data" / "clinic"
    out, _ = _in_processes(_app_server, [(url, name, str(folder))
                                         for name in ("server-a", "server-b")],
                           n_results=8, timeout=4 * TIMEOUT)
    assert {o[1] for o in out} == {"ok", "BudgetExceededError"}, out
    won = sorted(o[0] for o in out if o[1] == "ok")
    assert len(won) == 4 and {w.split("-")[1] for w in won} <= {"a", "b"}
    assert sum(o[2] for o in out) == NANO == ledger.budget("clinic").spent_nano
    assert _charges_sum(url, "clinic") == NANO
    runs = ledger.list_runs("clinic")
    assert sorted(r.run_id for r in runs) == won
    assert all(r.status == "done" for r in runs)
    for run_id in won:
        assert load_result(ledger, run_id, requester=Requester()).run_id == run_id


def _workspace_worker(path, tab, expected, barrier, results):
    """A tab saving the workspace on the revision it read; report (tab, outcome, revision)."""
    from dpcore.errors import WorkspaceConflict

    ledger = Ledger(path)
    try:
        barrier.wait(timeout=TIMEOUT)
        rec = ledger.save_workspace("race", "analyst", "alice",
                                    f'{{"dataset": "race", "tab": "{tab}"}}',
                                    expected_revision=expected)
        results.put((tab, "ok", rec.revision))
    except WorkspaceConflict as exc:
        results.put((tab, type(exc).__name__, exc.revision))
    except BaseException as exc:  # noqa: BLE001 - report anything unexpected to the parent
        results.put((tab, f"{type(exc).__name__}: {exc}", None))


@pytest.mark.slow          # 7-9 s at load 5: 8 spawned processes
@pytest.mark.parametrize("expected", [0, 1])
def test_tabs_saving_one_workspace_at_once_exactly_one_wins(ledger_location, expected):
    """8 processes save the workspace on the same revision (0: creating it): one wins, the
    others are refused with the winner's revision, and the stored JSON is the winner's."""
    from dpcore.privacy.roles import hash_password

    ledger = _register(ledger_location)
    ledger.add_account("analyst", "analyst", actor="test", password_hash=hash_password(
        "pw", n=2**4))
    if expected:
        ledger.save_workspace("race", "analyst", "alice", "{}", expected_revision=0)
    out, _ = _in_processes(_workspace_worker, [(str(ledger_location), f"tab-{i}", expected)
                                               for i in range(8)])
    won = [o for o in out if o[1] == "ok"]
    assert len(won) == 1 and won[0][2] == expected + 1, out
    assert sorted(o[1:] for o in out if o[1] != "ok") == [("WorkspaceConflict",
                                                          expected + 1)] * 7, out
    stored = ledger.get_workspace("race", "analyst", "alice")
    assert stored.revision == expected + 1 and f'"{won[0][0]}"' in stored.workspace_json
