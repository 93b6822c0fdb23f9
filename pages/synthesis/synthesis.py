"""Synthesis page: a private synthetic copy of a labelled table (MC-GEN-DP, the floor)."""

import streamlit as st

from components.common.session import current_dataset, get_ledger, show_flash
from components.synthesis.synthesis_form import render_synthesis_form
from components.synthesis.synthesis_launch import render_synthesis_launch
from components.synthesis.synthesis_view import (
    render_kind_gate,
    render_stored_run_picker,
    render_synthesis_result,
)

ledger = get_ledger()
st.title("Synthesis")
show_flash()
record = render_kind_gate(ledger, current_dataset(ledger))
if record is not None:
    st.caption(f"Dataset `{record.name}` · a synthetic table is a DP release: anyone may "
               "view and download it; only the run that makes it spends budget.")
    render_synthesis_form(record, remaining=ledger.budget(record.name).remaining)
    render_synthesis_launch(ledger, record)
    st.divider()
    run_id = render_stored_run_picker(ledger, record)
    if run_id is not None:
        render_synthesis_result(ledger, record, run_id)
