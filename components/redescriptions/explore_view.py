"""The Explore page: pick runs, choose the pruning threshold on the live scatter, inspect, export.

Results are loaded from the ledger (:func:`dpcore.runs.load_result`, without the
owner-only diagnostics) on every full rerun — never from ``st.cache_*``. The
scatter, the threshold box, the kept table, the detail with its tree-pair
diagram and the export buttons live in ONE ``@st.fragment``: moving the
threshold reruns only that fragment, not the page (the budget meter does not
change: pruning is post-processing and costs 0 ε).

The threshold is kept per dataset in session state (``prune_thresholds``) so the
Runs page counts kept redescriptions at the same threshold. Until the user chooses a
threshold for the current selection of runs (click, box or typed number), it is the
suggested one, :func:`dpcore.redescriptions.pruning.suggest_threshold` of the pooled runs at the
chosen tolerance — computed from released values only, so it also costs 0 ε.

The detail of a tree miner's redescription shows the tree pair it came from; a
Serenade redescription has no trees, so its two queries are shown as formulas with
a table of their literals. Statistics a run did not release (faithful Serenade's
supports |q_L|, |q_R| and p-value) read "not released".

The kept redescriptions are a list (:mod:`components.redescriptions.redescription_list`): sorted,
filtered, searched, near-duplicates collapsed, each with its noisy 2×2 table, a manual
keep/reject, tags and a note. These, the runs, the threshold and the list settings form
the analyst's workspace (:mod:`components.redescriptions.explore_workspace`), saved in the ledger
and restored on the next visit, exported with the JSON and importable from it — all 0 ε.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.redescriptions.intervals import EXCEEDANCE_RATE, flow_noise
from dpcore.redescriptions.listing import contingency_cells, entry_key, list_entries
from dpcore.redescriptions.pruning import prune
from dpcore.redescriptions.results import RunResult
from dpcore.registry import KIND_TWO_VIEW, REDESCRIPTIONS, family_algorithms
from dpcore.runs import load_result, readable_runs

from ..common.data_locations import hide_server_paths
from ..common.family_pages import render_other_kind
from ..common.number_fields import Bounds, number_field, number_problem
from ..common.session import current_requester, current_role
from ..common.threshold import (
    DEFAULT_TOLERANCE,
    TOLERANCE_KEY,
    get_threshold,
    set_threshold,
    set_threshold_runs,
    suggested_threshold,
    threshold_runs,
)
from .expectations import empty_result_advice
from .explore_workspace import (
    current_workspace,
    pending_threshold,
    render_import,
    render_link_note,
    render_share,
    render_workspace_name,
    save_if_changed,
)
from .export import export_csv, export_json
from .redescription_list import current_view, render_list
from .redescription_view import (
    NOT_RELEASED,
    is_released,
    is_serenade_result,
    released_text,
    render_query_formulas,
    statistics_row,
)
from .scatter import interval_rows, redescription_rows, row_id, run_label, scatter_figure
from .selection import selection_signature, threshold_from_selection
from .tree_diagram import render_tree_pair

__all__ = ["CHART_KEY", "THRESHOLD_KEY", "RUNS_KEY", "DETAIL_KEY", "TOLERANCE_KEY",
           "USE_SUGGESTED_KEY", "DEFAULT_TOLERANCE", "get_threshold", "set_threshold",
           "done_runs", "load_results", "render_explore", "kept_frame", "suggested_threshold",
           "kept_display_frame", "default_pick", "threshold_runs", "TOLERANCE_BOUNDS",
           "two_view_only"]

CHART_KEY = "explore_scatter"
THRESHOLD_KEY = "explore_threshold"
RUNS_KEY = "explore_runs"
DETAIL_KEY = "explore_detail"
USE_SUGGESTED_KEY = "explore_use_suggested"
_APPLIED_KEY = "_explore_applied_selection"
#: dataset → the (sorted) run ids for which the user chose a threshold himself.
_CHOSEN_KEY = "_explore_threshold_chosen_for"
#: A note for the user about the threshold (a refused number, an empty box).
_THRESHOLD_NOTE_KEY = "_explore_threshold_note"
_SELECTION_NOTE_KEY = "_explore_selection_note"
TOLERANCE_BOUNDS = Bounds(0.0, 1.0, low_open=True,
                          why="an error of a Jaccard, which lies in [0, 1]")

PRUNING_NOTE = ("**Pruning is post-processing: it costs 0 ε.** It only reads the released "
                "noisy statistics, so you may move the threshold as often as you like. "
                "Click a point to keep it and everything with at least its noisy support, "
                "or choose box select above the chart and drag a box over points to keep "
                "every point inside it (and everything with at least their noisy support), "
                "or type a number.")


# --------------------------------------------------------------------------- state

def _mark_chosen(dataset: str, selection_key: tuple[str, ...] | None) -> None:
    """Remember that the user chose the threshold for these runs (or forget it: None)."""
    chosen = dict(st.session_state.get(_CHOSEN_KEY, {}))
    if selection_key is None:
        chosen.pop(dataset, None)
    else:
        chosen[dataset] = selection_key
    st.session_state[_CHOSEN_KEY] = chosen


def _user_chose(dataset: str, selection_key: tuple[str, ...]) -> bool:
    return st.session_state.get(_CHOSEN_KEY, {}).get(dataset) == selection_key


def _threshold_typed(dataset: str, selection_key: tuple[str, ...]) -> None:
    """A typed threshold: a negative or empty one is refused, with the reason (shown next
    to the box), and 0 — keep everything — is used instead."""
    typed = st.session_state.get(THRESHOLD_KEY)
    problem = number_problem("Pruning threshold", typed, Bounds(0.0, None))
    if problem:
        st.session_state[_THRESHOLD_NOTE_KEY] = (
            problem + " Noisy supports are clipped at 0, so no threshold below 0 exists; "
            "the threshold is now 0 (keep everything).")
        value = 0.0
    else:
        st.session_state.pop(_THRESHOLD_NOTE_KEY, None)
        value = float(typed)
    set_threshold(dataset, value)
    _mark_chosen(dataset, selection_key)


def _use_suggested(dataset: str) -> None:
    """Button callback: back to the suggested threshold (it follows the tolerance again)."""
    _mark_chosen(dataset, None)
    st.session_state.pop(_THRESHOLD_NOTE_KEY, None)


def _runs_picked(dataset: str) -> None:
    picks = dict(st.session_state.get("explore_pick", {}))
    picks[dataset] = list(st.session_state.get(RUNS_KEY) or [])
    st.session_state["explore_pick"] = picks


# --------------------------------------------------------------------------- data

def done_runs(ledger: Ledger, dataset: str) -> list[RunRecord]:
    """Finished redescription runs of ``dataset`` this session may read, newest first.

    Only runs of the redescription family (:func:`dpcore.registry.family_algorithms`) are
    listed: their results are :class:`~dpcore.redescriptions.results.RunResult`; a
    frequent-sequence or synthesis run is read on its own family's page. Faithful runs on
    private data are the owner's only (:mod:`dpcore.privacy.policy`).
    """
    family = set(family_algorithms(REDESCRIPTIONS))
    return [r for r in reversed(readable_runs(ledger, dataset, current_role()))
            if r.status == "done" and r.algorithm in family]


def two_view_only(record: DatasetRecord, purpose: str) -> bool:
    """True when ``record`` is a two-view dataset; else show ``purpose`` (what the page does
    for two-view datasets) and the page that mines the dataset's kind, and return False."""
    if record.kind == KIND_TWO_VIEW:
        return True
    render_other_kind(record, before=purpose)
    return False


def load_results(ledger: Ledger, run_ids: list[str]) -> dict[str, RunResult]:
    """DP releases of the given runs, read from the ledger (no owner diagnostics)."""
    return {rid: load_result(ledger, rid, requester=current_requester()) for rid in run_ids}


def kept_frame(rows: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kept, pruned) rows at ``threshold`` via :func:`dpcore.redescriptions.pruning.prune`."""
    kept, pruned = prune(list(rows.itertuples(index=False)), threshold,
                         support=lambda r: r.support)
    return (pd.DataFrame(kept, columns=rows.columns), pd.DataFrame(pruned, columns=rows.columns))


def kept_display_frame(table: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The kept table's columns, and whether its p-values had to become text.

    When some redescription has no released p-value (faithful Serenade), the
    p-value column is formatted as text with "not released" in those cells;
    otherwise it stays numeric (so it sorts as numbers).
    """
    shown = table[["row_id", "left", "right", "support", "jaccard", "pvalue", "run"]]
    if all(is_released(p) for p in shown["pvalue"]):
        return shown, False
    return shown.assign(pvalue=[released_text(p, ".2e") for p in shown["pvalue"]]), True


def _run_option_label(run: RunRecord, count: int | None) -> str:
    what = "?" if count is None else f"{count} redescription{'' if count == 1 else 's'}"
    return f"{run.created_at[:16].replace('T', ' ')} · {run_label(run)} · {what}"


def default_pick(runs: list[RunRecord], counts: dict[str, int]) -> list[str]:
    """The runs Explore opens on: the newest run (``runs`` is newest first) that released
    at least one redescription; the newest run if none did."""
    for run in runs:
        if counts.get(run.run_id):
            return [run.run_id]
    return [runs[0].run_id] if runs else []


def _show_runs(dataset: str, run_ids: list[str]) -> None:
    """Button callback: explore these runs."""
    picks = dict(st.session_state.get("explore_pick", {}))
    picks[dataset] = list(run_ids)
    st.session_state["explore_pick"] = picks


# --------------------------------------------------------------------------- page

def render_explore(ledger: Ledger, record: DatasetRecord) -> None:
    """Draw the Explore page for ``record`` (on a sequence or table dataset only a pointer
    to the page that mines it)."""
    if not two_view_only(record, "Explore is for two-view datasets: it prunes the "
                                 "redescriptions mined from them."):
        return
    st.info(PRUNING_NOTE)
    render_workspace_name()
    runs = done_runs(ledger, record.name)
    if not runs:
        st.warning("No finished run on this dataset yet: launch one on the **Mine** page.")
        return
    results: dict[str, RunResult] = {}
    for run in runs:
        try:
            results[run.run_id] = load_result(ledger, run.run_id, requester=current_requester())
        except DpcoreError as exc:
            st.warning(f"Run {run.run_id[:8]}: its stored result could not be read "
                       f"({hide_server_paths(str(exc), ledger)}).")
    counts = {rid: len(r.redescriptions) for rid, r in results.items()}
    options = [r.run_id for r in runs if r.run_id in results]
    if not options:
        return
    current_workspace(ledger, record.name)          # loads the saved one on the first visit
    render_link_note(record.name)
    render_import(ledger, record.name, set(results),
                  {entry_key(rid, red.id) for rid, res in results.items()
                   for red in res.redescriptions})
    render_share(ledger, record.name)
    labels = {r.run_id: _run_option_label(r, counts.get(r.run_id)) for r in runs}
    picked = st.session_state.get("explore_pick", {}).get(record.name) or []
    default = default_pick([r for r in runs if r.run_id in results], counts)
    valid = [p for p in picked if p in results] or default
    st.session_state[RUNS_KEY] = valid
    st.multiselect("Runs to explore (several are pooled into one scatter)", options,
                   key=RUNS_KEY, format_func=labels.get, on_change=_runs_picked,
                   args=(record.name,),
                   help="Opens on your newest run that released redescriptions.")
    chosen = list(st.session_state[RUNS_KEY]) or default
    restored, value = pending_threshold(record.name)
    if restored:                          # a loaded or imported workspace's threshold
        if value is None:
            _mark_chosen(record.name, None)
        else:
            set_threshold(record.name, value)
            _mark_chosen(record.name, tuple(sorted(chosen)))
    shown = {rid: results[rid] for rid in chosen}
    empty = [rid for rid in chosen if not counts.get(rid)]
    rows = redescription_rows(list(shown.values()))
    if rows.empty:
        for rid in empty:
            result = results[rid]
            st.warning(f"Run {rid[:8]} released no redescription. "
                       + empty_result_advice(result.algorithm, result.params))
        best = default_pick([r for r in runs if r.run_id in results], counts)
        if best and counts.get(best[0]):
            st.button(f"Show the newest run with results: {labels[best[0]]}",
                      key="explore_show_best", on_click=_show_runs, args=(record.name, best))
        return
    if empty:
        st.caption("Released no redescription (nothing of theirs on the scatter): "
                   + ", ".join(f"run {rid[:8]}" for rid in empty) + ".")
    pruning_fragment(ledger, record.name, tuple(v.name for v in record.schema.views), rows,
                     shown)


def _prunes_everything(suggestion: float, rows) -> bool:
    """Whether a suggested threshold lies above every listed redescription's support."""
    return bool(len(rows) > 0 and suggestion > rows["support"].max())


@st.fragment
def pruning_fragment(ledger: Ledger, dataset: str, view_names: tuple[str, str],
                     rows: pd.DataFrame, results: dict[str, RunResult]) -> None:
    """Scatter + threshold + kept list + detail + export; reruns on its own."""
    points = {rid: (float(s), float(j))
              for rid, s, j in zip(rows["row_id"], rows["support"], rows["jaccard"])}
    selection_key = tuple(sorted(results))

    s1, s2, s3 = st.columns([1, 2, 1], vertical_alignment="bottom")
    st.session_state.setdefault(TOLERANCE_KEY, DEFAULT_TOLERANCE)
    problem = number_field(
        s1, "Tolerance: expected Jaccard error", TOLERANCE_KEY, TOLERANCE_BOUNDS, step=0.01,
        format="%.2f",
        help="The suggested threshold is the smallest noisy support above which at most "
             f"{EXCEEDANCE_RATE:.0%} of the kept redescriptions are expected to have a noisy "
             "Jaccard further than this from the true one — accounting for the miner having "
             "picked what looked good after noise (from released values and noise scales "
             "only, 0 ε).")
    tolerance = DEFAULT_TOLERANCE if problem else float(st.session_state[TOLERANCE_KEY])
    if problem:
        s1.caption(f"Using {DEFAULT_TOLERANCE:g} meanwhile.")
    suggestion = suggested_threshold(results, tolerance)
    if suggestion is None:
        s2.caption("No suggested threshold: a stored result lacks the released noise "
                   "parameters it needs.")
    else:
        note = (" — it would prune everything: no released redescription is that accurate "
                "at this ε, so the list starts unpruned (treat its noisy Jaccards as mostly "
                "noise); raise ε, allow a larger tolerance, or set your own threshold"
                if _prunes_everything(suggestion, rows) else "")
        s2.caption(f"Suggested threshold: {suggestion:g} (at most {EXCEEDANCE_RATE:.0%} of "
                   f"what it keeps expected off by more than {tolerance:g} in Jaccard; "
                   f"computed from released values only, 0 ε){note}")
    s3.button("Use suggested threshold", key=USE_SUGGESTED_KEY, on_click=_use_suggested,
              args=(dataset,), disabled=suggestion is None)

    if _user_chose(dataset, selection_key) or suggestion is None:
        threshold = get_threshold(dataset)
    else:
        # A suggestion that keeps nothing is not applied on its own: an empty list and an
        # empty export teach nothing (the caption says why the list is unpruned).
        threshold = 0.0 if _prunes_everything(suggestion, rows) else suggestion
        set_threshold(dataset, threshold)   # so the Runs page counts at the same threshold
    set_threshold_runs(dataset, selection_key)
    selection = st.session_state.get(CHART_KEY)
    signature = selection_signature(selection)
    if signature is None:
        st.session_state[_APPLIED_KEY] = None
    elif signature != st.session_state.get(_APPLIED_KEY):
        st.session_state[_APPLIED_KEY] = signature
        choice = threshold_from_selection(selection, points, threshold)
        st.session_state[_SELECTION_NOTE_KEY] = choice.note or _selection_text(choice, points)
        if choice.changed:
            threshold = choice.threshold
            set_threshold(dataset, threshold)
            _mark_chosen(dataset, selection_key)
            st.session_state.pop(_THRESHOLD_NOTE_KEY, None)

    st.session_state[THRESHOLD_KEY] = float(threshold)
    kept, pruned = kept_frame(rows, threshold)
    c1, c2, c3 = st.columns([2, 1, 1])
    # value=None lets the box be blanked: without it the browser turned a blanked box into
    # 0 itself, which passed as a typed 0 (keep everything) with no word (issue 32, point 13);
    # blank now reaches _threshold_typed as None and is named there.
    c1.number_input("Pruning threshold: smallest noisy support |E11| kept", value=None,
                    step=10.0, format="%.1f", key=THRESHOLD_KEY, on_change=_threshold_typed,
                    args=(dataset, selection_key),
                    help="Or click a point (threshold = its noisy support) or drag a box "
                         "over points (threshold = the smallest noisy support inside it, so "
                         "all of them are kept) on the scatter.")
    note = st.session_state.get(_THRESHOLD_NOTE_KEY)
    if note:
        c1.error(note)
    selection_note = st.session_state.get(_SELECTION_NOTE_KEY) if signature else None
    if selection_note:
        c1.caption(selection_note)
    c2.metric("Kept", len(kept))
    c3.metric("Pruned", len(pruned))

    intervals = interval_rows(list(results.values()))
    st.plotly_chart(scatter_figure(rows.merge(intervals, on="row_id", how="left"), threshold,
                                   suggested=suggestion), key=CHART_KEY,
                    on_select="rerun", selection_mode=("points", "box"))
    st.caption("Bars: where each redescription's J (vertical) and |E11| (horizontal) on the "
               "data lie, with 90 % coverage, from released values only (0 ε); they account "
               "for the miner having kept what looked good after noise, so they often sit "
               "below the point.")

    st.subheader(f"Kept redescriptions ({len(kept)} of {len(rows)})")
    labels = {rid: run_label(r) for rid, r in results.items()}
    kept_ids = set(kept["row_id"])
    entries = [e for e in list_entries(results.values(), labels)
               if row_id(e.run_id, e.red_id) in kept_ids]
    ws = current_workspace(ledger, dataset)
    ws, listed = render_list(entries, ws, view_names, labels, intervals)
    picked = st.session_state.get("explore_pick", {}).get(dataset)
    ws = replace(ws, runs=tuple(picked or ()),
                 threshold=float(threshold) if _user_chose(dataset, selection_key) else None,
                 tolerance=None if tolerance == DEFAULT_TOLERANCE else tolerance,
                 view=current_view())
    save_if_changed(ledger, dataset, ws)
    if any(not is_released(p) for p in kept["pvalue"]):
        st.caption(f"noisy p “{NOT_RELEASED}”: faithful Serenade releases only the noisy "
                   "|E11| and |E10|+|E01| of each redescription, so it has no p-value.")

    order = {row_id(e.run_id, e.red_id): i for i, e in enumerate(listed)}
    table = kept[kept["row_id"].isin(order)].copy()
    table = table.iloc[sorted(range(len(table)), key=lambda i: order[table["row_id"].iloc[i]])]
    if not table.empty:
        _detail(table, results, view_names)
    _export(dataset, table, results, threshold, ws.to_dict())


def _selection_text(choice, points: dict) -> str | None:
    """What a box selected, in words (None for a click: the threshold box says it all)."""
    if len(choice.selected) < 2:
        return None
    sup = [points[i][0] for i in choice.selected if i in points]
    jac = [points[i][1] for i in choice.selected if i in points]
    if not sup:
        return None
    return (f"Selected {len(sup)} redescriptions (noisy |E11| {min(sup):g}–{max(sup):g}, "
            f"noisy J {min(jac):.2f}–{max(jac):.2f}): the threshold is the smallest of "
            f"their supports, so all of them are kept.")


def _detail(table: pd.DataFrame, results: dict[str, RunResult],
            view_names: tuple[str, str]) -> None:
    """The selected redescription, and the tree pair it came from (or its Serenade queries)."""
    st.subheader("Redescription detail")
    ids = list(table["row_id"])
    by_id = table.set_index("row_id")
    if st.session_state.get(DETAIL_KEY) not in ids:
        st.session_state[DETAIL_KEY] = ids[0]
    chosen = st.selectbox(
        "Kept redescription", ids, key=DETAIL_KEY,
        format_func=lambda i: (f"{i} · noisy J {by_id.at[i, 'jaccard']:.2f} · noisy |E11| "
                               f"{by_id.at[i, 'support']:.0f} · {by_id.at[i, 'left']}"
                               f"  ⇔  {by_id.at[i, 'right']}")[:160])
    row = by_id.loc[chosen]
    result = results[row["run_id"]]
    red = next(r for r in result.redescriptions if r.id == int(row["red_id"]))
    serenade = is_serenade_result(result.algorithm)
    if not serenade:
        st.markdown(f"**{view_names[0]}:** `{red.left.text}`  \n**{view_names[1]}:** "
                    f"`{red.right.text}`")
    st.dataframe(pd.DataFrame([statistics_row(red, result.algorithm)]), hide_index=True)
    st.caption(f"From run {row['run']} — all numbers are noisy DP releases.")
    st.plotly_chart(contingency_figure(contingency_cells(result, red)),
                    key="explore_detail_cells")
    if serenade:
        render_query_formulas(red, view_names, key_prefix="explore_detail")
        return
    try:
        extraction = result.extractions[red.extraction]
        left_tree = result.trees[extraction.left_tree]
        right_tree = result.trees[extraction.right_tree]
    except IndexError:
        st.warning("The stored result lacks this redescription's trees.")
        return
    render_tree_pair(left_tree, right_tree, extraction, red.left.leaves, red.right.leaves,
                     view_names, key="explore_tree_pair", noise=flow_noise(result, extraction))


def contingency_figure(cells) -> go.Figure:
    """A bar per cell of the noisy 2×2 table; a cell the run did not release is labelled so."""
    labels = ["|E11| both", "|E10| left only", "|E01| right only", "|E00| neither"]
    released = [is_released(c) for c in cells]
    fig = go.Figure(go.Bar(
        x=labels, y=[float(c) if ok else 0.0 for c, ok in zip(cells, released)],
        text=[f"{float(c):.0f}" if ok else NOT_RELEASED for c, ok in zip(cells, released)],
        textposition="outside", marker_color=["#1f77b4", "#ff7f0e", "#2ca02c", "#9e9e9e"],
        hovertemplate="%{x}: %{text}<extra></extra>"))
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=30, b=10),
                      title=dict(text="noisy 2×2 table (released values, 0 ε)",
                                 font=dict(size=13)), yaxis_title="noisy rows")
    return fig


def _export(dataset: str, kept: pd.DataFrame, results: dict[str, RunResult],
            threshold: float, workspace: dict | None = None) -> None:
    """CSV and JSON download buttons for the listed redescriptions and the workspace (0 ε)."""
    st.subheader("Export kept redescriptions")
    st.caption("The redescriptions the list shows (every member of a collapsed group). The "
               "CSV gives each one's decision, tags and note; the JSON also carries your "
               "workspace, which **Import a workspace** above reads back.")
    c1, c2 = st.columns(2)
    stem = f"{dataset}_kept_t{threshold:g}"
    c1.download_button("Download CSV", export_csv(kept, results, threshold, workspace),
                       file_name=f"{stem}.csv", mime="text/csv", key="export_csv",
                       on_click="ignore")
    c2.download_button("Download JSON", export_json(dataset, kept, results, threshold,
                                                    workspace=workspace),
                       file_name=f"{stem}.json", mime="application/json", key="export_json",
                       on_click="ignore")
