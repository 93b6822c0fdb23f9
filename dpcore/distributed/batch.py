"""Batch mining on a Dask cluster: charge each run, dispatch it, store its one result.

First the client checks the cluster (:func:`dpcore.distributed.preflight.check_cluster`:
this dpcore on every node, the data visible, enough memory per worker) and refuses the whole
batch, nothing charged, if it cannot mine it. Then, in waves of at most ``wave`` runs (the
cluster's worker threads by default; the next wave is charged only when this one's runs are
stored or failed, so a killed client leaves at most one wave charged without a result), for
every run of a checked plan (:func:`dpcore.distributed.plan.check_plan`), in plan order:

1. the client charges the run in the ledger (``Ledger.charge``: one transaction that checks
   the cap; a run id charges once) — **before** the run is dispatched;
2. the client submits one task per run, keyed by its run id, to the cluster; a worker loads
   the dataset's registered files (checking their content digest), and runs the one
   executor (:mod:`dpcore.executor`: the algorithm's ``prepare``, then its ``mine`` with an
   accountant capped at exactly the charge) with a random source drawn on the worker
   (:meth:`dpcore.privacy.policy.RunPermit.rng`: fresh OS entropy on private data);
3. the worker returns the release (and owner diagnostics) to the client, which stores it
   (``Ledger.store_result``, first store wins) and only then reads it back from the ledger
   (:func:`dpcore.runs.load_result`) to show it.

Workers never open the ledger: they need no credentials, cannot charge, and cannot store.
A worker that dies mid-run is replaced and its task rescheduled under the same key and run
id by the Dask scheduler (up to ``distributed.scheduler.allowed-failures`` times, 3 by
default; then the run is marked failed, its charge kept): the dead attempt's result never
left its process, so the one result the client receives is the one stored. The privacy
argument is in docs/PRIVACY.md, "Runs on a Dask cluster".

Progress per run is reported through ``progress(run_id, state, detail)``: ``charged``,
``replayed`` (stored already), ``resumed`` (charged earlier without a result), ``running``
(attempt n on a worker; a second attempt means a worker was lost), the miner's own fraction
and message (``mining``: owners and public-demo data only, since a miner's messages can
quote intermediate noisy values of an attempt that may die and be drawn again), ``done``,
``failed``, ``refused`` (not charged: the budget ran out since the plan was checked).
A run's ``attempts`` counts the attempts that ran on a worker in this batch (0: it never
started, e.g. a worker could not unpickle it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dpcore.distributed.plan import PlannedRun
from dpcore.distributed.preflight import check_cluster
from dpcore.errors import BudgetExceededError, CountingInterrupted, DpcoreError, ParameterError
from dpcore.executor import execute_charged, plan_parts, prepare_run
from dpcore.privacy.ledger import ChargeRecord, Ledger, digest_params
from dpcore.privacy.policy import PolicyError, RunPermit, content_digest, recorded_params
from dpcore.privacy.roles import can_see_true_statistics
from dpcore.runs import earlier_params, load_registered, load_result

_LOG = logging.getLogger(__name__)

# The worker function (_mine_charged_run) is internal: it mines only for a job that carries
# the ledger's charge of the run, bound to the permit's parameters and ε.
__all__ = ["TOPIC", "WorkerJob", "RunOutcome", "run_batch"]

#: Dask event topic of the per-run progress events.
TOPIC = "dpcore-run-progress"

#: progress(run_id, state, detail) — see the module docstring for the states.
BatchProgress = Callable[[str, str, dict], None]


@dataclass(frozen=True)
class WorkerJob:
    """What a worker needs to mine one charged run (no ledger, no credentials).

    Attributes
    ----------
    run_id : str
    permit : RunPermit
        The policy's decision (dataset record with its confirmed schema, files and content
        digest; validated parameters; seed; audience).
    charged_nano : int
        The run's charge: the accountant's cap.
    relay_messages : bool
        Whether the miner's progress fractions and messages may be relayed (owner or
        public-demo data); otherwise only the attempt's start is.
    charge : ChargeRecord or None
        The ledger's charge of this run, as :meth:`~dpcore.privacy.ledger.Ledger.charge`
        returned it: the worker mines only when its run id, dataset, ε and parameters'
        digest are the permit's.
    """

    run_id: str
    permit: RunPermit
    charged_nano: int
    relay_messages: bool
    charge: ChargeRecord | None = None


#: Per worker process: the registered data last loaded, keyed by its content (kind, files and
#: the content digest the client checked), one dataset at a time.
_worker_data: dict[tuple, object] = {}


def _load_checked(record):
    """The dataset's registered files on the worker, checked against the digest the client
    checked (files changed meanwhile: refused, the run fails with its charge kept)."""
    key = (record.kind, record.source_path, record.content_digest)
    if key not in _worker_data:
        data = load_registered(record)
        if content_digest(data) != record.content_digest:
            raise PolicyError(f"the files of dataset {record.name!r} changed since the run "
                              "was charged; the owner must register them again")
        _worker_data.clear()  # one dataset at a time per worker: bounded memory
        _worker_data[key] = data
    return _worker_data[key]


def _event(run_id: str, state: str, **detail) -> None:
    """Send one progress event to the client (no-op outside a Dask worker)."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return
    worker.log_event(TOPIC, {"run_id": run_id, "state": state, "pid": os.getpid(),
                             "worker": worker.address, **detail})


def _check_bound(job: WorkerJob) -> None:
    """Refuse a job whose permit is not bound to the ledger's charge of its run.

    The charge must be the ledger's record (a :class:`ChargeRecord`) of this run id on this
    dataset, with the ε the permit's plan costs (the accountant's cap) and the digest of
    the permit's recorded parameters. A permit alone, a charge of another run, of other
    parameters or of less ε is refused: nothing is mined.
    """
    charge, permit = job.charge, job.permit
    if not isinstance(charge, ChargeRecord):
        raise PolicyError(f"run {job.run_id}: a worker mines only a run the ledger has "
                          "charged (no charge came with this job); nothing was mined")
    cost = sum(plan_parts(permit.params))
    if (charge.run_id != job.run_id or charge.dataset != permit.dataset.name
            or charge.algorithm != permit.params.algorithm
            or charge.epsilon_nano != cost or job.charged_nano != cost
            or charge.params_digest is None
            or charge.params_digest != digest_params(recorded_params(permit, charge.params))):
        raise PolicyError(f"run {job.run_id}: the job's permit does not match the ledger's "
                          "charge of the run (run id, dataset, ε or parameters differ); "
                          "nothing was mined")


def _mine_charged_run(job: WorkerJob) -> tuple[str, str]:
    """Worker side: mine one already-charged run; return ``(release_json, diagnostics_json)``.

    Internal (not exported): it mines only for a job bound to the ledger's charge of the
    run (:func:`_check_bound`). The release is the stored form (:mod:`dpcore.runs`'s
    versioned envelope, no diagnostics); the diagnostics are owner-only JSON. Nothing here
    reads or writes the ledger: the client stores what this returns.
    """
    permit = job.permit
    _check_bound(job)
    checked = prepare_run(permit.params, _load_checked(permit.dataset))
    progress = None
    if job.relay_messages:
        last = [0.0]

        def progress(fraction: float, message: str) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5 or fraction >= 1.0:
                last[0] = now
                _event(job.run_id, "mining", fraction=float(fraction), message=str(message))

    # Charged by the client before dispatch: no charge here, the cap is that charge.
    executed = execute_charged(checked, rng=permit.rng(), run_id=job.run_id, seed=permit.seed,
                               progress=progress, cap_nano=job.charged_nano,
                               dataset=permit.dataset.name, audience=permit.audience)
    return executed.release_json, executed.diagnostics_json


def _attempt(task: Callable[[WorkerJob], tuple[str, str]], job: WorkerJob) -> tuple[str, str]:
    """What each worker attempt runs: announce the attempt (worker and process), then
    ``task``."""
    _event(job.run_id, "running")
    return task(job)


@dataclass
class RunOutcome:
    """How one run of a batch ended.

    Attributes
    ----------
    run_id : str
    entry : int
        1-based plan entry.
    status : {"done", "replayed", "failed", "refused"}
        ``replayed``: stored before this batch (no charge, no mining); ``refused``: not
        charged (the ledger refused the charge after the plan was checked: the budget ran
        out, or the run id was charged meanwhile with another cost or dataset).
    attempts : int
        Worker attempts that ran for this run in this batch (2 or more: a worker was lost
        and the run retried under the same run id; 0: never started, or not dispatched).
    result : object or None
        The stored result as the requester may read it (:func:`dpcore.runs.load_result`).
    error : str or None
    """

    run_id: str
    entry: int
    status: str
    attempts: int = 0
    result: object = None
    error: str | None = None
    workers: list[str] = field(default_factory=list)


def _charge(ledger: Ledger, run: PlannedRun):
    """The run's charge, recorded as :func:`dpcore.runs.charge_and_mine` records it (a run
    id charged before replays only with the same parameters and account)."""
    permit = run.permit
    return ledger.charge(run.run_id, permit.dataset.name, permit.params.algorithm,
                         list(run.parts_nano),
                         recorded_params(permit, earlier_params(ledger, run.run_id)),
                         actor=permit.requester.actor, audience=permit.audience,
                         account=permit.requester.account)


def run_batch(ledger: Ledger, planned: list[PlannedRun], client, *,
              progress: BatchProgress | None = None,
              task: Callable[[WorkerJob], tuple[str, str]] = _mine_charged_run,
              wave: int | None = None) -> list[RunOutcome]:
    """Check the cluster, then charge, dispatch, store and read back a checked plan, wave by
    wave.

    Parameters
    ----------
    ledger : Ledger
    planned : list of PlannedRun
        From :func:`dpcore.distributed.plan.check_plan` (nothing charged yet).
    client : distributed.Client or None
        From :func:`dpcore.distributed.cluster.open_client`; None only when every run is
        stored already or failed (a replayed plan needs no cluster).
    progress : callable(run_id, state, detail), optional
        Per-run progress (states in the module docstring); called from the client's
        threads, one call at a time.
    task : callable(WorkerJob) -> (release_json, diagnostics_json)
        The worker function (:func:`_mine_charged_run`); tests wrap it to hold a run
        mid-way.
    wave : int, optional
        Runs charged and dispatched at once (default: the cluster's worker threads). The
        next wave is charged only when every run of this one is stored or failed, so a
        client killed mid-batch leaves at most one wave charged without a result (a rerun
        of the plan finishes those under their run ids, charging nothing again).

    Returns
    -------
    list of RunOutcome
        In plan order. Every charged run ends ``done`` (one stored result) or ``failed``
        (charge kept); a run not charged ends ``refused``.

    Raises
    ------
    PreflightError
        The cluster cannot mine the plan (:func:`dpcore.distributed.preflight.check_cluster`:
        a node without this dpcore, a worker that cannot see the data or has too little
        memory). Raised before the first charge: nothing was charged.
    ParameterError
        Runs to mine but no client, or a bad ``wave``: nothing was charged.
    """
    if wave is not None and (isinstance(wave, bool) or not isinstance(wave, int) or wave < 1):
        raise ParameterError(f"wave must be an integer ≥ 1; got {wave!r}. Nothing was charged")
    to_mine = [run for run in planned if run.state in ("new", "charged")]
    if to_mine and client is None:
        raise ParameterError(f"run {to_mine[0].run_id} needs mining but no Dask client was "
                             "given. Nothing was charged")
    if to_mine:
        # Before the first charge: a cluster that cannot mine the plan costs no ε.
        cluster = check_cluster(client, to_mine)
        for name in cluster.unchecked:
            _LOG.warning("memory not checked for dataset %r: it is private and has no "
                         "declared row bound (the owner declares one: register --max-rows); "
                         "a worker too small for it would lose the run's ε", name)
        wave = wave or max(1, cluster.threads)
    batch = _Batch(ledger, planned, client, progress, task)
    batch.run_in_waves(wave or 1)
    return [batch.outcomes[run.run_id] for run in planned]


class _Batch:
    """One :func:`run_batch` call's state: the outcomes, the attempts seen per run, and the
    progress callback (called one at a time from the client's threads)."""

    def __init__(self, ledger: Ledger, planned: list[PlannedRun], client,
                 progress: BatchProgress | None, task: Callable[[WorkerJob], tuple[str, str]]):
        self.ledger, self.planned, self.client = ledger, planned, client
        self.progress, self.task = progress, task
        self.lock = threading.Lock()
        self.outcomes = {run.run_id: RunOutcome(run.run_id, run.entry.index, "pending")
                         for run in planned}
        self.pids: dict[str, set] = {run.run_id: set() for run in planned}

    def report(self, run_id: str, state: str, detail: dict | None = None) -> None:
        if self.progress is not None:
            with self.lock:
                self.progress(run_id, state, detail or {})

    def on_event(self, event) -> None:
        _, msg = event
        run_id = msg.get("run_id") if isinstance(msg, dict) else None
        if run_id not in self.outcomes:
            return
        if msg["state"] == "running":
            self.pids[run_id].add((msg["worker"], msg["pid"]))
            self.outcomes[run_id].workers.append(msg["worker"])
            self.report(run_id, "running", {"attempt": len(self.pids[run_id]),
                                            "worker": msg["worker"]})
        elif msg["state"] == "mining":
            self.report(run_id, "mining", {"fraction": msg.get("fraction"),
                                           "message": msg.get("message")})

    def run_in_waves(self, wave: int) -> None:
        """Charge and dispatch ``wave`` runs, wait for all of them, then the next wave."""
        client = self.client
        if client is not None:
            client.subscribe_topic(TOPIC, self.on_event)
        futures: dict = {}
        try:
            for run in self.planned:
                fut = self.charge_and_submit(run)
                if fut is None:
                    continue
                futures[fut] = run
                if len(futures) >= wave:
                    self.drain(futures)
                    futures = {}
            if futures:
                self.drain(futures)
        finally:
            if client is not None and client.status == "running":
                client.unsubscribe_topic(TOPIC)

    def charge_and_submit(self, run: PlannedRun):
        """Charge one run (or find its charge) and submit it; None when there is nothing to
        mine (refused, stored already, or failed before)."""
        ledger, outcome = self.ledger, self.outcomes[run.run_id]
        if run.state == "failed":
            # An automatic run id whose run failed before: reported, never charged again.
            outcome.status = "failed"
            outcome.error = ledger.get_run(run.run_id).error
            self.report(run.run_id, "failed", {"error": outcome.error})
            return None
        try:
            charge = _charge(ledger, run)
        except (BudgetExceededError, ParameterError) as exc:
            # Refused by the ledger after the plan was checked (the budget shrank, or
            # another client charged this run id differently): nothing was charged.
            outcome.status, outcome.error = "refused", str(exc)
            self.report(run.run_id, "refused", {"error": str(exc)})
            return None
        if charge.replayed:
            stored = ledger.get_run(run.run_id)
            if stored.status == "done":
                outcome.status = "replayed"
                outcome.result = _read_back(ledger, run)
                self.report(run.run_id, "replayed", {})
                return None
            if stored.status == "failed":
                outcome.status, outcome.error = "failed", stored.error
                self.report(run.run_id, "failed", {"error": stored.error})
                return None
            self.report(run.run_id, "resumed", {})
        else:
            self.report(run.run_id, "charged", {"epsilon_nano": charge.epsilon_nano})
        if self.client is None:
            # The plan said stored, another client changed that since: the run stays
            # charged without a result; a rerun with a cluster finishes it.
            raise ParameterError(f"run {run.run_id} needs mining but no Dask client was "
                                 "given; rerun the plan with a cluster to finish it")
        permit = run.permit
        job = WorkerJob(run_id=run.run_id, permit=permit, charged_nano=run.cost_nano,
                        relay_messages=can_see_true_statistics(
                            permit.requester.role, permit.dataset.public_demo),
                        charge=charge)
        return self.client.submit(_attempt, self.task, job, key=f"dpcore-run-{run.run_id}",
                                  pure=False)

    def drain(self, futures: dict) -> None:
        """Wait for one wave: store each result (or mark the run failed)."""
        from distributed import as_completed

        for fut in as_completed(list(futures)):
            run = futures[fut]
            outcome = self.outcomes[run.run_id]
            error = None
            try:
                release, diagnostics = fut.result()
            except Exception as exc:  # noqa: BLE001 - any failure of the run is recorded
                error = exc
            # Counted before the release: the scheduler forgets a released task.
            outcome.attempts = _attempts(self.client, fut, self.pids[run.run_id], error)
            fut.release()
            if error is not None:
                message = f"{type(error).__name__}: {error}"
                if not isinstance(error, CountingInterrupted):
                    # interrupted counts leave the run charged: the plan's re-run resumes it
                    _mark_failed(self.ledger, run.run_id, message)
                outcome.status, outcome.error = "failed", message
                self.report(run.run_id, "failed", {"error": message})
                continue
            _store_once(self.ledger, run.run_id, release, diagnostics)
            outcome.status = "done"
            outcome.result = _read_back(self.ledger, run)
            self.report(run.run_id, "done", {"attempts": outcome.attempts})


def _attempts(client, future, seen: set, error: BaseException | None) -> int:
    """What ran of one run: the attempts that started on a worker in this batch.

    The larger of the attempts announced by progress events and the scheduler's count
    (workers that died running the task, plus the attempt that ended). A task that never
    started — a worker that could not even unpickle it — counts 0, not 1.
    """
    died = _suspicious_count(client, future)
    ended = 1 if error is None or isinstance(error, DpcoreError) else 0
    return max(len(seen), died + ended)


def _suspicious(key: str, dask_scheduler=None) -> int:
    task = dask_scheduler.tasks.get(key)
    return 0 if task is None else int(task.suspicious)


def _suspicious_count(client, future) -> int:
    """The workers that died while running the task, as the scheduler counts them (0 if
    the scheduler cannot be asked; progress events count attempts too, but an event sent
    just before a worker dies can be lost with it)."""
    try:
        return int(client.run_on_scheduler(_suspicious, future.key))
    except Exception:  # noqa: BLE001 - a display figure only; the events remain
        return 0


def _store_once(ledger: Ledger, run_id: str, release: str, diagnostics: str) -> None:
    """Store the run's result unless one is stored already (a second client that resumed
    the same run id stored first): the first stored result is the only one ever shown."""
    try:
        ledger.store_result(run_id, release, diagnostics)
    except ParameterError:
        if ledger.get_run(run_id).status != "done":
            raise


def _mark_failed(ledger: Ledger, run_id: str, message: str) -> None:
    try:
        ledger.mark_failed(run_id, message)
    except ParameterError:  # stored meanwhile by another client that resumed it
        if ledger.get_run(run_id).status != "done":
            raise


def _read_back(ledger: Ledger, run: PlannedRun):
    """The stored result, as the requester may read it (store before show)."""

    try:
        return load_result(ledger, run.run_id, requester=run.permit.requester)
    except DpcoreError:
        return None
