"""Ledger, dataset and role state shared by every page (the sidebar lives here).

What is kept where
------------------
* The **ledger** is opened fresh (``Ledger()`` → ``$DPRM_LEDGER``) whenever needed;
  a :class:`~dpcore.privacy.ledger.Ledger` holds only a path, never a connection.
* The **budget** is always read from the ledger (see :mod:`components.budget_meter`),
  never from session state.
* The **role** (``analyst`` by default, ``owner`` after a password check by
  :func:`dpcore.privacy.roles.unlock_owner`, which records every attempt in the ledger's login
  log and enforces the shared login back-off) and the **chosen dataset** live in
  session state. The owner password hash is looked up at every login (secrets file first,
  then the server's environment), so a hash added to ``.streamlit/secrets.toml`` works
  without a restart.
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
from dpcore.errors import DpcoreError, OwnerLoginThrottled
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.roles import (
    ANALYST,
    ENV_VAR,
    OWNER,
    SECRETS_KEY,
    can_see_true_statistics,
    owner_password_hash,
    unlock_owner,
)
from dpcore.runs import load_registered

__all__ = [
    "ROLE_KEY", "DATASET_KEY", "get_ledger", "current_role", "is_owner", "secrets_mapping",
    "dataset_records", "current_dataset", "can_see_truth", "load_data", "render_sidebar",
    "current_requester",
    "set_flash", "show_flash", "NO_HASH_MESSAGE",
]

ROLE_KEY = "role"
DATASET_KEY = "dataset"
_PASSWORD_KEY = "owner_password"
_LOGIN_ERROR_KEY = "_owner_login_error"
#: Who the login log names for attempts made in the app, and from which entry point.
LOGIN_ACTOR, LOGIN_ENTRY = "app-session", "app"


def get_ledger() -> Ledger:
    """The ledger at ``$DPRM_LEDGER`` (or dpcore's default path), opened per use."""
    return Ledger()


# --------------------------------------------------------------------------- role

def current_role() -> str:
    """``"analyst"`` (default) or ``"owner"``."""
    role = st.session_state.get(ROLE_KEY, ANALYST)
    return role if role in (ANALYST, OWNER) else ANALYST


def current_requester() -> Requester:
    """This session as the privacy policy sees it: its role, labelled for the audit log."""
    role = current_role()
    return Requester(role=role, actor=f"app-{role}")


def is_owner() -> bool:
    """Whether this session unlocked the owner role."""
    return current_role() == OWNER


def secrets_mapping() -> dict | None:
    """``st.secrets`` as a plain dict when a secrets file exists, else None (never raises)."""
    try:
        if st.secrets.load_if_toml_exists():
            return st.secrets.to_dict()
    except Exception:  # noqa: BLE001 - unreadable secrets count as none
        return None
    return None


#: Shown when a login finds no owner password hash: how to set one up, and when it counts.
NO_HASH_MESSAGE = (
    "No owner password hash is configured on this server. Make one with "
    "`printf %s \"$PW\" | python -m dpcore owner-hash --stdin` (or without `--stdin` to "
    "type it), then either put it in `.streamlit/secrets.toml` as "
    f"`{SECRETS_KEY} = \"…\"` — read at every login, so no restart is needed — or set "
    f"`{ENV_VAR}` in the server's environment and restart the app (a running server cannot "
    "see a variable set later).")


def _login() -> None:
    password = st.session_state.get(_PASSWORD_KEY, "") or ""
    st.session_state[_PASSWORD_KEY] = ""          # never keep the password around
    secrets = secrets_mapping()                   # read afresh at every login
    try:
        ok = unlock_owner(get_ledger(), password, actor=LOGIN_ACTOR, entry=LOGIN_ENTRY,
                          secrets=secrets)
    except OwnerLoginThrottled as exc:
        st.session_state[_LOGIN_ERROR_KEY] = (
            f"Too many failed owner logins in a row: wait {exc.wait} before trying again. "
            "This attempt was not checked.")
        return
    except (DpcoreError, sqlite3.Error, OSError):
        # Without the login log there is no back-off: stay locked (fail closed). The
        # details (paths) are server configuration: they go to the server log only.
        logging.getLogger(__name__).exception("owner login could not use the ledger")
        st.session_state[_LOGIN_ERROR_KEY] = (
            "The login could not be recorded in the ledger (see the server log), so the "
            "owner role stays locked.")
        return
    if ok:
        st.session_state[ROLE_KEY] = OWNER
        st.session_state.pop(_LOGIN_ERROR_KEY, None)
    elif owner_password_hash(secrets) is None:
        st.session_state[_LOGIN_ERROR_KEY] = NO_HASH_MESSAGE
    else:
        st.session_state[_LOGIN_ERROR_KEY] = "Wrong password."


def _logout() -> None:
    st.session_state[ROLE_KEY] = ANALYST


# --------------------------------------------------------------------------- datasets

def dataset_records(ledger: Ledger) -> list[DatasetRecord]:
    """Registered real datasets (sandboxes are owner demo copies and are not listed)."""
    return ledger.list_datasets(include_sandboxes=False)


def current_dataset(ledger: Ledger) -> DatasetRecord | None:
    """The dataset chosen in the sidebar, re-read from the ledger (None if there is none)."""
    name = st.session_state.get(DATASET_KEY)
    if not name:
        return None
    try:
        return ledger.get_dataset(name)
    except Exception:  # noqa: BLE001 - unknown name (e.g. another ledger): no dataset
        return None


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
    """Dataset picker and role box in the sidebar; returns the chosen dataset record.

    The budget meter is drawn separately (:func:`components.budget_meter.render_budget_meter`).
    """
    st.session_state.setdefault(ROLE_KEY, ANALYST)
    records = dataset_records(ledger)
    names = [r.name for r in records]
    demo = {r.name: r.public_demo for r in records}
    with st.sidebar:
        if not names:
            st.info("No dataset is registered yet. An owner can add one on the Data page.")
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
        role = current_role()
        with st.expander(f"Role: {role}", expanded=False):
            if role == OWNER:
                st.caption("Owner: true statistics, raw-data previews, uploads, budgets "
                           "and the audit log are unlocked.")
                st.button("Log out", key="owner_logout", on_click=_logout)
            else:
                st.caption("Analyst (default): you see only differentially private outputs "
                           "and the public schema.")
                st.text_input("Owner password", type="password", key=_PASSWORD_KEY,
                              help="Checked against the server's owner password hash, looked "
                                   "up at every login: a hash added to .streamlit/secrets.toml "
                                   "works at once; one set in the environment variable "
                                   f"{ENV_VAR} needs a restart of the app.")
                st.button("Log in as owner", key="owner_login", on_click=_login)
                error = st.session_state.pop(_LOGIN_ERROR_KEY, None)
                if error:
                    st.error(error)
    return current_dataset(ledger)
