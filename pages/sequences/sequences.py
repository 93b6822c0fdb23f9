"""Sequences page: frequent sequences under DP (PFS2) — configure, launch, read, export."""

import streamlit as st

from components.common.session import current_dataset, get_ledger, show_flash
from components.sequences.sequences_view import render_sequences_page

ledger = get_ledger()
st.title("Frequent sequences")
show_flash()
render_sequences_page(ledger, current_dataset(ledger))
