"""The six attacks of issue 29, each refused (every one of them worked at the main before):

1. anyone spent a private dataset's budget anonymously;
2. a workspace was anybody's who typed its name;
3. the CLI's owner gate trusted a hash from the caller's own environment;
4. the Python API trusted its caller: ``Requester(role="owner")`` without a password, the
   Dask worker function mining for a bare permit, the data's path and digest for anyone;
5. one global login back-off let any stranger lock the owner out (see also
   tests/dpcore/privacy/test_accounts.py);
6. a batch resumed another client's charged run id with other parameters.

Nothing refused here is charged.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from dpcore.cli import main
from dpcore.data.loading import load_dataset
from dpcore.errors import OwnerLoginThrottled, ParameterError, SignInError
from dpcore.privacy.accounts import sign_in
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import PolicyError, Requester, authorize_run, content_digest
from dpcore.privacy.roles import LOGIN_FREE_FAILURES, hash_password
from dpcore.redescriptions.params import TreeParams
from dpcore.registry import ALTEXPM, FAITHFUL
from dpcore.runs import charge_and_mine, run_cost
from tests.support.accounts_support import PASSWORD, make_account, signed_in

REPO = Path(__file__).resolve().parents[3]
CLINIC = REPO / "sample_data" / "clinic"
SMALL = dict(in_tr=1, rm_iter=1)


@pytest.fixture()
def ledger(tmp_path, clinic_dataset) -> Ledger:
    """clinic's files as a public demo and as a private dataset, an owner and two analysts."""
    led = Ledger(tmp_path / "ledger.sqlite")
    digest = content_digest(clinic_dataset)
    led.register_dataset("clinic", clinic_dataset.schema, str(CLINIC), 5.0, actor="owner",
                         confirmed=True, content_digest=digest)
    private = dataclasses.replace(clinic_dataset.schema, name="private", public_demo=False)
    led.register_dataset("private", private, str(CLINIC), 5.0, actor="owner", confirmed=True,
                         content_digest=digest)
    make_account(led, "boss", "owner", "the owner's own")
    make_account(led, "alice", "analyst")
    make_account(led, "bob", "analyst")
    return led


def spent(led: Ledger, name: str = "private") -> int:
    return led.budget(name).spent_nano


# ------------------------------------------------------------------ 1. anonymous spending

def test_1_an_anonymous_caller_cannot_spend_a_private_dataset(ledger):
    params = TreeParams(algorithm=ALTEXPM, epsilon=0.5, **SMALL)
    with pytest.raises(PolicyError, match="is private: sign in"):
        charge_and_mine(ledger, "private", params)
    with pytest.raises(ParameterError, match="must name the signed-in account"):
        ledger.charge("raw", "private", ALTEXPM, [run_cost(params)], {})
    assert spent(ledger) == 0
    # public demo data needs no account (teaching); a signed-in analyst spends, named
    assert charge_and_mine(ledger, "clinic", params).epsilon_nano == run_cost(params)
    alice = signed_in(ledger, "alice", "analyst")
    result = charge_and_mine(ledger, "private", params, requester=alice)
    assert [r.account for r in ledger.list_runs("private")] == ["alice"]
    assert [e.account for e in ledger.audit_log("private")] == ["alice"]
    assert spent(ledger) == result.epsilon_nano


def test_1_an_analysts_quota_is_enforced_on_the_run_path(ledger):
    params = TreeParams(algorithm=ALTEXPM, epsilon=0.5, **SMALL)
    ledger.set_quota("private", "alice", 0.75, actor="boss")
    alice = signed_in(ledger, "alice", "analyst")
    charge_and_mine(ledger, "private", params, requester=alice)
    with pytest.raises(Exception, match="share of dataset 'private'"):
        charge_and_mine(ledger, "private", params, requester=alice)
    assert ledger.quota_status("private", "alice").spent_nano == run_cost(params)
    ledger.disable_account("alice", actor="boss")
    with pytest.raises(ParameterError, match="disabled"):
        charge_and_mine(ledger, "private", params, requester=alice)     # an old session
    with pytest.raises(SignInError):
        sign_in(ledger, "alice", PASSWORD, client="t", entry="api")


# ------------------------------------------------------------------ 2. workspaces

def test_2_another_analyst_cannot_open_a_workspace_unless_it_is_shared(ledger):
    ledger.save_workspace("private", "alice", "notes", '{"dataset": "private", "n": 1}')
    with pytest.raises(ParameterError, match="not shared with 'bob'"):
        ledger.get_workspace("private", "alice", "notes", reader="bob")
    with pytest.raises(ParameterError, match="not shared with 'bob'"):
        ledger.save_workspace("private", "alice", "notes", "{}", reader="bob")
    assert ledger.get_workspace("private", "bob", "notes") is None      # bob's own: none
    ledger.share_workspace("private", "alice", "notes", "bob")           # the explicit act
    shared = ledger.get_workspace("private", "alice", "notes", reader="bob")
    assert json.loads(shared.workspace_json)["n"] == 1
    assert [w.name for w in ledger.workspaces_shared_with("private", "bob")] == ["notes"]
    assert ledger.unshare_workspace("private", "alice", "notes", "bob")
    with pytest.raises(ParameterError, match="not shared"):
        ledger.get_workspace("private", "alice", "notes", reader="bob")
    with pytest.raises(ParameterError, match="belong to signed-in accounts"):
        ledger.save_workspace("private", "~anonymous", "notes", "{}")


# ------------------------------------------------------------------ 3. the CLI's owner gate

def test_3_a_self_made_hash_in_the_callers_environment_unlocks_nothing(ledger, tmp_path,
                                                                       monkeypatch, capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD_HASH", hash_password("mine", n=2**4))
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "mine")
    out = tmp_path / "f.json"
    args = ["--ledger", str(ledger.path), "mine", "--dataset", "private", "--algorithm",
            ALTEXPM, "--mode", FAITHFUL, "--epsilon", "0.5", "--in-tr", "1", "--rm-iter",
            "1", "--owner", "--out", str(out)]
    with pytest.raises(SystemExit, match="wrong account name or password"):
        main(args)
    assert spent(ledger) == 0 and not out.exists()
    assert ledger.auth_events()[-1].outcome == "failure"
    # on a ledger without an owner account there is no owner at all
    empty = Ledger(tmp_path / "empty.sqlite")
    with pytest.raises(SystemExit, match="no owner account"):
        main(["--ledger", str(empty.path), "register", "--data", str(CLINIC), "--cap", "1"])
    assert empty._dataset_records() == []
    # the owner's own password, checked against the ledger's hash, does work
    monkeypatch.setenv("DPRM_PASSWORD", "the owner's own")
    assert main(args) == 0 and spent(ledger) == run_cost(
        TreeParams(algorithm=ALTEXPM, epsilon=0.5, mode=FAITHFUL, **SMALL))
    assert ledger.list_runs("private")[0].account == "boss"


# ------------------------------------------------------------------ 4. the Python API

def test_4a_the_owner_role_is_never_taken_on_the_callers_word(ledger):
    with pytest.raises(PolicyError, match="signed-in owner account"):
        Requester(role="owner")
    alice = signed_in(ledger, "alice", "analyst")
    with pytest.raises(PolicyError):
        Requester(role="owner", session=alice.session)
    params = TreeParams(algorithm=ALTEXPM, epsilon=0.5, mode=FAITHFUL, **SMALL)
    with pytest.raises(PolicyError, match="owner only"):
        charge_and_mine(ledger, "private", params, requester=alice)
    assert spent(ledger) == 0


def test_4b_the_worker_function_mines_only_for_a_charge_the_ledger_holds(ledger):
    import dpcore.distributed.batch as batch

    assert not hasattr(batch, "mine_charged_run")
    assert "_mine_charged_run" not in batch.__all__
    boss = signed_in(ledger, "boss", "owner", "the owner's own")
    params = TreeParams(algorithm=ALTEXPM, epsilon=5.0, **SMALL)
    record = ledger._dataset_record("private")
    permit = authorize_run(record, params, boss)
    job = batch.WorkerJob(run_id="free", permit=permit, charged_nano=run_cost(params),
                          relay_messages=False)
    with pytest.raises(PolicyError, match="no charge came with this job"):
        batch._mine_charged_run(job)
    # a real charge of cheaper, other parameters cannot carry this permit
    cheap = TreeParams(algorithm=ALTEXPM, epsilon=0.25, **SMALL)
    cheap_permit = authorize_run(record, cheap, boss)
    from dpcore.privacy.policy import recorded_params

    charge = ledger.charge("free", "private", ALTEXPM, [run_cost(cheap)],
                           recorded_params(cheap_permit), account="boss")
    for forged in (dataclasses.replace(job, charge=charge),
                   dataclasses.replace(job, charge=dataclasses.replace(
                       charge, epsilon_nano=run_cost(params)))):
        with pytest.raises(PolicyError, match="does not match the ledger's charge"):
            batch._mine_charged_run(forged)
    assert spent(ledger) == run_cost(cheap)          # only the cheap charge, nothing mined
    bound = batch.WorkerJob(run_id="free", permit=cheap_permit, charged_nano=run_cost(cheap),
                            relay_messages=False, charge=charge)
    release, _ = batch._mine_charged_run(bound)
    assert json.loads(release)["epsilon_nano"] == run_cost(cheap)


def test_4c_analysts_get_the_public_dataset_card_only(ledger):
    card = ledger.dataset_card("private")
    assert not hasattr(card, "source_path") and not hasattr(card, "content_digest")
    assert card.schema == ledger._dataset_record("private").schema
    assert all(not hasattr(c, "source_path") for c in ledger.list_dataset_cards())
    assert [c.name for c in ledger.list_dataset_cards()] == \
        [r.name for r in ledger._dataset_records()]


def test_4c_no_public_read_of_the_ledger_returns_the_data_location_or_digest():
    """The whole dataset record (where the raw data live, the content digest) is internal:
    ``Ledger.get_dataset`` handed it to any caller. Only the owner's writes (which need write
    access to the ledger, i.e. the owner) still return it."""
    returns_record = {name for name, fn in inspect.getmembers(Ledger, inspect.isfunction)
                      if not name.startswith("_")
                      and "DatasetRecord" in str(inspect.signature(fn).return_annotation)}
    assert returns_record == {"register_dataset", "confirm_schema", "record_content_digest",
                              "create_sandbox", "declare_row_bound"}
    assert not hasattr(Ledger, "get_dataset") and not hasattr(Ledger, "list_datasets")


# ------------------------------------------------------------------ 5. lock-out

def test_5_a_stranger_cannot_lock_the_owner_out(ledger):
    for _ in range(LOGIN_FREE_FAILURES):
        with pytest.raises(SignInError):
            sign_in(ledger, "boss", "guess", client="app:203.0.113.9", entry="app")
    with pytest.raises(OwnerLoginThrottled):
        sign_in(ledger, "boss", "the owner's own", client="app:203.0.113.9", entry="app")
    assert sign_in(ledger, "boss", "the owner's own", client="app:198.51.100.1",
                   entry="app").role == "owner"
    failures = [e for e in ledger.auth_events() if e.outcome == "failure"]
    assert len(failures) == LOGIN_FREE_FAILURES and all(e.account == "boss" for e in failures)


# ------------------------------------------------------------------ 6. batch resume

def test_6_a_run_id_resumes_only_with_its_own_parameters_and_account(ledger):
    from dpcore.distributed.plan import PlanError, check_plan, parse_plan

    alice = signed_in(ledger, "alice", "analyst")
    bob = signed_in(ledger, "bob", "analyst")
    victim = TreeParams(algorithm=ALTEXPM, epsilon=0.5, in_tr=1, rm_iter=1)
    permit = authorize_run(ledger._dataset_record("private"), victim, alice)
    from dpcore.privacy.policy import recorded_params

    ledger.charge("victim-run", "private", ALTEXPM, [run_cost(victim)],
                  recorded_params(permit), account="alice")       # charged, still running
    other = {"runs": [{"run_id": "victim-run", "dataset": "private", "algorithm": ALTEXPM,
                       "epsilon": 0.5, "in_tr": 2, "rm_iter": 1}]}
    with pytest.raises(PlanError, match="other parameters"):
        check_plan(ledger, parse_plan(other), alice)
    same = {"runs": [{"run_id": "victim-run", "dataset": "private", "algorithm": ALTEXPM,
                      "epsilon": 0.5, "in_tr": 1, "rm_iter": 1}]}
    with pytest.raises(PlanError, match="another account"):
        check_plan(ledger, parse_plan(same), bob)
    assert check_plan(ledger, parse_plan(same), alice)[0].state == "charged"
    # the ledger itself refuses the same, whoever skips the plan check
    attacker = recorded_params(authorize_run(ledger._dataset_record("private"),
                                             TreeParams(algorithm=ALTEXPM, epsilon=0.5,
                                                          in_tr=2, rm_iter=1), alice))
    with pytest.raises(ParameterError, match="other parameters"):
        ledger.charge("victim-run", "private", ALTEXPM, [run_cost(victim)], attacker,
                      account="alice")
    with pytest.raises(ParameterError, match="another account"):
        ledger.charge("victim-run", "private", ALTEXPM, [run_cost(victim)],
                      recorded_params(permit), account="bob")
    assert ledger.get_run("victim-run").params["in_tr"] == 1
    assert spent(ledger) == run_cost(victim)


def _old_form(params) -> dict:
    """``params`` as every redescription run recorded them before each family's type was the
    boundary: the 26 keys of both families' fields (the other family's at their defaults)."""
    from dpcore.redescriptions.params import FIELDS

    return {"algorithm": params.algorithm, **{k: f.default for k, f in FIELDS.items()},
            **params.to_dict()}


def test_6b_a_run_charged_with_the_old_26_key_params_resumes_and_finishes(ledger):
    """A run charged before the per-family types (its ledger row holds the 26-key dict and
    that dict's digest) is still the same run: the batch check, a worker's binding, the
    charge's replay and finish_charged_run all accept it, at no further cost. A different
    value of its own family is still refused."""
    from dpcore.distributed.batch import WorkerJob, _check_bound
    from dpcore.distributed.plan import PlanError, check_plan, parse_plan
    from dpcore.privacy.ledger import digest_params
    from dpcore.privacy.policy import NEIGHBOURING_RELATION, recorded_params
    from dpcore.runs import finish_charged_run

    alice = signed_in(ledger, "alice", "analyst")
    params = TreeParams(algorithm=ALTEXPM, epsilon=0.5, **SMALL)
    old = {**_old_form(params), "seed": None, "neighbouring": NEIGHBOURING_RELATION}
    assert len(old) == 28 and "init_pairs" in old and "init_pairs" not in params.to_dict()
    charge = ledger.charge("old-run", "private", ALTEXPM, [run_cost(params)], old,
                           account="alice")
    assert charge.params_digest == digest_params(old)
    permit = authorize_run(ledger._dataset_record("private"), params, alice)
    assert digest_params(recorded_params(permit)) != charge.params_digest   # today's form
    assert recorded_params(permit, old) == old                             # the same run

    entry = {"run_id": "old-run", "dataset": "private", "algorithm": ALTEXPM,
             "epsilon": 0.5, **SMALL}
    assert check_plan(ledger, parse_plan({"runs": [entry]}), alice)[0].state == "charged"
    _check_bound(WorkerJob(run_id="old-run", permit=permit, charged_nano=run_cost(params),
                           relay_messages=False, charge=charge))    # no PolicyError
    with pytest.raises(PlanError, match="other parameters"):
        check_plan(ledger, parse_plan({"runs": [{**entry, "in_tr": 2}]}), alice)
    changed = {**old, "depth": 3}                 # its own family's value differs
    assert recorded_params(permit, changed) != changed

    result = finish_charged_run(ledger, "old-run", requester=alice)
    assert result.params == params.to_dict() and result.epsilon_nano == run_cost(params)
    again = charge_and_mine(ledger, "private", params, requester=alice, run_id="old-run")
    assert again.redescriptions == result.redescriptions
    assert spent(ledger) == run_cost(params)      # one charge, never a second one
    assert ledger.get_run("old-run").params == old


def test_load_dataset_still_matches_the_registered_digest(ledger):
    assert content_digest(load_dataset(CLINIC)) == ledger._dataset_record("private").content_digest
