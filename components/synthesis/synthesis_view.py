"""The Synthesis page: table datasets, stored runs, and what a synthesis run released.

Who sees what (decided by :func:`components.common.session.can_see_truth`, i.e. the policy's
:func:`dpcore.privacy.roles.can_see_true_statistics`, never here):

* **everyone** (analysts included): the synthetic table — a DP release in strict mode — its
  preview, per-feature histograms, its pairwise association heat map, its CSV and Parquet
  files; the noisy class counts; the feature groups and the DP association strengths the
  run released (strict runs that built their groups from data). A faithful run on private
  data is the owner's only (:func:`dpcore.runs.load_result` refuses it to analysts).
* **owners, and everyone on public demo data**: the real table's histograms overlaid on the
  synthetic ones, the real table's association heat map, the true class counts, and the
  utility report (:mod:`dpcore.synthesis.utility`: classifiers trained and tested on the
  real table — NOT private).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.data.table.schema import TableSchema
from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import ALGORITHM_LABELS, FAITHFUL, KIND_TABLE
from dpcore.runs import RunInProgressError, load_registered, load_result, readable_runs
from dpcore.synthesis.intervals import result_intervals
from dpcore.synthesis.results import SynthesisResult
from dpcore.synthesis.utility import REAL, standard_methods, summary_table, utility_report

from ..common.budget_meter import fmt_eps
from ..common.data_locations import hide_server_paths
from ..common.family_pages import render_other_kind
from ..common.session import can_see_truth, current_requester, current_role, dataset_records
from .synthesis_charts import (
    association_heatmap,
    association_matrix,
    class_count_table,
    csv_bytes,
    download_name,
    histogram_figure,
    marginal_table,
    parquet_bytes,
    released_association,
)
from .synthesis_form import synthesis_algorithms
from .synthesis_launch import SHOWN_KEY

__all__ = ["is_table", "render_kind_gate", "stored_runs", "render_stored_run_picker",
           "render_synthesis_result", "UTILITY_KEY", "PREVIEW_ROWS"]

UTILITY_KEY = "syn_utility"
#: Rows of the synthetic table shown in the preview (the download has them all).
PREVIEW_ROWS = 200
_HIST_COLUMNS = 3


def is_table(record: DatasetRecord | None) -> bool:
    """Whether ``record`` holds a labelled table (the kind synthesis works on)."""
    return record is not None and record.kind == KIND_TABLE


def render_kind_gate(ledger: Ledger, record: DatasetRecord | None) -> DatasetRecord | None:
    """Return ``record`` if it is a table; otherwise say so and offer the table datasets
    (choosing one makes it the current dataset, so the budget meter follows)."""
    if is_table(record):
        return record
    tables = [r.name for r in dataset_records(ledger) if is_table(r)]
    if record is not None:
        render_other_kind(record, after="Synthesis makes private copies of labelled tables; "
                                        "pick one below.")
    if not tables:
        st.warning("No table dataset is registered. An owner can register one (a CSV or "
                   "Parquet file with a declared label column and public feature bounds).")
        return None
    c1, c2 = st.columns([3, 1])
    choice = c1.selectbox("Table datasets", tables, key="syn_table_pick")
    if c2.button("Use this dataset", key="syn_use_table"):
        st.session_state["_select_dataset"] = choice     # the sidebar picker applies it
        st.rerun()
    return None


def stored_runs(ledger: Ledger, record: DatasetRecord) -> list:
    """The dataset's synthesis runs with a stored result this role may read, newest first."""
    algorithms = set(synthesis_algorithms())
    runs = [r for r in readable_runs(ledger, record.name, current_role())
            if r.algorithm in algorithms and r.status == "done"]
    return list(reversed(runs))


def _run_label(run) -> str:
    params = run.params or {}
    eps = params.get("epsilon")
    mode = params.get("mode", "")
    eps_text = f"ε = {eps:g}" if isinstance(eps, (int, float)) else ""
    return (f"{ALGORITHM_LABELS.get(run.algorithm, run.algorithm)} · {eps_text} · {mode} · "
            f"{str(run.created_at)[:19]} · {run.run_id[:8]}")


def render_stored_run_picker(ledger: Ledger, record: DatasetRecord) -> str | None:
    """A picker of the dataset's stored synthesis runs (newest first); the chosen run id."""
    runs = stored_runs(ledger, record)
    if not runs:
        st.caption("No synthesis run is stored for this dataset yet.")
        return None
    ids = [r.run_id for r in runs]
    labels = {r.run_id: _run_label(r) for r in runs}
    shown = st.session_state.pop(SHOWN_KEY, None)          # a run just stored: show it
    if shown in ids:
        st.session_state["syn_run_pick"] = shown
    elif st.session_state.get("syn_run_pick") not in ids:
        st.session_state["syn_run_pick"] = ids[0]
    return st.selectbox(f"Stored synthesis runs of `{record.name}` ({len(runs)}, newest first)",
                        ids, key="syn_run_pick", format_func=labels.get,
                        help="Reopening a stored run costs nothing: its result is read from "
                             "the ledger.")


def _load(ledger: Ledger, record: DatasetRecord, run_id: str) -> SynthesisResult | None:
    try:
        return load_result(ledger, run_id, requester=current_requester(),
                           include_diagnostics=can_see_truth(record))
    except RunInProgressError as exc:
        st.info(str(exc))
    except DpcoreError as exc:
        st.error(hide_server_paths(str(exc), ledger))
    return None


def render_synthesis_result(ledger: Ledger, record: DatasetRecord, run_id: str) -> None:
    """Everything one stored run released, and (owners, public demos) how it compares with
    the real table."""
    result = _load(ledger, record, run_id)
    if result is None:
        return
    schema = record.schema
    truth = can_see_truth(record)
    label = ALGORITHM_LABELS.get(result.algorithm, result.algorithm)
    st.subheader(f"{label} · ε = {fmt_eps(result.epsilon)} · {result.mode}")
    if result.mode == FAITHFUL or result.not_dp:
        st.warning("This run is **not ε-DP** (faithful mode): "
                   + "; ".join(result.not_dp) + ".")
    st.caption(f"Run `{result.run_id[:8]}` · {len(result.synthetic)} synthetic rows · "
               f"{len(result.feature_groups)} feature groups · created {result.created_at}"
               + (f" · demo seed {result.seed}" if result.seed is not None else ""))

    real = _real_frame(ledger, record) if truth else None
    true_counts = result.diagnostics.true_class_counts if truth else None
    c1, c2 = st.columns([4, 9])
    c1.markdown("**Rows per class**")
    c1.dataframe(class_count_table(result, true_counts or None), hide_index=True)
    c2.markdown(f"**Synthetic table** (first {min(PREVIEW_ROWS, len(result.synthetic))} of "
                f"{len(result.synthetic)} rows)")
    c2.dataframe(result.synthetic.head(PREVIEW_ROWS), hide_index=True, height=260)
    d1, d2, _ = st.columns([1, 1, 2])
    d1.download_button("Download CSV", csv_bytes(result), file_name=download_name(result, "csv"),
                       mime="text/csv", key="syn_download_csv")
    d2.download_button("Download Parquet", parquet_bytes(result),
                       file_name=download_name(result, "parquet"),
                       mime="application/vnd.apache.parquet", key="syn_download_parquet")
    st.caption("The synthetic table is generated from noisy statistics only (a DP release in "
               "strict mode): viewing and downloading it costs 0 ε. The Parquet file carries "
               "the run's parameters, ε and mechanism calls in its metadata.")

    if result_intervals(result) is not None:
        c1.caption("“true rows ≥ / ≤”: the 90 % interval of each class's true row count, "
                   "from the released count and its public noise scale only (0 ε); each "
                   "interval holds with at least 90 % probability, exactly (discrete "
                   "Laplace quantile), not jointly for all classes.")

    _render_associations(result, schema, real)
    _render_histograms(result, schema, real)
    _render_marginals(result)
    if truth:
        _render_utility(ledger, record, result)


def _render_marginals(result: SynthesisResult) -> None:
    """The floor's released class × bin histograms with their 90 % intervals (0 ε)."""
    table = marginal_table(result)
    if table is None:
        return
    st.markdown("#### Released marginals (class × bin counts) with 90 % intervals")
    st.caption("Each noisy count is a DP release (raw: it may be negative); the interval "
               "holds the true count with at least 90 % probability (exact discrete Laplace "
               "quantile at the release's public scale, 0 ε), one count at a time: about "
               "one in ten may fall outside.")
    st.dataframe(table, hide_index=True, height=300)


def _real_frame(ledger: Ledger, record: DatasetRecord) -> pd.DataFrame | None:
    """The registered real table (owners and public demos only; the caller checks)."""
    try:
        return load_registered(record).to_frame()
    except DpcoreError as exc:
        st.warning("The real table could not be loaded for comparison: "
                   + hide_server_paths(str(exc), ledger))
        return None


def _render_associations(result: SynthesisResult, schema: TableSchema,
                         real: pd.DataFrame | None) -> None:
    st.markdown("#### Feature groups and associations")
    groups = "; ".join("{" + ", ".join(g) + "}" for g in result.feature_groups)
    st.caption(f"Feature groups modelled jointly: {groups}. Association on [0, 1]: |r| "
               "between numeric features, the correlation ratio or Cramér's V with "
               "categoricals.")
    released = released_association(result)
    cols = st.columns(3 if real is not None else 2)
    if released is not None:
        cols[0].plotly_chart(association_heatmap(
            released, schema, groups=result.feature_groups,
            title="Released (DP), groups outlined"), key="syn_heat_dp")
    else:
        cols[0].info("This run released no association strengths: its feature groups were "
                     "given, or it models every feature alone (the floor), or it is a "
                     "faithful run (raw correlations, not released).")
    cols[1].plotly_chart(association_heatmap(
        association_matrix(result.synthetic, schema), schema, groups=result.feature_groups,
        title="Synthetic table"), key="syn_heat_synthetic")
    if real is not None:
        cols[2].plotly_chart(association_heatmap(
            association_matrix(real, schema), schema, groups=result.feature_groups,
            title="Real table (not private)"), key="syn_heat_real")


def _render_histograms(result: SynthesisResult, schema: TableSchema,
                       real: pd.DataFrame | None) -> None:
    st.markdown("#### Per-feature histograms"
                + (" — synthetic over real (not private)" if real is not None else ""))
    cols = st.columns(_HIST_COLUMNS)
    for i, name in enumerate(schema.feature_names):
        cols[i % _HIST_COLUMNS].plotly_chart(
            histogram_figure(name, schema, result.synthetic, real), key=f"syn_hist_{i}")


def _render_utility(ledger: Ledger, record: DatasetRecord, result: SynthesisResult) -> None:
    """The paper's two classifier scenarios at this run's ε, k and groups (NOT private)."""
    st.markdown("#### Utility report (not private: trains and tests on the real table)")
    st.caption("Scenario 1 trains on 80 % of the real table and tests on a table synthesised "
               "from the other 20 %; scenario 2 trains on a table synthesised from 80 % and "
               "tests on the real 20 %. Each synthetic table here comes from a sandbox "
               "accountant, not the ledger: nothing is charged. The floor (independent noisy "
               "marginals per class) is what any method modelling correlations must beat.")
    c1, c2 = st.columns([1, 3])
    rounds = c1.number_input("Random splits", min_value=1, max_value=20, value=2, step=1,
                             key="syn_utility_rounds")
    cached = st.session_state.get(UTILITY_KEY)
    if cached is not None and cached["run_id"] == result.run_id and cached["rounds"] == rounds:
        st.dataframe(cached["table"])
        return
    if not c2.button("Compute the utility report", key="syn_utility_button"):
        return
    params = result.params
    methods = standard_methods(result.epsilon, k=int(params.get("k", 100)),
                               feature_groups=params.get("feature_groups"),
                               include_faithful=result.mode == FAITHFUL)
    bar = st.progress(0.0, text="starting…")
    try:
        table = load_registered(record)
        report = utility_report(table, methods, rounds=int(rounds),
                                progress=lambda f, m: bar.progress(min(max(f, 0.0), 1.0), m))
    except DpcoreError as exc:
        st.error("The utility report could not be computed: "
                 + hide_server_paths(str(exc), ledger))
        return
    wide = summary_table(report).reset_index()
    st.session_state[UTILITY_KEY] = {"run_id": result.run_id, "rounds": rounds, "table": wide}
    st.dataframe(wide)
    st.caption(f"Rows '{REAL}' train and test on real records only.")
