"""Launching a frequent-sequence run: cost → confirm once → charge and mine → progress.

The run goes through :func:`dpcore.runs.charge_and_mine` (the policy check, the charge of
the plan's ε before any noise, the result stored before it returns) in a background job
(:mod:`components.common.jobs`); the page polls the job's progress, level by level, and reads the
result from the ledger afterwards. A rerun never interrupts a paid-for run: the page
re-attaches to its job by run id. The run id is drawn when the confirm step opens, so a
double click charges once (the ledger replays a run id it has seen).
"""

from __future__ import annotations

import time

import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import BudgetStatus, DatasetRecord, Ledger
from dpcore.privacy.policy import authorize_run
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import ALGORITHM_LABELS, SEQUENCES, algorithm_spec
from dpcore.runs import charge_and_mine
from dpcore.sequences.params import LENGTHS, MAX_LENGTH, PRUNE, RECORDS, VERIFY

from ..common import jobs
from ..common.budget_meter import fmt_eps
from ..common.session import can_see_truth, current_requester, set_flash
from ..common.warmup import render_warmup_progress
from .sequence_form import FormReading

__all__ = ["LAUNCH_KEY", "PICK_KEY", "cost_breakdown", "cost_text", "launch_blockers",
           "render_sequence_launch", "pick_run", "picked_run"]

LAUNCH_KEY = "seq_launch"
#: dataset → the run id the results section shows (the newest launched here).
PICK_KEY = "seq_run_pick"

#: What each phase of the budget plan pays for, in the order the cost line names them.
_PHASE_PURPOSES = ((RECORDS, "the noisy number of records"),
                   (LENGTHS, "the noisy length histogram"),
                   (MAX_LENGTH, "the longest frequent length"),
                   (PRUNE, "the pruning on samples"),
                   (VERIFY, "the noisy supports"))


def cost_breakdown(params) -> list[tuple[str, int]]:
    """The run's charge per purpose, ``[(what it pays for, nano-ε), ...]`` (validates)."""
    totals: dict[str, int] = {}
    for slot in algorithm_spec(params.algorithm).resolve("plan")(params):
        totals[slot.phase] = totals.get(slot.phase, 0) + slot.epsilon_nano
    return [(purpose, totals[phase]) for phase, purpose in _PHASE_PURPOSES if phase in totals]


def cost_text(params, cost_nano: int) -> str:
    """The pre-launch cost line: the total and what each part pays for."""
    parts = [f"ε = {fmt_eps(nano_to_epsilon(nano))} for {purpose}"
             for purpose, nano in cost_breakdown(params)]
    listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    return (f"This run costs **ε = {fmt_eps(nano_to_epsilon(cost_nano))}**: {listed}. The "
            "levels share the verification budget; what a run that stops early leaves "
            "unspent is not refunded.")


def launch_blockers(remaining: BudgetStatus, cost_nano: int, record: DatasetRecord,
                    engine_ready: bool = True) -> list[str]:
    """Why the run cannot be launched now (empty: it can). Pure."""
    reasons = jobs.budget_blockers(remaining, cost_nano, record)
    if not engine_ready:
        reasons.append("The sequence miner is still being prepared (see the progress bar).")
    return reasons


def pick_run(dataset: str, run_id: str) -> None:
    """Make ``run_id`` the run the results section shows for ``dataset``."""
    picks = dict(st.session_state.get(PICK_KEY, {}))
    picks[dataset] = run_id
    st.session_state[PICK_KEY] = picks


def picked_run(dataset: str) -> str | None:
    """The run the results section shows for ``dataset`` (None: the newest with results)."""
    return st.session_state.get(PICK_KEY, {}).get(dataset)


def render_sequence_launch(ledger: Ledger, record: DatasetRecord, reading: FormReading
                           ) -> None:
    """The cost line, the Launch button (disabled with the reason when the run cannot go),
    the confirm step and the progress of a running run."""
    state = st.session_state.get(LAUNCH_KEY)
    if state is not None and state["dataset"] != record.name and state["stage"] == "confirm":
        st.session_state.pop(LAUNCH_KEY, None)
        state = None
    if state is not None and state["stage"] == "running":
        _follow(ledger, record, state)
        return

    if reading.params is None:
        st.session_state.pop(LAUNCH_KEY, None)
        st.button("Launch", type="primary", key="seq_launch_button", disabled=True,
                  help="Fix the refused numbers first.")
        st.error("Launch is disabled until these numbers are fixed (each is explained next "
                 "to its box):  \n" + "  \n".join(f"• {m}" for m in reading.messages))
        return
    params, cost = reading.params, reading.cost_nano
    try:
        authorize_run(record, params, current_requester(), seed=None)
    except DpcoreError as exc:
        st.error(f"This run is not allowed: {exc}")
        return
    remaining = ledger.budget(record.name)
    st.markdown(cost_text(params, cost) +
                f" Remaining on `{record.name}`: ε = {fmt_eps(remaining.remaining)}.")
    ready = render_warmup_progress("Launch", SEQUENCES)
    blockers = launch_blockers(remaining, cost, record, ready)
    if state is not None and state["stage"] == "confirm" and (
            state["params"] != params.to_dict() or blockers):
        st.session_state.pop(LAUNCH_KEY, None)      # parameters or budget changed: ask again
        state = None
    label = ALGORITHM_LABELS[params.algorithm]
    if state is None:
        jobs.render_launch_button(
            label, cost, blockers, launch_key=LAUNCH_KEY, key_prefix="seq",
            confirm_state={"dataset": record.name, "params": params.to_dict(),
                           "cost_nano": cost})
        return

    confirm = jobs.render_confirm(label, record, state, launch_key=LAUNCH_KEY,
                                  key_prefix="seq")
    if confirm:
        state = {**state, "stage": "running"}
        st.session_state[LAUNCH_KEY] = state
        _start(ledger, state)
        _follow(ledger, record, state)


def _start(ledger: Ledger, state: dict) -> jobs.Job:
    """Start the run's job: the registered data is loaded, charged and mined by dpcore."""
    spec = algorithm_spec(state["params"]["algorithm"])
    params = spec.resolve("params_type").from_dict(state["params"])
    requester, dataset, run_id = current_requester(), state["dataset"], state["run_id"]

    def work(progress) -> int:
        result = charge_and_mine(ledger, dataset, params, requester=requester, seed=None,
                                 run_id=run_id, progress=progress)
        return len(result.patterns)

    return jobs.start_job(jobs.Job(run_id=run_id, dataset=dataset), work)


def _finish(state: dict, ok: bool, message: str) -> None:
    st.session_state.pop(LAUNCH_KEY, None)
    jobs.forget_job(state["run_id"])
    if ok:
        pick_run(state["dataset"], state["run_id"])
    set_flash("success" if ok else "error", message)
    st.rerun()          # refresh the budget meter from the ledger


def _follow(ledger: Ledger, record: DatasetRecord, state: dict) -> None:
    """Show the run's progress (level by level) until it ends, then rerun the page."""
    run_id = state["run_id"]
    job = jobs.get_job(run_id)
    if job is None:
        _follow_in_ledger(ledger, state)
        return
    jobs.render_running_caption(state)
    bar = st.progress(0.0, text="starting…")
    steps = st.empty()
    seen: list[str] = []
    while True:
        done = job.done
        bar.progress(min(1.0, max(0.0, job.fraction)), text=job.message)
        if job.message and (not seen or seen[-1] != job.message):
            seen.append(job.message)
            steps.caption(" · ".join(seen))
        if done:
            break
        time.sleep(0.1)
    if job.ok:
        _finish(state, True, f"Run `{run_id[:8]}` is stored: {job.outcome} frequent "
                             "sequences. They are shown below (reading them costs 0 ε).")
    else:
        _finish(state, False, jobs.failure_message(
            job.error_kind, job.error, ledger, show_data_detail=can_see_truth(record),
            where="here"))


def _follow_in_ledger(ledger: Ledger, state: dict) -> None:
    """No job here (another process or a restarted server): watch the ledger instead."""
    jobs.follow_in_ledger(ledger, state["run_id"], launch_key=LAUNCH_KEY, key_prefix="seq",
                          where="here", finish=lambda ok, message: _finish(state, ok, message))
