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

from dpcore.family import algorithm as algorithm_impl
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import ALGORITHM_LABELS, SEQUENCES, algorithm_spec
from dpcore.runs import charge_and_mine

from ..common import jobs
from ..common.family_ui import family_ui, launch_blockers, render_launch_gate
from ..common.session import can_see_truth, current_requester, set_flash
from ..common.warmup import render_warmup_progress
from .sequence_accuracy import render_sequence_accuracy
from .sequence_form import FormReading

__all__ = ["LAUNCH_KEY", "PICK_KEY", "render_sequence_launch", "pick_run", "picked_run"]

LAUNCH_KEY = "seq_launch"
#: dataset → the run id the results section shows (the newest launched here).
PICK_KEY = "seq_run_pick"

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

    problems = ((list(reading.messages) or ["the form could not be read"])
                if reading.params is None else [])
    gate = render_launch_gate(ledger, record, launch_key=LAUNCH_KEY, key_prefix="seq",
                              problems=problems,
                              read=lambda: (reading.params, reading.cost_nano, None))
    if gate is None:
        return
    params, cost, remaining = gate.params, gate.cost_nano, gate.remaining
    render_sequence_accuracy(record, params)
    ready = render_warmup_progress("Launch", SEQUENCES)
    blockers = launch_blockers(family_ui(SEQUENCES), remaining, cost, record, ready)
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
    params = algorithm_impl(spec.key).params_type.from_dict(state["params"])
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
