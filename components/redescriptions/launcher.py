"""Launching a charged run: cost → confirm once → charge and mine → progress → rerun.

The run itself goes through :func:`dpcore.runs.charge_and_mine` (charge before any
noise, store the result before returning) in a worker thread of this server
process; the page only polls the worker's progress. So a rerun of the page (a
click elsewhere, a second click, fast reruns) never interrupts a paid-for run:
the page re-attaches to it on the next rerun, and the result is read from the
ledger afterwards.

Double clicks charge once: the run id is drawn when the confirm step opens and
kept in session state; a second start of the same id reuses the worker (same
process) or is replayed by the ledger (``UNIQUE(run_id)``), which returns the
stored result or raises :class:`~dpcore.runs.RunInProgressError`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.errors import DataError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.policy import Requester
from dpcore.redescriptions.intervals import interval_expectation_text
from dpcore.redescriptions.params import RedescriptionParams, read_params
from dpcore.registry import ALGORITHM_LABELS
from dpcore.runs import charge_and_mine, run_cost

from ..common import jobs
from ..common.family_ui import launch_blockers, render_launch_gate, ui_for_params
from ..common.session import can_see_truth, current_requester, load_data, set_flash
from ..common.warmup import render_warmup_progress
from .expectations import empty_result_advice, expectation_text, miner_warnings
from .params_form import demo_seed_from_state, form_problems, params_from_state

__all__ = ["Job", "start_job", "get_job", "render_launch", "LAUNCH_KEY", "remember_new_run",
           "MAX_TRIAL_BARS", "trial_bar_count"]

LAUNCH_KEY = "mine_launch"
#: Where a stored run's redescriptions appear (for a run still running elsewhere).
_RESULT_WHERE = "on the Runs and Explore pages"
#: Runs with at most this many trials show one progress bar per trial.
MAX_TRIAL_BARS = 8


def trial_bar_count(params: RedescriptionParams) -> int:
    """How many per-trial progress bars a run shows under its overall bar.

    Tree miners report progress trial by trial, so up to :data:`MAX_TRIAL_BARS`
    trials each get a bar. Serenade reports one overall fraction (initial pairs,
    then extension rounds): no per-trial bars.
    """
    if params.is_serenade or params.in_tr > MAX_TRIAL_BARS:
        return 0
    return params.in_tr


# --------------------------------------------------------------------------- worker registry

@dataclass
class Job(jobs.Job):
    """A redescription run in a worker thread (progress only; no release).

    ``outcome`` is the number of redescriptions the stored result holds.
    """

    trial_bars: int = 0

    @property
    def n_redescriptions(self) -> int | None:
        return self.outcome


def start_job(ledger: Ledger, dataset: str, data: TwoViewDataset, params: RedescriptionParams,
              run_id: str, *, requester: Requester, seed: int | None) -> Job:
    """Start mining ``run_id`` in a worker thread, or return the worker already on it.

    ``data`` is the dataset's registered data (:func:`components.common.session.load_data`);
    the policy in :func:`dpcore.runs.charge_and_mine` checks it, the role and the seed.
    """
    def work(progress) -> int:
        result = charge_and_mine(ledger, dataset, params, requester=requester, seed=seed,
                                 run_id=run_id, data=data, progress=progress)
        return len(result.redescriptions)

    return jobs.start_job(Job(run_id=run_id, dataset=dataset,
                              trial_bars=trial_bar_count(params)), work)


get_job = jobs.get_job
_forget = jobs.forget_job


# --------------------------------------------------------------------------- page flow

def remember_new_run(dataset: str, run_id: str) -> None:
    """Make a freshly stored run the one Explore shows first."""
    st.session_state["last_run_id"] = run_id
    picks = dict(st.session_state.get("explore_pick", {}))
    picks[dataset] = [run_id]
    st.session_state["explore_pick"] = picks


def render_launch(ledger: Ledger, record: DatasetRecord) -> None:
    """The cost line, what to expect, the Launch button (disabled, with the reason, when
    the run cannot go), the confirm step and the progress of a run."""
    state = st.session_state.get(LAUNCH_KEY)
    if state is not None and state.get("dataset") != record.name and state["stage"] == "confirm":
        st.session_state.pop(LAUNCH_KEY, None)
        state = None
    if state is not None and state["stage"] == "running":
        _follow(ledger, record, state)
        return

    def read():
        params = params_from_state().validate()
        return params, run_cost(params), demo_seed_from_state(record)

    gate = render_launch_gate(ledger, record, launch_key=LAUNCH_KEY, key_prefix="mine",
                              problems=form_problems(record=record), read=read)
    if gate is None:
        return
    params, cost, seed, remaining = gate.params, gate.cost_nano, gate.seed, gate.remaining
    st.info(expectation_text(params) + "\n\n" + interval_expectation_text(params))
    for warning in miner_warnings(params, record.schema):
        st.warning(warning)
    if seed is not None:
        st.info(f"Demo seed {seed} is on: the noise is reproducible. For tests and public demos "
                "only; real releases always use fresh randomness.")
    ready = render_warmup_progress("Launch")
    blockers = launch_blockers(ui_for_params(params), remaining, cost, record, ready)

    if state is not None and state["stage"] == "confirm" and (
            state["params"] != params.to_dict() or blockers):
        st.session_state.pop(LAUNCH_KEY, None)      # parameters or budget changed: ask again
        state = None
    if state is None:
        label = ALGORITHM_LABELS[params.algorithm]
        jobs.render_launch_button(
            label, cost, blockers, launch_key=LAUNCH_KEY, key_prefix="mine",
            confirm_state={"dataset": record.name, "params": params.to_dict(), "seed": seed,
                           "cost_nano": cost})
        return

    confirm = jobs.render_confirm(ALGORITHM_LABELS[params.algorithm], record, state,
                                  launch_key=LAUNCH_KEY, key_prefix="mine")
    if confirm:
        try:
            # Public demo data come from this server's cache; private data are loaded by
            # the run itself, from the registered files only (dpcore.runs).
            data = load_data(record) if record.public_demo else None
        except DataError as exc:
            st.session_state.pop(LAUNCH_KEY, None)
            st.error(jobs.failure_message("data", str(exc), ledger,
                                          show_data_detail=can_see_truth(record),
                                          where=_RESULT_WHERE))
            return
        state = {**state, "stage": "running"}
        st.session_state[LAUNCH_KEY] = state
        start_job(ledger, record.name, data, read_params(state["params"]),
                  state["run_id"], requester=current_requester(), seed=state["seed"])
        _follow(ledger, record, state)


def _finish(record: DatasetRecord, state: dict, ok: bool, message: str,
            empty: bool = False) -> None:
    st.session_state.pop(LAUNCH_KEY, None)
    _forget(state["run_id"])
    if ok and empty:
        # Explore keeps showing the newest run WITH results; say why this one is not there.
        set_flash("warning", message)
    elif ok:
        remember_new_run(state["dataset"], state["run_id"])   # the run's own dataset
        set_flash("success", message)
    else:
        set_flash("error", message)
    st.rerun()          # refresh the budget meter from the ledger


def _follow(ledger: Ledger, record: DatasetRecord, state: dict) -> None:
    """Show the progress of the running run until it ends, then rerun the page."""
    run_id = state["run_id"]
    job = get_job(run_id)
    if job is None:
        _follow_in_ledger(ledger, record, state)
        return
    jobs.render_running_caption(state)
    bar = st.progress(0.0, text="starting…")
    per_trial = []
    if job.trial_bars:
        cols = st.columns(job.trial_bars)
        per_trial = [c.progress(0.0, text=f"trial {i + 1}") for i, c in enumerate(cols)]
    while True:
        done = job.done
        fraction = min(1.0, max(0.0, job.fraction))
        bar.progress(fraction, text=job.message)
        for i, b in enumerate(per_trial):
            b.progress(min(1.0, max(0.0, fraction * job.trial_bars - i)),
                       text=f"trial {i + 1}")
        if done:
            break
        time.sleep(0.15)
    if job.ok and job.n_redescriptions == 0:
        params = state["params"]
        _finish(record, state, True,
                f"Run `{run_id[:8]}` is stored: 0 redescriptions. "
                + empty_result_advice(params["algorithm"], params)
                + " Explore keeps showing your newest run with results.", empty=True)
    elif job.ok:
        _finish(record, state, True,
                f"Run `{run_id[:8]}` is stored: {job.n_redescriptions} redescriptions. "
                "Open **Explore** to prune and export them (0 ε).")
    else:
        _finish(record, state, False, jobs.failure_message(
            job.error_kind, job.error, ledger, show_data_detail=can_see_truth(record),
            where=_RESULT_WHERE))


def _follow_in_ledger(ledger: Ledger, record: DatasetRecord, state: dict) -> None:
    """No worker here (another process or a restarted server): watch the ledger instead."""
    jobs.follow_in_ledger(ledger, state["run_id"], launch_key=LAUNCH_KEY, key_prefix="mine",
                          where=_RESULT_WHERE, stored_note=" Open **Explore**.",
                          finish=lambda ok, message: _finish(record, state, ok, message))
