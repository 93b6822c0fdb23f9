"""Data page: the dataset card; owners also preview, upload, confirm schemas, set budgets."""

import streamlit as st

from components.dataset_card import render_dataset_card
from components.dataset_upload import render_upload
from components.family_pages import other_kind_text
from components.owner_data_tools import render_owner_tools
from components.session import current_dataset, get_ledger, is_owner, show_flash
from dpcore.registry import KIND_TWO_VIEW

ledger = get_ledger()
record = current_dataset(ledger)
st.title("Data")
show_flash()
if record is None:
    st.info("No dataset is registered yet.")
elif record.kind != KIND_TWO_VIEW:   # the card below reads two-view schemas only
    st.header(f"Dataset `{record.name}`")
    st.info(other_kind_text(record))
else:
    render_dataset_card(record)
if is_owner():
    st.divider()
    if record is not None and record.kind == KIND_TWO_VIEW:
        render_owner_tools(ledger, record)
        st.divider()
    elif record is not None:
        st.caption("The owner tools (data location, schema review, budget cap) read two-view "
                   "schemas only; they are not shown for this dataset yet.")
    render_upload(ledger)
else:
    st.caption("Owners log in from the sidebar to preview raw data, register datasets, "
               "confirm public schemas and set budgets.")
