"""Accounts, sign-in, quotas: who may spend, and how much (issue 29).

* accounts in the ledger: created, listed, disabled for good, never deleted; a password hash
  or a verified external identity; the OpenID Connect mapping (``st.user`` → account);
* sign-in: one message for unknown name / wrong password / disabled account; every attempt
  in the login log with its account and client; the back-off per account-and-client and per
  client, so a stranger's failures never lock the owner out from elsewhere;
* sessions: sealed by this process; a requester cannot claim an account or the owner role;
* quotas: an analyst's share of a dataset's cap, checked in the charge's own transaction;
  two analysts × 8 racing processes on SQLite and PostgreSQL never exceed a quota or the cap,
  and every charge names its account.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
from datetime import timedelta

import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import BudgetExceededError, OwnerLoginThrottled, ParameterError, SignInError
from dpcore.privacy import accounts
from dpcore.privacy.accounts import (
    SignedIn,
    identity_key,
    oidc_identity,
    sign_in,
    sign_in_identity,
)
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import PolicyError, Requester
from dpcore.privacy.roles import LOGIN_FREE_FAILURES, hash_password
from dpcore.privacy.units import NANO

SCHEMA = Schema(name="race",
                attributes=(Attribute("a", 0, "boolean"), Attribute("b", 1, "boolean")),
                views=(ViewSpec("L", "race.csv"), ViewSpec("R", "race.csv")))
CTX = mp.get_context("spawn")
TIMEOUT = 60


def cheap(password: str) -> str:
    return hash_password(password, n=2**4)


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    led = Ledger(tmp_path / "ledger.sqlite")
    led.register_dataset("race", SCHEMA, None, 1.0, actor="owner", confirmed=True)
    led.add_account("boss", "owner", actor="test", password_hash=cheap("boss-pw"))
    led.add_account("alice", "analyst", actor="test", password_hash=cheap("alice-pw"))
    led.add_account("bob", "analyst", actor="test", password_hash=cheap("bob-pw"))
    return led


# ------------------------------------------------------------------ accounts

def test_accounts_are_listed_without_their_hashes_and_disabled_for_good(ledger):
    names = [(a.name, a.role, a.has_password, a.active) for a in ledger.list_accounts()]
    assert names == [("alice", "analyst", True, True), ("bob", "analyst", True, True),
                     ("boss", "owner", True, True)]
    assert "scrypt" not in repr(ledger.list_accounts())
    gone = ledger.disable_account("bob", actor="boss")
    assert gone.disabled_at is not None and not gone.active
    assert ledger.disable_account("bob", actor="boss").disabled_at == gone.disabled_at
    con = ledger._backend.connect()
    try:
        with pytest.raises(ledger._backend.IntegrityError, match="stays disabled"):
            con.execute("UPDATE accounts SET disabled_at = NULL WHERE name = 'bob'")
        with pytest.raises(ledger._backend.IntegrityError, match="never deleted"):
            con.execute("DELETE FROM accounts WHERE name = 'bob'")
    finally:
        con.close()


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="alice", role="analyst", password_hash=cheap("x")), "already exists"),
    (dict(name="carol", role="admin", password_hash=cheap("x")), "role must be one of"),
    (dict(name="carol", role="analyst"), "needs a password hash or an external identity"),
    (dict(name="carol", role="analyst", password_hash="plain text"), "scrypt hash"),
    (dict(name=" carol", role="analyst", password_hash=cheap("x")), "account name"),
    (dict(name="~carol", role="analyst", password_hash=cheap("x")), "account name"),
])
def test_bad_accounts_change_nothing(ledger, kwargs, message):
    before = ledger.list_accounts()
    with pytest.raises(ParameterError, match=message):
        ledger.add_account(actor="test", **kwargs)
    assert ledger.list_accounts() == before


# ------------------------------------------------------------------ sign-in

def test_sign_in_gives_a_sealed_session_and_one_message_for_every_failure(ledger):
    session = sign_in(ledger, "alice", "alice-pw", client="ip:1", entry="app")
    assert (session.account, session.role, session.ledger) == ("alice", "analyst",
                                                                ledger.location)
    assert session.valid()
    messages = set()
    for name, password in (("alice", "wrong"), ("nobody", "alice-pw"), ("alice", "")):
        with pytest.raises(SignInError) as refused:
            sign_in(ledger, name, password, client="ip:1", entry="app")
        messages.add(str(refused.value))
    ledger.disable_account("bob", actor="boss")
    with pytest.raises(SignInError) as refused:
        sign_in(ledger, "bob", "bob-pw", client="ip:1", entry="app")
    messages.add(str(refused.value))
    assert len(messages) == 1                       # nothing tells which names exist
    events = ledger.auth_events()
    assert [(e.account, e.client, e.outcome) for e in events] == [
        ("alice", "ip:1", "success"), ("alice", "ip:1", "failure"),
        ("nobody", "ip:1", "failure"), ("alice", "ip:1", "failure"),
        ("bob", "ip:1", "failure")]
    assert all("pw" not in (e.detail or "") for e in events)


def test_a_forged_or_copied_session_is_refused():
    forged = SignedIn("boss", "owner", "sqlite:/x", "2026-01-01", b"\0" * 32)
    with pytest.raises(PolicyError, match="not signed in by this server"):
        Requester(role="owner", session=forged)
    with pytest.raises(PolicyError, match="signed-in owner account"):
        Requester(role="owner")


def test_a_session_is_good_for_its_role_and_ledger_only(ledger, tmp_path):
    from dpcore.privacy.policy import check_account_needed

    session = sign_in(ledger, "alice", "alice-pw", client="ip:1", entry="api")
    with pytest.raises(PolicyError, match="is an analyst, not an owner"):
        Requester(role="owner", session=session)
    changed = dataclasses.replace(session, role="owner")
    with pytest.raises(PolicyError, match="not signed in by this server"):
        Requester(role="owner", session=changed)
    requester = Requester.signed_in(session)
    assert requester.account == "alice" and requester.actor == "alice"
    record = ledger._dataset_record("race")
    with pytest.raises(PolicyError, match="another ledger"):
        check_account_needed(record, requester, True, "sqlite:/elsewhere")


def test_a_strangers_failures_never_lock_the_owner_out_from_another_client(ledger):
    """Attack 5: one global back-off let any stranger lock the owner out for 15 minutes."""
    for _ in range(LOGIN_FREE_FAILURES):
        with pytest.raises(SignInError):
            sign_in(ledger, "boss", "guess", client="ip:stranger", entry="app")
    with pytest.raises(OwnerLoginThrottled):            # the stranger waits ...
        sign_in(ledger, "boss", "boss-pw", client="ip:stranger", entry="app")
    with pytest.raises(OwnerLoginThrottled):            # ... on every account
        sign_in(ledger, "alice", "alice-pw", client="ip:stranger", entry="app")
    owner = sign_in(ledger, "boss", "boss-pw", client="ip:office", entry="app")
    assert owner.role == "owner"                        # the owner does not
    outcomes = [(e.client, e.outcome) for e in ledger.auth_events()]
    assert outcomes[-3:] == [("ip:stranger", "throttled"), ("ip:stranger", "throttled"),
                             ("ip:office", "success")]


def test_the_back_off_is_forgotten_after_the_window(ledger):
    for _ in range(LOGIN_FREE_FAILURES + 3):
        try:
            sign_in(ledger, "alice", "guess", client="ip:2", entry="app")
        except (SignInError, OwnerLoginThrottled):
            pass
    with pytest.raises(OwnerLoginThrottled):
        sign_in(ledger, "alice", "alice-pw", client="ip:2", entry="app")
    later = accounts._utcnow() + timedelta(hours=5)
    assert sign_in(ledger, "alice", "alice-pw", client="ip:2", entry="app", now=later).valid()


def test_oidc_identity_maps_a_verified_user_to_its_account_only(ledger):
    ident = identity_key("https://id.example.org", "user-17")
    ledger.add_account("carol", "analyst", actor="boss", external_identity=ident)
    user = {"is_logged_in": True, "iss": "https://id.example.org", "sub": "user-17",
            "email": "carol@example.org"}
    assert oidc_identity(user) == ident
    assert oidc_identity({"is_logged_in": False}) is None
    assert oidc_identity({"is_logged_in": True, "email": "carol@example.org"}) is None
    session = sign_in_identity(ledger, oidc_identity(user), client="ip:3", entry="app")
    assert (session.account, session.role) == ("carol", "analyst")
    stranger = {**user, "sub": "user-18"}
    with pytest.raises(SignInError):
        sign_in_identity(ledger, oidc_identity(stranger), client="ip:3", entry="app")
    with pytest.raises(ParameterError, match="already signs in"):
        ledger.add_account("dave", "analyst", actor="boss", external_identity=ident)
    ledger.disable_account("carol", actor="boss")
    with pytest.raises(SignInError):
        sign_in_identity(ledger, ident, client="ip:3", entry="app")
    assert [e.outcome for e in ledger.auth_events()] == ["success", "failure", "failure"]


def test_the_demo_analyst_is_created_once_on_a_ledger_without_accounts(tmp_path, ledger):
    fresh = Ledger(tmp_path / "fresh.sqlite")
    made = accounts.ensure_demo_analyst(fresh)
    assert made is not None and made[0] == accounts.DEMO_ANALYST
    assert sign_in(fresh, *made, client="ip:4", entry="app").role == "analyst"
    assert accounts.ensure_demo_analyst(fresh) is None
    assert accounts.ensure_demo_analyst(ledger) is None      # the owner manages accounts


# ------------------------------------------------------------------ quotas

def test_a_quota_is_checked_with_the_cap_and_every_charge_names_its_account(ledger):
    ledger.set_quota("race", "alice", 0.3, actor="boss")
    ledger.charge("a1", "race", "altexpm", [200_000_000], {}, account="alice")
    with pytest.raises(BudgetExceededError, match="account 'alice'.s share"):
        ledger.charge("a2", "race", "altexpm", [200_000_000], {}, account="alice")
    ledger.charge("b1", "race", "altexpm", [700_000_000], {}, account="bob")   # no quota
    with pytest.raises(BudgetExceededError, match="dataset 'race'"):
        ledger.charge("a3", "race", "altexpm", [150_000_000], {}, account="alice")
    status = ledger.quota_status("race", "alice")
    assert (status.quota_nano, status.spent_nano, status.remaining_nano) == (
        300_000_000, 200_000_000, 100_000_000)
    assert status.dataset.remaining_nano == 100_000_000
    assert [(e.run_id, e.account) for e in ledger.audit_log("race")] == [
        ("a1", "alice"), ("b1", "bob")]
    with pytest.raises(ParameterError, match="every run on it must name"):
        ledger.charge("anon", "race", "altexpm", [1], {})
    with pytest.raises(ParameterError, match="owner account"):
        ledger.set_quota("race", "boss", 0.1, actor="boss")
    ledger.disable_account("bob", actor="boss")
    with pytest.raises(ParameterError, match="disabled"):
        ledger.charge("b2", "race", "altexpm", [1], {}, account="bob")
    assert ledger.budget("race").spent_nano == 900_000_000


def test_a_quota_of_zero_stops_an_analyst_and_quotas_are_append_only(ledger):
    ledger.set_quota("race", "alice", 0.5, actor="boss")
    ledger.set_quota("race", "alice", 0, actor="boss")
    with pytest.raises(BudgetExceededError):
        ledger.charge("a1", "race", "altexpm", [1], {}, account="alice")
    con = ledger._backend.connect()
    try:
        with pytest.raises(ledger._backend.IntegrityError, match="append-only"):
            con.execute("DELETE FROM quotas")
    finally:
        con.close()
    with pytest.raises(ParameterError):
        ledger.set_quota("race", "alice", -1, actor="boss")


def _quota_worker(path, account, run_id, barrier, results):
    ledger = Ledger(path)
    try:
        barrier.wait(timeout=TIMEOUT)
        rec = ledger.charge(run_id, "race", "altexpm", [100_000_000], {"who": run_id},
                            account=account)
        results.put((account, run_id, "ok", rec.account))
    except BudgetExceededError:
        results.put((account, run_id, "BudgetExceededError", None))
    except BaseException as exc:  # noqa: BLE001 - report anything unexpected to the parent
        results.put((account, run_id, f"{type(exc).__name__}: {exc}", None))


@pytest.mark.slow          # 16 spawned processes per backend
def test_two_analysts_racing_never_exceed_a_quota_or_the_cap(ledger_location):
    """Alice may spend 0.3 and Bob 0.5 of a cap of 0.7; 8 processes each race to charge
    0.1: exactly 7 charges win (the cap), at most 3 Alice's and at most 5 Bob's."""
    ledger = Ledger(ledger_location)
    ledger.register_dataset("race", SCHEMA, None, 0.7, actor="owner", confirmed=True)
    for name in ("alice", "bob"):
        ledger.add_account(name, "analyst", actor="test", password_hash=cheap("pw"))
    ledger.set_quota("race", "alice", 0.3, actor="owner")
    ledger.set_quota("race", "bob", 0.5, actor="owner")
    arguments = [(str(ledger_location), name, f"{name}-{i}")
                 for i in range(8) for name in ("alice", "bob")]
    barrier, results = CTX.Barrier(len(arguments)), CTX.Queue()
    procs = [CTX.Process(target=_quota_worker, args=(*a, barrier, results)) for a in arguments]
    for p in procs:
        p.start()
    try:
        out = [results.get(timeout=TIMEOUT) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=TIMEOUT)
            if p.is_alive():
                p.kill()
                p.join()
    assert all(o[2] in ("ok", "BudgetExceededError") for o in out), out
    won = {name: sum(1 for o in out if o[0] == name and o[2] == "ok")
           for name in ("alice", "bob")}
    assert won["alice"] <= 3 and won["bob"] <= 5 and sum(won.values()) == 7, won
    assert ledger.budget("race").spent_nano == int(0.7 * NANO)
    assert ledger.quota_status("race", "alice").spent_nano <= int(0.3 * NANO)
    assert ledger.quota_status("race", "bob").spent_nano <= int(0.5 * NANO)
    log = ledger.audit_log("race")
    assert len(log) == 7 and all(e.account == e.run_id.split("-")[0] for e in log)
