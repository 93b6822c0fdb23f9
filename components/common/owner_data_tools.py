"""The owner's tools for a registered dataset of any kind: where it lives, its public schema,
its budget cap.

Owner only. Where the data lives is said without server paths
(:func:`components.common.data_locations.data_location_text`). Confirming a schema first checks
that the registered data fit it (for every kind through
:func:`dpcore.data.kinds.load_registered_data`, the loader the run path uses); setting the
cap goes through the ledger (:meth:`dpcore.privacy.ledger.Ledger.set_cap`), which refuses a
cap below what is already spent (spent ε is never refunded). A two-view schema is reviewed
attribute by attribute in the schema editor; a sequence or table schema shows its declared
alphabet or features as declared (they are tied to the data files: change them in the
schema file and register again) and lets the owner edit the free texts and the public demo
flag before confirming.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from dpcore.data.kinds import load_registered_data
from dpcore.data.loading import load_dataset
from dpcore.errors import DataError, DpcoreError, ParameterError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.registry import KIND_TWO_VIEW, dataset_kind_spec

from ..redescriptions.schema_editor import render_schema_editor
from .budget_meter import fmt_eps
from .data_locations import data_location_text, hide_server_paths, ledger_location_text
from .number_fields import Bounds, number_field
from .session import set_flash

__all__ = ["render_owner_tools", "render_schema_confirmation",
           "render_declaration_confirmation", "edited_declaration", "confirm_declaration",
           "render_cap_control"]


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


def edited_declaration(record: DatasetRecord, *, description: str, provenance: str,
                       public_demo: bool):
    """``record``'s sequence or table schema with the owner's free texts and demo flag,
    validated by the kind's own reader (raises DataError naming the problem)."""
    spec = dataset_kind_spec(record.kind)
    edited = dataclasses.replace(record.schema, description=description,
                                 provenance=provenance, public_demo=bool(public_demo))
    return spec.resolve("schema_from_dict")(spec.resolve("schema_to_dict")(edited))


def confirm_declaration(ledger: Ledger, record: DatasetRecord, schema) -> DatasetRecord:
    """Check that the registered data fit ``schema``, then confirm it in the ledger.

    Raises
    ------
    DataError
        The data do not load with this schema (nothing changes in the ledger).
    DpcoreError
        The ledger refuses the schema (e.g. of another kind).
    """
    if not record.source_path:
        raise DataError(f"dataset {record.name!r} has no stored data location; register it "
                        "again with its files")
    load_registered_data(record.kind, record.source_path, schema)   # the data must fit it
    return ledger.confirm_schema(record.name, schema, actor="owner")


def render_declaration_confirmation(ledger: Ledger, record: DatasetRecord) -> None:
    """Review the public declaration of a sequence or table dataset and confirm it."""
    spec = dataset_kind_spec(record.kind)
    schema = record.schema
    key = f"declare_{record.name}"
    with st.expander("Review and confirm the public schema", expanded=not record.confirmed):
        st.caption(f"The declaration of this {spec.label}, as stored in the ledger. The "
                   "declared items, classes, features and files are tied to the data files: "
                   "change them in the schema file and register the dataset again.")
        st.json(spec.resolve("schema_to_dict")(schema), expanded=False)
        c1, c2 = st.columns(2)
        description = c1.text_area("Description (public)", schema.description,
                                   key=f"{key}_desc")
        provenance = c2.text_area("Provenance (public)", schema.provenance, key=f"{key}_prov")
        public_demo = st.checkbox("Public demo (true values may be shown to all)",
                                  schema.public_demo, key=f"{key}_demo")
        try:
            edited = edited_declaration(record, description=description,
                                        provenance=provenance, public_demo=public_demo)
        except DataError as exc:
            st.error(f"The edited schema is not valid: {hide_server_paths(str(exc), ledger)}")
            edited = None
        if st.button("Confirm this public schema", key=f"confirm_schema_{record.name}",
                     disabled=edited is None):
            try:
                confirm_declaration(ledger, record, edited)
            except DpcoreError as exc:
                st.error(f"Not confirmed: {hide_server_paths(str(exc), ledger)}")
            else:
                set_flash("success", f"The public schema of `{record.name}` is confirmed.")
                st.rerun()


def render_cap_control(ledger: Ledger, record: DatasetRecord) -> None:
    """The total budget cap ε of ``record``: raise it, or lower it to no less than spent."""
    status = ledger.budget(record.name)
    c1, c2 = st.columns([2, 1])
    key = f"cap_{record.name}"
    st.session_state.setdefault(key, max(status.cap, 0.001))
    problem = number_field(c1, "Total budget cap ε of this dataset", key,
                           Bounds(low=0.0, low_open=True, why="a cap is a positive ε"),
                           step=1.0, format="%.3f",
                           help="Raise it, or lower it to no less than what is spent. Spent "
                                "budget is never refunded.")
    cap = st.session_state[key]
    if c2.button("Set cap", key=f"set_cap_{record.name}", disabled=problem is not None):
        try:
            ledger.set_cap(record.name, cap, actor="owner")
        except ParameterError as exc:
            st.error(hide_server_paths(str(exc), ledger))
        else:
            set_flash("success", f"Cap of `{record.name}` set to ε = {fmt_eps(cap)}.")
            st.rerun()


def render_owner_tools(ledger: Ledger, record: DatasetRecord) -> None:
    """Owner: where the data lives (no server paths), schema review/confirmation, budget cap
    — for a dataset of any kind."""
    st.subheader("Owner tools")
    st.caption(f"Data (owner only): {data_location_text(record, ledger)} · "
               f"{ledger_location_text()}")
    if record.kind == KIND_TWO_VIEW:
        render_schema_confirmation(ledger, record)
    else:
        render_declaration_confirmation(ledger, record)
    render_cap_control(ledger, record)
