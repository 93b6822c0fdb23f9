"""The Runs page: history of a dataset's runs and a side-by-side comparison.

Counts "kept" use the pruning threshold chosen on Explore (post-processing, 0 ε).
Everything shown is public metadata (parameters, ε charged, status) or DP
releases read from the ledger. Runs of the tree miners and of Serenade can be
compared side by side: the parameter table marks with "—" a parameter that a
run's algorithm does not use.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.privacy.policy import can_read
from dpcore.redescriptions.results import RunResult
from dpcore.registry import ALGORITHM_LABELS, PARAMETER_SYMBOLS, STRICT, algorithm_spec
from dpcore.roles import ANALYST
from dpcore.runs import load_result

from .budget_meter import fmt_eps
from .explore_view import get_threshold
from .scatter import run_label
from .session import current_role

__all__ = ["history_frame", "comparison_params_frame", "render_runs"]

#: Marks a parameter the run's algorithm (in its mode) does not use.
NOT_USED = "—"


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


def history_frame(runs: list[RunRecord], results: dict[str, RunResult],
                  threshold: float, role: str = ANALYST) -> pd.DataFrame:
    """One row per run: when, what, ε charged, status, counts before/after pruning.

    Owner-only runs (faithful runs on private data) are listed with their charge (the
    budget is public), but their error messages only for the owner (``role``).
    """
    rows = []
    for run in runs:
        result = results.get(run.run_id)
        before = after = None
        if result is not None:
            before = len(result.redescriptions)
            after = sum(1 for r in result.redescriptions if r.support_both >= threshold)
        rows.append({"started": run.created_at[:19].replace("T", " "), "run": run.run_id[:8],
                     "algorithm": ALGORITHM_LABELS.get(run.algorithm, run.algorithm),
                     "mode": run.params.get("mode", STRICT),
                     "ε requested": run.params.get("epsilon"), "ε charged": run.epsilon,
                     "parameters": algorithm_spec(run.algorithm).summary(run.params),
                     "status": run.status + (" (owner only)" if run.audience == "owner" else ""),
                     "redescriptions": before, "kept at threshold": after,
                     "error": (run.error or "") if can_read(run.audience, role) else ""})
    return pd.DataFrame(rows)


def render_runs(ledger: Ledger, record: DatasetRecord) -> None:
    """Draw the Runs page for ``record``."""
    runs = list(reversed(ledger.list_runs(record.name)))
    if not runs:
        st.info("No run on this dataset yet: launch one on the **Mine** page.")
        return
    threshold = get_threshold(record.name)
    results: dict[str, RunResult] = {}
    for run in runs:
        if run.status == "done" and can_read(run.audience, current_role()):
            try:
                results[run.run_id] = load_result(ledger, run.run_id, role=current_role())
            except DpcoreError as exc:
                st.warning(f"Run {run.run_id[:8]}: {exc}")
    total = sum(r.epsilon for r in runs)
    st.markdown(f"{len(runs)} runs, ε = {fmt_eps(total)} charged in all. Counts after pruning "
                f"use the current threshold **{threshold:g}** (set on Explore; 0 ε).")
    st.dataframe(history_frame(runs, results, threshold, current_role()), hide_index=True,
                 column_config={"ε charged": st.column_config.NumberColumn(format="%.6g")})

    done = [r for r in runs if r.run_id in results]
    if len(done) < 2:
        st.caption("Finish at least two runs to compare them side by side.")
        return
    st.subheader("Compare runs")
    labels = {r.run_id: run_label(r) for r in done}
    options = [r.run_id for r in done]
    if not set(st.session_state.get("runs_compare") or []) <= set(options):
        st.session_state.pop("runs_compare", None)
    chosen = st.multiselect("Runs to compare", options, default=options[:2],
                            key="runs_compare", format_func=labels.get)
    if len(chosen) < 2:
        st.caption("Pick two or more runs.")
        return
    only_kept = st.toggle("Only kept redescriptions (at the current threshold)",
                          key="runs_only_kept")
    counts = go.Figure()
    names = [labels[c] for c in chosen]
    before = [len(results[c].redescriptions) for c in chosen]
    after = [sum(1 for r in results[c].redescriptions if r.support_both >= threshold)
             for c in chosen]
    counts.add_trace(go.Bar(x=names, y=before, name="before pruning"))
    counts.add_trace(go.Bar(x=names, y=after, name=f"kept (≥ {threshold:g})"))
    counts.update_layout(barmode="group", height=320, margin=dict(l=10, r=10, t=30, b=10),
                         title="Redescriptions per run", yaxis_title="count")
    violins = go.Figure()
    for c in chosen:
        reds = results[c].redescriptions
        if only_kept:
            reds = [r for r in reds if r.support_both >= threshold]
        violins.add_trace(go.Violin(y=[r.jaccard for r in reds], name=labels[c],
                                    box_visible=True, meanline_visible=True, points="all"))
    violins.update_layout(height=380, margin=dict(l=10, r=10, t=30, b=10), showlegend=False,
                          title="Noisy Jaccard per run", yaxis_title="noisy J")
    c1, c2 = st.columns(2)
    c1.plotly_chart(counts, key="runs_counts")
    c2.plotly_chart(violins, key="runs_violins")
    st.dataframe(comparison_params_frame([results[c] for c in chosen],
                                         [labels[c] for c in chosen]), key="runs_params")
