"""The Sequences page: configure and launch a frequent-sequence run, read and export results.

Sections, top to bottom: the dataset (a sequence dataset; on another kind the page says
which page mines it and offers the sequence datasets), the parameter form
(:mod:`components.sequences.sequence_form`), the cost and the launch
(:mod:`components.sequences.sequence_launch`),
then a stored run's results: the patterns written with item names, a chart by length, the
prefix tree, the levels, CSV/JSON export — all DP releases, read at 0 ε — and, for owners
and on public demo data only, the comparison with the truth (NOT private;
:func:`components.common.session.can_see_truth` decides, never this page).
"""

from __future__ import annotations

import math

import streamlit as st

from dpcore.errors import DataError, DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.registry import (
    ALGORITHM_LABELS,
    FAITHFUL,
    KIND_SEQUENCES,
    MODE_LABELS,
    SEQUENCES,
    family_algorithms,
)
from dpcore.runs import RunInProgressError, load_result, readable_runs
from dpcore.sequences.results import SequenceRunResult

from ..common.budget_meter import fmt_eps
from ..common.data_locations import hide_server_paths
from ..common.family_pages import render_other_kind
from ..common.session import (
    can_see_truth,
    current_requester,
    current_role,
    dataset_records,
    load_data,
)
from .sequence_form import render_sequence_form
from .sequence_launch import PICK_KEY, render_sequence_launch
from .sequence_results import (
    evaluate_against_truth,
    export_csv,
    export_json,
    length_chart,
    level_frame,
    missed_frame,
    pattern_frame,
    pattern_text,
    prefix_tree,
    top_paths,
    truth_frame,
)

__all__ = ["RUN_KEY", "sequence_runs", "render_sequences_page",
           "render_sequence_results", "render_sequence_result"]

#: Session key of the results section's run picker.
RUN_KEY = "seq_result_run"
_DATASET_PICK_KEY = "seq_dataset_pick"
#: Session cache of the comparisons with the truth, by run id (owners, public demos).
_TRUTH_KEY = "_seq_truth"


def sequence_runs(ledger: Ledger, dataset: str, role: str) -> list[RunRecord]:
    """The dataset's frequent-sequence runs ``role`` may read: those with results first,
    newest first within each group."""
    family = set(family_algorithms(SEQUENCES))
    runs = [r for r in reversed(readable_runs(ledger, dataset, role)) if r.algorithm in family]
    return [r for r in runs if r.status == "done"] + [r for r in runs if r.status != "done"]


def _pick_dataset() -> None:
    st.session_state["_select_dataset"] = st.session_state.get(_DATASET_PICK_KEY)


def _other_kind(ledger: Ledger, record: DatasetRecord) -> None:
    render_other_kind(record, after="Frequent sequences are mined from a sequence dataset.")
    names = [r.name for r in dataset_records(ledger) if r.kind == KIND_SEQUENCES]
    if not names:
        st.warning("No sequence dataset is registered yet; an owner can add one on the Data "
                   "page.")
        return
    st.selectbox("Sequence datasets", names, index=None, key=_DATASET_PICK_KEY,
                 placeholder="Pick a sequence dataset", on_change=_pick_dataset,
                 help="Makes it the current dataset (the sidebar and its budget meter follow).")


def render_sequences_page(ledger: Ledger, record: DatasetRecord | None) -> None:
    """The whole page for the current dataset ``record``."""
    if record is None:
        st.info("Pick a dataset in the sidebar first.")
        return
    if record.kind != KIND_SEQUENCES:
        _other_kind(ledger, record)
        return
    schema = record.schema
    st.caption(f"Dataset `{record.name}` · {schema.n_items} items in its declared (public) "
               f"alphabet · l1 = {schema.l1}"
               + (" · public demo data" if record.public_demo else "")
               + ". A pattern is frequent when at least a share θ of the records contain its "
               "items in that order (gaps allowed).")
    st.subheader("Run")
    reading = render_sequence_form(record)
    render_sequence_launch(ledger, record, reading)
    st.divider()
    render_sequence_results(ledger, record)


def _run_label(run: RunRecord) -> str:
    """A stored run in the picker (plain text: a select box shows no Markdown)."""
    status = {"done": "", "failed": " · failed", "charged": " · running"}.get(run.status, "")
    theta = run.params.get("theta")
    return (f"{run.created_at[:16].replace('T', ' ')} · {ALGORITHM_LABELS[run.algorithm]} · "
            f"ε = {fmt_eps(run.epsilon)} · θ = {theta:g}{status} · {run.run_id[:8]}"
            if isinstance(theta, (int, float)) else f"{run.run_id[:8]}{status}")


def render_sequence_results(ledger: Ledger, record: DatasetRecord) -> None:
    """The results section: pick a stored run, read its release (0 ε), export it."""
    st.subheader("Results")
    role = current_role()
    runs = sequence_runs(ledger, record.name, role)
    if not runs:
        st.info("No frequent-sequence run on this dataset yet. Launch one above; its result "
                "is stored in the ledger and shown here.")
        return
    ids = [r.run_id for r in runs]
    pending = st.session_state.get(PICK_KEY, {}).get(record.name)
    if pending in ids and st.session_state.get("_seq_pick_applied") != pending:
        st.session_state[RUN_KEY] = pending            # a run just launched here
        st.session_state["_seq_pick_applied"] = pending
    if st.session_state.get(RUN_KEY) not in ids:
        st.session_state[RUN_KEY] = ids[0]
    by_id = {r.run_id: r for r in runs}
    run_id = st.selectbox("Stored run", ids, key=RUN_KEY,
                          format_func=lambda i: _run_label(by_id[i]),
                          help="This dataset's frequent-sequence runs, those with results "
                               "first, newest first. Reading a stored run costs 0 ε.")
    render_sequence_result(ledger, record, run_id)


def render_sequence_result(ledger: Ledger, record: DatasetRecord, run_id: str) -> None:
    """What stored run ``run_id`` released (0 ε), with the truth beside it where allowed."""
    truth_allowed = can_see_truth(record)
    try:
        result = load_result(ledger, run_id, requester=current_requester(),
                             include_diagnostics=truth_allowed)
    except RunInProgressError:
        st.info("This run is still being computed; its result appears when it is stored.")
        return
    except DpcoreError as exc:
        st.error(hide_server_paths(str(exc), ledger))
        return
    _show_result(record, result, truth_allowed)


def _show_result(record: DatasetRecord, result: SequenceRunResult, truth_allowed: bool
                 ) -> None:
    st.caption(f"{ALGORITHM_LABELS[result.algorithm]} · {MODE_LABELS[result.mode]} · "
               f"ε = {fmt_eps(result.epsilon)} charged · θ = {result.params.get('theta'):g} · "
               f"version {result.version}"
               + (f" · demo seed {result.seed}" if result.seed is not None else ""))
    if result.mode == FAITHFUL:
        st.warning("Faithful run: these outputs are **not ε-DP** at the steps "
                   + ", ".join(result.not_dp) + ".")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Frequent patterns", len(result.patterns))
    if result.mode == FAITHFUL:
        c2.metric("Longest frequent length L_f", result.max_frequent_length)
    else:  # strict: from noisy record lengths, an upper bound on the longest frequent length
        c2.metric("Levels allowed L_f (upper bound)", result.max_frequent_length,
                  help="The longest length whose noisy count of records at least that "
                       "long reaches θ·N̂. A pattern fits only in records at least as long "
                       "as itself, so no longer pattern can be frequent (up to the noise); "
                       "the frequent patterns may stop earlier.")
    c3.metric("lmax (items)", result.lmax)
    c4.metric("Noisy number of records N̂", f"{result.noisy_records:,.0f}")
    if not result.patterns:
        st.info("No pattern reached the threshold: try a lower θ or a larger ε.")
        return
    paths = top_paths(result)
    if paths:
        st.markdown("**Most frequent paths**  \n" + "  \n".join(
            f"{pattern_text(p.names)} — noisy support {p.noisy_support:,.0f}"
            + (f" (90 %: {p.support_low:,.0f}–{p.support_high:,.0f})"
               if p.support_low is not None else "")
            + (f" — {'; '.join(p.flags)}" if p.flags else "")
            for p in paths))
    for warning in result.warnings:
        st.warning(warning)
    st.markdown("**Frequent patterns** (noisy supports in records; click a column to sort)")
    st.dataframe(pattern_frame(result), hide_index=True, width="stretch",
                 column_config={"noisy support": st.column_config.NumberColumn(format="%.0f")})
    c1, c2 = st.columns([2, 3])
    c1.plotly_chart(length_chart(result), key="seq_length_chart")
    c2.plotly_chart(prefix_tree(result), key="seq_prefix_tree")
    with st.expander("Levels: candidates, pruning and verification (from DP outputs)"):
        st.dataframe(level_frame(result), hide_index=True, width="stretch")
        budget = result.run_budget()
        if budget is not None and budget.refunded_nano:
            st.caption(f"The run stopped before level L_f on released values; ε = "
                       f"{fmt_eps(budget.refunded)} of its charge was not used and was "
                       "returned to the dataset's budget.")
        elif result.unspent_nano:
            st.caption(f"The run stopped before level L_f; ε = "
                       f"{fmt_eps(result.unspent_nano / 10**9)} of its charge was not used "
                       "(and, the run not being strict, not returned).")
    st.markdown("**Export** (the release only; 0 ε)")
    c1, c2 = st.columns(2)
    stem = f"{result.dataset}_sequences_{result.run_id[:8]}"
    c1.download_button("Download CSV", export_csv(result), file_name=f"{stem}.csv",
                       mime="text/csv", key="seq_export_csv", on_click="ignore")
    c2.download_button("Download JSON", export_json(result), file_name=f"{stem}.json",
                       mime="application/json", key="seq_export_json", on_click="ignore")
    if truth_allowed:
        _truth_section(record, result)
    else:
        st.session_state.pop(_TRUTH_KEY, None)      # e.g. after the owner logged out


def _truth_section(record: DatasetRecord, result: SequenceRunResult) -> None:
    """True vs noisy supports, what was missed, F-score, relative error — NOT private."""
    st.subheader("Against the truth (owner / public demo only — NOT private)")
    # Kept per session and run (a stored result never changes); exact mining can take
    # seconds on dense data. Only sessions allowed to see the truth ever reach here.
    cache = st.session_state.setdefault(_TRUTH_KEY, {})
    try:
        data = load_data(record)
        truth = cache.get(result.run_id)
        if truth is None:
            with st.spinner("Mining the exact frequent sequences of the true records…"):
                truth = evaluate_against_truth(result, data)
            cache[result.run_id] = truth
    except (DataError, DpcoreError) as exc:
        st.error(f"The true data could not be read: {exc}")
        return
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("F-score", _fmt(truth.f_score))
    c2.metric("Precision", _fmt(truth.precision))
    c3.metric("Recall", _fmt(truth.recall))
    c4.metric("Median relative error", _fmt(truth.median_relative_error, percent=True))
    scope = ("" if truth.complete else
             f" of length ≤ {truth.compared_length} (longer ones were not enumerated: too "
             "many)")
    st.caption(f"Against the {len(truth.exact)} truly frequent patterns{scope} at θ = "
               f"{result.params['theta']:g}, support ≥ {truth.threshold} records (exact "
               f"mining on the true records); {len(truth.missed)} missed (pruned, below "
               f"the noisy threshold or past a level's cap), {len(truth.false)} released but "
               "not truly frequent.")
    st.dataframe(truth_frame(result, truth), hide_index=True, width="stretch",
                 column_config={"relative error": st.column_config.NumberColumn(
                     format="percent")})
    if truth.missed:
        with st.expander(f"Missed: {len(truth.missed)} truly frequent patterns not released"):
            st.dataframe(missed_frame(truth, data.schema.alphabet), hide_index=True,
                         width="stretch")


def _fmt(value: float, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.1%}" if percent else f"{value:.3f}"
