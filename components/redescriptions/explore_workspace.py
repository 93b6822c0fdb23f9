"""The analyst's Explore workspace in the app: which one, load on the first visit, save on change,
import an exported one.

A workspace (:mod:`dpcore.redescriptions.workspace`) is saved in the ledger per dataset,
account and name (:meth:`dpcore.privacy.ledger.Ledger.save_workspace`): it belongs to the
signed-in account (visitors who did not sign in share the anonymous pseudo-account, on
public demo data only). Its name is typed above the run picker (the role's name by
default) and kept in the page address (``?workspace=…``), so a reload or a bookmark opens
the same workspace. ``colleague/name`` opens a colleague's workspace that colleague shared
with this account (the ledger refuses any other); sharing one's own is an explicit action
(:func:`render_share`). It is loaded once per session and name, and saved whenever it
changes — decisions, tags, notes, the runs, the threshold, the tolerance and the list
settings — so the next visit finds it intact.

Two tabs (or sessions) on one workspace do not overwrite each other: each save names the
ledger revision the tab last read or saved, and a save based on an older one is refused
(:class:`~dpcore.errors.WorkspaceConflict`). The tab then says when the workspace was
changed elsewhere and offers to reload it (dropping this tab's unsaved changes) or to
overwrite it with this tab's version; until the analyst chooses, nothing is saved and
every edit stays in the tab. The tab does not wait for its own next save to find out: every
rerun of the Explore page reads the stored revision (one read, no write) and, when another
tab or session saved or deleted the workspace meanwhile, says so at once with the same
choice.

It holds only references to released redescriptions and what the analyst typed: loading,
saving, exporting and importing cost 0 ε.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from dpcore.errors import DpcoreError, WorkspaceConflict
from dpcore.privacy.ledger import ANONYMOUS, Ledger
from dpcore.redescriptions.workspace import Workspace, workspace_from_json

from ..common.session import current_account, current_role
from ..common.threshold import DEFAULT_TOLERANCE, TOLERANCE_KEY
from .redescription_list import GENERATION_KEY, restore_view

__all__ = ["NAME_KEY", "IMPORT_KEY", "RELOAD_KEY", "OVERWRITE_KEY", "workspace_name",
           "current_workspace", "set_workspace", "save_if_changed", "render_workspace_name",
           "render_import", "pending_threshold", "render_share", "render_link_note"]

NAME_KEY = "explore_workspace_name"
IMPORT_KEY = "explore_workspace_import"
IMPORT_BUTTON_KEY = "explore_workspace_import_button"
QUERY_PARAM = "workspace"
_LOADED = "_explore_workspaces"          # (dataset, role, name) → Workspace
_SAVED = "_explore_workspaces_saved"     # (dataset, role, name) → JSON last saved
_PENDING = "_explore_workspace_pending"  # dataset → threshold to apply once runs are known
_NOTE = "_explore_workspace_note"        # (kind, text) shown under the import box
_REVISION = "_explore_workspace_revision"  # (dataset, role, name) → ledger revision read
_CONFLICT = "_explore_workspace_conflict"  # (dataset, role, name) → (revision, updated_at)
_RELOAD = "_explore_workspace_reload"      # keys to reload from the ledger on the next run
_SAVED_NOTE = "_explore_workspace_saved_note"  # (dataset, role, name) → text, shown once
_LINKED = "_explore_workspace_linked"      # the name the page address gave on arrival
_LINK_NOTE = "_explore_workspace_link_note"  # (dataset, role, name) → why it starts empty
RELOAD_KEY = "explore_workspace_reload"
OVERWRITE_KEY = "explore_workspace_overwrite"


_KEPT_NAME = "_explore_workspace_name_kept"  # survives pages without the box


def workspace_name() -> str:
    """The workspace name of this session: the box (or its last value on another page),
    else the page address, else the role."""
    name = st.session_state.get(NAME_KEY) or st.session_state.get(_KEPT_NAME)
    if not name:
        name = st.query_params.get(QUERY_PARAM) or current_role()
    return str(name).strip() or current_role()


def _reader() -> str:
    """The account that reads and saves: the signed-in one, else the anonymous visitor."""
    return current_account() or ANONYMOUS


def _key(dataset: str) -> tuple[str, str, str]:
    """``(dataset, owning account, name)``: ``colleague/name`` names a colleague's shared
    workspace, anything else one of this account's own."""
    name = workspace_name()
    owner, sep, rest = name.partition("/")
    if sep and owner and rest and current_account() is not None:
        return (dataset, owner, rest)
    return (dataset, _reader(), name)


def current_workspace(ledger: Ledger, dataset: str) -> Workspace:
    """This session's workspace of ``dataset``, loaded from the ledger on first use.

    A stored workspace that no longer reads (a newer format) starts a new one, said on the
    page; the stored one is only replaced once something changes.
    """
    key = _key(dataset)
    loaded = st.session_state.setdefault(_LOADED, {})
    reload = st.session_state.setdefault(_RELOAD, set())
    if key not in loaded or key in reload:
        reload.discard(key)
        loaded[key] = _load(ledger, dataset, key)
        _apply(dataset, loaded[key])
    return loaded[key]


def _load(ledger: Ledger, dataset: str, key: tuple[str, str, str]) -> Workspace:
    """The stored workspace (a new one if there is none or it does not read); remembers the
    revision read, so the next save is refused if another tab saved meanwhile."""
    ws = Workspace(dataset)
    saved = st.session_state.setdefault(_SAVED, {})
    saved.pop(key, None)
    st.session_state.setdefault(_CONFLICT, {}).pop(key, None)
    revisions = st.session_state.setdefault(_REVISION, {})
    revisions[key] = 0
    try:
        record = ledger.get_workspace(*key, reader=_reader())
    except DpcoreError as exc:
        if key[1] != _reader():
            # another account's workspace it did not share: say so, show none of it
            st.error(f"Refused: {exc}. Nothing of workspace {key[1]}/{key[2]} is shown, "
                     "and nothing done here is saved to it.")
        else:
            st.warning(f"Workspace {key[2]!r} could not be read ({exc}); starting a new one.")
        record = None
    if record is None and key[1] == _reader() and key[2] == st.session_state.get(_LINKED):
        st.session_state.setdefault(_LINK_NOTE, {})[key] = _link_note(dataset, key[2])
    if record is not None:
        revisions[key] = record.revision
        try:
            ws = workspace_from_json(record.workspace_json, dataset=dataset)
            saved[key] = ws.to_json()
        except DpcoreError as exc:
            st.warning(f"Saved workspace {key[2]!r} does not read ({exc}); starting a "
                       "new one.")
    return ws


def _link_note(dataset: str, name: str) -> str:
    """Why a workspace the page address names opened empty: none of that name was saved for
    this account (workspaces are per account, so another account's or role's is not)."""
    account = current_account()
    whose = f"your account `{account}`" if account else "visitors who are not signed in"
    return (f"The page address names workspace **{name}**, but no workspace of that name "
            f"was saved for {whose} on `{dataset}`, so it opened empty. Workspaces belong to "
            "the account that saved them (each account has its own; visitors who are not "
            "signed in share one), so a link to another account's or role's workspace "
            "opens an empty one of yours. A colleague's workspace opens as "
            "`colleague/name` once they share it with you. What you do here is saved "
            f"under **{name}** for {whose}.")


def render_link_note(dataset: str) -> None:
    """Say why the workspace the page address named opened empty (while it is the one
    shown: a note above the fragment would not follow a save made inside it)."""
    note = st.session_state.get(_LINK_NOTE, {}).get(_key(dataset))
    if note:
        st.info(note)


def _apply(dataset: str, ws: Workspace) -> None:
    """Put a loaded or imported workspace's settings into the page's state."""
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


def save_if_changed(ledger: Ledger, dataset: str, ws: Workspace, *,
                    prompt: bool = True) -> bool:
    """Keep ``ws`` as the session's workspace and write it to the ledger if it changed.

    The save is based on the revision this tab last read or saved; if another tab saved
    meanwhile it is refused and, with ``prompt``, the tab says so and offers to reload or
    to overwrite. Until then ``ws`` (with every later edit) stays in the tab unsaved. The
    stored revision is read on every call, so another tab's save or delete is noticed on
    the next rerun even when this tab changed nothing (a read: nothing is written then).

    Returns
    -------
    bool
        Whether the ledger holds ``ws`` now (False: refused, not saved).
    """
    set_workspace(dataset, ws)
    key = _key(dataset)
    text = ws.to_json()
    saved = st.session_state.setdefault(_SAVED, {})
    conflicts = st.session_state.setdefault(_CONFLICT, {})
    if key not in conflicts:
        _notice_other_saves(ledger, key)
    if key not in conflicts:
        if saved.get(key) == text:
            _show_saved_note(key, prompt)
            return True
        if saved.get(key) is None and ws == Workspace(dataset):
            return True                           # nothing to keep yet
        expected = st.session_state.setdefault(_REVISION, {}).get(key, 0)
        if _save(ledger, key, text, expected):
            _show_saved_note(key, prompt)
            return True
    if prompt and key in conflicts:
        _render_conflict(ledger, key, text)
    return False


def _notice_other_saves(ledger: Ledger, key: tuple[str, str, str]) -> None:
    """Remember a conflict when the stored revision is not the one this tab last read or
    saved (another tab saved or deleted the workspace). One read of the ledger, no write;
    a ledger that cannot be read is left to the save, which reports it."""
    try:
        record = ledger.get_workspace(*key, reader=_reader())
    except DpcoreError:
        return
    expected = st.session_state.setdefault(_REVISION, {}).get(key, 0)
    if (0 if record is None else record.revision) != expected:
        st.session_state.setdefault(_CONFLICT, {})[key] = (
            None if record is None else record.revision,
            None if record is None else record.updated_at)


def _save(ledger: Ledger, key: tuple[str, str, str], text: str,
          expected: int | None) -> bool:
    """Save ``text`` on revision ``expected``; a refusal is remembered as a conflict."""
    try:
        record = ledger.save_workspace(*key, text, expected_revision=expected,
                                       reader=_reader())
    except WorkspaceConflict as exc:
        st.session_state.setdefault(_CONFLICT, {})[key] = (exc.revision, exc.updated_at)
        return False
    except DpcoreError as exc:
        st.error(f"The workspace could not be saved: {exc}")
        return False
    st.session_state.setdefault(_SAVED, {})[key] = text
    st.session_state.setdefault(_REVISION, {})[key] = record.revision
    st.session_state.setdefault(_CONFLICT, {}).pop(key, None)
    return True


def _when(stamp: str | None) -> str:
    """A ledger time stamp for people: ``2026-05-04 13:02:11 UTC``."""
    try:
        return datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError):
        return "an unknown time"


def _render_conflict(ledger: Ledger, key: tuple[str, str, str], text: str) -> None:
    """Say that another tab changed the workspace; offer to reload or to overwrite."""
    revision, updated_at = st.session_state[_CONFLICT][key]
    if revision is None:
        what = f"Workspace {key[2]!r} was deleted in another tab or session"
    else:
        what = (f"Workspace {key[2]!r} was changed in another tab at {_when(updated_at)}; "
                "reload to see it")
    if st.session_state.get(_SAVED, {}).get(key, Workspace(key[0]).to_json()) == text:
        st.warning(f"{what}. This tab shows the version it last loaded or saved: reload "
                   "the saved workspace, or overwrite it with this tab's version (the other "
                   "change is lost). Until you choose, nothing in this tab is saved.")
    else:
        st.warning(f"{what}. Your changes in this tab are **not saved** and stay here until "
                   "you choose: reload the saved workspace (this tab's unsaved changes are "
                   "dropped), or overwrite it with this tab's version (the other change is "
                   "lost).")
    c1, c2 = st.columns(2)
    if c1.button("Reload the saved workspace", key=RELOAD_KEY):
        st.session_state.setdefault(_RELOAD, set()).add(key)
        st.session_state[_SAVED_NOTE] = {key: "Reloaded the saved workspace."}
        st.rerun()
    if c2.button("Overwrite it with this tab's version", key=OVERWRITE_KEY):
        if _save(ledger, key, text, 0 if revision is None else revision):
            st.session_state[_SAVED_NOTE] = {key: "Saved this tab's version over the "
                                                  "other change."}
        st.rerun()


def _show_saved_note(key: tuple[str, str, str], prompt: bool) -> None:
    """Once, after a reload or an overwrite: what was done."""
    note = st.session_state.get(_SAVED_NOTE, {}).get(key)
    if prompt and note:
        st.session_state.pop(_SAVED_NOTE, None)
        st.success(note)


def _name_changed() -> None:
    name = (st.session_state.get(NAME_KEY) or "").strip()
    if name:
        st.session_state[_KEPT_NAME] = name
        st.query_params[QUERY_PARAM] = name


def render_workspace_name() -> None:
    """The workspace box: whose decisions, tags and notes this page shows and saves."""
    if not st.session_state.get(NAME_KEY):
        linked = st.query_params.get(QUERY_PARAM)
        if linked and linked.strip() and linked.strip() != current_role():
            st.session_state[_LINKED] = linked.strip()
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


def render_share(ledger: Ledger, dataset: str) -> None:
    """Share this account's workspace with a named colleague: an explicit act (0 ε)."""
    account = current_account()
    key = _key(dataset)
    if account is None or key[1] != account:
        return
    with st.expander("Share this workspace with a colleague"):
        colleague = st.text_input("Colleague's account", key="explore_share_with")
        if st.button("Share", key="explore_share") and colleague.strip():
            try:
                ledger.share_workspace(*key, colleague.strip())
            except DpcoreError as exc:
                st.error(f"Not shared: {exc}")
            else:
                st.success(f"Shared: {colleague.strip()} opens it as "
                           f"{account}/{key[2]} (and may save it).")


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
                stored = save_if_changed(ledger, dataset, ws, prompt=False)
                _apply(dataset, ws)
                st.session_state[_NOTE] = (
                    "success", f"Imported: {len(ws.annotations)} annotated "
                               f"redescription(s), {len(ws.runs)} run(s). It cost 0 ε."
                               + ("" if stored else " It is not saved yet: see below."))
            st.rerun()
        note = st.session_state.get(_NOTE)
        if note:
            (st.error if note[0] == "error" else st.success)(note[1])
