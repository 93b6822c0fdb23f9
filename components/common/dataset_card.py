"""The dataset card on the Data page, for every kind of dataset: public metadata for all,
raw facts where allowed.

Every card shows the dataset's name, its kind (two-view table, sequence dataset, labelled
table), whether it is a public demo, whether its public schema is confirmed, and its budget
(cap, spent and remaining ε — budgets are public). Then what the owner declared public for
its kind:

* two-view table: views, attribute names, types, declared domains/categories, units,
  attribute descriptions, the split grid;
* sequence dataset: the declared alphabet (its size and item names) and l1, the public
  bound on the record length;
* labelled table: the label column, its declared classes, and the features with their
  declared bounds or levels.

Analysts see nothing computed from the data without noise: no raw values and no row
count, unless the dataset is a public demo. Where a stored strict run released a noisy
count of the records (PFS2's noisy number of records, MC-GEN's or the floor's noisy class
counts) the card repeats it, as that run released it (post-processing, 0 ε). The dataset's
free-text description is shown on public demo datasets and to owners only (free text is
not vetted field by field and could state private facts). Owners (and everyone, on a public
demo) also get the true row count and a raw-data preview.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import VIEW_KEYS, Schema
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.data.table.schema import TableSchema, value_text
from dpcore.data.table.table import SynthesisTable
from dpcore.errors import DataError, DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.policy import Requester
from dpcore.registry import (
    ALGORITHM_SPECS,
    DATASET_KIND_SPECS,
    KIND_SEQUENCES,
    KIND_TABLE,
    KIND_TWO_VIEW,
    STRICT,
)
from dpcore.runs import load_result, readable_runs

from .budget_meter import fmt_eps
from .data_locations import hide_server_paths
from .family_pages import render_other_kind
from .session import can_see_truth, current_requester, get_ledger, is_owner, load_data

__all__ = ["PUBLIC_NOTE", "PUBLIC_NOTES", "attribute_table", "alphabet_table",
           "feature_table", "preview_frame", "sequence_preview_frame", "table_preview_frame",
           "row_count", "released_row_count", "render_dataset_card"]

PUBLIC_NOTE = (
    "**What is public on this card:** the attribute names, their view, types, the declared "
    "domains or categories, units and descriptions, and the split grid computed from the "
    "declared domains. The data owner declared all of it; none of it is computed from the "
    "data. **Not public:** the raw values, the number of rows, and every statistic computed "
    "from the data without noise. As an analyst you only receive differentially private "
    "outputs: the trees chosen by DP mechanisms and noisy counts.")

#: The card's note on what is public, by dataset kind.
PUBLIC_NOTES = {
    KIND_TWO_VIEW: PUBLIC_NOTE,
    KIND_SEQUENCES: (
        "**What is public on this card:** the declared alphabet (the item names) and l1, the "
        "bound on the record length PFS2 keeps in its samples. The data owner declared both; "
        "neither is computed from the data. **Not public:** the records, their number and "
        "lengths, and every statistic computed from them without noise. As an analyst you "
        "only receive differentially private outputs: frequent sequences with noisy "
        "supports."),
    KIND_TABLE: (
        "**What is public on this card:** the label column and its declared classes, the "
        "features with their declared bounds (numeric) or levels (categorical), units and "
        "output decimals. The data owner declared all of it; none of it is computed from "
        "the data. **Not public:** the raw rows, their number, the class counts and every "
        "statistic computed from the data without noise. As an analyst you only receive "
        "differentially private outputs: synthetic tables and noisy counts."),
}


# --------------------------------------------------------------------------- two-view tables

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


def _two_view_body(schema: Schema) -> None:
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


# --------------------------------------------------------------------------- sequence datasets

def alphabet_table(schema: SequenceSchema) -> pd.DataFrame:
    """The declared alphabet, one item per row in code order (no data involved)."""
    return pd.DataFrame({"code": range(schema.n_items), "item": list(schema.alphabet)})


def sequence_preview_frame(data: SequenceDataset, n: int = 20) -> pd.DataFrame:
    """The first ``n`` records as item paths with their lengths. OWNER / PUBLIC DEMO ONLY."""
    shown = range(min(n, data.n_records))
    return pd.DataFrame({"record": [r + 1 for r in shown],
                         "length (items)": [int(data.lengths[r]) for r in shown],
                         "items": [" → ".join(data.record_names(r)) for r in shown]})


def _sequence_body(schema: SequenceSchema) -> None:
    c1, c2 = st.columns(2)
    c1.metric("Alphabet size (declared, public)", schema.n_items,
              help="The item names the owner declared; PFS2's first-level candidates.")
    c2.metric("l1: record length bound (items, public)", schema.l1,
              help="The public upper bound on the record length kept in PFS2's sample "
                   "databases; longer records are cut in the samples.")
    with st.expander(f"The declared alphabet ({schema.n_items} items)"):
        st.dataframe(alphabet_table(schema), hide_index=True)


# --------------------------------------------------------------------------- labelled tables

def feature_table(schema: TableSchema) -> pd.DataFrame:
    """The declared features as a table (no data involved)."""
    rows = []
    for f in schema.features:
        if f.is_numeric:
            declared = f"[{f.bounds[0]:g}, {f.bounds[1]:g}]"
        else:
            declared = ", ".join(value_text(v) for v in f.levels)
        rows.append({"feature": f.name, "type": f.type,
                     "declared bounds / levels": declared, "unit": f.unit,
                     "output decimals": "" if f.decimals is None else str(f.decimals)})
    return pd.DataFrame(rows)


def table_preview_frame(data: SynthesisTable, n: int = 20) -> pd.DataFrame:
    """The first ``n`` rows, label first, levels decoded. OWNER / PUBLIC DEMO ONLY."""
    return data.to_frame().head(n)


def _table_body(schema: TableSchema) -> None:
    c1, c2 = st.columns(2)
    c1.markdown(f"**Label:** `{schema.label}` — {schema.n_classes} declared classes: "
                + ", ".join(f"`{value_text(c)}`" for c in schema.classes))
    n_num = sum(f.is_numeric for f in schema.features)
    c2.markdown(f"**Features:** {schema.n_features} ({n_num} numeric, "
                f"{schema.n_features - n_num} categorical; {schema.width} columns once the "
                "levels are one-hot encoded)")
    st.dataframe(feature_table(schema), hide_index=True)


# --------------------------------------------------------------------------- rows

def row_count(data) -> int:
    """The true number of rows (records) of registered data of any kind. NOT private."""
    if isinstance(data, SequenceDataset):
        return data.n_records
    return int(data.n_rows)


def _preview(data) -> pd.DataFrame:
    if isinstance(data, SequenceDataset):
        return sequence_preview_frame(data)
    if isinstance(data, SynthesisTable):
        return table_preview_frame(data)
    return preview_frame(data)


def released_row_count(ledger: Ledger, record: DatasetRecord, requester: Requester
                       ) -> tuple[float, str] | None:
    """The newest noisy count of the records a stored strict run released, and its run id.

    Sequence datasets: PFS2's noisy number of records; labelled tables: the sum of the noisy
    class counts of an MC-GEN or floor run. Only strict runs whose result ``requester`` may read
    and which list nothing as not DP; the figure is that run's DP release (reading it is
    post-processing, 0 ε). None when no such run is stored, and for two-view tables (their
    runs release no row count of the dataset).
    """
    if record.kind not in (KIND_SEQUENCES, KIND_TABLE):
        return None
    family = DATASET_KIND_SPECS[record.kind].family
    ours = {key for key, spec in ALGORITHM_SPECS.items() if spec.family == family}
    for run in reversed(readable_runs(ledger, record.name, requester.role)):
        if (run.status != "done" or run.algorithm not in ours
                or run.params.get("mode", STRICT) != STRICT):
            continue
        try:
            result = load_result(ledger, run.run_id, requester=requester)
        except DpcoreError:
            continue
        if getattr(result, "not_dp", None):
            continue
        if record.kind == KIND_SEQUENCES:
            return float(result.noisy_records), run.run_id
        return float(sum(result.noisy_class_counts.values())), run.run_id
    return None


def _render_rows(ledger: Ledger, record: DatasetRecord) -> None:
    """True rows and a preview where allowed; otherwise the newest released noisy count."""
    if can_see_truth(record):
        try:
            data = load_data(record)
        except DataError as exc:
            st.error(hide_server_paths(str(exc), ledger))
            return
        who = "public demo" if record.public_demo else "owner only"
        st.metric(f"Rows ({who})", row_count(data))
        with st.expander(f"Raw data preview ({who})"):
            st.dataframe(_preview(data), hide_index=True)
        return
    released = released_row_count(ledger, record, current_requester())
    if released is not None:
        value, run_id = released
        st.metric("Records, noisy (a DP release)", f"≈ {value:,.0f}",
                  help=f"Released by run {run_id[:8]} with its noise; reading it costs 0 ε. "
                       "The true number of records is not public.")


# --------------------------------------------------------------------------- the card

def _render_budget(ledger: Ledger, record: DatasetRecord) -> None:
    status = ledger.budget(record.name)
    c1, c2, c3 = st.columns(3)
    c1.metric("Budget cap ε", fmt_eps(status.cap))
    c2.metric("Spent ε", fmt_eps(status.spent))
    c3.metric("Remaining ε", fmt_eps(status.remaining))


def render_dataset_card(record: DatasetRecord, ledger: Ledger | None = None) -> None:
    """The dataset card of a dataset of any kind: public metadata and the budget for all,
    raw-data facts only where allowed."""
    ledger = ledger if ledger is not None else get_ledger()
    schema = record.schema
    kind = DATASET_KIND_SPECS.get(record.kind)
    st.header(f"Dataset `{record.name}`")
    badges = [kind.label if kind else str(record.kind),
              "public demo (synthetic or public data)" if record.public_demo
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
    _render_budget(ledger, record)
    if record.kind == KIND_TWO_VIEW:
        _two_view_body(schema)
    elif record.kind == KIND_SEQUENCES:
        _sequence_body(schema)
    elif record.kind == KIND_TABLE:
        _table_body(schema)
    else:
        render_other_kind(record)
        return
    st.info(PUBLIC_NOTES[record.kind])
    _render_rows(ledger, record)
