"""The owner's tools for a registered dataset: where it lives, its public schema, its budget cap.

Owner only. Where the data lives is said without server paths
(:func:`components.data_locations.data_location_text`). Confirming a schema first checks
that the registered data fit it; setting the cap goes through the ledger, which refuses a
cap below what is already spent (spent ε is never refunded).
"""

from __future__ import annotations

import streamlit as st

from dpcore.data.loading import load_dataset
from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.privacy.ledger import DatasetRecord, Ledger

from .budget_meter import fmt_eps
from .data_locations import data_location_text, hide_server_paths, ledger_location_text
from .schema_editor import render_schema_editor
from .session import set_flash

__all__ = ["render_owner_tools", "render_schema_confirmation", "render_cap_control"]


def render_schema_confirmation(ledger: Ledger, record: DatasetRecord) -> None:
    """Review the public schema of ``record`` and confirm it (the data must fit it)."""
    with st.expander("Review and confirm the public schema", expanded=not record.confirmed):
        try:
            schema = render_schema_editor(record.schema, f"confirm_{record.name}",
                                          name=record.name)
        except DataError as exc:
            st.error(f"The edited schema is not valid: {exc}")
            schema = None
        if st.button("Confirm this public schema", key=f"confirm_schema_{record.name}",
                     disabled=schema is None):
            try:
                load_dataset(record.source_path, schema=schema)   # the data must fit it
                ledger.confirm_schema(record.name, schema, actor="owner")
            except DpcoreError as exc:
                st.error(f"Not confirmed: {hide_server_paths(str(exc), ledger)}")
            else:
                set_flash("success", f"The public schema of `{record.name}` is confirmed.")
                st.rerun()


def render_cap_control(ledger: Ledger, record: DatasetRecord) -> None:
    """The total budget cap ε of ``record``: raise it, or lower it to no less than spent."""
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


def render_owner_tools(ledger: Ledger, record: DatasetRecord) -> None:
    """Owner: where the data lives (no server paths), schema review/confirmation, budget cap."""
    st.subheader("Owner tools")
    st.caption(f"Data (owner only): {data_location_text(record, ledger)} · "
               f"{ledger_location_text()}")
    render_schema_confirmation(ledger, record)
    render_cap_control(ledger, record)
