"""Accounts for tests: make one in a ledger and sign it in (issue 29: the owner role and
every account are established by signing in against the ledger, never claimed)."""

from __future__ import annotations

from dpcore.errors import ParameterError
from dpcore.privacy.accounts import sign_in
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.roles import hash_password

#: The password every test account gets (cheap scrypt costs keep tests fast).
PASSWORD = "s3cret"


def make_account(ledger: Ledger, name: str = "owner", role: str = "owner",
                 password: str = PASSWORD) -> None:
    """Create the account unless it exists (hashed with cheap costs)."""
    try:
        ledger.add_account(name, role, actor="test",
                           password_hash=hash_password(password, n=2**4))
    except ParameterError as exc:
        if "already exists" not in str(exc):
            raise


def signed_in(ledger: Ledger, name: str = "owner", role: str = "owner",
              password: str = PASSWORD, actor: str | None = None) -> Requester:
    """A requester of the account ``name`` (created if missing), signed in on ``ledger``."""
    make_account(ledger, name, role, password)
    session = sign_in(ledger, name, password, client=f"test:{name}", entry="api")
    return Requester.signed_in(session, actor=actor or name)


def owner_in_env_ledger(password: str = PASSWORD, name: str = "owner") -> None:
    """An owner account with ``password`` in the ledger ``$DPRM_LEDGER`` names (the command
    line's owner gate signs it in)."""
    import os

    make_account(Ledger(os.environ["DPRM_LEDGER"]), name, "owner", password)


def role_of(at) -> str:
    """The role of an AppTest session: its signed-in account's, else ``analyst``."""
    try:
        session = at.session_state["_signed_in"]
    except KeyError:
        return "analyst"
    return session.role


def sign_in_app(at, name: str = "analyst", role: str = "analyst", password: str = PASSWORD):
    """Sign an AppTest session in from the sidebar (the account is created in
    ``$DPRM_LEDGER`` if missing); private datasets are listed only after this."""
    import os

    make_account(Ledger(os.environ["DPRM_LEDGER"]), name, role, password)
    at.text_input(key="account_name").input(name)
    at.text_input(key="account_password").input(password)
    at.button(key="sign_in").click().run()
    return at


def select_dataset(at, name: str, sidebar: bool = False):
    """Pick dataset ``name`` in an AppTest session; a private one is listed only to a
    signed-in account, so a visitor who is not signed in signs in as an analyst first."""
    box = (at.sidebar if sidebar else at).selectbox(key="dataset")
    listed = [o.removesuffix(" (public demo)") for o in box.options]
    if name not in listed and role_of(at) == "analyst":
        sign_in_app(at)
        box = (at.sidebar if sidebar else at).selectbox(key="dataset")
    return box.set_value(name).run()
