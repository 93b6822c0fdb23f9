"""Ledger, dataset, account and role state shared by every page (the sidebar lives here).

What is kept where
------------------
* The **ledger** is opened fresh (``Ledger()`` → ``$DPRM_LEDGER``) whenever needed;
  a :class:`~dpcore.privacy.ledger.Ledger` holds only a path, never a connection.
* The **budget** is always read from the ledger (see :mod:`components.common.budget_meter`),
  never from session state.
* The **signed-in account** (a :class:`~dpcore.privacy.accounts.SignedIn` session from
  :func:`dpcore.privacy.accounts.sign_in`, or from Streamlit's ``st.login`` OpenID Connect
  sign-in mapped by :func:`dpcore.privacy.accounts.sign_in_identity`) and the **chosen
  dataset** live in session state. The role is the account's role in the ledger. A visitor
  who did not sign in is an anonymous analyst and sees the public demo datasets only; on a
  server without public demo data the app shows nothing but the sign-in.
* Raw **data** is loaded here: public-demo datasets through ``st.cache_resource``
  (loading public files is fine to cache), private ones freshly on each use and
  never cached. DP releases are never cached at all.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import streamlit as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.errors import DpcoreError, OwnerLoginThrottled, SignInError
from dpcore.privacy.accounts import SignedIn, oidc_identity, sign_in, sign_in_identity
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.roles import ANALYST, OWNER, can_see_true_statistics
from dpcore.runs import load_registered

__all__ = [
    "SESSION_KEY", "DATASET_KEY", "get_ledger", "current_role", "is_owner", "secrets_mapping",
    "dataset_records", "current_dataset", "can_see_truth", "load_data", "render_sidebar",
    "current_requester", "current_account", "signed_in", "render_sign_in", "oidc_configured",
    "set_flash", "show_flash",
]

SESSION_KEY = "_signed_in"
DATASET_KEY = "dataset"
ACCOUNT_KEY = "account_name"
_PASSWORD_KEY = "account_password"
_LOGIN_ERROR_KEY = "_sign_in_error"
#: The entry point the login log names for attempts made in the app.
LOGIN_ENTRY = "app"


def get_ledger() -> Ledger:
    """The ledger at ``$DPRM_LEDGER`` (or dpcore's default path), opened per use."""
    return Ledger()


# --------------------------------------------------------------------------- role

def signed_in() -> SignedIn | None:
    """This session's signed-in account, if any (checked against this ledger)."""
    session = st.session_state.get(SESSION_KEY)
    if isinstance(session, SignedIn) and session.valid() \
            and session.ledger == get_ledger().location:
        return session
    return None


def current_account() -> str | None:
    """The signed-in account's name, or None for a visitor who did not sign in."""
    session = signed_in()
    return None if session is None else session.account


def current_role() -> str:
    """The signed-in account's role; ``"analyst"`` for a visitor who did not sign in."""
    session = signed_in()
    return ANALYST if session is None else session.role


def current_requester() -> Requester:
    """This session as the privacy policy sees it: its signed-in account (charged, its
    quota checked) or an anonymous analyst, labelled for the audit log."""
    session = signed_in()
    if session is None:
        return Requester(role=ANALYST, actor="app-analyst")
    return Requester.signed_in(session, actor=f"app-{session.account}")


def is_owner() -> bool:
    """Whether this session signed in with an owner account."""
    return current_role() == OWNER


def secrets_mapping() -> dict | None:
    """``st.secrets`` as a plain dict when a secrets file exists, else None (never raises)."""
    try:
        if st.secrets.load_if_toml_exists():
            return st.secrets.to_dict()
    except Exception:  # noqa: BLE001 - unreadable secrets count as none
        return None
    return None


def oidc_configured() -> bool:
    """Whether ``.streamlit/secrets.toml`` configures ``st.login`` (an ``[auth]`` table)."""
    secrets = secrets_mapping() or {}
    return isinstance(secrets.get("auth"), dict) and bool(secrets["auth"])


def _client() -> str:
    """The client the back-off is judged for: the browser's address as the server sees it."""
    try:
        address = st.context.ip_address
    except Exception:  # noqa: BLE001 - no request context (tests): one local client
        address = None
    # Only a real address string names a client: anything else (AppTest's runtime answers
    # with a fresh mock object per run) would give every attempt a new client label and
    # so escape the per-client back-off.
    if not isinstance(address, str):
        address = None
    return f"app:{address or 'local'}"


def _fail_closed() -> None:
    # Without the login log there is no back-off: stay signed out (fail closed). The
    # details (paths) are server configuration: they go to the server log only.
    logging.getLogger(__name__).exception("sign-in could not use the ledger")
    st.session_state[_LOGIN_ERROR_KEY] = ("The sign-in could not be recorded in the ledger "
                                          "(see the server log), so you stay signed out.")


def _login() -> None:
    name = str(st.session_state.get(ACCOUNT_KEY, "") or "").strip()
    password = st.session_state.get(_PASSWORD_KEY, "") or ""
    st.session_state[_PASSWORD_KEY] = ""          # never keep the password around
    try:
        session = sign_in(get_ledger(), name, password, client=_client(), entry=LOGIN_ENTRY)
    except OwnerLoginThrottled as exc:
        st.session_state[_LOGIN_ERROR_KEY] = (
            f"Too many failed sign-ins in a row: wait {exc.wait} before trying again. "
            "This attempt was not checked.")
        return
    except SignInError as exc:
        st.session_state[_LOGIN_ERROR_KEY] = str(exc)[:1].upper() + str(exc)[1:] + "."
        return
    except (DpcoreError, sqlite3.Error, OSError):
        _fail_closed()
        return
    _start(session)


def _start(session: SignedIn) -> None:
    st.session_state[SESSION_KEY] = session
    st.session_state.pop(_LOGIN_ERROR_KEY, None)
    st.session_state.pop(DATASET_KEY, None)         # pick again among what it may see


def _oidc_sign_in() -> None:
    """Map a provider-verified ``st.user`` to its account (once per provider sign-in)."""
    if signed_in() is not None:
        return
    try:
        identity = oidc_identity(st.user)
    except Exception:  # noqa: BLE001 - st.user unavailable: no provider sign-in
        identity = None
    if identity is None or st.session_state.get("_oidc_tried") == identity:
        return
    st.session_state["_oidc_tried"] = identity
    try:
        _start(sign_in_identity(get_ledger(), identity, client=_client(), entry=LOGIN_ENTRY))
    except OwnerLoginThrottled as exc:
        st.session_state[_LOGIN_ERROR_KEY] = f"Too many failed sign-ins: wait {exc.wait}."
    except SignInError:
        st.session_state[_LOGIN_ERROR_KEY] = (
            "Your identity provider signed you in, but no account of this workbench is mapped "
            "to that identity. Ask the data owner to add one.")
    except (DpcoreError, sqlite3.Error, OSError):
        _fail_closed()


def _logout() -> None:
    st.session_state.pop(SESSION_KEY, None)
    st.session_state.pop(DATASET_KEY, None)
    st.session_state.pop("_oidc_tried", None)


def render_sign_in(where=None) -> None:
    """The sign-in form: account name and password, or the identity provider's button."""
    box = where if where is not None else st
    box.text_input("Account", key=ACCOUNT_KEY)
    box.text_input("Password", type="password", key=_PASSWORD_KEY,
                   help="Checked against the password hash the ledger keeps for your "
                        "account. Repeated failures from one place are slowed down.")
    box.button("Sign in", key="sign_in", on_click=_login)
    if oidc_configured():
        box.button("Sign in with your organisation", key="oidc_sign_in", on_click=st.login)
    error = st.session_state.pop(_LOGIN_ERROR_KEY, None)
    if error:
        box.error(error)


# --------------------------------------------------------------------------- datasets

def dataset_records(ledger: Ledger) -> list[DatasetRecord]:
    """Registered real datasets this session may open (sandboxes are owner demo copies and
    are not listed): all of them once signed in, the public demo ones before."""
    records = ledger.list_datasets(include_sandboxes=False)
    if signed_in() is None:
        records = [r for r in records if r.public_demo is True]
    return records


def current_dataset(ledger: Ledger) -> DatasetRecord | None:
    """The dataset chosen in the sidebar, re-read from the ledger (None if there is none,
    or if it is private and this session did not sign in)."""
    name = st.session_state.get(DATASET_KEY)
    if not name:
        return None
    try:
        record = ledger.get_dataset(name)
    except Exception:  # noqa: BLE001 - unknown name (e.g. another ledger): no dataset
        return None
    if record.public_demo is not True and signed_in() is None:
        return None
    return record


def can_see_truth(record: DatasetRecord | None) -> bool:
    """Whether this session may see true (non-private) statistics of ``record``."""
    if record is None:
        return False
    return can_see_true_statistics(current_role(), record.public_demo)


@st.cache_resource(show_spinner="Loading the public demo data…", max_entries=8,
                   hash_funcs={DatasetRecord: lambda r: (r.name, r.source_path,
                                                         r.content_digest)})
def _load_public(record: DatasetRecord, stamp: float) -> TwoViewDataset:
    """Cached load of a PUBLIC demo dataset (``stamp`` = file time, to notice edits)."""
    return load_registered(record)


def _stamp(path: str) -> float:
    p = Path(path)
    files = [p] + (list(p.iterdir()) if p.is_dir() else [])
    try:
        return max(f.stat().st_mtime for f in files if f.exists())
    except ValueError:
        return 0.0


def load_data(record: DatasetRecord) -> TwoViewDataset:
    """The registered data behind ``record``, read with its confirmed schema (server only).

    Public-demo data is cached per process; private data is read fresh on every call
    and never cached.

    Raises
    ------
    DataError
        No stored location, or the files do not validate (message names file/column/row).
    """
    if record.public_demo and record.source_path:
        return _load_public(record, _stamp(record.source_path))
    return load_registered(record)


# --------------------------------------------------------------------------- messages

def set_flash(kind: str, text: str) -> None:
    """Remember a message (``"success"``, ``"error"``, ``"warning"``, ``"info"``) for the
    next run."""
    st.session_state["_flash"] = (kind, text)


def show_flash() -> None:
    """Show (once) and forget the remembered message, if any."""
    item = st.session_state.pop("_flash", None)
    if item:
        kind, text = item
        getattr(st, kind if kind in ("success", "error", "warning", "info") else "info")(text)


# --------------------------------------------------------------------------- sidebar

def render_sidebar(ledger: Ledger) -> DatasetRecord | None:
    """Dataset picker and account box in the sidebar; returns the chosen dataset record.

    The budget meter is drawn separately
    (:func:`components.common.budget_meter.render_budget_meter`).
    """
    _oidc_sign_in()
    records = dataset_records(ledger)
    names = [r.name for r in records]
    demo = {r.name: r.public_demo for r in records}
    session = signed_in()
    with st.sidebar:
        if not names:
            st.info("No dataset is registered yet. An owner can add one on the Data page."
                    if session is not None else "Sign in to see this server's datasets.")
            st.session_state.pop(DATASET_KEY, None)
        else:
            pending = st.session_state.pop("_select_dataset", None)
            if pending in names:
                st.session_state[DATASET_KEY] = pending
            if st.session_state.get(DATASET_KEY) not in names:
                st.session_state[DATASET_KEY] = names[0]
            st.selectbox("Dataset", names, key=DATASET_KEY,
                         format_func=lambda n: f"{n} (public demo)" if demo.get(n) else n,
                         help="Every page works on this dataset. Public demo datasets are "
                              "synthetic or public: their true statistics may be shown.")
        label = f"Signed in: {session.account} ({session.role})" if session else "Sign in"
        with st.expander(label, expanded=False):
            if session is not None:
                st.caption("Owner: true statistics, raw-data previews, uploads, budgets, "
                           "accounts and the audit log are unlocked." if session.role == OWNER
                           else "Analyst: you see only differentially private outputs and "
                                "the public schema; your runs are charged to your account.")
                st.button("Sign out", key="sign_out", on_click=_logout)
            else:
                st.caption("Without signing in you see the public demo datasets only.")
                render_sign_in()
    return current_dataset(ledger)
