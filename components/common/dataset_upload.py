"""The owner's upload of a new dataset: read → prefill → review → register.

Owner only. A *kind* choice comes first: sequence datasets and labelled tables are uploaded
by :mod:`components.sequences.upload_sequences` and :mod:`components.synthesis.upload_table`; every
kind is stored and registered by :func:`dpcore.privacy.registration.register_upload`, the path the
command line's ``register`` shares. For a two-view table, two layouts: two files (one per
view) joined on a shared id column, or one file plus a column → view mapping. The steps,
each checking what it can as early as it can:

1. **Read the files**: each file is read (a malformed CSV names its line), must have data
   rows and the id column, and the ids are checked at once — no empty or duplicate id, and
   with two files both cover the same ids (:func:`dpcore.data.loading.join_view_ids`) — so a
   mismatch is reported before any schema is prefilled or reviewed.
2. **Prefill** the schema from the data (:func:`dpcore.data.prefill.prefill`; owner-only,
   derived from private data). Every column it leaves out is listed with the reason and the
   lines (or rows) of the first offending values; those that could still be used appear in
   the editor unticked, so nothing is dropped or turned into categories without the owner.
3. **Review** the schema in the editor (:mod:`components.common.schema_editor`).
4. **Register**: validate the data against the reviewed schema, store files and schema in the
   upload folder and register — all or nothing. The Register button stays disabled while a
   left-out column that could be included has not been decided on.

Bad input is reported with the :class:`~dpcore.errors.DataError` message (file, column, line
or row) and registers nothing; no message shows a server path.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from dpcore.data.loading import (
    check_ids,
    frames_to_dataset,
    join_view_ids,
    read_table,
)
from dpcore.data.names import check_dataset_name, path_inside
from dpcore.data.prefill import ColumnNote, prefill
from dpcore.data.schema import VIEW_KEYS, Schema
from dpcore.errors import DataError, ParameterError
from dpcore.family import family
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.registration import check_name_free, register_upload
from dpcore.registry import KIND_TWO_VIEW

from .budget_meter import fmt_eps
from .data_locations import data_root
from .family_ui import FamilyUI, family_uis
from .schema_editor import render_schema_editor
from .upload_register import register_and_announce

__all__ = ["DRAFT_KEY", "start_draft", "prefill_draft", "notes_frame", "undecided_columns",
           "register_draft", "render_two_view_upload", "upload_kinds", "render_upload"]

#: Session-state key of the upload in progress (owner only: it holds the private tables).
DRAFT_KEY = "upload_draft"
#: The kinds the upload offers: what the app mines on Mine, Sequences and Synthesis.
def _read_upload(uploaded, workdir: Path) -> pd.DataFrame:
    """Write an uploaded file to ``workdir`` and read it like a view file (DataError on failure)."""
    name = Path(uploaded.name).name
    path = path_inside(workdir, name, what="the uploaded file name")
    path.write_bytes(uploaded.getvalue())
    return read_table(path, label=name)


def start_draft(layout: str, name: str, id_column: str, uploads: list,
                ledger: Ledger | None = None) -> dict:
    """Read the uploaded files and check their ids; returns the draft kept in session state.

    Parameters
    ----------
    layout : {"two", "one"}
        Two view files joined on ``id_column``, or one file holding both views.
    name : str
        Dataset name (checked before anything is written).
    id_column : str
        Shared id column (required with two files, optional with one).
    uploads : list
        Uploaded files (objects with ``name`` and ``getvalue()``); None for a missing one.
    ledger : Ledger, optional
        With it, a name already registered (or whose upload folder exists) is refused here,
        before any file is read (:func:`dpcore.privacy.registration.check_name_free`).

    Returns
    -------
    dict
        The draft: layout, name, id column, file names, bytes and tables (private data).

    Raises
    ------
    DataError, ParameterError
        Bad or taken name, missing file, unreadable or malformed file (its line), a file
        without data rows, a missing id column, an empty or duplicate id, or views that do
        not cover the same ids — all before any schema is prefilled.
    """
    if not name.strip():
        raise DataError("give the dataset a name")
    check_dataset_name(name.strip())     # it names a folder: checked before anything is written
    if ledger is not None:
        check_name_free(ledger, data_root(ledger), name.strip())
    files = [u for u in uploads if u is not None]
    if len(files) != (2 if layout == "two" else 1):
        raise DataError("upload " + ("both view files" if layout == "two" else "the file"))
    names = [Path(u.name).name for u in files]
    if layout == "two" and names[0] == names[1]:
        raise DataError("the two view files must have different names", file=names[1])
    id_column = id_column.strip() or None
    if layout == "two" and id_column is None:
        raise DataError("two view files need the name of their shared id column")
    with tempfile.TemporaryDirectory() as tmp:
        frames = [_read_upload(u, Path(tmp)) for u in files]
    for frame, file in zip(frames, names):
        if len(frame) == 0:
            raise DataError("the file has no data rows", file=file)
    if id_column is not None:
        if layout == "two":
            join_view_ids(frames[0], frames[1], id_column, left_file=names[0],
                          right_file=names[1])
        else:
            check_ids(frames[0], id_column, names[0])
    return {"layout": layout, "name": name.strip(), "id_column": id_column, "files": names,
            "bytes": [u.getvalue() for u in files], "frames": frames, "schema": None,
            "notes": []}


def prefill_draft(draft: dict, mapping: pd.DataFrame | None) -> tuple[Schema, list[ColumnNote]]:
    """Prefill the schema from the data (OWNER ONLY; must be reviewed), with its notes.

    ``mapping`` (one-file layout) has columns ``column`` and ``view`` (left/right/ignore).
    """
    idc = draft["id_column"]
    if draft["layout"] == "two":
        left, right = draft["frames"]
        result = prefill(left, right, draft["name"], idc,
                         files=(draft["files"][0], draft["files"][1]))
        return result.schema, list(result.notes)
    frame = draft["frames"][0]
    views = dict(zip(mapping["column"], mapping["view"]))
    left_cols = [c for c in frame.columns if views.get(c) == "left"]
    right_cols = [c for c in frame.columns if views.get(c) == "right"]
    if not left_cols or not right_cols:
        raise DataError("map at least one column to each view", file=draft["files"][0])
    result = prefill(frame[left_cols], frame[right_cols], draft["name"], idc,
                     files=(draft["files"][0], draft["files"][0]))
    return result.schema, list(result.notes)


def notes_frame(notes: list[ColumnNote]) -> pd.DataFrame:
    """The prefill's left-out columns as a table for the owner (quotes private values)."""
    return pd.DataFrame([{"column": n.column, "file": n.file or "", "view": VIEW_KEYS[n.view],
                          "why it was left out": n.reason,
                          "you can include it as": n.proposal.type if n.proposal else "—"}
                         for n in notes],
                        columns=["column", "file", "view", "why it was left out",
                                 "you can include it as"])


def undecided_columns(notes: list[ColumnNote], schema: Schema | None) -> list[str]:
    """Left-out columns that could be included and are not in the edited ``schema``."""
    taken = {a.name for a in schema.attributes} if schema is not None else set()
    return [n.column for n in notes if n.proposal is not None and n.column not in taken]


def register_draft(ledger: Ledger, draft: dict, schema: Schema, cap: float) -> str:
    """Validate against the data, store files + schema, register. All or nothing; returns
    the registered name.

    The dataset name is checked (:func:`dpcore.data.names.check_dataset_name`) and the files
    are stored and registered by :func:`dpcore.privacy.registration.register_upload` (every
    file written through :func:`dpcore.data.names.path_inside`, so nothing lands outside
    ``data_root()``; the content digest is recorded); a bad name raises ParameterError before
    anything is written.
    """
    check_dataset_name(schema.name)
    frames = draft["frames"]
    files = draft["files"]
    if draft["layout"] == "two":
        frames_to_dataset(schema, frames[0], frames[1], left_file=files[0], right_file=files[1])
    else:
        frames_to_dataset(schema, frames[0], None, left_file=files[0])
    # storing and registering: the one path of every kind and of the CLI's register
    _, record = register_upload(ledger, data_root(ledger), schema.name,
                                dict(zip(files, draft["bytes"])), schema, cap=cap)
    return record.name


def _render_first_step(ledger: Ledger) -> None:
    layout = st.radio("Layout", ("two", "one"), key="up_layout", horizontal=True,
                      format_func={"two": "two files (one per view) with a shared id column",
                                   "one": "one file + a column → view mapping"}.get)
    name = st.text_input("Dataset name", key="up_name")
    types = ["csv", "tsv", "parquet", "pq"]
    if layout == "two":
        c1, c2 = st.columns(2)
        uploads = [c1.file_uploader("Left view file (CSV or Parquet)", type=types,
                                    key="up_left"),
                   c2.file_uploader("Right view file (CSV or Parquet)", type=types,
                                    key="up_right")]
        id_column = st.text_input("Shared id column", key="up_id")
    else:
        uploads = [st.file_uploader("Data file (CSV or Parquet)", type=types, key="up_one")]
        id_column = st.text_input("Id column (optional)", key="up_id_one")
    st.caption("Reading checks each file (a malformed CSV names its line as a text editor "
               "shows it, the header being line 1) and the ids of both views before anything "
               "else.")
    if st.button("Read the files", key="up_read"):
        try:
            st.session_state[DRAFT_KEY] = start_draft(layout, name, id_column, uploads,
                                                         ledger=ledger)
        except (DataError, ParameterError) as exc:
            st.error(f"Nothing was registered. {exc}")
        else:
            st.rerun()


def _render_prefill_step(draft: dict) -> None:
    mapping = None
    if draft["layout"] == "one":
        columns = [c for c in draft["frames"][0].columns if c != draft["id_column"]]
        half = (len(columns) + 1) // 2
        mapping = st.data_editor(
            pd.DataFrame({"column": columns,
                          "view": ["left"] * half + ["right"] * (len(columns) - half)}),
            key="up_mapping", hide_index=True,
            column_config={"column": st.column_config.TextColumn(disabled=True),
                           "view": st.column_config.SelectboxColumn(
                               options=["left", "right", "ignore"])})
    if st.button("Prefill the schema from the data", key="up_prefill"):
        try:
            schema, notes = prefill_draft(draft, mapping)
        except DataError as exc:
            st.error(str(exc))
        else:
            draft["schema"], draft["notes"] = schema, notes   # may be invalid until edited
            st.session_state[DRAFT_KEY] = draft
            st.rerun()


def _render_review_step(ledger: Ledger, draft: dict) -> None:
    st.warning("The schema below was PREFILLED FROM THE PRIVATE DATA (observed categories and "
               "ranges). Review it before registering: widen or round every domain so it "
               "reveals nothing about individuals.")
    notes = draft.get("notes") or []
    if notes:
        st.warning(f"{len(notes)} column(s) were left out of the prefilled schema. Nothing is "
                   "dropped or turned into categories without you: fix the file and read it "
                   "again, add stray texts to the missing-value texts, or tick *include* on "
                   "the column's row in the editor and choose its type.")
        st.dataframe(notes_frame(notes), hide_index=True, key="up_notes")
    try:     # the prefilled schema may be invalid (e.g. a view left empty): edit it anyway
        schema = render_schema_editor(draft["schema"], "upload", name=draft["name"],
                                      left_out=[n.proposal for n in notes if n.proposal])
    except DataError as exc:
        st.error(f"The edited schema is not valid: {exc}")
        schema = None
    undecided = undecided_columns(notes, schema)
    leave_out = True
    if undecided:
        leave_out = st.checkbox("Register without " + ", ".join(f"`{c}`" for c in undecided)
                                + " (left out above)", key="up_leave_out")
    cap = st.number_input("Total budget cap ε", min_value=0.001, value=10.0, step=1.0,
                          format="%.3f", key="up_cap")
    if undecided and not leave_out:
        st.caption("Register is disabled until you include the columns left out above or "
                   "tick that the dataset goes without them.")
    if st.button("Confirm the schema and register", type="primary", key="up_register",
                 disabled=schema is None or not leave_out):
        register_and_announce(
            ledger, lambda: register_draft(ledger, draft, schema, cap),
            success=lambda name: f"Dataset `{name}` is registered with ε = {fmt_eps(cap)}.",
            clear=(DRAFT_KEY,))


def render_two_view_upload(ledger: Ledger) -> None:
    """Owner: the two-view upload — files, then the (prefilled) declaration, the budget and
    the register step (the redescription family's :meth:`FamilyUI.render_upload`)."""
    draft = st.session_state.get(DRAFT_KEY)
    if draft is None:
        _render_first_step(ledger)
        return
    st.markdown(f"Draft **{draft['name']}** from {', '.join(draft['files'])} (owner only; "
                "nothing is registered yet).")
    if st.button("Discard this draft", key="up_discard"):
        st.session_state.pop(DRAFT_KEY, None)
        st.rerun()
    if draft["schema"] is None:
        _render_prefill_step(draft)
    else:
        _render_review_step(ledger, draft)


def upload_kinds() -> dict[str, tuple[str, FamilyUI]]:
    """Dataset kind → (its label in the kind choice, the family UI that uploads it): the
    first family that mines each kind (:func:`components.common.family_ui.ui_for_kind`)."""
    out: dict[str, tuple[str, FamilyUI]] = {}
    for ui in family_uis().values():
        kind = family(ui.family).kind
        if kind.key not in out:
            out[kind.key] = (ui.upload_label, ui)
    return out


def render_upload(ledger: Ledger) -> None:
    """Owner: choose the kind, then that kind's family uploads it (its
    :meth:`~components.common.family_ui.FamilyUI.render_upload`). A two-view draft in
    progress is shown without the choice until it is registered or discarded."""
    st.subheader("Register a new dataset")
    kinds = upload_kinds()
    if st.session_state.get(DRAFT_KEY) is None:
        kind = st.radio("Kind", tuple(kinds), key="up_kind", horizontal=True,
                        format_func=lambda k: kinds[k][0])
    else:
        kind = KIND_TWO_VIEW
    kinds[kind][1].render_upload(ledger)
