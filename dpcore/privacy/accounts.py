"""Accounts: who may sign in, and the signed-in session every charge names.

Analysts and owners are *accounts* in the ledger (:meth:`dpcore.privacy.ledger.Ledger.add_account`):
a name, a role, a scrypt password hash and/or a verified external identity. The ledger
is the one place the owner's secret lives; nothing here reads the caller's environment.

Signing in
----------
:func:`sign_in` checks a name and password against the ledger under the sign-in back-off
(per account and client, and per client: :func:`dpcore.privacy.roles.backoff_for`) and
records every attempt in the ledger's login log (never the password). On success it returns
a :class:`SignedIn` session. :func:`sign_in_identity` does the same for an identity an
OpenID Connect provider has verified (Streamlit's ``st.login``; the app passes ``st.user``),
mapped to the account created with that identity.

A :class:`SignedIn` is sealed with a key this process draws at import: only this module
makes sessions that :class:`dpcore.privacy.policy.Requester` accepts, and a session is valid
only in the process that signed it in and only for the ledger it was checked against. That
is what the Python API can protect: a caller cannot claim an account or the owner role by
constructing a requester. What it cannot protect: code running inside the server process, or
anyone who can read the ledger or the data files, holds everything already (docs/PRIVACY.md,
"One trust boundary").
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from dpcore.errors import OwnerLoginThrottled, ParameterError, SignInError
from dpcore.privacy.ledger import AccountRecord, Ledger
from dpcore.privacy.roles import (
    _LOGIN_LOCK,
    ANALYST,
    ROLES,
    _log_span,
    _moment,
    _utcnow,
    backoff_for,
    hash_password,
    verify_password,
)

__all__ = ["SignedIn", "sign_in", "sign_in_identity", "identity_key", "oidc_identity",
           "add_user", "ensure_demo_analyst", "DEMO_ANALYST", "cli_client"]

#: Name of the local demo analyst the app creates on a ledger without accounts.
DEMO_ANALYST = "demo-analyst"

# Drawn once per process: sessions are only ever valid in the process that signed them in.
_SESSION_KEY = secrets.token_bytes(32)
# Checked when an account name is unknown, so an unknown name costs the same scrypt time as
# a wrong password (the timing does not tell a guesser which names exist).
_DUMMY_HASH = hash_password(secrets.token_urlsafe(16))


def _seal(account: str, role: str, ledger: str, issued_at: str) -> bytes:
    text = "\x1f".join((account, role, ledger, issued_at)).encode("utf-8")
    return hmac.new(_SESSION_KEY, text, hashlib.sha256).digest()


@dataclass(frozen=True)
class SignedIn:
    """A signed-in account, as this process checked it against one ledger.

    Attributes
    ----------
    account : str
        The account's name (recorded with every charge).
    role : {"analyst", "owner"}
        The account's role in the ledger at sign-in.
    ledger : str
        The location of the ledger that checked it (a session is refused on any other).
    issued_at : str
        ISO 8601 UTC time of the sign-in.
    """

    account: str
    role: str
    ledger: str
    issued_at: str
    seal: bytes = field(repr=False)

    def valid(self) -> bool:
        """Whether this process signed this session in (the seal matches)."""
        if not all(isinstance(x, str) for x in (self.account, self.role, self.ledger,
                                                 self.issued_at)):
            return False
        if not isinstance(self.seal, bytes):
            return False
        return hmac.compare_digest(self.seal, _seal(self.account, self.role, self.ledger,
                                                    self.issued_at))


def _issue(account: str, role: str, ledger: Ledger) -> SignedIn:
    stamp = _utcnow().isoformat(timespec="microseconds")
    return SignedIn(account, role, ledger.location, stamp,
                    _seal(account, role, ledger.location, stamp))


def _label(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"{what} must be a non-empty label; got {value!r}")
    return value


def _attempt(ledger: Ledger, check, *, account: str, client: str, entry: str,
             now: datetime | None) -> SignedIn:
    """Judge the back-off, run ``check`` and record the outcome: one ledger transaction."""
    span = _log_span(_moment(now))
    decided: dict = {}

    def decide(events):
        state = backoff_for(events, _moment(now), account=account, client=client)
        decided["state"] = state
        if state.throttled:
            return "throttled", (f"refused unchecked: {state.failures} failures in a row, "
                                 f"{state.wait_seconds:.0f} s of back-off left")
        role, detail = check()
        decided["role"] = role
        if role is None:
            return "failure", detail
        return "success", f"signed in as {role} from {entry}"

    with _LOGIN_LOCK:
        ledger.login_attempt(decide, actor=client, entry=entry, since_seconds=span,
                             account=account, client=client)
    if "role" not in decided:
        state = decided["state"]
        raise OwnerLoginThrottled(state.wait_seconds, state.failures)
    if decided["role"] is None:
        raise SignInError()
    return _issue(account, decided["role"], ledger)


def sign_in(ledger: Ledger, name: str, password: str, *, client: str, entry: str,
            now: datetime | None = None) -> SignedIn:
    """Sign an account in with its password, under the back-off; record the attempt.

    Parameters
    ----------
    ledger : Ledger
        The ledger holding the account and the login log.
    name, password : str
        The account's name and password (the password is never recorded or logged).
    client : str
        Who is asking, as the server knows it (the app: the browser's address; the command
        line: ``cli:<user>@<host>``). The back-off is per account and client and per client.
    entry : str
        Entry point, for the log (``app``, ``cli``, ``api``).
    now : datetime, optional
        The moment to judge the back-off at (tests).

    Returns
    -------
    SignedIn

    Raises
    ------
    SignInError
        Unknown account, wrong password or disabled account (one message for all three).
    OwnerLoginThrottled
        The attempt falls in a back-off; it was refused unchecked.
    ParameterError
        Empty ``client`` or ``entry``.
    """
    _label(client, "client")
    _label(entry, "entry")
    account = name if isinstance(name, str) and name.strip() else "?"

    def check():
        role, stored, disabled = ledger._password_hash(account)
        ok = verify_password(password if isinstance(password, str) else "",
                             stored or _DUMMY_HASH)
        if role is None or stored is None:
            return None, "unknown account or no password"
        if not ok:
            return None, "wrong password"
        if disabled is not None:
            return None, "account disabled"
        return role, None

    return _attempt(ledger, check, account=account, client=client, entry=entry, now=now)


def identity_key(issuer: str, subject: str) -> str:
    """The stored form of an external identity: ``issuer|subject`` (both non-empty)."""
    for what, value in (("issuer", issuer), ("subject", subject)):
        if not isinstance(value, str) or not value.strip() or "|" in value:
            raise ParameterError(f"an identity's {what} must be non-empty text without '|'; "
                                 f"got {value!r}")
    return f"{issuer}|{subject}"


def oidc_identity(user: Mapping) -> str | None:
    """The verified identity in an OpenID Connect user mapping (``st.user``), or None.

    Streamlit's ``st.login`` fills ``st.user`` with the provider's ID-token claims after it
    verified the token; ``iss`` and ``sub`` identify the person for good (an e-mail address
    can change hands, so it is not used). None when nobody signed in or a claim is missing.
    """
    try:
        if not user.get("is_logged_in", False):
            return None
        issuer, subject = user.get("iss"), user.get("sub")
    except (AttributeError, KeyError, TypeError):
        return None
    if not isinstance(issuer, str) or not isinstance(subject, str):
        return None
    try:
        return identity_key(issuer, subject)
    except ParameterError:
        return None


def sign_in_identity(ledger: Ledger, identity: str, *, client: str, entry: str) -> SignedIn:
    """Sign in the account mapped to an identity a provider verified; record the attempt.

    Only an identity the owner mapped to an account (``users add NAME --identity
    ISSUER|SUBJECT``) signs in; any other verified identity is refused and recorded.

    Raises
    ------
    SignInError
        No account has this identity, or it is disabled.
    OwnerLoginThrottled
        The client is in a back-off.
    """
    _label(client, "client")
    _label(entry, "entry")
    _label(identity, "identity")
    record = ledger.account_for_identity(identity)
    account = record.name if record is not None else f"identity:{identity}"[:200]

    def check():
        if record is None:
            return None, "no account has this identity"
        if not record.active:
            return None, "account disabled"
        return record.role, None

    return _attempt(ledger, check, account=account, client=client, entry=entry, now=None)


def add_user(ledger: Ledger, name: str, role: str, *, actor: str, password: str | None = None,
             identity: str | None = None) -> AccountRecord:
    """Create an account from a password (hashed here) and/or an external identity.

    Raises
    ------
    ParameterError
        See :meth:`dpcore.privacy.ledger.Ledger.add_account`; an empty password.
    """
    if role not in ROLES:
        raise ParameterError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    stored = None if password is None else hash_password(password)
    return ledger.add_account(name, role, actor=actor, password_hash=stored,
                              external_identity=identity)


def ensure_demo_analyst(ledger: Ledger) -> tuple[str, str] | None:
    """On a ledger without any account, create the local demo analyst; its name and password.

    Called by the app's first start so that the built-in private samples can be tried at
    once: the password is random, printed once in the server's terminal (the person who
    started the server), never stored in clear. None when the ledger has accounts already
    (the owner manages them) or another process created one first.
    """
    if ledger.has_accounts():
        return None
    password = secrets.token_urlsafe(12)
    try:
        add_user(ledger, DEMO_ANALYST, ANALYST, actor="app-first-start", password=password)
    except ParameterError:
        return None          # another server process created it first
    return DEMO_ANALYST, password


def cli_client() -> str:
    """The command line's client label: ``cli:<user>@<host>`` (the back-off's client)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return f"cli:{user}@{socket.gethostname()}"

