"""The owner's schema editor: review a schema row by row, then validate it.

One editable row per attribute (lists as comma-separated text). Columns the prefill left out
(:class:`dpcore.data.prefill.ColumnNote` with a proposal) come as extra rows with *include*
unticked, so the owner decides about each of them in the same table. The edited table is
turned back into a :class:`~dpcore.data.schema.Schema` and validated by
:func:`dpcore.data.schema.schema_from_dict`; a bad edit raises
:class:`~dpcore.errors.DataError` naming the attribute.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from dpcore.data.schema import (
    ATTRIBUTE_TYPES,
    VIEW_KEYS,
    Attribute,
    Schema,
    schema_from_dict,
    schema_to_dict,
)
from dpcore.errors import DataError

__all__ = ["EDITOR_COLUMNS", "schema_to_editor_frame", "editor_frame_to_schema",
           "missing_values_text", "parse_missing_values", "render_schema_editor"]

EDITOR_COLUMNS = ["include", "name", "view", "type", "categories", "domain_lo", "domain_hi",
                  "thresholds", "true_value", "false_value", "unit", "description"]


def _join(values) -> str:
    return ", ".join(str(v) for v in values) if values else ""


def _editor_row(a: Attribute, include: bool) -> dict:
    return {"include": include, "name": a.name, "view": VIEW_KEYS[a.view], "type": a.type,
            "categories": _join(a.categories),
            "domain_lo": a.domain[0] if a.domain else None,
            "domain_hi": a.domain[1] if a.domain else None,
            "thresholds": _join(f"{t:g}" for t in (a.thresholds or ())),
            "true_value": a.true_value or "", "false_value": a.false_value or "",
            "unit": a.unit, "description": a.description}


def schema_to_editor_frame(schema: Schema, left_out: Sequence[Attribute] = ()) -> pd.DataFrame:
    """One editable row per attribute (lists as comma-separated text).

    Parameters
    ----------
    schema : Schema
        Its attributes come first, *include* ticked.
    left_out : sequence of Attribute
        Proposed attributes for columns the prefill left out: appended with *include*
        unticked (the owner ticks the ones to keep).
    """
    rows = [_editor_row(a, True) for a in schema.attributes]
    rows += [_editor_row(a, False) for a in left_out]
    frame = pd.DataFrame(rows, columns=EDITOR_COLUMNS)
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


def missing_values_text(schema: Schema) -> str:
    """The schema's non-empty missing-value texts, comma-separated, for the editor."""
    return ", ".join(t for t in schema.missing_values if t)


def parse_missing_values(text: str, *, empty_is_missing: bool = True) -> list[str]:
    """Comma-separated missing-value texts → the schema's list.

    The empty cell (which a comma-separated text cannot spell) is kept first when
    ``empty_is_missing``, as in every schema the app prefills.
    """
    return ([""] if empty_is_missing else []) + _split_list(text)


def editor_frame_to_schema(frame: pd.DataFrame, base: Schema, *, name: str, description: str,
                           provenance: str, public_demo: bool, view_names: tuple[str, str],
                           grid_bins: int, target_bins: int,
                           missing_values: Sequence[str] | None = None) -> Schema:
    """Build and validate the edited schema (DataError names the attribute).

    Rows with *include* unticked are left out. ``missing_values`` (cell texts meaning
    "missing") replaces the base schema's when given.
    """
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
    if missing_values is not None:
        plain["missing_values"] = list(missing_values)
    for key, view_name in zip(VIEW_KEYS, view_names):
        plain["views"][key]["name"] = view_name
    return schema_from_dict(plain, file="the edited schema")


def render_schema_editor(base: Schema, key: str, *, name: str,
                         left_out: Sequence[Attribute] = ()) -> Schema:
    """Widgets to review a schema; returns the edited, validated Schema (raises DataError).

    ``left_out`` are proposed attributes for columns the prefill did not take (rows with
    *include* unticked).
    """
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
    empty_is_missing = "" in base.missing_values
    missing = st.text_input("Texts that mean 'missing' (comma-separated" +
                            ("; an empty cell is always missing)" if empty_is_missing else ")"),
                            missing_values_text(base), key=f"{key}_missing")
    st.caption("Review every row. Numeric domains must be public knowledge (round, generous "
               "ranges), never the observed minimum and maximum of private data.")
    edited = st.data_editor(
        schema_to_editor_frame(base, left_out), key=f"{key}_attrs", hide_index=True,
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
                                  target_bins=target_bins,
                                  missing_values=parse_missing_values(
                                      missing, empty_is_missing=empty_is_missing))
