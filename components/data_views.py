"""The Data page: the dataset card for everyone, and the owner's data tools.

Analysts see only declared-public metadata: views, attribute names, types,
declared domains/categories, units, attribute descriptions and provenance — no
raw values and no row count, unless the dataset is a public demo. The dataset's
free-text description is shown on public demo datasets and to owners only (free
text is not vetted field by field and could state private facts).

Owners also get: a raw-data preview and the row count, a schema editor to review
and confirm the public schema, the budget cap, and the upload of a new dataset
(two files joined on a shared id column, or one file plus a column → view
mapping) whose schema is prefilled from the data by
:func:`dpcore.data.schema.prefill_schema` and must be reviewed before registering.
Bad input is reported with the :class:`~dpcore.errors.DataError` message (file,
column, row) and registers nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.loading import frames_to_dataset, load_dataset, read_table
from dpcore.data.names import check_dataset_name, path_inside
from dpcore.data.schema import (
    ATTRIBUTE_TYPES,
    VIEW_KEYS,
    Schema,
    prefill_schema,
    save_schema,
    schema_from_dict,
    schema_to_dict,
)
from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.privacy.ledger import DatasetRecord, Ledger

from .budget_meter import fmt_eps
from .session import can_see_truth, is_owner, ledger_location_note, load_data, set_flash

__all__ = ["PUBLIC_NOTE", "attribute_table", "render_dataset_card", "render_owner_tools",
           "render_upload", "schema_to_editor_frame", "editor_frame_to_schema", "data_root",
           "preview_frame"]

PUBLIC_NOTE = (
    "**What is public on this card:** the attribute names, their view, types, the declared "
    "domains or categories, units and descriptions, and the split grid computed from the "
    "declared domains. The data owner declared all of it; none of it is computed from the "
    "data. **Not public:** the raw values, the number of rows, and every statistic computed "
    "from the data without noise. As an analyst you only receive differentially private "
    "outputs: the trees chosen by DP mechanisms and noisy counts.")

_EDITOR_COLUMNS = ["include", "name", "view", "type", "categories", "domain_lo", "domain_hi",
                   "thresholds", "true_value", "false_value", "unit", "description"]


def data_root(ledger: Ledger) -> Path:
    """Where uploaded datasets are stored: ``$DPRM_DATA_DIR``, else ``<ledger folder>/datasets``."""
    env = os.environ.get("DPRM_DATA_DIR")
    return Path(env).expanduser() if env else ledger.path.parent / "datasets"


# --------------------------------------------------------------------------- card

def _domain_text(attr) -> str:
    if attr.type == "categorical":
        return ", ".join(attr.categories)
    if attr.type == "boolean":
        if attr.true_value is not None:
            return f"true = {attr.true_value!r}, false = {attr.false_value!r}"
        return "true / false"
    parts = []
    if attr.domain is not None:
        parts.append(f"[{attr.domain[0]:g}, {attr.domain[1]:g}]")
    if attr.thresholds:
        parts.append("thresholds " + ", ".join(f"{t:g}" for t in attr.thresholds))
    return "; ".join(parts)


def attribute_table(schema: Schema) -> pd.DataFrame:
    """The declared-public attributes as a table (no data involved)."""
    return pd.DataFrame([{"attribute": a.name, "view": schema.views[a.view].name,
                          "type": a.type, "declared domain / categories": _domain_text(a),
                          "unit": a.unit, "description": a.description}
                         for a in schema.attributes])


def preview_frame(data: TwoViewDataset, n: int = 20) -> pd.DataFrame:
    """The first ``n`` rows, decoded (categories as labels). OWNER / PUBLIC DEMO ONLY."""
    out = {"id": [str(x) for x in data.ids[:n]]}
    for view in data.views:
        for a, attr in enumerate(view.attributes):
            col = view.values[a, :n]
            if attr.type == "categorical":
                out[attr.name] = [None if c != c else attr.categories[int(c)] for c in col]
            elif attr.type == "boolean":
                out[attr.name] = [None if c != c else bool(c) for c in col]
            else:
                out[attr.name] = list(col)
    return pd.DataFrame(out)


def render_dataset_card(record: DatasetRecord) -> None:
    """The dataset card: public metadata for all, raw-data facts only where allowed."""
    schema = record.schema
    truth = can_see_truth(record)
    st.header(f"Dataset `{record.name}`")
    badges = ["public demo (synthetic or public data)" if record.public_demo
              else "private dataset", "schema confirmed" if record.confirmed
              else "schema NOT confirmed yet (runs are refused)"]
    st.caption(" · ".join(badges))
    if record.public_demo or is_owner():
        if schema.description:
            st.markdown(schema.description)
    else:
        st.caption("The owner's free-text description is shown on public demo datasets only.")
    if schema.provenance:
        st.markdown(f"**Provenance:** {schema.provenance}")
    c1, c2 = st.columns(2)
    for col, v in zip((c1, c2), (0, 1)):
        attrs = schema.view_attributes(v)
        types = pd.Series([a.type for a in attrs]).value_counts()
        col.markdown(f"**{VIEW_KEYS[v].capitalize()} view: {schema.views[v].name}**  \n"
                     f"{len(attrs)} attributes (" +
                     ", ".join(f"{k} {t}" for t, k in types.items()) + ")")
    st.markdown(f"Public split grid: {schema.grid_bins} equal-width thresholds inside each "
                f"numeric attribute's declared domain (unless the owner gave thresholds); "
                f"initial targets use {schema.target_bins} equal-width bins.")
    st.dataframe(attribute_table(schema), hide_index=True)
    st.info(PUBLIC_NOTE)
    if truth:
        try:
            data = load_data(record)
        except DataError as exc:
            st.error(str(exc))
            return
        who = "public demo" if record.public_demo else "owner only"
        st.metric(f"Rows ({who})", data.n_rows)
        with st.expander(f"Raw data preview ({who})"):
            st.dataframe(preview_frame(data), hide_index=True)


# --------------------------------------------------------------------------- schema editor

def _join(values) -> str:
    return ", ".join(str(v) for v in values) if values else ""


def schema_to_editor_frame(schema: Schema) -> pd.DataFrame:
    """One editable row per attribute (lists as comma-separated text)."""
    rows = []
    for a in schema.attributes:
        rows.append({"include": True, "name": a.name, "view": VIEW_KEYS[a.view], "type": a.type,
                     "categories": _join(a.categories),
                     "domain_lo": a.domain[0] if a.domain else None,
                     "domain_hi": a.domain[1] if a.domain else None,
                     "thresholds": _join(f"{t:g}" for t in (a.thresholds or ())),
                     "true_value": a.true_value or "", "false_value": a.false_value or "",
                     "unit": a.unit, "description": a.description})
    frame = pd.DataFrame(rows, columns=_EDITOR_COLUMNS)
    frame["domain_lo"] = frame["domain_lo"].astype("float64")
    frame["domain_hi"] = frame["domain_hi"].astype("float64")
    return frame


def _split_list(text) -> list[str]:
    if text is None or (isinstance(text, float) and text != text):
        return []
    return [t.strip() for t in str(text).split(",") if t.strip()]


def _number_list(text, column: str) -> list[float] | None:
    parts = _split_list(text)
    if not parts:
        return None
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise DataError(f"thresholds must be numbers separated by commas; got {text!r}",
                        column=column) from None


def editor_frame_to_schema(frame: pd.DataFrame, base: Schema, *, name: str, description: str,
                           provenance: str, public_demo: bool, view_names: tuple[str, str],
                           grid_bins: int, target_bins: int) -> Schema:
    """Build and validate the edited schema (DataError names the attribute)."""
    attributes = []
    for row in frame.to_dict("records"):
        if not bool(row.get("include", True)):
            continue
        attr_name = str(row.get("name") or "").strip()
        typ = row.get("type")
        d = {"name": attr_name, "view": row.get("view"), "type": typ}
        if typ == "categorical":
            d["categories"] = _split_list(row.get("categories"))
        elif typ == "numeric":
            lo, hi = row.get("domain_lo"), row.get("domain_hi")
            lo = None if lo is None or lo != lo else float(lo)
            hi = None if hi is None or hi != hi else float(hi)
            if lo is not None or hi is not None:
                d["domain"] = [lo, hi]
            thresholds = _number_list(row.get("thresholds"), attr_name)
            if thresholds is not None:
                d["thresholds"] = thresholds
        else:
            tv, fv = str(row.get("true_value") or "").strip(), str(row.get("false_value") or "")
            if tv or fv.strip():
                d["true_value"], d["false_value"] = tv, fv.strip()
        for key in ("unit", "description"):
            value = row.get(key)
            if isinstance(value, str) and value.strip():
                d[key] = value.strip()
        attributes.append(d)
    plain = schema_to_dict(base)
    plain.update({"name": name, "description": description, "provenance": provenance,
                  "public_demo": bool(public_demo), "grid_bins": int(grid_bins),
                  "target_bins": int(target_bins), "attributes": attributes})
    for key, view_name in zip(VIEW_KEYS, view_names):
        plain["views"][key]["name"] = view_name
    return schema_from_dict(plain, file="the edited schema")


def _schema_editor(base: Schema, key: str, *, name: str) -> Schema:
    """Widgets to review a schema; returns the edited, validated Schema (raises DataError)."""
    c1, c2 = st.columns(2)
    description = c1.text_area("Description (public)", base.description, key=f"{key}_desc")
    provenance = c2.text_area("Provenance (public)", base.provenance, key=f"{key}_prov")
    c1, c2, c3, c4, c5 = st.columns(5)
    left_name = c1.text_input("Left view name", base.views[0].name, key=f"{key}_vl")
    right_name = c2.text_input("Right view name", base.views[1].name, key=f"{key}_vr")
    grid_bins = c3.number_input("Grid thresholds per numeric attribute", 1, 1000,
                                int(base.grid_bins), key=f"{key}_grid")
    target_bins = c4.number_input("Initial-target bins", 2, 100, int(base.target_bins),
                                  key=f"{key}_tb")
    public_demo = c5.checkbox("Public demo (true values may be shown to all)",
                              base.public_demo, key=f"{key}_demo")
    st.caption("Review every row. Numeric domains must be public knowledge (round, generous "
               "ranges), never the observed minimum and maximum of private data.")
    edited = st.data_editor(
        schema_to_editor_frame(base), key=f"{key}_attrs", hide_index=True,
        column_config={
            "include": st.column_config.CheckboxColumn("include"),
            "name": st.column_config.TextColumn("attribute", disabled=True),
            "view": st.column_config.SelectboxColumn("view", options=list(VIEW_KEYS)),
            "type": st.column_config.SelectboxColumn("type", options=list(ATTRIBUTE_TYPES)),
            "categories": st.column_config.TextColumn("categories (a, b, …)"),
            "domain_lo": st.column_config.NumberColumn("domain low"),
            "domain_hi": st.column_config.NumberColumn("domain high"),
            "thresholds": st.column_config.TextColumn("thresholds (optional)"),
            "true_value": st.column_config.TextColumn("true text"),
            "false_value": st.column_config.TextColumn("false text"),
            "unit": st.column_config.TextColumn("unit"),
            "description": st.column_config.TextColumn("description")})
    return editor_frame_to_schema(edited, base, name=name, description=description,
                                  provenance=provenance, public_demo=public_demo,
                                  view_names=(left_name, right_name), grid_bins=grid_bins,
                                  target_bins=target_bins)


# --------------------------------------------------------------------------- owner tools

def render_owner_tools(ledger: Ledger, record: DatasetRecord) -> None:
    """Owner: where the data lives, the schema review/confirmation, and the budget cap."""
    st.subheader("Owner tools")
    st.caption(f"Data location (owner only): `{record.source_path}` · "
               + ledger_location_note(ledger))
    with st.expander("Review and confirm the public schema", expanded=not record.confirmed):
        try:
            schema = _schema_editor(record.schema, f"confirm_{record.name}", name=record.name)
        except DataError as exc:
            st.error(f"The edited schema is not valid: {exc}")
            schema = None
        if st.button("Confirm this public schema", key=f"confirm_schema_{record.name}",
                     disabled=schema is None):
            try:
                load_dataset(record.source_path, schema=schema)   # the data must fit it
                ledger.confirm_schema(record.name, schema, actor="owner")
            except DpcoreError as exc:
                st.error(f"Not confirmed: {exc}")
            else:
                set_flash("success", f"The public schema of `{record.name}` is confirmed.")
                st.rerun()
    status = ledger.budget(record.name)
    c1, c2 = st.columns([2, 1])
    cap = c1.number_input("Total budget cap ε of this dataset", min_value=0.001,
                          value=max(status.cap, 0.001), step=1.0, format="%.3f",
                          key=f"cap_{record.name}",
                          help="Raise it, or lower it to no less than what is spent. Spent "
                               "budget is never refunded.")
    if c2.button("Set cap", key=f"set_cap_{record.name}"):
        try:
            ledger.set_cap(record.name, cap, actor="owner")
        except ParameterError as exc:
            st.error(str(exc))
        else:
            set_flash("success", f"Cap of `{record.name}` set to ε = {fmt_eps(cap)}.")
            st.rerun()


# --------------------------------------------------------------------------- upload

def _read_upload(uploaded, workdir: Path) -> pd.DataFrame:
    """Write an uploaded file to ``workdir`` and read it like a view file (DataError on failure)."""
    name = Path(uploaded.name).name
    path = path_inside(workdir, name, what="the uploaded file name")
    path.write_bytes(uploaded.getvalue())
    return read_table(path, label=name)


def _start_draft(layout: str, name: str, id_column: str, uploads: list) -> dict:
    """Read the uploaded files; returns the draft kept in session state (raises DataError)."""
    if not name.strip():
        raise DataError("give the dataset a name")
    check_dataset_name(name.strip())     # it names a folder: checked before anything is written
    files = [u for u in uploads if u is not None]
    if len(files) != (2 if layout == "two" else 1):
        raise DataError("upload " + ("both view files" if layout == "two" else "the file"))
    with tempfile.TemporaryDirectory() as tmp:
        frames = [_read_upload(u, Path(tmp)) for u in files]
    names = [Path(u.name).name for u in files]
    if layout == "two" and names[0] == names[1]:
        raise DataError("the two view files must have different names", file=names[1])
    id_column = id_column.strip() or None
    if layout == "two" and id_column is None:
        raise DataError("two view files need the name of their shared id column")
    for frame, file in zip(frames, names):
        if id_column is not None and id_column not in frame.columns:
            raise DataError("the id column is missing from the file", file=file,
                            column=id_column)
    return {"layout": layout, "name": name.strip(), "id_column": id_column, "files": names,
            "bytes": [u.getvalue() for u in files], "frames": frames, "schema": None}


def _prefill(draft: dict, mapping: pd.DataFrame | None) -> Schema:
    """Prefill the schema from the data (OWNER ONLY; must be reviewed)."""
    idc = draft["id_column"]
    if draft["layout"] == "two":
        left, right = draft["frames"]
        return prefill_schema(left, right, draft["name"], idc,
                              files=(draft["files"][0], draft["files"][1]))
    frame = draft["frames"][0]
    views = dict(zip(mapping["column"], mapping["view"]))
    left_cols = [c for c in frame.columns if views.get(c) == "left"]
    right_cols = [c for c in frame.columns if views.get(c) == "right"]
    if not left_cols or not right_cols:
        raise DataError("map at least one column to each view", file=draft["files"][0])
    return prefill_schema(frame[left_cols], frame[right_cols], draft["name"], idc,
                          files=(draft["files"][0], draft["files"][0]))


def _register(ledger: Ledger, draft: dict, schema: Schema, cap: float) -> None:
    """Validate against the data, store files + schema, register. All or nothing.

    The dataset name is checked (:func:`dpcore.data.names.check_dataset_name`) and every file is
    written through :func:`dpcore.data.names.path_inside`, so nothing lands outside
    ``data_root()``; a bad name raises ParameterError before anything is written.
    """
    check_dataset_name(schema.name)
    frames = draft["frames"]
    files = draft["files"]
    if draft["layout"] == "two":
        frames_to_dataset(schema, frames[0], frames[1], left_file=files[0], right_file=files[1])
    else:
        frames_to_dataset(schema, frames[0], None, left_file=files[0])
    try:
        ledger.get_dataset(schema.name)
    except ParameterError:
        pass
    else:
        raise ParameterError(f"a dataset named {schema.name!r} already exists")
    root = data_root(ledger)
    dest = path_inside(root, schema.name, what="dataset name", error=ParameterError)
    targets = [path_inside(dest, file, what="the view file name") for file in files]
    if dest.exists():
        raise ParameterError(f"the data folder {str(dest)!r} already exists; choose another "
                             "name")
    try:
        dest.mkdir(parents=True)
        for target, content in zip(targets, draft["bytes"]):
            target.write_bytes(content)
        save_schema(schema, dest / "schema.json")
        load_dataset(dest)                      # reads back exactly what runs will read
        ledger.register_dataset(schema.name, schema, str(dest), cap, actor="owner",
                                confirmed=True)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def render_upload(ledger: Ledger) -> None:
    """Owner: upload files, review the prefilled schema, set the budget, register."""
    st.subheader("Register a new dataset")
    draft = st.session_state.get("upload_draft")
    if draft is None:
        layout = st.radio("Layout", ("two", "one"), key="up_layout", horizontal=True,
                          format_func={"two": "two files (one per view) with a shared id "
                                              "column",
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
            uploads = [st.file_uploader("Data file (CSV or Parquet)", type=types,
                                        key="up_one")]
            id_column = st.text_input("Id column (optional)", key="up_id_one")
        if st.button("Read the files", key="up_read"):
            try:
                st.session_state["upload_draft"] = _start_draft(layout, name, id_column,
                                                                uploads)
            except (DataError, ParameterError) as exc:
                st.error(f"Nothing was registered. {exc}")
            else:
                st.rerun()
        return

    st.markdown(f"Draft **{draft['name']}** from {', '.join(draft['files'])} (owner only; "
                "nothing is registered yet).")
    if st.button("Discard this draft", key="up_discard"):
        st.session_state.pop("upload_draft", None)
        st.rerun()
    if draft["schema"] is None:
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
                draft["schema"] = schema_to_dict(_prefill(draft, mapping))
            except DataError as exc:
                st.error(str(exc))
            else:
                st.session_state["upload_draft"] = draft
                st.rerun()
        return

    st.warning("The schema below was PREFILLED FROM THE PRIVATE DATA (observed categories and "
               "ranges). Review it before registering: widen or round every domain so it "
               "reveals nothing about individuals.")
    try:
        base = schema_from_dict(draft["schema"])
        schema = _schema_editor(base, "upload", name=draft["name"])
    except DataError as exc:
        st.error(f"The edited schema is not valid: {exc}")
        schema = None
    cap = st.number_input("Total budget cap ε", min_value=0.001, value=10.0, step=1.0,
                          format="%.3f", key="up_cap")
    if st.button("Confirm the schema and register", type="primary", key="up_register",
                 disabled=schema is None):
        try:
            _register(ledger, draft, schema, cap)
        except (DataError, ParameterError) as exc:
            st.error(f"Nothing was registered. {exc}")
        else:
            st.session_state.pop("upload_draft", None)
            st.session_state["_select_dataset"] = schema.name
            set_flash("success", f"Dataset `{schema.name}` is registered with ε = "
                                 f"{fmt_eps(cap)}.")
            st.rerun()
