"""Mine page: configure a run (paper defaults), see its cost, confirm once, watch it run."""

import streamlit as st

from components.common.family_pages import render_other_kind
from components.common.session import current_dataset, get_ledger, show_flash
from components.common.unfinished_runs import render_unfinished_runs
from components.redescriptions.launcher import render_launch
from components.redescriptions.params_form import render_params_form
from dpcore.registry import KIND_TWO_VIEW

ledger = get_ledger()
record = current_dataset(ledger)
st.title("Mine")
show_flash()
if record is None:
    st.info("Pick a dataset in the sidebar first.")
elif record.kind != KIND_TWO_VIEW:
    render_other_kind(record, after="The Mine page finds redescriptions in two-view data.")
else:
    st.caption(f"Dataset `{record.name}` · the budget meter in the sidebar shows what this "
               "run would cost against what remains.")
    render_unfinished_runs(ledger, record, key="mine")
    render_params_form(record, remaining=ledger.budget(record.name).remaining)
    st.divider()
    render_launch(ledger, record)
