"""The owner's accounts panel on the Data page: who may sign in, and each analyst's share.

Lists the accounts (never their hashes), adds an analyst or owner with a password and,
for an analyst, a share of the current dataset's cap, sets a share, and disables an
account for good. Everything goes through the ledger (:mod:`dpcore.privacy.accounts`); a
refused input is shown with its reason and changes nothing. Costs 0 ε.
"""

from __future__ import annotations

import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.accounts import add_user
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.roles import ANALYST, OWNER

from .session import current_account, set_flash

__all__ = ["render_accounts"]


def _add(ledger: Ledger, record: DatasetRecord | None) -> None:
    state = st.session_state
    name = str(state.get("acct_new_name", "")).strip()
    password = state.get("acct_new_password", "") or ""
    state["acct_new_password"] = ""                  # never keep the password around
    role = state.get("acct_new_role", ANALYST)
    share = state.get("acct_new_quota")
    try:
        add_user(ledger, name, role, actor=f"app-{current_account()}", password=password)
        if role == ANALYST and record is not None and share is not None:
            ledger.set_quota(record.name, name, float(share),
                             actor=f"app-{current_account()}")
    except DpcoreError as exc:
        set_flash("error", f"No account added: {exc}")
        return
    set_flash("success", f"Account {name!r} ({role}) added.")


def _set_quota(ledger: Ledger, record: DatasetRecord) -> None:
    state = st.session_state
    try:
        ledger.set_quota(record.name, state.get("acct_quota_name", ""),
                         float(state.get("acct_quota_value", 0.0)),
                         actor=f"app-{current_account()}")
    except DpcoreError as exc:
        set_flash("error", f"Share not set: {exc}")
        return
    set_flash("success", f"Share of {record.name!r} set for {state['acct_quota_name']!r}.")


def _disable(ledger: Ledger) -> None:
    name = st.session_state.get("acct_disable_name", "")
    try:
        ledger.disable_account(name, actor=f"app-{current_account()}")
    except DpcoreError as exc:
        set_flash("error", f"Not disabled: {exc}")
        return
    set_flash("success", f"Account {name!r} disabled: it can no longer sign in or spend.")


def render_accounts(ledger: Ledger, record: DatasetRecord | None) -> None:
    """The accounts panel (owners only; the page checks the role)."""
    st.subheader("Accounts")
    rows = []
    for a in ledger.list_accounts():
        share = None
        if record is not None and a.role == ANALYST:
            status = ledger.quota_status(record.name, a.name)
            share = status.quota
            spent = status.spent
        else:
            spent = ledger.quota_status(record.name, a.name).spent if record else None
        rows.append({"account": a.name, "role": a.role,
                     "state": "disabled" if a.disabled_at else "active",
                     f"share of {record.name} (ε)" if record else "share": share,
                     "spent (ε)": spent})
    if rows:
        st.dataframe(rows, hide_index=True)
    with st.expander("Add an account"):
        st.text_input("Name", key="acct_new_name")
        st.text_input("Password", type="password", key="acct_new_password")
        st.radio("Role", (ANALYST, OWNER), key="acct_new_role", horizontal=True)
        if record is not None:
            st.number_input(f"Share of {record.name}'s cap (ε; empty: the cap only)",
                            min_value=0.0, value=None, key="acct_new_quota")
        st.button("Add the account", key="acct_add", on_click=_add, args=(ledger, record))
    analysts = [a.name for a in ledger.list_accounts() if a.role == ANALYST and a.active]
    if record is not None and analysts:
        with st.expander(f"Set an analyst's share of {record.name}"):
            st.selectbox("Analyst", analysts, key="acct_quota_name")
            st.number_input("Share (ε)", min_value=0.0, value=1.0, key="acct_quota_value")
            st.button("Set the share", key="acct_quota_set", on_click=_set_quota,
                      args=(ledger, record))
    others = [a.name for a in ledger.list_accounts()
              if a.active and a.name != current_account()]
    if others:
        with st.expander("Disable an account (for good)"):
            st.selectbox("Account", others, key="acct_disable_name")
            st.button("Disable", key="acct_disable", on_click=_disable, args=(ledger,))
