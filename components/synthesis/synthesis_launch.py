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

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import BudgetStatus, DatasetRecord, Ledger
from dpcore.privacy.policy import authorize_run
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import ALGORITHM_LABELS, FAITHFUL, by_mode
from dpcore.runs import charge_and_mine, run_cost
from dpcore.synthesis.params import (
    CLASSES,
    FEATURES,
    GROUPS,
    MARGINALS,
    SynthesisParams,
    plan_budget,
)

from ..common import jobs
from ..common.budget_meter import fmt_eps
from ..common.jobs import (
    Job,
    budget_blockers,
    failure_message,
    follow_in_ledger,
    forget_job,
    get_job,
    start_job,
)
from ..common.session import can_see_truth, current_requester, set_flash
from .synthesis_form import demo_seed_from_state, form_problems, params_from_state

__all__ = ["LAUNCH_KEY", "SHOWN_KEY", "cost_breakdown", "cost_text", "launch_blockers",
           "render_synthesis_launch"]

LAUNCH_KEY = "syn_launch"
#: The run the page shows (set when a run is stored, or picked among the stored runs).
SHOWN_KEY = "syn_shown_run"
#: Where a stored run appears (for a run still running elsewhere).
_RESULT_WHERE = "under the stored runs"

#: What each phase of the budget plan pays for, in spending order (strict; faithful MC-GEN
#: spends its one phase on the MDAV clusters' noisy means and covariances).
_PHASE_PURPOSES = ((CLASSES, "the noisy class counts"),
                   (FEATURES, "the noisy correlations that build the feature groups"),
                   (GROUPS, "the cells' noisy counts, sums and second moments"),
                   (MARGINALS, "the noisy per-class histograms"))
_FAITHFUL_GROUPS = "the clusters' noisy means and covariances"


def cost_breakdown(params: SynthesisParams) -> list[tuple[str, int]]:
    """The run's charge per purpose, ``[(what it pays for, nano-ε), ...]`` (validates)."""
    totals: dict[str, int] = {}
    for slot in plan_budget(params):
        totals[slot.phase] = totals.get(slot.phase, 0) + slot.epsilon_nano
    out = []
    for phase, purpose in _PHASE_PURPOSES:
        if phase in totals:
            if phase == GROUPS:
                purpose = by_mode(params.mode, strict=purpose, faithful=_FAITHFUL_GROUPS)
            out.append((purpose, totals[phase]))
    return out


def cost_text(params: SynthesisParams, cost_nano: int) -> str:
    """The pre-launch cost line: the total and what each part pays for."""
    parts = [f"ε = {fmt_eps(nano_to_epsilon(nano))} for {purpose}"
             for purpose, nano in cost_breakdown(params)]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    text = f"This run costs **ε = {fmt_eps(nano_to_epsilon(cost_nano))}**: {listed}."
    if params.mode == FAITHFUL:
        text += (" Faithful MC-GEN charges this ε but is not ε-DP: the charge does not bound "
                 "what it reveals.")
    return text


def launch_blockers(remaining: BudgetStatus, cost_nano: int, record: DatasetRecord
                    ) -> list[str]:
    """Why the run cannot be launched now (empty: it can). Pure: the caller reads the
    remaining budget from the ledger."""
    return budget_blockers(remaining, cost_nano, record)


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

    problems = form_problems(record)
    if problems:
        st.session_state.pop(LAUNCH_KEY, None)
        st.button("Launch", type="primary", key="syn_launch_button", disabled=True,
                  help="Fix the refused values first.")
        st.error("Launch is disabled until these values are fixed (each is explained next to "
                 "its box):  \n" + "  \n".join(f"• {p}" for p in problems))
        return
    try:
        params = params_from_state(record).validate()
        cost = run_cost(params)
        seed = demo_seed_from_state(record)
        authorize_run(record, params, current_requester(), seed=seed)
    except (DpcoreError, TypeError, ValueError) as exc:
        st.session_state.pop(LAUNCH_KEY, None)
        st.error(f"This run cannot be launched: {exc}")
        return
    remaining = ledger.budget(record.name)
    st.markdown(cost_text(params, cost)
                + f" Remaining on `{record.name}`: ε = {fmt_eps(remaining.remaining)}.")
    if seed is not None:
        st.info(f"Demo seed {seed} is on: the noise is reproducible. For tests and public "
                "demos only; real releases always use fresh randomness.")
    blockers = launch_blockers(remaining, cost, record)
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
