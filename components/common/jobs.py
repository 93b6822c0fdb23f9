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

The launchers of the three mining families (:mod:`components.redescriptions.launcher`,
:mod:`components.sequences.sequence_launch`, :mod:`components.synthesis.synthesis_launch`) share
the launch path around a job: :func:`budget_blockers` (why the ledger would refuse the run),
:func:`render_launch_button` and :func:`render_confirm` (the run id is drawn when the
confirm step opens, so a double click charges once), :func:`render_running_caption`, then
:func:`failure_message`, which turns how a run ended badly into the message the page shows
(server paths removed, data errors detailed only to those who may see the data), and
:func:`follow_in_ledger`, which follows a run that has no job in this process (charged by
another server process, or before a restart) until the ledger holds its result. Each
launcher keeps only what is its family's: the cost line, its progress display and what a
stored run's message says.

Nothing here is a DP release: a job holds progress text and, as ``outcome``,
whatever its callable returned (a DP result or a count of released items). The failure
messages are refusals and error texts, never statistics of the data.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

from dpcore.errors import BudgetExceededError, DataError, DpcoreError, ParameterError
from dpcore.privacy.ledger import BudgetStatus, DatasetRecord, Ledger
from dpcore.privacy.units import nano_to_epsilon
from dpcore.runs import RunInProgressError, new_run_id

from .data_locations import hide_server_paths
from .number_fields import fmt_eps

__all__ = ["Job", "Progress", "Work", "ERROR_KINDS", "error_kind", "start_job", "get_job",
           "forget_job", "failure_message", "follow_in_ledger", "LEDGER_WAIT_SECONDS",
           "DATA_DETAIL_HIDDEN", "budget_blockers", "render_launch_button",
           "render_confirm", "render_running_caption"]

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


# --------------------------------------------------------------------------- after a job

#: What an analyst reads instead of the loader's message when a private dataset fails to load
#: (the message could quote values or lines of the data).
DATA_DETAIL_HIDDEN = "ask the data owner to check it"
#: How long a page waits for a run charged elsewhere before it offers to stop waiting (s).
LEDGER_WAIT_SECONDS = 60.0


def budget_blockers(remaining: BudgetStatus, cost_nano: int, record: DatasetRecord, *,
                    lower: str = "ε") -> list[str]:
    """Why the ledger would refuse a run now, before it is offered (empty: it would not).

    Pure: the caller reads ``remaining`` from the ledger, as the budget meter does.

    Parameters
    ----------
    remaining : BudgetStatus
        The dataset's budget (nano-ε inside).
    cost_nano : int
        The run's charge (nano-ε).
    record : DatasetRecord
        The dataset (its schema must be confirmed).
    lower : str
        What the analyst can lower to make the run fit (``"ε (or the number of trials)"``).
    """
    reasons = []
    if not remaining.fits(cost_nano):
        reasons.append(
            f"This run costs ε = {fmt_eps(nano_to_epsilon(cost_nano))} but only ε = "
            f"{fmt_eps(remaining.remaining)} remains on `{record.name}`: the ledger would "
            f"refuse it. Lower {lower}, or ask the data owner for more budget.")
    if not record.confirmed:
        reasons.append("The owner has not confirmed this dataset's public schema yet; the "
                       "ledger refuses runs until then.")
    return reasons


def render_launch_button(label: str, cost_nano: int, blockers: list[str], *,
                         launch_key: str, key_prefix: str, confirm_state: dict) -> None:
    """The Launch button (disabled, with the reasons, while ``blockers`` holds any).

    A click opens the confirm step: the run id is drawn now and kept in session state
    under ``launch_key`` with ``confirm_state`` (dataset, parameters, cost, ...), so a
    double click later charges once. Button key: ``{key_prefix}_launch_button``.
    """
    if st.button(f"Launch {label} (ε = {fmt_eps(nano_to_epsilon(cost_nano))})",
                 type="primary", key=f"{key_prefix}_launch_button", disabled=bool(blockers),
                 help=" ".join(blockers) or None):
        st.session_state[launch_key] = {"stage": "confirm", "run_id": new_run_id(),
                                        **confirm_state}
        st.rerun()
    for reason in blockers:
        st.warning(f"Launch is disabled: {reason}")


def render_confirm(label: str, record: DatasetRecord, state: dict, *, launch_key: str,
                   key_prefix: str) -> bool:
    """The confirm step: what the run will spend, Confirm and Cancel (which forgets the
    launch state and reruns). True when the analyst confirmed. Button keys:
    ``{key_prefix}_confirm``, ``{key_prefix}_cancel``.

    Once confirmed, the box is emptied before the caller starts the run: the question was
    answered, and a "Spend ε …?" box left above the progress and the finished result read
    as if the run still waited for an answer (issue 32, point 13).
    """
    box = st.empty()
    with box.container():
        st.warning(f"Spend **ε = {fmt_eps(nano_to_epsilon(state['cost_nano']))}** of dataset "
                   f"`{record.name}` on this {label} run? The ledger charges it before any "
                   "noise is drawn, and spent budget is never refunded.")
        c1, c2 = st.columns(2)
        confirm = c1.button("Confirm and run", type="primary", key=f"{key_prefix}_confirm")
        if c2.button("Cancel", key=f"{key_prefix}_cancel"):
            st.session_state.pop(launch_key, None)
            st.rerun()
    if confirm:
        box.empty()
    return confirm


def render_running_caption(state: dict) -> None:
    """The line above a running run's progress: it is charged, and stored before shown."""
    st.caption(f"Run `{state['run_id'][:8]}` on `{state['dataset']}` — charged before any "
               "noise; the result is stored in the ledger before it is shown, so leaving this "
               "page loses nothing.")


def failure_message(kind: str | None, error: str | None, ledger: Ledger, *,
                    show_data_detail: bool, where: str) -> str:
    """The message a page shows when a run ended badly, without any server path.

    Parameters
    ----------
    kind : str
        How it ended (:data:`ERROR_KINDS`, as in ``Job.error_kind``).
    error : str
        The error's text (``Job.error``). Every absolute server path in it is replaced by
        :func:`components.common.data_locations.hide_server_paths` before it is shown.
    ledger : Ledger
        The ledger, whose folder and upload folder name the paths that may be shown.
    show_data_detail : bool
        Whether this session may read the data loader's message (owners, public demo data:
        :func:`components.common.session.can_see_truth`); otherwise a data failure says only that
        the data could not be loaded.
    where : str
        Where the run's result will appear once stored (``"here"``, ``"on the Runs and
        Explore pages"``), for a run still running elsewhere.

    Returns
    -------
    str
        One line of markdown. Not a DP release: it holds no statistic of the data.
    """
    text = hide_server_paths(str(error or ""), ledger)
    if kind == "budget":
        return f"Refused by the ledger: {text}"
    if kind == "data":
        detail = text if show_data_detail else DATA_DETAIL_HIDDEN
        return f"The data could not be loaded; nothing was charged ({detail})."
    if kind == "in_progress":
        return f"{text}. Its result will appear {where} when it is stored."
    if kind == "parameter":
        return f"The run was refused: {text}"
    return f"The run failed: {text}"


def follow_in_ledger(ledger: Ledger, run_id: str, *, launch_key: str, key_prefix: str,
                     where: str, finish: Callable[[bool, str], None], stored_note: str = "",
                     wait_seconds: float = LEDGER_WAIT_SECONDS, poll_seconds: float = 0.5
                     ) -> None:
    """Follow a run that has no job in this process until the ledger holds its outcome.

    The run was charged by another server process (or before a restart): the page reads
    its status from the ledger, waiting up to ``wait_seconds`` under a spinner, then
    calls ``finish(ok, message)`` when the run is stored or failed; while it still runs,
    the page says so and offers to stop waiting. A run id the ledger never charged
    clears the launch state: nothing was spent.

    Parameters
    ----------
    ledger : Ledger
        Where the run is charged.
    run_id : str
        The run.
    launch_key : str
        The session-state key of the page's launch state (cleared when there is nothing
        to follow).
    key_prefix : str
        Prefix of the page's widget keys (the Stop waiting button is
        ``{key_prefix}_stop_waiting``).
    where : str
        Where the result will appear once stored (``"here"``, ``"on the Runs and Explore
        pages"``).
    finish : callable(ok, message)
        The launcher's end of a run (flash the message, forget the state, rerun).
    stored_note : str
        Appended to the message of a stored run (``" Open **Explore**."``).
    wait_seconds, poll_seconds : float
        How long to wait for a run still charged, and how often to read the ledger (s).
    """
    try:
        run = ledger.get_run(run_id)
    except ParameterError:
        st.session_state.pop(launch_key, None)
        st.info("That run was never charged; nothing was spent.")
        return
    if run.status == "charged" and wait_seconds > 0:
        with st.spinner(f"Run `{run_id[:8]}` is being computed elsewhere; waiting for the "
                        "ledger…"):
            deadline = time.monotonic() + wait_seconds
            while run.status == "charged" and time.monotonic() < deadline:
                time.sleep(poll_seconds)
                run = ledger.get_run(run_id)
    if run.status == "done":
        finish(True, f"Run `{run_id[:8]}` is stored.{stored_note}")
    elif run.status == "failed":
        finish(False, f"Run `{run_id[:8]}` failed: "
                      f"{hide_server_paths(str(run.error or ''), ledger)}")
    else:
        st.info(f"Run `{run_id[:8]}` is still running elsewhere; its result will appear "
                f"{where} when it is stored.")
        if st.button("Stop waiting", key=f"{key_prefix}_stop_waiting"):
            st.session_state.pop(launch_key, None)
            st.rerun()
