"""Owner & teaching page: exact statistics beside noisy ones (owner or public demo only)."""

import streamlit as st

from components.common.session import current_dataset, get_ledger
from components.redescriptions.owner_views import render_teaching

ledger = get_ledger()
record = current_dataset(ledger)
st.title("Owner & teaching")
if record is None:
    st.info("Pick a dataset in the sidebar first.")
else:
    render_teaching(ledger, record)
