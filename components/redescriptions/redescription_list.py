"""The Explore list of kept redescriptions: sort, filter, search, collapse, decide, tag, note.

The list logic is :mod:`dpcore.redescriptions.listing` (tested without Streamlit); this
draws its controls and the table. The table is an ``st.data_editor``: the decision
(keep / reject), tags (comma-separated) and note columns are editable, everything else is
read-only — the noisy statistics, the query length, the attributes used, the noisy 2×2
table (|E11|, |E10|, |E01|, |E00|) as a bar and as numbers ("not released" where the run
released no such value), the 90 % intervals of the noisy J and |E11| when given
(:func:`components.redescriptions.scatter.interval_rows`) and, when near-duplicates are
collapsed, their count. An edit is
applied to the workspace (:mod:`components.redescriptions.explore_workspace`) on the next run, and a
fresh editor is drawn from the workspace, so sorting never mixes up rows. An edit on a
collapsed row applies to every member of its group.

All of it reads released values and the analyst's input only: 0 ε.
"""

from __future__ import annotations

import hashlib
import json
import math

import pandas as pd
import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.redescriptions.listing import (
    DECISION_VIEWS,
    SORT_KEYS,
    ListEntry,
    ListFilter,
    collapse_near_duplicates,
    filter_entries,
    sort_entries,
)
from dpcore.redescriptions.workspace import DECISIONS, DEFAULT_VIEW, Workspace

from .redescription_view import NOT_RELEASED

__all__ = ["VIEW_KEYS", "EDITOR_KEY", "GENERATION_KEY", "editor_key", "restore_view",
           "current_view", "list_filter", "render_list_controls", "list_frame", "apply_edits",
           "render_list"]

#: Widget key of each list setting of a workspace view.
VIEW_KEYS = {"sort": "explore_list_sort", "descending": "explore_list_desc",
             "search": "explore_list_search", "attributes": "explore_list_attributes",
             "runs": "explore_list_runs", "min_jaccard": "explore_list_min_jaccard",
             "max_pvalue": "explore_list_max_pvalue", "min_length": "explore_list_min_length",
             "max_length": "explore_list_max_length", "decisions": "explore_list_decisions",
             "collapse": "explore_list_collapse"}
EDITOR_KEY = "explore_list_editor"
#: Bumped when a workspace is loaded or imported, so no old edit applies to it.
GENERATION_KEY = "_explore_list_generation"
_CELL_LABELS = ("|E11|", "|E10|", "|E01|", "|E00|")
_INTERVAL_HELP = ("90 % interval of the true value, from released values only (0 ε); it "
                  "accounts for the miner keeping what looked good after noise.")


def restore_view(view: dict, *, force: bool = False) -> None:
    """Put a workspace's list settings into the widgets' state (only missing ones unless
    ``force``)."""
    for name, key in VIEW_KEYS.items():
        if force or key not in st.session_state:
            value = view.get(name, DEFAULT_VIEW[name])
            if value == DEFAULT_VIEW[name]:
                # A default setting (blank "any" filters, Descending on): leave the key unset
                # and let the widget start at its own default, which is the same. A widget
                # (re)mounted with its value set through the session state shows its
                # built-in default in the browser instead — 0 in a blank number filter, off
                # for Descending — and sends that back (issue 32, points 1 and 6: "0 of 33
                # kept", an empty CSV, noisy J ascending); AppTest does not see it.
                st.session_state.pop(key, None)
            else:
                st.session_state[key] = list(value) if isinstance(value, list) else value


def current_view() -> dict:
    """The list settings as the widgets hold them (a workspace's ``view``)."""
    view = {}
    for name, key in VIEW_KEYS.items():
        value = st.session_state.get(key, DEFAULT_VIEW[name])
        view[name] = list(value) if isinstance(value, (list, tuple)) else value
    return view


def list_filter(view: dict) -> ListFilter:
    """The :class:`~dpcore.redescriptions.listing.ListFilter` of a view."""
    return ListFilter(min_jaccard=view["min_jaccard"], max_pvalue=view["max_pvalue"],
                      min_length=view["min_length"], max_length=view["max_length"],
                      runs=tuple(view["runs"]), attributes=tuple(view["attributes"]),
                      search=view["search"] or "", decisions=view["decisions"])


def render_list_controls(entries: list[ListEntry], run_labels: dict[str, str]) -> dict:
    """Sort, filter, search and collapse controls; returns the view they set."""
    attributes = sorted({a for e in entries for a in e.attributes})
    runs = list(dict.fromkeys(e.run_id for e in entries))
    for name, options in (("attributes", attributes), ("runs", runs)):
        key = VIEW_KEYS[name]
        st.session_state[key] = [v for v in st.session_state.get(key, []) if v in options]
    c1, c2, c3, c4 = st.columns([2, 1, 2, 1], vertical_alignment="bottom")
    c1.selectbox("Sort by", list(SORT_KEYS), key=VIEW_KEYS["sort"], format_func=SORT_KEYS.get)
    c2.toggle("Descending", key=VIEW_KEYS["descending"],
              value=st.session_state.get(VIEW_KEYS["descending"], DEFAULT_VIEW["descending"]))
    c3.text_input("Search attribute names", key=VIEW_KEYS["search"],
                  placeholder="e.g. BNP", help="Keeps redescriptions using an attribute whose "
                                                "name contains this text (any case).")
    c4.toggle("Collapse near-duplicates", key=VIEW_KEYS["collapse"],
              help="Redescriptions using the same attributes on each side with overlapping "
                   "thresholds become one row (the one with the highest noisy J) with a "
                   "count; a decision, tag or note on that row applies to all of them.")
    d1, d2, d3, d4, d5 = st.columns([2, 2, 1, 1, 1])
    d1.multiselect("Uses all of these attributes", attributes, key=VIEW_KEYS["attributes"])
    d2.multiselect("Runs", runs, key=VIEW_KEYS["runs"], format_func=lambda r: run_labels.get(
        r, r[:8]), placeholder="all runs")
    d3.number_input("Noisy J at least", min_value=0.0, max_value=1.0, step=0.05,
                    key=VIEW_KEYS["min_jaccard"], placeholder="any", value=None)
    d4.number_input("Noisy p at most", min_value=0.0, max_value=1.0, step=0.01,
                    format="%.2e", key=VIEW_KEYS["max_pvalue"], placeholder="any", value=None)
    d5.selectbox("Decision", list(DECISION_VIEWS), key=VIEW_KEYS["decisions"],
                 format_func=DECISION_VIEWS.get)
    e1, e2, _ = st.columns([1, 1, 5])
    e1.number_input("Length at least", min_value=0, step=1, key=VIEW_KEYS["min_length"],
                    placeholder="any", help="Literals in both queries together.", value=None)
    e2.number_input("Length at most", min_value=0, step=1, key=VIEW_KEYS["max_length"],
                    placeholder="any", value=None)
    return current_view()


def _cell_text(cells) -> str:
    return " · ".join(f"{c:.0f}" if math.isfinite(c) else NOT_RELEASED for c in cells)


#: The interval columns of the list, in order (Jaccard units; |E11| in rows).
INTERVAL_COLUMNS = ("jaccard_low", "jaccard_high", "support_low", "support_high")


def list_frame(rows: list[tuple[ListEntry, int]], ws: Workspace,
               intervals: pd.DataFrame | None = None) -> pd.DataFrame:
    """The table the editor shows: one row per (entry, near-duplicate count).

    ``intervals``: :func:`components.redescriptions.scatter.interval_rows` of the runs;
    with it the table has the :data:`INTERVAL_COLUMNS` after the noisy J.
    """
    bounds = {} if intervals is None else intervals.set_index("row_id").to_dict("index")
    out = []
    for entry, count in rows:
        note = ws.annotation(entry.key)
        cells = entry.cells
        rid = f"{entry.run_id[:8]}:{entry.red_id}"
        out.append({
            **{c: bounds.get(rid, {}).get(c, math.nan) for c in INTERVAL_COLUMNS},
            "row_id": rid,
            "decision": note.decision, "tags": ", ".join(note.tags), "note": note.note,
            "count": count, "left": entry.left, "right": entry.right,
            "support": entry.support, "jaccard": entry.jaccard,
            "pvalue": entry.pvalue if math.isfinite(entry.pvalue) else NOT_RELEASED,
            "length": entry.length, "attributes": ", ".join(entry.attributes),
            "table": [float(c) for c in cells] if all(map(math.isfinite, cells)) else [],
            "cells": _cell_text(cells), "run": entry.run})
    shown = INTERVAL_COLUMNS if intervals is not None else ()
    frame = pd.DataFrame(out, columns=["row_id", "decision", "tags", "note", "count", "left",
                                       "right", "support", "jaccard", *shown, "pvalue",
                                       "length", "attributes", "table", "cells", "run"])
    if all(isinstance(p, float) for p in frame["pvalue"]):
        frame["pvalue"] = frame["pvalue"].astype(float)
    else:
        frame["pvalue"] = [p if isinstance(p, str) else f"{p:.2e}" for p in frame["pvalue"]]
    # fixed column types whatever the values, so an edit never changes the editor's identity
    for column in ("decision", "tags", "note"):
        frame[column] = frame[column].astype("string")
    return frame


def apply_edits(ws: Workspace, edits: dict, members: list[list[str]]) -> tuple[Workspace,
                                                                               str | None]:
    """``ws`` with the editor's ``edited_rows`` applied to the rows' members; and a problem.

    A bad tag (too long, too many) is refused with its reason; the rest still applies.
    """
    problem = None
    for position, change in (edits or {}).get("edited_rows", {}).items():
        try:
            keys = members[int(position)]
        except (IndexError, ValueError, TypeError):
            continue
        fields = {}
        if "decision" in change:
            fields["decision"] = change["decision"] if change["decision"] in DECISIONS \
                else None
        if "tags" in change:
            fields["tags"] = change["tags"] or ""
        if "note" in change:
            fields["note"] = change["note"] or ""
        for key in keys:
            try:
                ws = ws.annotate(key, **fields)
            except DpcoreError as exc:
                problem = str(exc)
    return ws, problem


def _rows(entries: list[ListEntry], ws: Workspace, view: dict):
    """(listed entries, table rows (entry, count), members of each row) of a view."""
    listed = sort_entries(filter_entries(entries, list_filter(view), ws.decisions()),
                          view["sort"], view["descending"])
    if view["collapse"]:
        groups = collapse_near_duplicates(listed)
        return (listed, [(g.best, g.count) for g in groups],
                [[m.key for m in g.members] for g in groups])
    return listed, [(e, 1) for e in listed], [[e.key] for e in listed]


def editor_key(members: list[list[str]]) -> str:
    """The editor's key: one per set and order of rows (and workspace generation), so an
    edit's row position always means the row it was made on."""
    text = json.dumps([members, st.session_state.get(GENERATION_KEY, 0)])
    return f"{EDITOR_KEY}_{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def render_list(entries: list[ListEntry], ws: Workspace, view_names: tuple[str, str],
                run_labels: dict[str, str], intervals: pd.DataFrame | None = None
                ) -> tuple[Workspace, list[ListEntry]]:
    """The controls and the editable table; returns the (edited) workspace and the entries
    listed (every member of a collapsed group).

    The editor keeps its key while its rows stay the same, so its edits (all of them,
    relative to the table it was given) live in its state and are applied to the
    workspace on every run — applying them again changes nothing. When the rows change
    (a filter, a sort, a rejected row hidden), a new key starts a fresh editor.
    """
    view = render_list_controls(entries, run_labels)
    _, _, members = _rows(entries, ws, view)
    edits = st.session_state.get(editor_key(members))
    problem = None
    if isinstance(edits, dict) and edits.get("edited_rows"):
        ws, problem = apply_edits(ws, edits, members)
    listed, rows, members = _rows(entries, ws, view)
    key = editor_key(members)
    frame = list_frame(rows, ws, intervals)
    st.caption(f"Listed: {len(rows)} row(s) for {len(listed)} of {len(entries)} kept "
               "redescriptions. Edit decision, tags (comma-separated) and note in the "
               "table; they are saved in your workspace (0 ε).")
    if problem:
        st.error(f"Not saved: {problem}")
    text_p = frame["pvalue"].dtype == object
    st.data_editor(
        frame, key=key, hide_index=True, num_rows="fixed",
        disabled=[c for c in frame.columns if c not in ("decision", "tags", "note")],
        column_order=[c for c in frame.columns if c != "count" or view["collapse"]],
        column_config={
            "row_id": st.column_config.TextColumn("id"),
            "decision": st.column_config.SelectboxColumn(
                "decision", options=list(DECISIONS), help="keep or reject by hand"),
            "tags": st.column_config.TextColumn("tags", help="comma-separated"),
            "note": st.column_config.TextColumn("note", width="medium"),
            "count": st.column_config.NumberColumn("near-duplicates", format="%d"),
            "left": st.column_config.TextColumn(f"left query ({view_names[0]})",
                                                width="large"),
            "right": st.column_config.TextColumn(f"right query ({view_names[1]})",
                                                 width="large"),
            "support": st.column_config.NumberColumn("noisy |E11|", format="%.0f"),
            "jaccard": st.column_config.NumberColumn("noisy J", format="%.3f"),
            "jaccard_low": st.column_config.NumberColumn(
                "J low", format="%.2f", help=_INTERVAL_HELP),
            "jaccard_high": st.column_config.NumberColumn(
                "J high", format="%.2f", help=_INTERVAL_HELP),
            "support_low": st.column_config.NumberColumn(
                "|E11| low", format="%.0f", help=_INTERVAL_HELP),
            "support_high": st.column_config.NumberColumn(
                "|E11| high", format="%.0f", help=_INTERVAL_HELP),
            "pvalue": (st.column_config.TextColumn("noisy p") if text_p else
                       st.column_config.NumberColumn("noisy p", format="%.2e")),
            "length": st.column_config.NumberColumn("length", format="%d"),
            "attributes": st.column_config.TextColumn("attributes"),
            "table": st.column_config.BarChartColumn(
                "noisy 2×2", y_min=0, help="|E11|, |E10|, |E01|, |E00| (empty when the run "
                                           "did not release all four)"),
            "cells": st.column_config.TextColumn(" · ".join(_CELL_LABELS)),
            "run": st.column_config.TextColumn("run")})
    if any(NOT_RELEASED in c for c in frame["cells"]):
        st.caption(f"“{NOT_RELEASED}” in the 2×2 table: Serenade keeps no noisy row count, "
                   "so no |E00|; faithful Serenade releases only |E11| and |E10|+|E01|.")
    shown = {k for ms in members for k in ms}
    return ws, [e for e in listed if e.key in shown]
