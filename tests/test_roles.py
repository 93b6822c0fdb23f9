"""Roles and the owner password gate: never owner without the right password and a hash."""

from __future__ import annotations

import base64
import hashlib
import multiprocessing as mp
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from dpcore.errors import DpcoreError, OwnerLoginThrottled, ParameterError
from dpcore.privacy import roles
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.roles import (
    ANALYST,
    DEFAULT_ROLE,
    ENV_VAR,
    LOGIN_BACKOFF_MAX_SECONDS,
    LOGIN_FAILURE_WINDOW_SECONDS,
    LOGIN_FREE_FAILURES,
    OWNER,
    SECRETS_KEY,
    backoff_delay,
    can_see_true_statistics,
    check_owner,
    hash_password,
    login_backoff,
    owner_password_hash,
    unlock_owner,
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
    code = ("import sys, dpcore.privacy.roles, dpcore.privacy.ledger; "
            "sys.exit(1 if 'streamlit' in sys.modules else 0)")
    repo = Path(roles.__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=repo).returncode == 0


# --------------------------------------------------------------------------- login back-off

RIGHT, WRONG = "correct horse", "tr0ub4dor&3-guess"


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


@pytest.fixture
def secrets(stored) -> dict:
    return {SECRETS_KEY: stored}


def _attempt(ledger, password, secrets, *, now=None, entry="cli"):
    return unlock_owner(ledger, password, actor="tester", entry=entry, secrets=secrets,
                        now=now)


def _last(ledger) -> datetime:
    """When the latest login event was recorded (the ledger stamps real UTC time)."""
    return datetime.fromisoformat(ledger.auth_events()[-1].created_at)


def _fail(ledger, secrets, times: int) -> None:
    """``times`` wrong passwords, each just after the back-off left by the previous ones."""
    for _ in range(times):
        now = None
        state = login_backoff(ledger)
        if state.failures >= LOGIN_FREE_FAILURES:
            now = state.last_failure + timedelta(seconds=backoff_delay(state.failures) + 0.01)
        assert _attempt(ledger, WRONG, secrets, now=now) is False


def _ledger_bytes(ledger) -> bytes:
    files = [ledger.path] + [ledger.path.with_name(ledger.path.name + suffix)
                             for suffix in ("-wal", "-shm", "-journal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def test_backoff_rules():
    assert [backoff_delay(k) for k in range(LOGIN_FREE_FAILURES)] == [0.0] * LOGIN_FREE_FAILURES
    assert [backoff_delay(LOGIN_FREE_FAILURES + k) for k in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff_delay(LOGIN_FREE_FAILURES + 20) == LOGIN_BACKOFF_MAX_SECONDS == 900.0
    assert backoff_delay(10**6) == LOGIN_BACKOFF_MAX_SECONDS
    # The window is long enough for the cap to bind (see the module's comment).
    assert LOGIN_FAILURE_WINDOW_SECONDS >= 14 * LOGIN_BACKOFF_MAX_SECONDS


def test_failures_are_recorded_and_never_the_password(ledger, secrets):
    _fail(ledger, secrets, 3)
    assert _attempt(ledger, RIGHT, secrets, entry="app") is True
    events = ledger.auth_events()
    assert [(e.outcome, e.entry, e.actor) for e in events] == \
        [("failure", "cli", "tester")] * 3 + [("success", "app", "tester")]
    assert all(e.detail == "wrong password" for e in events[:3])
    raw = _ledger_bytes(ledger)
    assert raw
    for password in (WRONG, RIGHT):
        assert password.encode() not in raw
        assert password.encode("utf-16-le") not in raw


def test_failures_without_a_configured_hash_are_recorded(ledger):
    assert _attempt(ledger, RIGHT, None) is False
    assert _attempt(ledger, "", {SECRETS_KEY: ""}) is False
    events = ledger.auth_events()
    assert [e.outcome for e in events] == ["failure", "failure"]
    assert all("no owner password hash" in e.detail for e in events)


def test_after_five_failures_even_the_right_password_is_refused_unchecked(
        ledger, secrets, monkeypatch):
    _fail(ledger, secrets, LOGIN_FREE_FAILURES)
    last = _last(ledger)
    checked = []
    monkeypatch.setattr(roles, "check_owner", lambda *a, **k: checked.append(1) or True)
    with pytest.raises(OwnerLoginThrottled) as info:
        _attempt(ledger, RIGHT, secrets, now=last + timedelta(seconds=0.4))
    assert checked == []                               # the hash was never consulted
    assert isinstance(info.value, DpcoreError)
    assert info.value.retry_after == pytest.approx(0.6, abs=1e-3)
    assert info.value.failures == LOGIN_FREE_FAILURES
    assert "wait 1 s" in str(info.value)
    event = ledger.auth_events()[-1]
    assert event.outcome == "throttled" and event.entry == "cli"
    assert RIGHT.encode() not in _ledger_bytes(ledger)


def test_backoff_grows_and_expires(ledger, secrets):
    _fail(ledger, secrets, LOGIN_FREE_FAILURES + 3)     # 8 failures: wait 2**3 s
    last = _last(ledger)
    state = login_backoff(ledger, now=last + timedelta(seconds=1))
    assert state.failures == 8 and state.wait_seconds == pytest.approx(7.0)
    with pytest.raises(OwnerLoginThrottled, match="wait 3 s"):
        _attempt(ledger, RIGHT, secrets, now=last + timedelta(seconds=5))
    # A throttled attempt neither counts as a failure nor extends the wait.
    assert login_backoff(ledger, now=last + timedelta(seconds=5)).failures == 8
    assert _attempt(ledger, RIGHT, secrets, now=last + timedelta(seconds=8.01)) is True
    assert [e.outcome for e in ledger.auth_events()][-2:] == ["throttled", "success"]


def test_old_failures_are_forgotten(ledger, secrets):
    _fail(ledger, secrets, LOGIN_FREE_FAILURES + 10)    # capped wait
    last = _last(ledger)
    assert login_backoff(ledger, now=last + timedelta(seconds=60)).wait_seconds > 800
    later = last + timedelta(seconds=LOGIN_FAILURE_WINDOW_SECONDS + 1)
    assert login_backoff(ledger, now=later).failures == 0
    assert _attempt(ledger, RIGHT, secrets, now=later) is True


def test_a_success_resets_the_count(ledger, secrets):
    _fail(ledger, secrets, LOGIN_FREE_FAILURES + 1)
    last = _last(ledger)
    assert _attempt(ledger, RIGHT, secrets, now=last + timedelta(seconds=2.01)) is True
    assert login_backoff(ledger).failures == 0
    _fail(ledger, secrets, LOGIN_FREE_FAILURES - 1)
    state = login_backoff(ledger)
    assert state.failures == LOGIN_FREE_FAILURES - 1 and not state.throttled
    assert _attempt(ledger, RIGHT, secrets) is True     # no wait: the streak restarted


def test_two_ledger_objects_on_one_file_share_the_backoff(tmp_path, secrets):
    """Two processes (here two Ledger objects: a Ledger holds only a path) see one back-off."""
    app_side, cli_side = Ledger(tmp_path / "shared.sqlite"), Ledger(tmp_path / "shared.sqlite")
    for _ in range(LOGIN_FREE_FAILURES):
        assert unlock_owner(app_side, WRONG, actor="app-session", entry="app",
                            secrets=secrets) is False
    last = datetime.fromisoformat(cli_side.auth_events()[-1].created_at)
    with pytest.raises(OwnerLoginThrottled):
        unlock_owner(cli_side, RIGHT, actor="cli", entry="cli", secrets=secrets,
                     now=last + timedelta(seconds=0.5))
    assert [(e.entry, e.outcome) for e in app_side.auth_events()][-1] == ("cli", "throttled")


def test_unlock_owner_rejects_empty_labels(ledger, secrets):
    for bad in ("", "  ", None):
        with pytest.raises(ParameterError):
            unlock_owner(ledger, RIGHT, actor=bad, entry="cli", secrets=secrets)
        with pytest.raises(ParameterError):
            unlock_owner(ledger, RIGHT, actor="x", entry=bad, secrets=secrets)
    assert ledger.auth_events() == []


# --------------------------------------------------------------------------- non-interactive set-up

@pytest.mark.parametrize("piped", ["tr0ub4 dor", "tr0ub4 dor\n", "tr0ub4 dor\r\n"])
def test_cli_hash_from_stdin_needs_no_terminal(monkeypatch, capsys, piped):
    """``printf %s "$PW" | ... hash --stdin`` and ``echo "$PW" | ...`` hash the same password
    (spaces kept, one final line break dropped); before, the hash tool needed a terminal."""
    import io

    monkeypatch.setattr(roles.getpass, "getpass", lambda prompt="": pytest.fail("prompted"))
    monkeypatch.setattr(sys, "stdin", io.StringIO(piped))
    assert roles.main(["hash", "--stdin"]) == 0
    out = capsys.readouterr()
    line = out.out.strip()
    assert verify_password("tr0ub4 dor", line) and not verify_password("tr0ub4dor", line)
    assert "no restart needed" in out.err and "restart the app" in out.err


@pytest.mark.parametrize("piped, fragment", [("", "no password"), ("\n", "no password"),
                                             ("one\ntwo\n", "one line")])
def test_cli_hash_from_stdin_refuses_empty_or_several_lines(monkeypatch, capsys, piped,
                                                            fragment):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(piped))
    assert roles.main(["hash", "--stdin"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and fragment in out.err


def test_python_m_dpcore_owner_hash_reads_a_pipe():
    """The short form, as a real subprocess with the password piped in (no terminal)."""
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "dpcore", "owner-hash", "--stdin"],
                          input="pipe d pw", capture_output=True, text=True, cwd=repo,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert verify_password("pipe d pw", done.stdout.strip())
    assert check_owner("pipe d pw", {SECRETS_KEY: done.stdout.strip()})


def test_the_hash_is_read_at_every_check(monkeypatch, stored):
    """No cache: a hash configured after start (secrets or this process's environment)
    counts at the next check."""
    secrets: dict = {}
    assert not check_owner("correct horse", secrets)
    secrets[SECRETS_KEY] = stored
    assert check_owner("correct horse", secrets)
    assert not check_owner("correct horse", {})
    monkeypatch.setenv(ENV_VAR, stored)
    assert check_owner("correct horse", {})


# --------------------------------------------------------------------------- across processes

HAMMER_PROCESSES = 6
HAMMER_SECONDS = 2.5


def _hammer(location, stored_hash, barrier, results):
    """A child process: wrong passwords as fast as it can for HAMMER_SECONDS."""
    ledger = Ledger(location)
    tries = 0
    try:
        barrier.wait(timeout=120)
        deadline = time.monotonic() + HAMMER_SECONDS
        while time.monotonic() < deadline:
            try:
                unlock_owner(ledger, WRONG, actor=f"p{os.getpid()}", entry="race",
                             secrets={SECRETS_KEY: stored_hash})
            except OwnerLoginThrottled:
                pass
            tries += 1
            time.sleep(0.005)
        results.put(("ok", tries))
    except BaseException as exc:  # noqa: BLE001 - report anything unexpected to the parent
        results.put((f"{type(exc).__name__}: {exc}", tries))


@pytest.mark.slow          # 5-8 s: spawned processes guess for HAMMER_SECONDS
def test_processes_hammering_one_ledger_obey_the_backoff(ledger_location):
    """N processes (spawn) guessing at once on one ledger: every checked attempt waited.

    Four failures are on record before the processes start, so the next one is the last
    free one and each after it must wait 1 s, 2 s, ... after the previous failure. If the
    back-off were read and the attempt recorded in separate transactions, processes
    released together would all read "no wait" and be checked within milliseconds.
    """
    ctx = mp.get_context("spawn")
    ledger = Ledger(ledger_location)
    for _ in range(LOGIN_FREE_FAILURES - 1):
        ledger.record_auth_event(actor="earlier", entry="race", outcome="failure")
    stored_hash = hash_password(RIGHT)          # the default costs: ~50 ms a check
    barrier, results = ctx.Barrier(HAMMER_PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(ledger_location), stored_hash, barrier,
                                               results)) for _ in range(HAMMER_PROCESSES)]
    for p in procs:
        p.start()
    try:
        out = [results.get(timeout=180) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
                p.join()
    assert [status for status, _ in out] == ["ok"] * HAMMER_PROCESSES, out
    events = ledger.auth_events()
    assert len(events) == LOGIN_FREE_FAILURES - 1 + sum(n for _, n in out)  # every try logged
    failures = [datetime.fromisoformat(e.created_at) for e in events if e.outcome == "failure"]
    assert not any(e.outcome == "success" for e in events)
    for k in range(LOGIN_FREE_FAILURES, len(failures)):
        gap = (failures[k] - failures[k - 1]).total_seconds()
        assert gap >= backoff_delay(k), (k, gap, backoff_delay(k))
    # Within HAMMER_SECONDS (< 1 + 2 s) at most the free failure and the one after 1 s are
    # checked; the rest were refused unchecked, so the test did race.
    assert LOGIN_FREE_FAILURES <= len(failures) <= LOGIN_FREE_FAILURES + 1
    assert sum(e.outcome == "throttled" for e in events) >= HAMMER_PROCESSES
