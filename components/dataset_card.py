"""The dataset card on the Data page: declared-public metadata for all, raw facts where allowed.

Analysts see only declared-public metadata: views, attribute names, types, declared
domains/categories, units, attribute descriptions and provenance — no raw values and no row
count, unless the dataset is a public demo. The dataset's free-text description is shown on
public demo datasets and to owners only (free text is not vetted field by field and could
state private facts). Owners (and everyone, on a public demo) also get the row count and a
raw-data preview.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import VIEW_KEYS, Schema
from dpcore.errors import DataError
from dpcore.privacy.ledger import DatasetRecord

from .data_locations import hide_server_paths
from .session import can_see_truth, get_ledger, is_owner, load_data

__all__ = ["PUBLIC_NOTE", "attribute_table", "preview_frame", "render_dataset_card"]

PUBLIC_NOTE = (
    "**What is public on this card:** the attribute names, their view, types, the declared "
    "domains or categories, units and descriptions, and the split grid computed from the "
    "declared domains. The data owner declared all of it; none of it is computed from the "
    "data. **Not public:** the raw values, the number of rows, and every statistic computed "
    "from the data without noise. As an analyst you only receive differentially private "
    "outputs: the trees chosen by DP mechanisms and noisy counts.")


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
            st.error(hide_server_paths(str(exc), get_ledger()))
            return
        who = "public demo" if record.public_demo else "owner only"
        st.metric(f"Rows ({who})", data.n_rows)
        with st.expander(f"Raw data preview ({who})"):
            st.dataframe(preview_frame(data), hide_index=True)
