"""Roles: ``analyst`` (default) and ``owner``, password hashes and the sign-in back-off.

Analysts only ever see DP outputs and declared-public metadata. Owners (and
everyone, on datasets flagged ``public_demo``) may also see true statistics.

Who is owner is decided by the ledger only: an *account* with role ``owner``
(:mod:`dpcore.privacy.accounts`), whose scrypt password hash (or external identity) is kept in
the ledger the server owns. Nothing is read from the caller's environment: a hash taken from
the environment of whoever runs the command would let anyone make their own hash and be
owner (docs/PRIVACY.md, "One trust boundary").

Making a hash
-------------
``python -m dpcore users add NAME --role owner`` asks for the password twice and stores its
hash. ``python -m dpcore owner-hash`` (or ``python -m dpcore.privacy.roles hash``) only
prints a hash (``--stdin``: read the password from a pipe), e.g. for
``users add --password-hash``. Only the hash is stored anywhere; the password never is.

Hash format: ``scrypt$<n>$<r>$<p>$<salt_b64>$<hash_b64>`` (``hashlib.scrypt``,
standard base64, passwords NFC-normalised and UTF-8 encoded). scrypt from the standard
library, not argon2: no extra dependency, memory-hard, and the cost parameters are stored
with every hash.

The back-off
------------
:func:`backoff_delay` and :class:`LoginBackoff` judge a run of failed sign-ins; the
accounts module applies them per account and client and per client
(:func:`dpcore.privacy.accounts.sign_in`), so a stranger's failures slow the stranger, never
the owner signing in from elsewhere.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import getpass
import hashlib
import hmac
import logging
import os
import sys
import threading
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from dpcore.errors import OwnerLoginThrottled, ParameterError

if TYPE_CHECKING:   # the ledger is only passed in; importing it here is not needed
    from dpcore.privacy.ledger import AuthEvent, Ledger

__all__ = [
    "ANALYST", "OWNER", "ROLES", "DEFAULT_ROLE",
    "hash_password", "verify_password", "is_password_hash",
    "can_see_true_statistics", "main", "hash_command", "read_password_from_stdin",
    "LOGIN_FREE_FAILURES", "LOGIN_BACKOFF_BASE_SECONDS", "LOGIN_BACKOFF_MAX_SECONDS",
    "LOGIN_FAILURE_WINDOW_SECONDS", "LoginBackoff", "backoff_delay", "login_backoff",
    "backoff_for",
    "OwnerLoginThrottled",
]

ANALYST, OWNER = "analyst", "owner"
ROLES = (ANALYST, OWNER)
DEFAULT_ROLE = ANALYST

SCHEME = "scrypt"
DEFAULT_N, DEFAULT_R, DEFAULT_P = 2**14, 8, 1   # 16 MiB, ~50 ms per check
SALT_BYTES, HASH_BYTES = 16, 32
_MAX_MEMORY = 256 * 2**20   # refuse stored parameters that would need more than this

_log = logging.getLogger(__name__)

# Owner-login back-off. Why: the owner password is the only thing between an analyst
# and the true statistics of private data, and scrypt only slows an attacker who holds
# the hash. Someone guessing online through the app or the CLI could otherwise try
# passwords as fast as the server checks them (~20 a second). After LOGIN_FREE_FAILURES
# failures in a row (typos are free), each further attempt must wait
# LOGIN_BACKOFF_BASE_SECONDS * 2**(failures - LOGIN_FREE_FAILURES) after the last
# failure, at most LOGIN_BACKOFF_MAX_SECONDS; attempts during the wait are refused
# without checking the password. A success ends the streak; so does quiet: failures
# older than LOGIN_FAILURE_WINDOW_SECONDS are forgotten. The window must be long enough
# for the cap to bind (15 failures 15 minutes apart span 3.5 h): with a 15-minute
# window old failures would age out as fast as new ones accrue and a patient guesser
# would get ~850 tries a day; with 4 h it gets at most ~100 (one per 15 minutes).
#: Failed logins in a row that are not slowed down (typos).
LOGIN_FREE_FAILURES = 5
#: Wait after the first failure beyond the free ones; it doubles with each further failure.
LOGIN_BACKOFF_BASE_SECONDS = 1.0
#: Longest wait between two checked attempts (15 minutes).
LOGIN_BACKOFF_MAX_SECONDS = 15 * 60.0
#: Failures older than this are forgotten (4 hours; see above why not shorter).
LOGIN_FAILURE_WINDOW_SECONDS = 4 * 3600.0

# One sign-in at a time per process. The ledger's login lock already serialises sign-ins of
# every process (dpcore.privacy.accounts.sign_in); this lock only spares the threads of one
# process (Streamlit sessions) from waiting on the database's lock instead.
_LOGIN_LOCK = threading.Lock()


def _encode(password: str) -> bytes:
    return unicodedata.normalize("NFC", password).encode("utf-8")


def _memory(n: int, r: int, p: int) -> int:
    return 128 * r * (n + p + 2)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(_encode(password), salt=salt, n=n, r=r, p=p,
                          maxmem=_memory(n, r, p) + 2**20, dklen=dklen)


def hash_password(password: str, *, n: int = DEFAULT_N, r: int = DEFAULT_R,
                  p: int = DEFAULT_P) -> str:
    """Hash a password for the owner gate.

    Parameters
    ----------
    password : str
        Non-empty password.
    n, r, p : int
        scrypt cost parameters (``n`` a power of two ≥ 2).

    Returns
    -------
    str
        ``scrypt$<n>$<r>$<p>$<salt_b64>$<hash_b64>`` with a fresh random salt.

    Raises
    ------
    ParameterError
        Empty or non-string password, or bad cost parameters.
    """
    if not isinstance(password, str) or password == "":
        raise ParameterError("the owner password must be a non-empty string")
    _check_costs(n, r, p)
    salt = os.urandom(SALT_BYTES)
    digest = _scrypt(password, salt, n, r, p, HASH_BYTES)
    return "$".join([SCHEME, str(n), str(r), str(p),
                     base64.b64encode(salt).decode("ascii"),
                     base64.b64encode(digest).decode("ascii")])


def _check_costs(n, r, p) -> None:
    for name, value in (("n", n), ("r", r), ("p", p)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"scrypt {name} must be a positive integer; got {value!r}")
    if n < 2 or n & (n - 1):
        raise ParameterError(f"scrypt n must be a power of two ≥ 2; got {n}")
    if _memory(n, r, p) > _MAX_MEMORY:
        raise ParameterError(f"scrypt parameters n={n}, r={r}, p={p} need too much memory")


def _parse(stored: str) -> tuple[int, int, int, bytes, bytes]:
    """Split a stored hash into (n, r, p, salt, digest); ValueError if malformed."""
    parts = stored.strip().split("$")
    if len(parts) != 6 or parts[0] != SCHEME:
        raise ValueError("expected scrypt$<n>$<r>$<p>$<salt_b64>$<hash_b64>")
    if not all(x.isdigit() for x in parts[1:4]):
        raise ValueError("scrypt n, r, p must be decimal integers")
    n, r, p = (int(x) for x in parts[1:4])
    try:
        _check_costs(n, r, p)
    except ParameterError as exc:
        raise ValueError(str(exc)) from None
    try:
        salt = base64.b64decode(parts[4], validate=True)
        digest = base64.b64decode(parts[5], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("salt or hash is not valid base64") from None
    if len(salt) < 8 or not 16 <= len(digest) <= 64:
        raise ValueError("salt shorter than 8 bytes or hash not 16–64 bytes")
    return n, r, p, salt, digest


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches the stored hash (constant-time comparison).

    Returns False, never raises, for a wrong, empty or non-string password and
    for a missing or malformed stored hash (the latter is logged as a warning).
    """
    if not isinstance(password, str) or password == "":
        return False
    if not isinstance(stored, str) or not stored.strip():
        return False
    try:
        n, r, p, salt, digest = _parse(stored)
    except ValueError as exc:
        _log.warning("the configured owner password hash is malformed (%s); "
                     "owner access is disabled", exc)
        return False
    try:
        candidate = _scrypt(password, salt, n, r, p, len(digest))
    except (ValueError, MemoryError) as exc:
        _log.warning("owner password hash could not be checked (%s)", exc)
        return False
    return hmac.compare_digest(candidate, digest)


def is_password_hash(stored) -> bool:
    """Whether ``stored`` is a well-formed scrypt hash this module can check."""
    if not isinstance(stored, str):
        return False
    try:
        _parse(stored)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- logging in

def _utcnow() -> datetime:
    """The current time (UTC); tests replace it to move the clock."""
    return datetime.now(UTC)


def _moment(now: datetime | None) -> datetime:
    if now is None:
        return _utcnow()
    if not isinstance(now, datetime):
        raise ParameterError(f"now must be a datetime; got {now!r}")
    # A naive datetime is taken as UTC (the ledger stores UTC).
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now


def _parse_stamp(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


@dataclass(frozen=True)
class LoginBackoff:
    """The owner-login back-off at one moment, as read from the ledger's login log.

    Attributes
    ----------
    failures : int
        Failed logins in a row: since the last success and within
        :data:`LOGIN_FAILURE_WINDOW_SECONDS` (throttled attempts do not count).
    last_failure : datetime or None
        When the latest of them was recorded (UTC).
    wait_seconds : float
        Seconds until an attempt will be checked; 0 when one would be checked now.
    """

    failures: int
    last_failure: datetime | None
    wait_seconds: float

    @property
    def throttled(self) -> bool:
        """Whether an attempt now would be refused unchecked."""
        return self.wait_seconds > 0


def backoff_delay(failures: int) -> float:
    """Seconds an attempt must wait after the last of ``failures`` failed logins in a row.

    Parameters
    ----------
    failures : int
        Failed logins in a row.

    Returns
    -------
    float
        0 for up to :data:`LOGIN_FREE_FAILURES` failures, then
        ``LOGIN_BACKOFF_BASE_SECONDS * 2**(failures - LOGIN_FREE_FAILURES)``, at most
        :data:`LOGIN_BACKOFF_MAX_SECONDS`.
    """
    if failures < LOGIN_FREE_FAILURES:
        return 0.0
    exponent = failures - LOGIN_FREE_FAILURES
    if exponent >= 64:      # 2**64 s is far beyond any cap; avoid huge floats
        return LOGIN_BACKOFF_MAX_SECONDS
    return min(LOGIN_BACKOFF_BASE_SECONDS * 2.0**exponent, LOGIN_BACKOFF_MAX_SECONDS)


def _backoff_from(events: list[AuthEvent], now: datetime) -> LoginBackoff:
    start = now - timedelta(seconds=LOGIN_FAILURE_WINDOW_SECONDS)
    failures, last_failure = 0, None
    for event in events:                       # oldest first
        moment = _parse_stamp(event.created_at)
        if moment < start:
            continue
        if event.outcome == "success":
            failures, last_failure = 0, None
        elif event.outcome == "failure":
            failures, last_failure = failures + 1, moment
    wait = 0.0
    if last_failure is not None and failures >= LOGIN_FREE_FAILURES:
        ready = last_failure + timedelta(seconds=backoff_delay(failures))
        wait = max(0.0, (ready - now).total_seconds())
    return LoginBackoff(failures=failures, last_failure=last_failure, wait_seconds=wait)


def backoff_for(events: list[AuthEvent], now: datetime, *, account: str | None,
                client: str | None) -> LoginBackoff:
    """The back-off an attempt on ``account`` from ``client`` meets, from the login log.

    Two streaks count, and the longer wait wins: the failures on this account *from this
    client*, and the failures from this client on any account. A stranger's failures on
    the owner's account therefore slow the stranger's client only: the owner signing in
    from another client is never locked out. Guessing many accounts from one client is
    slowed by the client's streak.
    """
    mine = [e for e in events if e.account == account and e.client == client]
    theirs = [e for e in events if e.client == client]
    pair, per_client = _backoff_from(mine, now), _backoff_from(theirs, now)
    return pair if pair.wait_seconds >= per_client.wait_seconds else per_client


def login_backoff(ledger: Ledger, *, now: datetime | None = None, account: str | None = None,
                  client: str | None = None) -> LoginBackoff:
    """The sign-in back-off of ``account`` from ``client`` now, from the ledger's login log
    (shared by all processes; see :func:`backoff_for`).

    Parameters
    ----------
    ledger : Ledger
        The ledger whose login log is read.
    now : datetime, optional
        The moment to judge (default: the current time). A naive datetime is UTC.
        Events are always stamped by the ledger with the real time.
    account, client : str, optional
        Whose back-off (None matches the events recorded without one).

    Returns
    -------
    LoginBackoff
    """
    moment = _moment(now)
    return backoff_for(ledger.auth_events(since_seconds=_log_span(moment)), moment,
                       account=account, client=client)


def _log_span(moment: datetime) -> float:
    """Seconds of login log (back from the real clock) needed to judge ``moment``.

    A little more than the window, so that a ``now`` in the past still sees its whole
    window (the ledger measures from the real clock).
    """
    real = _utcnow()
    return LOGIN_FAILURE_WINDOW_SECONDS + max(0.0, (real - moment).total_seconds()) + 60.0


def can_see_true_statistics(role: str, public_demo: bool) -> bool:
    """Whether a user in ``role`` may see true (non-private) statistics of a dataset.

    Owners always may; everyone may on a dataset flagged ``public_demo`` (synthetic
    or public data). Only ``public_demo is True`` counts (not truthy strings).

    Raises
    ------
    ParameterError
        Unknown role (fails closed instead of guessing).
    """
    if role not in ROLES:
        raise ParameterError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    return role == OWNER or public_demo is True


#: Where the printed hash goes (shown after the hash).
HASH_HELP = ("Store it in the ledger with: python -m dpcore users add NAME --role owner "
             "--password-hash '<hash>' (or let 'users add' ask for the password itself).")


def read_password_from_stdin(stream=None) -> str:
    """The password piped to standard input: its first line, without the line break.

    Only a final ``\\n`` (or ``\\r\\n``) is dropped, so ``printf %s "$PW" |`` and
    ``echo "$PW" |`` give the same password; spaces are kept (they are part of it).

    Raises
    ------
    ParameterError
        Nothing piped, an empty first line, or more than one line (a second line is most
        likely a mistake, and silently dropping it would hash another password).
    """
    stream = sys.stdin if stream is None else stream
    text = stream.read()
    if text.endswith("\n"):
        text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
    if "\n" in text or "\r" in text:
        raise ParameterError("give the password on one line (standard input held several)")
    if text == "":
        raise ParameterError("no password on standard input (pipe it in: "
                             "printf %s \"$PW\" | ... --stdin)")
    return text


def hash_command(*, stdin: bool = False, stream=None) -> int:
    """The ``hash`` command: print the scrypt hash of the owner password; 0 on success.

    Parameters
    ----------
    stdin : bool
        Read the password from standard input (non-interactive: scripts, containers)
        instead of asking twice on the terminal.
    stream : file, optional
        Where to read it with ``stdin`` (default ``sys.stdin``; tests).

    Returns
    -------
    int
        0 with the hash on standard output and where to put it on standard error;
        1 with an error on standard error (empty password, passwords differ, bad input).
    """
    if stdin:
        try:
            password = read_password_from_stdin(stream)
        except ParameterError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    else:
        password = getpass.getpass("Owner password: ")
        if not password:
            print("error: the password must not be empty", file=sys.stderr)
            return 1
        if getpass.getpass("Repeat password: ") != password:
            print("error: the passwords differ", file=sys.stderr)
            return 1
    print(hash_password(password))
    print(HASH_HELP, file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m dpcore.privacy.roles hash [--stdin]`` prints a password hash."""
    parser = argparse.ArgumentParser(
        prog="python -m dpcore.privacy.roles",
        description="Owner password tools. " + HASH_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("hash", help="read a password (twice, not echoed) and print its hash")
    cmd.add_argument("--stdin", action="store_true",
                     help="read the password from standard input (one line), not the terminal")
    args = parser.parse_args(argv)
    if args.command == "hash":
        return hash_command(stdin=args.stdin)
    return 2  # pragma: no cover - argparse rejects other commands


if __name__ == "__main__":
    sys.exit(main())
