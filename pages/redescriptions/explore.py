"""Explore page: the live scatter, the pruning threshold (0 ε), details and export."""

import streamlit as st

from components.common.session import current_dataset, get_ledger, show_flash
from components.common.unfinished_runs import render_unfinished_runs
from components.redescriptions.custom_query import custom_query_section
from components.redescriptions.explore_view import render_explore
from components.redescriptions.noisy_map import noisy_map_section

ledger = get_ledger()
record = current_dataset(ledger)
st.title("Explore")
show_flash()
if record is None:
    st.info("Pick a dataset in the sidebar first.")
else:
    render_unfinished_runs(ledger, record, key="explore")
    render_explore(ledger, record)
    custom_query_section(ledger, record)
    noisy_map_section(ledger, record)
