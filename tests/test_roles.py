"""Roles and the owner password gate: never owner without the right password and a hash."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore import roles
from dpcore.errors import ParameterError
from dpcore.roles import (
    ANALYST,
    DEFAULT_ROLE,
    ENV_VAR,
    OWNER,
    SECRETS_KEY,
    can_see_true_statistics,
    check_owner,
    hash_password,
    owner_password_hash,
    verify_password,
)

# Cheap scrypt costs keep the suite fast; the default costs are checked once below.
FAST = {"n": 2**10, "r": 8, "p": 1}


@pytest.fixture(autouse=True)
def no_env_hash(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture(scope="module")
def stored() -> str:
    return hash_password("correct horse", **FAST)


def test_hash_format_round_trip():
    h = hash_password("s3cret ü")                      # default costs
    scheme, n, r, p, salt_b64, hash_b64 = h.split("$")
    assert (scheme, int(n), int(r), int(p)) == ("scrypt", roles.DEFAULT_N, roles.DEFAULT_R,
                                                roles.DEFAULT_P)
    salt, digest = base64.b64decode(salt_b64), base64.b64decode(hash_b64)
    assert len(salt) == roles.SALT_BYTES and len(digest) == roles.HASH_BYTES
    expected = hashlib.scrypt("s3cret ü".encode(), salt=salt, n=int(n), r=int(r), p=int(p),
                              maxmem=64 * 2**20, dklen=len(digest))
    assert digest == expected
    assert verify_password("s3cret ü", h)
    assert not verify_password("s3cret u", h)
    assert hash_password("s3cret ü") != h                 # fresh salt every time


def test_unicode_normalisation():
    h = hash_password("caf\u00e9", **FAST)                 # é precomposed
    assert verify_password("cafe\u0301", h)                # e + combining accent


def test_hash_rejects_bad_input():
    for bad in ("", None, b"bytes", 123):
        with pytest.raises(ParameterError):
            hash_password(bad)
    with pytest.raises(ParameterError):
        hash_password("x", n=1000)                         # not a power of two
    with pytest.raises(ParameterError):
        hash_password("x", n=2**22, r=64)                  # far too much memory


def test_right_password_from_env(monkeypatch, stored):
    monkeypatch.setenv(ENV_VAR, stored)
    assert owner_password_hash() == stored
    assert check_owner("correct horse")


def test_right_password_from_secrets(stored):
    assert check_owner("correct horse", {SECRETS_KEY: stored})


@pytest.mark.parametrize("password", ["wrong", "", None, "correct horse ", "Correct horse",
                                      b"correct horse"])
def test_wrong_or_missing_password_is_never_owner(monkeypatch, stored, password):
    monkeypatch.setenv(ENV_VAR, stored)
    assert not check_owner(password)
    assert not check_owner(password, {SECRETS_KEY: stored})


@pytest.mark.parametrize("secrets", [None, {}, {SECRETS_KEY: ""}, {SECRETS_KEY: "   "},
                                     {"other": "x"}])
def test_no_configured_hash_is_never_owner(secrets):
    assert owner_password_hash(secrets) is None
    for password in ("", "admin", "password", "owner", "correct horse"):
        assert not check_owner(password, secrets)


@pytest.mark.parametrize("bad", [
    "plain-text-password",
    "scrypt$1024$8$1$abc",                                  # too few fields
    "bcrypt$1024$8$1$AAAAAAAAAAA=$AAAAAAAAAAAAAAAAAAAAAA==",
    "scrypt$1000$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    "scrypt$1024$8$1$not base64!$AAAA",
    "scrypt$1024$8$1$$",
    "scrypt$-1$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    "scrypt$1048576$64$16$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
])
def test_malformed_hash_is_never_owner(bad):
    assert not verify_password("plain-text-password", bad)
    assert not check_owner("plain-text-password", {SECRETS_KEY: bad})
    assert not check_owner("", {SECRETS_KEY: bad})


def test_secrets_take_precedence_over_env(monkeypatch):
    env_hash = hash_password("env-password", **FAST)
    secret_hash = hash_password("secret-password", **FAST)
    monkeypatch.setenv(ENV_VAR, env_hash)
    assert owner_password_hash({SECRETS_KEY: secret_hash}) == secret_hash
    assert check_owner("secret-password", {SECRETS_KEY: secret_hash})
    assert not check_owner("env-password", {SECRETS_KEY: secret_hash})
    # Secrets without the key (or with an empty value) fall back to the environment.
    assert check_owner("env-password", {"unrelated": 1})
    assert check_owner("env-password", {SECRETS_KEY: ""})
    assert check_owner("env-password", None)


def test_secrets_object_that_fails_to_load_counts_as_empty(monkeypatch):
    class Broken:                                            # like st.secrets without a file
        def get(self, key, default=None):
            raise FileNotFoundError("no secrets.toml")

    assert owner_password_hash(Broken()) is None
    assert not check_owner("anything", Broken())
    monkeypatch.setenv(ENV_VAR, hash_password("pw", **FAST))
    assert check_owner("pw", Broken())


def test_can_see_true_statistics():
    assert DEFAULT_ROLE == ANALYST
    assert can_see_true_statistics(OWNER, False)
    assert can_see_true_statistics(OWNER, True)
    assert can_see_true_statistics(ANALYST, True)
    assert not can_see_true_statistics(ANALYST, False)
    assert not can_see_true_statistics(ANALYST, "true")     # only a real True counts
    assert not can_see_true_statistics(ANALYST, 1)
    for bad in ("Owner", "admin", "", None):
        with pytest.raises(ParameterError):
            can_see_true_statistics(bad, True)


def test_cli_hash(monkeypatch, capsys):
    answers = iter(["tr0ub4dor", "tr0ub4dor"])
    monkeypatch.setattr(roles.getpass, "getpass", lambda prompt="": next(answers))
    assert roles.main(["hash"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("scrypt$") and verify_password("tr0ub4dor", line)
    assert check_owner("tr0ub4dor", {SECRETS_KEY: line})


def test_cli_hash_refuses_mismatch_and_empty(monkeypatch, capsys):
    answers = iter(["one", "two"])
    monkeypatch.setattr(roles.getpass, "getpass", lambda prompt="": next(answers))
    assert roles.main(["hash"]) == 1
    monkeypatch.setattr(roles.getpass, "getpass", lambda prompt="": "")
    assert roles.main(["hash"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "error" in out.err


def test_module_does_not_import_streamlit():
    code = ("import sys, dpcore.roles, dpcore.ledger; "
            "sys.exit(1 if 'streamlit' in sys.modules else 0)")
    repo = Path(roles.__file__).resolve().parents[1]
    assert subprocess.run([sys.executable, "-c", code], cwd=repo).returncode == 0
