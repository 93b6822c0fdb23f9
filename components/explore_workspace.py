"""The analyst's Explore workspace in the app: which one, load on the first visit, save on change,
import an exported one.

A workspace (:mod:`dpcore.redescriptions.workspace`) is saved in the ledger per dataset,
role and name (:meth:`dpcore.privacy.ledger.Ledger.save_workspace`). Its name is the
analyst's, typed above the run picker (the role's name by default) and kept in the page
address (``?workspace=…``), so a reload or a bookmark opens the same workspace. It is
loaded once per session and name, and saved whenever it changes — decisions, tags, notes,
the runs, the threshold, the tolerance and the list settings — so the next visit finds it
intact. An analyst session never reads an owner's workspaces (the role is part of the key).

It holds only references to released redescriptions and what the analyst typed: loading,
saving, exporting and importing cost 0 ε.
"""

from __future__ import annotations

import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import Ledger
from dpcore.redescriptions.workspace import Workspace, workspace_from_json

from .session import current_role

__all__ = ["NAME_KEY", "IMPORT_KEY", "workspace_name", "current_workspace", "set_workspace",
           "save_if_changed", "render_workspace_name", "render_import", "pending_threshold"]

NAME_KEY = "explore_workspace_name"
IMPORT_KEY = "explore_workspace_import"
IMPORT_BUTTON_KEY = "explore_workspace_import_button"
QUERY_PARAM = "workspace"
_LOADED = "_explore_workspaces"          # (dataset, role, name) → Workspace
_SAVED = "_explore_workspaces_saved"     # (dataset, role, name) → JSON last saved
_PENDING = "_explore_workspace_pending"  # dataset → threshold to apply once runs are known
_NOTE = "_explore_workspace_note"        # (kind, text) shown under the import box


_KEPT_NAME = "_explore_workspace_name_kept"  # survives pages without the box


def workspace_name() -> str:
    """The workspace name of this session: the box (or its last value on another page),
    else the page address, else the role."""
    name = st.session_state.get(NAME_KEY) or st.session_state.get(_KEPT_NAME)
    if not name:
        name = st.query_params.get(QUERY_PARAM) or current_role()
    return str(name).strip() or current_role()


def _key(dataset: str) -> tuple[str, str, str]:
    return (dataset, current_role(), workspace_name())


def current_workspace(ledger: Ledger, dataset: str) -> Workspace:
    """This session's workspace of ``dataset``, loaded from the ledger on first use.

    A stored workspace that no longer reads (a newer format) starts a new one, said on the
    page; the stored one is only replaced once something changes.
    """
    key = _key(dataset)
    loaded = st.session_state.setdefault(_LOADED, {})
    if key not in loaded:
        ws = Workspace(dataset)
        try:
            record = ledger.get_workspace(*key)
        except DpcoreError as exc:
            st.warning(f"Workspace {key[2]!r} could not be read ({exc}); starting a new one.")
            record = None
        if record is not None:
            try:
                ws = workspace_from_json(record.workspace_json, dataset=dataset)
                st.session_state.setdefault(_SAVED, {})[key] = ws.to_json()
            except DpcoreError as exc:
                st.warning(f"Saved workspace {key[2]!r} does not read ({exc}); starting a "
                           "new one.")
        loaded[key] = ws
        _apply(dataset, ws)
    return loaded[key]


def _apply(dataset: str, ws: Workspace) -> None:
    """Put a loaded or imported workspace's settings into the page's state."""
    from .explore_view import TOLERANCE_KEY, DEFAULT_TOLERANCE   # noqa: I001 (no cycle at import)
    from .redescription_list import GENERATION_KEY, restore_view

    picks = dict(st.session_state.get("explore_pick", {}))
    if ws.runs:
        picks[dataset] = list(ws.runs)
    else:
        picks.pop(dataset, None)
    st.session_state["explore_pick"] = picks
    st.session_state[TOLERANCE_KEY] = ws.tolerance if ws.tolerance is not None \
        else DEFAULT_TOLERANCE
    pending = dict(st.session_state.get(_PENDING, {}))
    pending[dataset] = ws.threshold
    st.session_state[_PENDING] = pending
    restore_view(ws.view, force=True)
    st.session_state[GENERATION_KEY] = st.session_state.get(GENERATION_KEY, 0) + 1


def pending_threshold(dataset: str) -> tuple[bool, float | None]:
    """(whether a just-loaded workspace's threshold waits to be applied, the threshold);
    the page applies it once it knows the runs, then it is forgotten."""
    pending = dict(st.session_state.get(_PENDING, {}))
    if dataset not in pending:
        return False, None
    value = pending.pop(dataset)
    st.session_state[_PENDING] = pending
    return True, value


def set_workspace(dataset: str, ws: Workspace) -> None:
    """Replace this session's workspace of ``dataset`` (saved by :func:`save_if_changed`)."""
    st.session_state.setdefault(_LOADED, {})[_key(dataset)] = ws


def save_if_changed(ledger: Ledger, dataset: str, ws: Workspace) -> None:
    """Keep ``ws`` as the session's workspace and write it to the ledger if it changed."""
    set_workspace(dataset, ws)
    key = _key(dataset)
    text = ws.to_json()
    saved = st.session_state.setdefault(_SAVED, {})
    if saved.get(key) == text:
        return
    if saved.get(key) is None and ws == Workspace(dataset):
        return                                    # nothing to keep yet
    try:
        ledger.save_workspace(*key, text)
    except DpcoreError as exc:
        st.error(f"The workspace could not be saved: {exc}")
        return
    saved[key] = text


def _name_changed() -> None:
    name = (st.session_state.get(NAME_KEY) or "").strip()
    if name:
        st.session_state[_KEPT_NAME] = name
        st.query_params[QUERY_PARAM] = name


def render_workspace_name() -> None:
    """The workspace box: whose decisions, tags and notes this page shows and saves."""
    if not st.session_state.get(NAME_KEY):
        st.session_state[NAME_KEY] = workspace_name()
    st.session_state[_KEPT_NAME] = workspace_name()
    st.text_input(
        "Workspace (your name)", key=NAME_KEY, on_change=_name_changed, max_chars=128,
        help="Your keep/reject decisions, tags, notes, runs, threshold and list settings "
             "are saved in the ledger under this name for this dataset, and come back on "
             "your next visit (the name is also kept in the page address). Saving costs "
             "0 ε: a workspace refers to released redescriptions only.")
    if st.query_params.get(QUERY_PARAM) != workspace_name():
        st.query_params[QUERY_PARAM] = workspace_name()


def render_import(ledger: Ledger, dataset: str, known_runs: set[str],
                  known_keys: set[str]) -> None:
    """Import a workspace from an exported JSON file (checked fully; 0 ε)."""
    with st.expander("Import a workspace from an exported JSON file (0 ε)"):
        st.caption("An Explore JSON export carries its workspace: decisions, tags, notes and "
                   "settings about released redescriptions. Importing it replaces this "
                   "workspace. A file of another dataset, or one naming runs this dataset "
                   "has not, is refused and nothing changes.")
        upload = st.file_uploader("Exported JSON", type=["json"], key=IMPORT_KEY)
        if st.button("Import workspace", key=IMPORT_BUTTON_KEY, disabled=upload is None):
            try:
                ws = workspace_from_json(upload.getvalue(), dataset=dataset,
                                         known_runs=known_runs, known_keys=known_keys)
            except DpcoreError as exc:
                st.session_state[_NOTE] = ("error", f"Not imported: {exc}. Nothing changed.")
            else:
                save_if_changed(ledger, dataset, ws)
                _apply(dataset, ws)
                st.session_state[_NOTE] = (
                    "success", f"Imported: {len(ws.annotations)} annotated "
                               f"redescription(s), {len(ws.runs)} run(s). It cost 0 ε.")
            st.rerun()
        note = st.session_state.get(_NOTE)
        if note:
            (st.error if note[0] == "error" else st.success)(note[1])
