"""The owner's upload of a labelled table on the Data page (synthesised on *Synthesis*).

Owner only. Read → prefill → review → register, like the two-view upload:

1. **Read**: the table (CSV or Parquet) is read by :func:`dpcore.data.loading.read_table`
   (a malformed CSV names its line) and the label column is chosen from its header.
2. **Prefill** the features and classes from the data
   (:func:`dpcore.synthesis.prefill.prefill_table`; OWNER ONLY: observed classes, levels and
   ranges are derived from the private data). Every column left out is listed with why.
3. **Review**: one editable row per feature (include, type, public bounds, decimals, levels)
   and the declared classes; the page says the values were read from the private data.
4. **Register** (*Confirm the schema and register*): the reviewed declaration is validated by
   :func:`dpcore.data.table.schema.schema_from_dict`, and
   :func:`dpcore.privacy.registration.register_upload` reads the table with it (a class or
   level not declared, a missing column, a non-number name the file, column and row), stores
   the file and ``synthesis_schema.json`` in the upload folder and registers — all or nothing.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from dpcore.data.loading import read_table
from dpcore.data.names import check_dataset_name, path_inside
from dpcore.data.table.schema import CATEGORICAL, NUMERIC, TableSchema, schema_from_dict
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.registration import check_name_free, register_upload
from dpcore.synthesis.prefill import TablePrefill, prefill_table

from ..common.budget_meter import fmt_eps
from ..common.data_locations import data_root, hide_server_paths
from ..common.upload_register import register_and_announce

__all__ = ["TABLE_DRAFT_KEY", "read_upload", "start_table_draft", "features_frame",
           "reviewed_schema", "render_table_upload"]

#: Session-state key of the table upload in progress (owner only: private data).
TABLE_DRAFT_KEY = "table_upload_draft"
_TYPES = ["csv", "tsv", "parquet", "pq"]
_COLUMNS = ["include", "column", "type", "lower", "upper", "decimals", "levels"]


def read_upload(name: str, content: bytes) -> pd.DataFrame:
    """An uploaded table read by the dpcore reader (DataError naming the file and line)."""
    name = Path(name).name
    with tempfile.TemporaryDirectory() as tmp:
        path = path_inside(tmp, name, what="the uploaded file name")
        path.write_bytes(content)
        return read_table(path, label=name)


def start_table_draft(name: str, file: str, content: bytes, label: str,
                      ledger: Ledger | None = None) -> dict:
    """Check the name, read the table and prefill its declaration (OWNER ONLY).

    Returns the draft kept in session state: name, file name and bytes, label and the
    :class:`~dpcore.synthesis.prefill.TablePrefill`. DataError/ParameterError on a bad name
    (with ``ledger``, also a name already registered or whose upload folder exists: checked
    before the file is read), an unreadable or empty file, a missing label column or label
    value.
    """
    check_dataset_name(name)
    if ledger is not None:
        check_name_free(ledger, data_root(ledger), name)
    frame = read_upload(file, content)
    guess = prefill_table(frame, label, name=name, file=Path(file).name)
    return {"name": name, "file": Path(file).name, "bytes": content, "label": label,
            "prefill": guess}


def features_frame(guess: TablePrefill) -> pd.DataFrame:
    """The editor's rows: every prefilled feature (included) and every proposal (not)."""
    rows = []
    for include, feature in [(True, f) for f in guess.features] \
            + [(False, f) for f in guess.proposed]:
        numeric = feature["type"] == NUMERIC
        bounds = feature.get("bounds") or [None, None]
        rows.append({"include": include, "column": feature["name"], "type": feature["type"],
                     "lower": bounds[0] if numeric else None,
                     "upper": bounds[1] if numeric else None,
                     "decimals": feature.get("decimals"),
                     "levels": "" if numeric else ", ".join(map(str, feature["levels"]))})
    return pd.DataFrame(rows, columns=_COLUMNS)


def _number(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    value = float(value)
    return int(value) if value.is_integer() else value


def _split(text) -> list[str]:
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def reviewed_schema(draft: dict, rows: pd.DataFrame, classes: str, *, public_demo: bool,
                    description: str = "") -> TableSchema:
    """The declaration the owner reviewed, validated by the table schema's own reader.

    ``rows`` are the editor's rows (see :func:`features_frame`); ``classes`` the declared
    classes as comma-separated text. Raises DataError naming what is not valid.
    """
    features = []
    for row in rows.to_dict("records"):
        if not bool(row.get("include")):
            continue
        if row.get("type") == NUMERIC:
            feature = {"name": row["column"], "type": NUMERIC,
                       "bounds": [_number(row.get("lower")), _number(row.get("upper"))]}
            decimals = _number(row.get("decimals"))
            if decimals is not None:
                feature["decimals"] = decimals
        else:
            feature = {"name": row["column"], "type": row.get("type") or CATEGORICAL,
                       "levels": _split(row.get("levels"))}
        features.append(feature)
    return schema_from_dict({"name": draft["name"], "description": description,
                             "provenance": "uploaded on the Data page",
                             "public_demo": bool(public_demo), "file": draft["file"],
                             "label": {"name": draft["label"], "classes": _split(classes)},
                             "features": features})


def _render_first_step(ledger: Ledger) -> None:
    name = st.text_input("Dataset name", key="tab_name")
    uploaded = st.file_uploader("Labelled table (CSV or Parquet)", type=_TYPES,
                                key="tab_file")
    if uploaded is None:
        return
    try:
        header = [str(c).strip() for c in read_upload(uploaded.name,
                                                      uploaded.getvalue()).columns]
    except DataError as exc:
        st.error(f"Nothing was registered. {hide_server_paths(str(exc), ledger)}")
        return
    label = st.selectbox("Label column (the class to synthesise by)", header,
                         index=len(header) - 1 if "label" not in header
                         else header.index("label"), key="tab_label")
    if st.button("Prefill the schema from the data", key="tab_prefill"):
        try:
            st.session_state[TABLE_DRAFT_KEY] = start_table_draft(
                name.strip(), uploaded.name, uploaded.getvalue(), label, ledger=ledger)
        except (DataError, ParameterError) as exc:
            st.error(f"Nothing was registered. {hide_server_paths(str(exc), ledger)}")
        else:
            st.rerun()


def _render_review(ledger: Ledger, draft: dict) -> None:
    guess: TablePrefill = draft["prefill"]
    st.markdown(f"Draft **{draft['name']}** from `{draft['file']}`, label "
                f"`{draft['label']}` (owner only; nothing is registered yet).")
    if st.button("Discard this draft", key="tab_discard"):
        st.session_state.pop(TABLE_DRAFT_KEY, None)
        st.rerun()
    st.warning("The classes, levels and bounds below were PREFILLED FROM THE PRIVATE DATA "
               "(observed values and ranges). Review them before registering: widen or round "
               "every bound, add every class and level that could occur, so the declaration "
               "reveals nothing about individuals. Values outside the bounds are clipped.")
    if len(guess.classes) < 2:
        st.warning(f"The label column `{draft['label']}` holds one class only: declare every "
                   "class that could occur below, or choose another label column (discard "
                   "this draft), since synthesising by class needs at least two.")
    if guess.notes:
        st.warning(f"{len(guess.notes)} column(s) were left out of the prefilled schema; "
                   "tick *include* on a column's row to use it anyway.")
        st.dataframe(pd.DataFrame([{"column": n.column, "why it was left out": n.reason}
                                   for n in guess.notes]), hide_index=True, key="tab_notes")
    rows = st.data_editor(
        features_frame(guess), key="tab_features", hide_index=True,
        column_config={"column": st.column_config.TextColumn(disabled=True),
                       "type": st.column_config.SelectboxColumn(options=[NUMERIC,
                                                                         CATEGORICAL]),
                       "levels": st.column_config.TextColumn(
                           help="categorical: the declared levels, comma-separated")})
    classes = st.text_input("Declared classes of the label (comma-separated, public)",
                            ", ".join(guess.classes), key="tab_classes")
    c1, c2 = st.columns(2)
    cap = c1.number_input("Total budget cap ε", value=10.0, step=1.0, format="%.3f",
                          key="tab_cap")
    public_demo = c2.checkbox("Public demo (synthetic or public data)", key="tab_demo")
    description = st.text_input("Description (public)", key="tab_description")
    try:
        schema = reviewed_schema(draft, rows, classes, public_demo=public_demo,
                                 description=description)
    except DataError as exc:
        st.error(f"The edited schema is not valid: {exc}")
        schema = None
    if st.button("Confirm the schema and register", type="primary", key="tab_register",
                 disabled=schema is None):
        register_and_announce(
            ledger, lambda: register_upload(ledger, data_root(ledger), draft["name"],
                                            {draft["file"]: draft["bytes"]}, schema,
                                            cap=cap)[1].name,
            success=lambda name: f"Labelled table `{name}` is registered with ε = "
                                 f"{fmt_eps(cap)}; synthesise it on the Synthesis page.",
            clear=(TABLE_DRAFT_KEY,))


def render_table_upload(ledger: Ledger) -> None:
    """Owner: upload a labelled table, review its prefilled declaration, register it."""
    draft = st.session_state.get(TABLE_DRAFT_KEY)
    if draft is None:
        _render_first_step(ledger)
    else:
        _render_review(ledger, draft)
