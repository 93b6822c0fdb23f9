"""Launching a synthesis run: cost → confirm once → charge and synthesize → progress → rerun.

The run goes through :func:`dpcore.runs.charge_and_mine` (the policy, the registered data and
its digest, the charge of the plan's ε before any noise, the result stored before it is
returned) in a background job (:mod:`components.common.jobs`); the page only polls the job's
progress, so a rerun never interrupts a paid-for run. The run id is drawn when the confirm
step opens: a double click starts the same job, and the ledger charges a run id once.
"""

from __future__ import annotations

import time

import streamlit as st

from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import ALGORITHM_LABELS, SYNTHESIS, by_mode
from dpcore.runs import charge_and_mine, run_cost
from dpcore.synthesis.accuracy import accuracy_text
from dpcore.synthesis.params import SynthesisParams

from ..common import jobs
from ..common.family_ui import family_ui, launch_blockers, render_launch_gate
from ..common.jobs import (
    Job,
    failure_message,
    follow_in_ledger,
    forget_job,
    get_job,
    start_job,
)
from ..common.session import can_see_truth, current_requester, set_flash
from .synthesis_form import demo_seed_from_state, form_problems, params_from_state

__all__ = ["LAUNCH_KEY", "SHOWN_KEY", "render_synthesis_launch"]

LAUNCH_KEY = "syn_launch"
#: The run the page shows (set when a run is stored, or picked among the stored runs).
SHOWN_KEY = "syn_shown_run"
#: Where a stored run appears (for a run still running elsewhere).
_RESULT_WHERE = "under the stored runs"

def _work(ledger: Ledger, dataset: str, params: SynthesisParams, run_id: str, seed, requester):
    def work(progress):
        result = charge_and_mine(ledger, dataset, params, requester=requester, seed=seed,
                                 run_id=run_id, progress=progress)
        return len(result.synthetic)
    return work


def render_synthesis_launch(ledger: Ledger, record: DatasetRecord) -> None:
    """The cost line, the Launch button (disabled, with the reason, when the run cannot go),
    the confirm step and the progress of a running run."""
    state = st.session_state.get(LAUNCH_KEY)
    if state is not None and state.get("dataset") != record.name and state["stage"] == "confirm":
        st.session_state.pop(LAUNCH_KEY, None)
        state = None
    if state is not None and state["stage"] == "running":
        _follow(ledger, record, state)
        return

    def read():
        params = params_from_state(record).validate()
        return params, run_cost(params), demo_seed_from_state(record)

    gate = render_launch_gate(ledger, record, launch_key=LAUNCH_KEY, key_prefix="syn",
                              problems=form_problems(record), read=read, what="values")
    if gate is None:
        return
    params, cost, seed, remaining = gate.params, gate.cost_nano, gate.seed, gate.remaining
    st.info(accuracy_text(params, record.schema))
    if seed is not None:
        st.info(f"Demo seed {seed} is on: the noise is reproducible. For tests and public "
                "demos only; real releases always use fresh randomness.")
    blockers = launch_blockers(family_ui(SYNTHESIS), remaining, cost, record)
    if state is not None and (state["params"] != params.to_dict() or state["seed"] != seed
                              or blockers):
        st.session_state.pop(LAUNCH_KEY, None)        # parameters or budget changed: ask again
        state = None
    label = ALGORITHM_LABELS[params.algorithm]
    if state is None:
        jobs.render_launch_button(
            label, cost, blockers, launch_key=LAUNCH_KEY, key_prefix="syn",
            confirm_state={"dataset": record.name, "params": params.to_dict(), "seed": seed,
                           "cost_nano": cost})
        return

    confirm = jobs.render_confirm(label, record, state, launch_key=LAUNCH_KEY,
                                  key_prefix="syn")
    if confirm:
        state = {**state, "stage": "running"}
        st.session_state[LAUNCH_KEY] = state
        start_job(Job(run_id=state["run_id"], dataset=record.name),
                  _work(ledger, record.name, SynthesisParams.from_dict(state["params"]),
                        state["run_id"], state["seed"], current_requester()))
        _follow(ledger, record, state)


def _finish(state: dict, ok: bool, message: str) -> None:
    st.session_state.pop(LAUNCH_KEY, None)
    forget_job(state["run_id"])
    if ok:
        st.session_state[SHOWN_KEY] = state["run_id"]
    set_flash("success" if ok else "error", message)
    st.rerun()          # refresh the budget meter from the ledger


def _follow(ledger: Ledger, record: DatasetRecord, state: dict) -> None:
    """Show the progress of the running run until it ends, then rerun the page."""
    run_id = state["run_id"]
    job = get_job(run_id)
    if job is None:
        _follow_in_ledger(ledger, state)
        return
    jobs.render_running_caption(state)
    bar = st.progress(0.0, text="starting…")
    while True:
        done = job.done
        bar.progress(min(1.0, max(0.0, job.fraction)), text=job.message)
        if done:
            break
        time.sleep(0.15)
    if job.ok:
        what = by_mode(state["params"]["mode"],
                       strict="a DP release: anyone may view and download it",
                       faithful="faithful mode: NOT ε-DP, for the owner or public demo data")
        _finish(state, True, f"Run `{run_id[:8]}` is stored: a synthetic table of "
                             f"{job.outcome} rows ({what}).")
    else:
        _finish(state, False, failure_message(
            job.error_kind, job.error, ledger, show_data_detail=can_see_truth(record),
            where=_RESULT_WHERE))


def _follow_in_ledger(ledger: Ledger, state: dict) -> None:
    """No job here (another process, or a restarted server): watch the ledger instead."""
    follow_in_ledger(ledger, state["run_id"], launch_key=LAUNCH_KEY, key_prefix="syn",
                     where=_RESULT_WHERE, finish=lambda ok, message: _finish(state, ok, message))
