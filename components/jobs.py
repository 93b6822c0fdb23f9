"""Background jobs: a charged run executing in a worker thread of this server process.

A job is a run id, a callable doing the work (it receives a ``progress(fraction,
message)`` function), the progress it reported, and its outcome: the callable's
return value, or the kind and text of the error that ended it. Pages only poll a
job; a rerun of the page (a click elsewhere, a second click, fast reruns) never
interrupts it, and the page re-attaches to it on the next rerun by run id.

The registry knows nothing about what a job mines: the callable goes through
:func:`dpcore.runs.charge_and_mine` (charge before any noise, store the result
before returning), so whatever a page shows afterwards is read from the ledger.
Starting a run id that already has a job returns that job (a double click charges
once); the ledger replays a run id charged by another process.

Nothing here is a DP release: a job holds progress text and, as ``outcome``,
whatever its callable returned (a DP result or a count of released items).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dpcore.errors import BudgetExceededError, DataError, DpcoreError, ParameterError
from dpcore.runs import RunInProgressError

__all__ = ["Job", "Progress", "Work", "ERROR_KINDS", "error_kind", "start_job", "get_job",
           "forget_job"]

_log = logging.getLogger(__name__)

#: progress(fraction in [0, 1], message): what a job's callable reports as it goes.
Progress = Callable[[float, str], None]
#: The work of a job: called once in the worker thread with a Progress; its return
#: value becomes the job's ``outcome``.
Work = Callable[[Progress], object]

#: How a job can end badly (``Job.error_kind``), by the exception that ended it.
ERROR_KINDS = ("budget", "in_progress", "data", "parameter", "error", "crash")


def error_kind(exc: BaseException) -> str:
    """The :data:`ERROR_KINDS` entry of an exception that ended a job.

    ``budget``: the ledger refused the charge (nothing charged); ``in_progress``: the
    run id is charged and still running elsewhere; ``data``: the data did not load;
    ``parameter``: bad parameters; ``error``: any other refusal or failure the core
    explains; ``crash``: an unexpected exception (logged with its traceback).
    """
    if isinstance(exc, BudgetExceededError):
        return "budget"
    if isinstance(exc, RunInProgressError):
        return "in_progress"
    if isinstance(exc, DataError):
        return "data"
    if isinstance(exc, ParameterError):
        return "parameter"
    if isinstance(exc, DpcoreError):
        return "error"
    return "crash"


@dataclass
class Job:
    """A run executing in a worker thread of this process (progress and outcome only).

    Attributes
    ----------
    run_id : str
        The ledger's run id (the key of the registry).
    dataset : str
        The dataset it runs on.
    fraction : float
        Progress in [0, 1], as last reported.
    message : str
        What the run is doing, as last reported.
    done, ok : bool
        The work ended; it ended by returning (not by an exception).
    outcome : object
        What the work returned (None until it returns).
    error_kind, error : str or None
        How and why it ended badly (:data:`ERROR_KINDS`); None when ``ok``.
    started : float
        ``time.monotonic()`` when the job was created (seconds).
    """

    run_id: str
    dataset: str
    fraction: float = 0.0
    message: str = "charging the ledger…"
    done: bool = False
    ok: bool = False
    outcome: object = None
    error_kind: str | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)

    def report(self, fraction: float, message: str) -> None:
        """The :data:`Progress` function handed to the work."""
        self.fraction, self.message = float(fraction), str(message)

    @property
    def elapsed(self) -> float:
        """Seconds since the job was created."""
        return time.monotonic() - self.started


_JOBS: dict[str, Job] = {}
_LOCK = threading.Lock()


def _run(job: Job, work: Work) -> None:
    try:
        job.outcome = work(job.report)
        job.ok = True
    except Exception as exc:  # noqa: BLE001 - reported to the page; crashes logged
        job.error_kind = error_kind(exc)
        if job.error_kind == "crash":
            _log.exception("run %s failed", job.run_id)
            job.error = f"{type(exc).__name__}: {exc}"
        else:
            job.error = str(exc)
    finally:
        job.done = True


def start_job(job: Job, work: Work) -> Job:
    """Run ``work`` for ``job.run_id`` in a worker thread, or return the job already on it.

    Parameters
    ----------
    job : Job
        A fresh job (any subclass) for the run; ignored when the run id has a job here.
    work : callable(progress) -> outcome
        The run; it must charge through :func:`dpcore.runs.charge_and_mine`.

    Returns
    -------
    Job
        The job registered under ``job.run_id`` (the given one if it is new).
    """
    with _LOCK:
        existing = _JOBS.get(job.run_id)
        if existing is not None:
            return existing
        _JOBS[job.run_id] = job
    threading.Thread(target=_run, args=(job, work), name=f"dprm-run-{job.run_id[:8]}",
                     daemon=True).start()
    return job


def get_job(run_id: str) -> Job | None:
    """The job of ``run_id`` in this process, if any."""
    with _LOCK:
        return _JOBS.get(run_id)


def forget_job(run_id: str) -> None:
    """Drop the job of ``run_id`` (after the page has shown how it ended)."""
    with _LOCK:
        _JOBS.pop(run_id, None)
