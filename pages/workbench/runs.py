"""Runs page: the dataset's run history and side-by-side comparisons."""

import streamlit as st

from components.common.runs_view import render_runs
from components.common.session import current_dataset, get_ledger, show_flash

ledger = get_ledger()
record = current_dataset(ledger)
st.title("Runs")
show_flash()
if record is None:
    st.info("Pick a dataset in the sidebar first.")
else:
    render_runs(ledger, record)
