"""Entry point of the DP mining workbench: ``streamlit run app.py``.

Every rerun, on every page: declare the pages (first, so the page menu is right
even while the kernels warm up), register the built-in sample datasets if the
ledger lacks them (idempotent; on a ledger without accounts the first start also
creates the local demo analyst and prints its password in the terminal), keep the
Mine page's parameters across page switches, show only the sign-in to a visitor of a
server without public demo data, draw the sidebar (dataset picker, account, budget
meter read from the ledger: the dataset's and, signed in, yours), start warming the
numba kernels once per server process — in the background: only the pages that mine
wait for it, with a progress bar — then run the page.
"""

import streamlit as st

from components.common.bootstrap import (
    close_stale_runs,
    first_start_accounts,
    register_sample_datasets,
    samples_wanted,
)
from components.common.budget_meter import render_budget_meter
from components.common.session import (
    current_account,
    dataset_records,
    get_ledger,
    is_owner,
    render_sidebar,
    render_sign_in,
    signed_in,
)
from components.common.warmup import start_warmup
from components.redescriptions.params_form import persist_state

st.set_page_config(page_title="DP mining workbench", page_icon="🔐", layout="wide")

# The page scripts live one folder down (pages/<section>/), never in pages/ itself: Streamlit
# serves a server's very first request through its legacy routing of pages/*.py until some
# session has called st.navigation, so a deep link (/mine) opened first would otherwise run
# a bare page script (no sidebar, no meter). url_path keeps every link as it was.
page = st.navigation({
    "Workbench": [
        st.Page("pages/workbench/data.py", title="Data", icon=":material/dataset:",
                default=True),
        st.Page("pages/workbench/runs.py", title="Runs", icon=":material/history:",
                url_path="runs"),
        st.Page("pages/workbench/teaching.py", title="Owner & teaching",
                icon=":material/school:", url_path="teaching"),
    ],
    "Redescriptions": [
        st.Page("pages/redescriptions/mine.py", title="Mine", icon=":material/rocket_launch:",
                url_path="mine"),
        st.Page("pages/redescriptions/explore.py", title="Explore",
                icon=":material/scatter_plot:", url_path="explore"),
    ],
    "Frequent sequences": [
        st.Page("pages/sequences/sequences.py", title="Sequences", icon=":material/timeline:",
                url_path="sequences"),
    ],
    "Synthetic data": [
        st.Page("pages/synthesis/synthesis.py", title="Synthesis",
                icon=":material/table_view:", url_path="synthesis"),
    ],
})

ledger = get_ledger()
if st.session_state.get("_samples_checked_in") != ledger.location:
    # Once per session and ledger file (the call itself is idempotent and race-safe).
    _problems = register_sample_datasets(ledger).problems if samples_wanted() else []
    close_stale_runs(ledger)
    st.session_state["_samples_checked_in"] = ledger.location
    st.session_state["_sample_problems"] = _problems
    if samples_wanted():
        first_start_accounts(ledger.location)
persist_state()
if signed_in() is None and not dataset_records(ledger):
    # A server of private data only: a visitor who did not sign in sees the sign-in, nothing
    # else (not even the datasets' names).
    st.title("DP mining workbench")
    st.info("This server holds private data only: sign in with your account.")
    render_sign_in()
    st.stop()
record = render_sidebar(ledger)
render_budget_meter(ledger, record, account=current_account())
if st.session_state.get("_sample_problems") and is_owner():
    st.sidebar.warning("Sample data not registered: "
                       + "; ".join(st.session_state["_sample_problems"]))
warmup = start_warmup()            # never waits: the mining pages show its progress
if not warmup.ready:
    st.sidebar.caption(f"Mining engine: preparing ({warmup.done} of {warmup.total} steps "
                       "done); only mining waits for it.")
page.run()
