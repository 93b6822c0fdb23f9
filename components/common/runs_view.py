"""The Runs page: history of a dataset's runs and a side-by-side comparison.

Counts "kept" are post-processing (0 ε) at each run's own threshold: the one chosen
(or suggested) on Explore for the runs Explore shows, and for every other run its own
suggested threshold (:func:`dpcore.redescriptions.pruning.suggest_threshold` of that run
alone, from released values only) — one algorithm's threshold is no yardstick for
another's noise. Everything shown is public metadata (parameters, ε charged, status) or DP
releases read from the ledger. Runs of the tree miners and of Serenade can be
compared side by side: the parameter table marks with "—" a parameter that a
run's algorithm does not use.

On a sequence dataset or a labelled table the page lists the runs from the ledger's run
records alone (when, which algorithm, ε charged, status, parameters, errors) and points to
the family's page, where each release is read (0 ε).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.privacy.policy import can_read
from dpcore.privacy.roles import ANALYST
from dpcore.redescriptions.results import RunResult
from dpcore.registry import (
    ALGORITHM_LABELS,
    KIND_TWO_VIEW,
    PARAMETER_SYMBOLS,
    REDESCRIPTIONS,
    STRICT,
    algorithm_spec,
    family_algorithms,
    tree_score_of,
)
from dpcore.runs import load_result

from .budget_meter import fmt_eps
from .data_locations import hide_server_paths
from .family_pages import page_for
from .session import current_requester, current_role
from .threshold import DEFAULT_TOLERANCE, get_threshold, suggested_threshold, threshold_runs
from .unfinished_runs import render_unfinished_runs, status_text

__all__ = ["run_label", "history_frame", "family_history_frame", "runs_count",
           "comparison_params_frame", "parameter_summary",
           "run_thresholds", "default_comparison", "jaccard_violins", "render_runs"]

#: Marks a parameter the run's algorithm (in its mode) does not use.
def run_label(result_or_record) -> str:
    """A short readable label of a run: algorithm, ε, mode and id."""
    algorithm = ALGORITHM_LABELS.get(result_or_record.algorithm, result_or_record.algorithm)
    params = getattr(result_or_record, "params", {}) or {}
    mode = getattr(result_or_record, "mode", None) or params.get("mode", STRICT)
    eps = params.get("epsilon")
    eps_text = f"ε={eps:g}" if isinstance(eps, (int, float)) else ""
    return f"{algorithm} {eps_text} {mode} · {result_or_record.run_id[:8]}".replace("  ", " ")


NOT_USED = "—"


def parameter_summary(algorithm: str, params: dict) -> str:
    """The run's main parameters in one line (:meth:`dpcore.registry.AlgorithmSpec.summary`),
    with the tree-pair score for an algorithm that has the choice in some mode.

    The score is read with :func:`dpcore.registry.tree_score_of`: a faithful run and a
    result stored before the choice existed used the paper's score. A demo seed stays last.
    """
    spec = algorithm_spec(algorithm)
    if not any("tree_score" in used for used in spec.parameters.values()):
        return spec.summary(params)
    score = f"{PARAMETER_SYMBOLS['tree_score']} {tree_score_of(params)}"
    seed = params.get("seed")
    return ", ".join([spec.summary({**params, "seed": None}), score]
                     + ([f"demo seed {seed}"] if seed is not None else []))


def comparison_params_frame(results: list[RunResult], labels: list[str]) -> pd.DataFrame:
    """Parameters of the compared runs as text: one row per parameter, one column per run.

    Rows are the parameters used by at least one of the runs (algorithm first); a
    cell is :data:`NOT_USED` where that run's algorithm does not use the parameter.
    """
    used_by = [set(algorithm_spec(r.algorithm).parameters_used(r.mode)) for r in results]
    names = ["algorithm"]
    for r in results:
        names += [n for n in algorithm_spec(r.algorithm).parameters_used(r.mode)
                  if n not in names]
    columns = {}
    for result, label, used in zip(results, labels, used_by):
        cells = {"algorithm": ALGORITHM_LABELS.get(result.algorithm, result.algorithm)}
        for name in names[1:]:
            value = result.params.get(name)
            cells[name] = str(value) if name in used and value is not None else NOT_USED
        columns[label] = cells
    index = ["algorithm"] + [f"{PARAMETER_SYMBOLS.get(n, n)} ({n})"
                             if PARAMETER_SYMBOLS.get(n, n) != n else n for n in names[1:]]
    frame = pd.DataFrame(columns, index=names)
    frame.index = index
    return frame


def run_thresholds(results: dict[str, RunResult], explore_runs: tuple[str, ...],
                   explore_threshold: float, tolerance: float = DEFAULT_TOLERANCE
                   ) -> dict[str, tuple[float, str]]:
    """Each run's pruning threshold and where it comes from (0 ε).

    Runs shown on Explore use its threshold (``"Explore"``); every other run its own
    suggested threshold at ``tolerance`` (``"suggested"``), or 0 when it has none.
    """
    out = {}
    for run_id, result in results.items():
        if run_id in explore_runs:
            out[run_id] = (float(explore_threshold), "Explore")
        else:
            own = suggested_threshold({run_id: result}, tolerance)
            out[run_id] = (own, "suggested") if own is not None else (0.0, "none")
    return out


def _kept(result: RunResult, threshold: float) -> int:
    return sum(1 for r in result.redescriptions if r.support_both >= threshold)


def default_comparison(done: list[RunRecord], results: dict[str, RunResult],
                       explore_runs: tuple[str, ...] = ()) -> list[str]:
    """The runs compared by default (``done`` is newest first): the runs Explore shows, if
    two or more of them are done — what the analyst is looking at; else the two newest
    that released redescriptions, topped up with the newest others if fewer have any."""
    shown = [r.run_id for r in done if r.run_id in explore_runs]
    if len(shown) >= 2:
        return shown
    with_results = [r.run_id for r in done if results[r.run_id].redescriptions]
    others = [r.run_id for r in done if r.run_id not in with_results]
    return (with_results + others)[:2]


def jaccard_violins(results: list[RunResult], names: list[str],
                    thresholds: list[float] | None = None) -> go.Figure:
    """Noisy Jaccard per run: violins that stop at the data (a Jaccard lies in [0, 1],
    and so does the axis). ``thresholds``: keep only redescriptions at or above each."""
    fig = go.Figure()
    for i, (result, name) in enumerate(zip(results, names)):
        reds = result.redescriptions
        if thresholds is not None:
            reds = [r for r in reds if r.support_both >= thresholds[i]]
        fig.add_trace(go.Violin(y=[r.jaccard for r in reds], name=name, box_visible=True,
                                meanline_visible=True, points="all", spanmode="hard"))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=30, b=10), showlegend=False,
                      title="Noisy Jaccard per run", yaxis_title="noisy J")
    fig.update_yaxes(range=[-0.02, 1.02])
    return fig


def history_frame(runs: list[RunRecord], results: dict[str, RunResult],
                  thresholds: dict[str, tuple[float, str]] | float,
                  role: str = ANALYST, ledger: Ledger | None = None) -> pd.DataFrame:
    """One row per run: when, what, ε charged, status, counts before/after pruning.

    ``thresholds``: run id → (threshold, its source), see :func:`run_thresholds` (one
    number applies to every run). Owner-only runs (faithful runs on private data) are
    listed with their charge (the budget is public), but their error messages only for
    the owner (``role``). With ``ledger``, every server path in an error message is
    replaced by what a user may see (:func:`components.common.data_locations.hide_server_paths`).
    """
    rows = []
    for run in runs:
        result = results.get(run.run_id)
        before = after = threshold = source = None
        if result is not None:
            if isinstance(thresholds, dict):
                threshold, source = thresholds.get(run.run_id, (0.0, "none"))
            else:
                threshold, source = float(thresholds), "Explore"
            before = len(result.redescriptions)
            after = _kept(result, threshold)
        # the columns that compare runs first; the long texts last (the table scrolls)
        rows.append({"started": run.created_at[:19].replace("T", " "), "run": run.run_id[:8],
                     "account": run.account or "",
                     "algorithm": ALGORITHM_LABELS.get(run.algorithm, run.algorithm),
                     "mode": run.params.get("mode", STRICT), "ε charged": run.epsilon,
                     "ε returned": run.refunded_nano / 10**9,
                     "status": status_text(run) + (" (owner only)" if run.audience == "owner"
                                                   else ""),
                     "redescriptions": before, "threshold": threshold,
                     "threshold from": source, "kept at threshold": after,
                     "ε requested": run.params.get("epsilon"),
                     "parameters": parameter_summary(run.algorithm, run.params),
                     "error": _error_text(run, role, ledger)})
    return pd.DataFrame(rows)


def runs_count(n: int) -> str:
    """"1 run", "3 runs"."""
    return f"{n} run" + ("" if n == 1 else "s")


def _error_text(run: RunRecord, role: str, ledger: Ledger | None) -> str:
    """The run's error message for ``role`` (empty when it may not read it), without paths."""
    if not run.error or not can_read(run.audience, role):
        return ""
    return hide_server_paths(run.error, ledger) if ledger is not None else run.error


def family_history_frame(runs: list[RunRecord], role: str = ANALYST,
                         ledger: Ledger | None = None) -> pd.DataFrame:
    """One row per run of any family from the ledger's run records alone (no result read):
    when, who (the account that spent), what, ε charged and returned (the unspent part
    of a run that stopped early), status, the requested ε, the
    parameters and, for who may read
    it, the error without server paths. Public metadata only (budgets are public)."""
    return pd.DataFrame([
        {"started": run.created_at[:19].replace("T", " "), "run": run.run_id[:8],
         "account": run.account or "",
         "algorithm": ALGORITHM_LABELS.get(run.algorithm, run.algorithm),
         "mode": run.params.get("mode", STRICT), "ε charged": run.epsilon,
         "ε returned": run.refunded_nano / 10**9,
         "status": status_text(run) + (" (owner only)" if run.audience == "owner" else ""),
         "ε requested": run.params.get("epsilon"),
         "parameters": parameter_summary(run.algorithm, run.params),
         "error": _error_text(run, role, ledger)} for run in runs])


def _render_family_runs(ledger: Ledger, record: DatasetRecord, runs: list[RunRecord]
                        ) -> None:
    """The run history of a sequence or table dataset; its releases are read on its page."""
    page = page_for(record)
    returned = sum(r.refunded_nano for r in runs) / 10**9
    st.markdown(f"{runs_count(len(runs))}, ε = {fmt_eps(sum(r.epsilon for r in runs))} charged in "
                "all" + (f", ε = {fmt_eps(returned)} of it returned unspent" if returned else "")
                + "." + (f" Open the **{page}** page to read a run's release (0 ε)."
                          if page else ""))
    st.dataframe(family_history_frame(runs, current_role(), ledger), hide_index=True,
                 key="runs_history", width="stretch", placeholder=NOT_USED,
                 column_config={
                     "ε charged": st.column_config.NumberColumn(format="%.6g"),
                     "ε returned": st.column_config.NumberColumn(format="%.6g"),
                     "algorithm": st.column_config.TextColumn(width="medium"),
                     "status": st.column_config.TextColumn(width="medium"),
                     "parameters": st.column_config.TextColumn(width="large"),
                     "error": st.column_config.TextColumn(width="large")})


def render_runs(ledger: Ledger, record: DatasetRecord) -> None:
    """Draw the Runs page for ``record`` (any kind; runs are compared side by side on
    two-view datasets, whose runs release redescriptions)."""
    runs = list(reversed(ledger.list_runs(record.name)))
    if not runs:
        page = page_for(record) or "Mine"
        st.info(f"No run on this dataset yet: launch one on the **{page}** page.")
        return
    render_unfinished_runs(ledger, record, key="runs")
    if record.kind != KIND_TWO_VIEW:
        _render_family_runs(ledger, record, runs)
        return
    results: dict[str, RunResult] = {}
    family = set(family_algorithms(REDESCRIPTIONS))   # only these store a RunResult
    for run in runs:
        if (run.status == "done" and run.algorithm in family
                and can_read(run.audience, current_role())):
            try:
                results[run.run_id] = load_result(ledger, run.run_id, requester=current_requester())
            except DpcoreError as exc:
                st.warning(f"Run {run.run_id[:8]}: {hide_server_paths(str(exc), ledger)}")
    explore = threshold_runs(record.name)
    thresholds = run_thresholds(results, explore, get_threshold(record.name))
    total = sum(r.epsilon for r in runs)
    returned = sum(r.refunded_nano for r in runs) / 10**9
    st.markdown(f"{runs_count(len(runs))}, ε = {fmt_eps(total)} charged in all"
                + (f", ε = {fmt_eps(returned)} of it returned unspent" if returned else "")
                + ". Each run's "
                "redescriptions are counted before and after pruning at **its own** "
                "threshold: the one set on Explore for the runs Explore shows, else the "
                "run's own suggested threshold (at most 10% of what it keeps expected off by "
                f"more than {DEFAULT_TOLERANCE:g} in Jaccard; computed from released values "
                "only, 0 ε).")
    st.dataframe(history_frame(runs, results, thresholds, current_role(), ledger),
                 hide_index=True,
                 key="runs_history", width="stretch", placeholder=NOT_USED,
                 column_config={
                     "ε charged": st.column_config.NumberColumn(format="%.6g"),
                     "ε returned": st.column_config.NumberColumn(format="%.6g"),
                     "algorithm": st.column_config.TextColumn(width="medium"),
                     "status": st.column_config.TextColumn(width="medium"),
                     "threshold": st.column_config.NumberColumn(format="%.1f"),
                     "parameters": st.column_config.TextColumn(width="large"),
                     "error": st.column_config.TextColumn(width="large")})
    st.caption("A wide table: scroll it sideways (Shift + mouse wheel, or drag its scroll "
               "bar) for the requested ε, the parameters and any error; hover over a cell "
               "to read it whole.")

    done = [r for r in runs if r.run_id in results]
    if len(done) < 2:
        st.caption("Finish at least two runs to compare them side by side.")
        return
    st.subheader("Compare runs")
    labels = {r.run_id: run_label(r) for r in done}
    options = [r.run_id for r in done]
    if not set(st.session_state.get("runs_compare") or []) <= set(options):
        st.session_state.pop("runs_compare", None)
    chosen = st.multiselect("Runs to compare", options,
                            default=default_comparison(done, results, explore),
                            key="runs_compare", format_func=labels.get,
                            help="Starts with the runs Explore shows (if two or more), "
                                 "else the two newest runs that released redescriptions.")
    if len(chosen) < 2:
        st.caption("Pick two or more runs.")
        return
    only_kept = st.toggle("Only kept redescriptions (each run at its own threshold)",
                          key="runs_only_kept")
    counts = go.Figure()
    names = [labels[c] for c in chosen]
    before = [len(results[c].redescriptions) for c in chosen]
    after = [_kept(results[c], thresholds[c][0]) for c in chosen]
    counts.add_trace(go.Bar(x=names, y=before, name="before pruning"))
    counts.add_trace(go.Bar(x=names, y=after, name="kept (at each run's threshold)"))
    counts.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=30, b=10),
                         title="Redescriptions per run", yaxis_title="count")
    violins = jaccard_violins([results[c] for c in chosen], names,
                              [thresholds[c][0] for c in chosen] if only_kept else None)
    c1, c2 = st.columns(2)
    c1.plotly_chart(counts, key="runs_counts")
    c2.plotly_chart(violins, key="runs_violins")
    st.dataframe(comparison_params_frame([results[c] for c in chosen],
                                         [labels[c] for c in chosen]), key="runs_params")
