"""Roles: ``analyst`` (default) and ``owner``, and the owner's password gate.

Analysts only ever see DP outputs and declared-public metadata. Owners (and
everyone, on datasets flagged ``public_demo``) may also see true statistics.
The owner role is unlocked by a password checked against a scrypt hash; there
is no default password: with no hash configured nobody is owner.

Where the hash comes from (first match wins)
--------------------------------------------
1. A secrets mapping passed in by the caller, key ``owner_password_hash``
   (the app passes ``st.secrets``; this module does not import Streamlit).
   In ``.streamlit/secrets.toml``::

       owner_password_hash = "scrypt$16384$8$1$<salt>$<hash>"

2. The environment variable ``DPRM_OWNER_PASSWORD_HASH``::

       export DPRM_OWNER_PASSWORD_HASH='scrypt$16384$8$1$<salt>$<hash>'

   (single quotes: the hash contains ``$``).

Making a hash
-------------
``python -m dpcore.roles hash`` asks for the password twice (not echoed) and
prints the hash line to put in one of the places above. Only the hash is
stored anywhere; the password itself never is.

Hash format: ``scrypt$<n>$<r>$<p>$<salt_b64>$<hash_b64>`` (``hashlib.scrypt``,
standard base64, passwords NFC-normalised and UTF-8 encoded).
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
import unicodedata
from collections.abc import Mapping

from dpcore.errors import ParameterError

__all__ = [
    "ANALYST", "OWNER", "ROLES", "DEFAULT_ROLE", "ENV_VAR", "SECRETS_KEY",
    "hash_password", "verify_password", "owner_password_hash", "check_owner",
    "can_see_true_statistics", "main",
]

ANALYST, OWNER = "analyst", "owner"
ROLES = (ANALYST, OWNER)
DEFAULT_ROLE = ANALYST
ENV_VAR = "DPRM_OWNER_PASSWORD_HASH"
SECRETS_KEY = "owner_password_hash"

SCHEME = "scrypt"
DEFAULT_N, DEFAULT_R, DEFAULT_P = 2**14, 8, 1   # 16 MiB, ~50 ms per check
SALT_BYTES, HASH_BYTES = 16, 32
_MAX_MEMORY = 256 * 2**20   # refuse stored parameters that would need more than this

_log = logging.getLogger(__name__)


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


def owner_password_hash(secrets: Mapping | None = None) -> str | None:
    """The configured owner password hash, or None if there is none.

    Looks in ``secrets[SECRETS_KEY]`` first (a mapping such as ``st.secrets``),
    then in the environment variable ``DPRM_OWNER_PASSWORD_HASH``. Empty values
    count as absent. A secrets object that fails to load (e.g. Streamlit without
    a secrets file) counts as empty.
    """
    if secrets is not None:
        try:
            value = secrets.get(SECRETS_KEY) if hasattr(secrets, "get") \
                else secrets[SECRETS_KEY]
        except Exception:  # noqa: BLE001 - missing key or no secrets file: not configured
            value = None
        if isinstance(value, str) and value.strip():
            return value.strip()
    value = os.environ.get(ENV_VAR, "")
    return value.strip() or None


def check_owner(password: str, secrets: Mapping | None = None) -> bool:
    """Whether ``password`` unlocks the owner role.

    False when no hash is configured (there is no default password), when the
    password is wrong, empty or missing, or the configured hash is malformed.
    """
    stored = owner_password_hash(secrets)
    if stored is None:
        return False
    return verify_password(password, stored)


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


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m dpcore.roles hash`` prints a hash for a typed password."""
    parser = argparse.ArgumentParser(
        prog="python -m dpcore.roles",
        description="Owner password tools. Put the printed hash in the environment "
                    f"variable {ENV_VAR} or in Streamlit secrets as {SECRETS_KEY}.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("hash", help="read a password (twice, not echoed) and print its hash")
    args = parser.parse_args(argv)
    if args.command == "hash":
        first = getpass.getpass("Owner password: ")
        if not first:
            print("error: the password must not be empty", file=sys.stderr)
            return 1
        if getpass.getpass("Repeat password: ") != first:
            print("error: the passwords differ", file=sys.stderr)
            return 1
        print(hash_password(first))
        return 0
    return 2  # pragma: no cover - argparse rejects other commands


if __name__ == "__main__":
    sys.exit(main())
