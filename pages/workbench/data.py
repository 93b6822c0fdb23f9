"""Data page: the dataset card of any kind; owners also preview, upload, confirm schemas,
set budgets."""

import streamlit as st

from components.common.accounts_admin import render_accounts
from components.common.dataset_card import render_dataset_card
from components.common.dataset_upload import render_upload
from components.common.owner_data_tools import render_owner_tools
from components.common.session import current_dataset, get_ledger, is_owner, show_flash

ledger = get_ledger()
record = current_dataset(ledger)
st.title("Data")
show_flash()
if record is None:
    st.info("No dataset is registered yet.")
else:
    render_dataset_card(record, ledger)
if is_owner():
    st.divider()
    if record is not None:
        render_owner_tools(ledger, record)
        st.divider()
    render_upload(ledger)
    st.divider()
    render_accounts(ledger, record)
else:
    st.caption("Owners sign in from the sidebar to preview raw data, register datasets, "
               "confirm public schemas, set budgets and manage accounts.")
