"""One privacy policy for every entry point: the Python API and the command line refuse,
before charging, what the app refuses (seeds on private data, other data than the
registered, faithful releases to analysts, float noise in strict mode, unwritable
outputs, schemas that cannot be mined), and every paid result can be fetched again."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpcore.cli import main
from dpcore.data.dataset import TwoViewDataset
from dpcore.data.loading import load_dataset
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import BudgetExceededError, DataError, DpcoreError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import (
    NEIGHBOURING_RELATION,
    PolicyError,
    Requester,
    allowed_modes,
    content_digest,
)
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.mining import check_runnable
from dpcore.redescriptions.params import TreeParams, family_type
from dpcore.runs import charge_and_mine, load_result, readable_runs, run_cost
from tests.support.accounts_support import make_account, signed_in

REPO = Path(__file__).resolve().parents[3]
CLINIC = REPO / "sample_data" / "clinic"
DIABETES = REPO / "sample_data" / "diabetes"
SMALL = dict(in_tr=2, mc_iter=200)
ANALYST = Requester()


def owner(led: Ledger) -> Requester:
    """The owner, signed in on ``led`` (an owner account is created in it)."""
    return signed_in(led, "owner", "owner", actor="owner-test")


@pytest.fixture()
def ledger(tmp_path, clinic_dataset):
    """clinic as a public demo, and the same files registered as a private dataset."""
    led = Ledger(tmp_path / "ledger.sqlite")
    led.register_dataset("clinic", clinic_dataset.schema, str(CLINIC), 5.0, actor="owner",
                         confirmed=True, content_digest=content_digest(clinic_dataset))
    private = replace(clinic_dataset.schema, name="private", public_demo=False)
    led.register_dataset("private", private, str(CLINIC), 5.0, actor="owner", confirmed=True,
                         content_digest=content_digest(clinic_dataset))
    return led


def nothing_charged(led: Ledger, *names: str) -> bool:
    return all(led.budget(n).spent_nano == 0 and led.list_runs(n) == [] for n in names)


# ------------------------------------------------------------------------- 1. seeds

def test_a_seed_is_refused_on_private_data_and_nothing_is_charged(ledger):
    params = TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL)
    with pytest.raises(PolicyError, match="public demo"):
        charge_and_mine(ledger, "private", params, seed=4242)
    assert nothing_charged(ledger, "private")


def test_private_runs_record_no_seed_and_never_repeat_their_noise(ledger):
    """The replay attack needs the noise of a release to be reproducible: on private data
    two runs of the same parameters draw different noise, and neither records a seed."""
    params = TreeParams(algorithm="altexpm", epsilon=0.5, in_tr=1, rm_iter=1)
    first = charge_and_mine(ledger, "private", params)
    second = charge_and_mine(ledger, "private", params)
    assert first.seed is None and second.seed is None
    for run in ledger.list_runs("private"):
        assert run.params["seed"] is None
    assert json.loads(first.to_json())["seed"] is None
    tables = [np.asarray(r.extractions[0].noisy_table) for r in (first, second)]
    trees_equal = first.trees == second.trees
    assert not (trees_equal and np.array_equal(*tables)), "fresh randomness every run"


def test_a_seed_on_public_demo_data_reproduces_the_run(ledger):
    params = TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL)
    a = charge_and_mine(ledger, "clinic", params, seed=7)
    b = charge_and_mine(ledger, "clinic", params, seed=7)
    assert a.seed == 7 and [r.jaccard for r in a.redescriptions] == \
        [r.jaccard for r in b.redescriptions]


# ------------------------------------------------------------------------- 2. the data mined

def test_other_data_than_the_registered_are_refused(ledger, clinic_dataset):
    other = TwoViewDataset.from_arrays(clinic_dataset.schema,
                                       clinic_dataset.views[0].values[:, :-1],
                                       clinic_dataset.views[1].values[:, :-1])
    params = TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL)
    with pytest.raises(PolicyError, match="registered data"):
        charge_and_mine(ledger, "clinic", params, data=other)
    assert nothing_charged(ledger, "clinic", "private")


def test_an_analyst_cannot_compare_a_guess_with_private_data(ledger, clinic_dataset):
    """Handing data for a private dataset would be an unpaid equality test: refused before
    any comparison, whether the guess is right or wrong (same message either way)."""
    params = TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL)
    other = TwoViewDataset.from_arrays(clinic_dataset.schema,
                                       clinic_dataset.views[0].values[:, :-1],
                                       clinic_dataset.views[1].values[:, :-1])
    messages = set()
    for guess in (clinic_dataset, other):
        with pytest.raises(PolicyError) as refused:
            charge_and_mine(ledger, "private", params, data=guess)
        messages.add(str(refused.value))
    assert len(messages) == 1 and "only the owner" in messages.pop()
    assert nothing_charged(ledger, "private")
    result = charge_and_mine(ledger, "private", params, data=clinic_dataset,
                             requester=owner(ledger))
    assert ledger.get_run(result.run_id).status == "done"


def test_first_use_records_the_registered_files_digest_not_the_data_given(tmp_path,
                                                                         clinic_dataset):
    led = Ledger(tmp_path / "l.sqlite")
    led.register_dataset("clinic", clinic_dataset.schema, str(CLINIC), 2.0, actor="owner",
                         confirmed=True)
    other = TwoViewDataset.from_arrays(clinic_dataset.schema,
                                       clinic_dataset.views[0].values[:, :-1],
                                       clinic_dataset.views[1].values[:, :-1])
    with pytest.raises(PolicyError, match="registered data"):
        charge_and_mine(led, "clinic", TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL),
                        data=other, requester=owner(led))
    assert led._dataset_record("clinic").content_digest == content_digest(clinic_dataset)
    assert nothing_charged(led, "clinic")


def test_without_data_the_registered_files_are_mined_with_the_confirmed_schema(ledger):
    params = TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL)
    result = charge_and_mine(ledger, "private", params)
    assert result.dataset == "private" and ledger.get_run(result.run_id).status == "done"


def test_a_dataset_registered_without_a_digest_records_one_at_its_first_run(tmp_path,
                                                                             clinic_dataset):
    led = Ledger(tmp_path / "l.sqlite")
    led.register_dataset("clinic", clinic_dataset.schema, str(CLINIC), 2.0, actor="owner",
                         confirmed=True)
    assert led._dataset_record("clinic").content_digest is None
    charge_and_mine(led, "clinic", TreeParams(algorithm="altexpm", epsilon=0.5, **SMALL))
    assert led._dataset_record("clinic").content_digest == content_digest(clinic_dataset)


# ------------------------------------------------------------------------- 3. faithful mode

def test_faithful_mode_on_private_data_is_the_owners_and_so_is_its_result(ledger):
    params = TreeParams(algorithm="altexpm", epsilon=0.5, mode="faithful", **SMALL)
    with pytest.raises(PolicyError, match="owner only"):
        charge_and_mine(ledger, "private", params)
    assert nothing_charged(ledger, "private")
    result = charge_and_mine(ledger, "private", params, requester=owner(ledger))
    assert result.audience == "owner"
    with pytest.raises(PolicyError, match="owner only"):
        load_result(ledger, result.run_id, requester=Requester())
    assert load_result(ledger, result.run_id, requester=owner(ledger)).run_id == result.run_id
    assert readable_runs(ledger, "private", "analyst") == []
    assert [r.run_id for r in readable_runs(ledger, "private", "owner")] == [result.run_id]
    assert allowed_modes(ledger._dataset_record("private"), "analyst") == ("strict",)
    assert allowed_modes(ledger._dataset_record("clinic"), "analyst") == ("strict", "faithful")


def test_owner_diagnostics_are_refused_to_analysts_on_private_data(ledger):
    result = charge_and_mine(ledger, "private",
                             TreeParams(algorithm="altmcmc", epsilon=0.5, **SMALL))
    with pytest.raises(PolicyError, match="true data"):
        load_result(ledger, result.run_id, requester=Requester(), include_diagnostics=True)
    assert load_result(ledger, result.run_id, requester=owner(ledger),
                       include_diagnostics=True).diagnostics.score_traces


# ------------------------------------------------------------------------- 4. float noise

def test_strict_mode_never_takes_float_noise(ledger):
    params = TreeParams(algorithm="altexpm", epsilon=0.5, noise="continuous", **SMALL)
    with pytest.raises(ParameterError, match="Mironov"):
        charge_and_mine(ledger, "clinic", params, requester=owner(ledger))
    assert nothing_charged(ledger, "clinic")


# ------------------------------------------------------------------------- 6. schema checks

def test_a_numeric_attribute_with_thresholds_but_no_domain_is_mined(tmp_path):
    """Every attribute becomes an initial target (InTr ≥ attributes): the domain-less
    attribute's target bins come from its declared thresholds, no TypeError after the charge."""
    schema = Schema("t", (Attribute("a", 0, "numeric", thresholds=(1.0, 2.0, 3.0, 4.0, 5.0)),
                          Attribute("b", 0, "boolean"),
                          Attribute("c", 1, "numeric", domain=(0.0, 10.0)),
                          Attribute("d", 1, "boolean")),
                    (ViewSpec("L", "x.csv"), ViewSpec("R", "x.csv")))
    rng = np.random.default_rng(0)
    data = TwoViewDataset.from_arrays(schema, np.vstack([rng.uniform(0, 6, 300),
                                                         rng.integers(0, 2, 300)]),
                                      np.vstack([rng.uniform(0, 10, 300),
                                                 rng.integers(0, 2, 300)]))
    led = Ledger(tmp_path / "l.sqlite")
    led.register_dataset("t", schema, None, 5.0, actor="owner", confirmed=True,
                         content_digest=content_digest(data))
    assert schema.target_edges(schema.attributes[0]).tolist() == [2.0, 3.0, 4.0]
    result = charge_and_mine(led, "t", TreeParams(algorithm="mcmctreepair", epsilon=1.0,
                                                    in_tr=4, mc_iter=100), data=data,
                             requester=owner(led))
    assert led.get_run(result.run_id).status == "done"


def test_a_schema_whose_grid_cannot_be_built_is_refused_before_the_charge(ledger):
    """The pre-charge check builds every public grid (charge_and_mine calls it before the
    ledger); a grid that is not finite and increasing names its attribute."""
    schema = ledger._dataset_record("private").schema
    broken = replace(schema, grid_bins=0, attributes=tuple(
        replace(a, thresholds=None, domain=(1.0, 1.0)) if a.type == "numeric" else a
        for a in schema.attributes))
    with pytest.raises(DataError, match="public grid"):
        check_runnable(SimpleNamespace(schema=broken), TreeParams())


# ------------------------------------------------------------------------- the property

def _mostly(valid, *invalid, odds=3):
    """About ``odds`` valid values for one invalid one (Hypothesis favours the first branch
    of ``one_of`` and the ends of ranges, so the choice is an inner value of a range)."""
    return st.tuples(st.integers(0, odds + 1), valid, st.sampled_from(invalid)).map(
        lambda t: t[2] if t[0] == 1 else t[1])


NUMERIC = st.tuples(st.floats(-100, 100), st.floats(0.5, 50),
                    _mostly(st.sampled_from(["domain", "thresholds", "both"]), "neither",
                            odds=12)).map(
    lambda t: ("numeric", (t[0], t[0] + t[1]) if t[2] in ("domain", "both") else None,
               (t[0] + t[1] / 3, t[0] + t[1] / 2) if t[2] in ("thresholds", "both") else None,
               ()))
ATTRIBUTE = st.one_of(
    st.builds(lambda: ("boolean", None, None, ())),
    _mostly(st.integers(2, 5), 1, odds=12).map(
        lambda k: ("categorical", None, None, tuple(f"c{i}" for i in range(k)))),
    NUMERIC,
)


def _dataset(kinds, n_left, rows, seed, public_demo=False):
    attrs = tuple(Attribute(f"x{i}", int(i >= n_left), kind, categories=cats, domain=dom,
                            thresholds=thr) for i, (kind, dom, thr, cats) in enumerate(kinds))
    schema = Schema("prop", attrs, (ViewSpec("L", "d.csv"), ViewSpec("R", "d.csv")),
                    public_demo=public_demo)
    rng = np.random.default_rng(seed)
    cols = []
    for kind, dom, _thr, cats in kinds:
        if kind == "boolean":
            cols.append(rng.integers(0, 2, rows).astype(float))
        elif kind == "categorical":
            cols.append(rng.integers(0, len(cats), rows).astype(float))
        else:
            lo, hi = dom if dom else (-200.0, 200.0)
            cols.append(rng.uniform(lo, hi, rows))
    arr = np.vstack(cols)
    return schema, TwoViewDataset.from_arrays(schema, arr[:n_left], arr[n_left:])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(ATTRIBUTE, min_size=2, max_size=6), split=st.integers(1, 5),
       rows=st.integers(5, 80), seed=st.integers(0, 10),
       algorithm=st.sampled_from(["mcmctreepair", "altmcmc", "altexpm", "serenade_es",
                                  "serenade_cs"]),
       mode=st.sampled_from(["strict", "faithful"]),
       epsilon=_mostly(st.floats(0.05, 6), 0.0, -1.0, float("nan"), float("inf"), odds=8),
       omega=_mostly(st.floats(0.01, 0.99), -0.5, 1.5, 0.0, 1.0, odds=8),
       in_tr=_mostly(st.integers(1, 3), 0, -1, odds=8),
       depth=_mostly(st.integers(1, 4), 0, 9, odds=8),
       noise=_mostly(st.just("discrete"), "continuous", odds=4),
       role=st.sampled_from(["analyst", "owner"]), use_seed=st.booleans(),
       public_demo=st.booleans())
def test_every_request_is_refused_with_nothing_charged_or_charged_and_stored(
        tmp_path_factory, kinds, split, rows, seed, algorithm, mode, epsilon, omega, in_tr,
        depth, noise, role, use_seed, public_demo):
    n_left = min(split, len(kinds) - 1)
    try:
        schema, data = _dataset(kinds, n_left, rows, seed, public_demo)
        led = Ledger(tmp_path_factory.mktemp("prop") / "l.sqlite")
        led.register_dataset("prop", schema, None, 5.0, actor="owner", confirmed=True,
                             content_digest=content_digest(data))
    except (DataError, ParameterError):
        event("schema refused at registration")
        return
    family = family_type(algorithm)
    drawn = dict(mode=mode, epsilon=epsilon, omega=omega, in_tr=in_tr, depth=depth,
                 noise=noise, mc_iter=50, init_pairs=3, es_rounds=3, cs_rounds=2)
    params = family(algorithm=algorithm, **{k: v for k, v in drawn.items() if k in family.FIELDS})
    try:
        requester = owner(led) if role == "owner" else Requester(role=role, actor=role)
        result = charge_and_mine(led, "prop", params, data=data, requester=requester,
                                 seed=seed if use_seed else None)
    except (PolicyError, ParameterError, DataError, BudgetExceededError) as exc:
        event(f"refused: {type(exc).__name__}")
        assert led.budget("prop").spent_nano == 0 and led.list_runs("prop") == [], \
            "a refusal charges nothing"
        return
    event("charged and stored")
    runs = led.list_runs("prop")
    assert [r.status for r in runs] == ["done"], "charged and stored"
    # charged in full; a run that stopped early on released values returned the rest
    assert run_cost(params) == runs[0].epsilon_nano
    assert led.budget("prop").spent_nano == runs[0].epsilon_nano - runs[0].refunded_nano
    stored = load_result(led, result.run_id, requester=owner(led))
    assert stored.to_json() == result.to_json(), "the stored result is what was returned"
    assert public_demo or stored.seed is None, "private data: no seed stored"
    assert stored.neighbouring == NEIGHBOURING_RELATION


# ------------------------------------------------------------------------- the command line

@pytest.fixture()
def cli_ledger(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPRM_LEDGER", str(path))
    monkeypatch.delenv("DPRM_OWNER_PASSWORD_HASH", raising=False)
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    make_account(Ledger(path), "owner", "owner", "s3cret")
    assert main(["register", "--data", str(DIABETES), "--cap", "5"]) == 0
    assert main(["register", "--data", str(CLINIC), "--cap", "5"]) == 0
    monkeypatch.delenv("DPRM_OWNER_PASSWORD")
    return Ledger(path)


def test_cli_refuses_a_seed_on_private_data(cli_ledger, capsys):
    assert main(["mine", "--dataset", "diabetes", "--algorithm", "altexpm", "--seed", "4242",
                 "--epsilon", "0.5"]) == 2
    assert "public demo" in capsys.readouterr().err
    assert nothing_charged(cli_ledger, "diabetes")


def test_cli_refuses_other_data_than_the_registered(cli_ledger, capsys):
    """`--data X --dataset Y` used to mine X and charge Y."""
    assert main(["mine", "--data", str(DIABETES), "--dataset", "clinic", "--epsilon",
                 "0.5"]) == 2
    assert "registered data" in capsys.readouterr().err
    assert nothing_charged(cli_ledger, "diabetes", "clinic")


def test_cli_faithful_on_private_data_needs_the_owner_and_hides_the_result(
        cli_ledger, capsys, monkeypatch, tmp_path):
    args = ["mine", "--dataset", "diabetes", "--algorithm", "altexpm", "--mode", "faithful",
            "--epsilon", "0.5", "--in-tr", "1"]
    assert main(args) == 2
    assert "owner only" in capsys.readouterr().err
    assert nothing_charged(cli_ledger, "diabetes")
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(args + ["--owner", "--out", str(tmp_path / "f.json")]) == 0
    run_id = cli_ledger.list_runs("diabetes")[0].run_id
    monkeypatch.delenv("DPRM_OWNER_PASSWORD")
    capsys.readouterr()
    assert main(["result", run_id]) == 2
    assert "owner only" in capsys.readouterr().err
    main(["runs", "diabetes"])
    assert "[owner only]" in capsys.readouterr().out


def test_cli_analysts_cannot_hand_data_for_a_private_dataset(cli_ledger, capsys):
    assert main(["mine", "--data", str(DIABETES), "--dataset", "diabetes", "--epsilon",
                 "0.5"]) == 2
    assert "only the owner" in capsys.readouterr().err
    assert nothing_charged(cli_ledger, "diabetes")


def test_cli_hides_loader_details_of_private_data_from_analysts(cli_ledger, capsys,
                                                                 monkeypatch):
    def broken(record):
        raise DataError("value 123.456 outside the declared domain", column="bmi", row=7)

    monkeypatch.setattr("dpcore.runs.load_registered", broken)
    make_account(cli_ledger, "alice", "analyst", "alice-pw")
    monkeypatch.setenv("DPRM_PASSWORD", "alice-pw")
    assert main(["--user", "alice", "mine", "--dataset", "diabetes", "--epsilon", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "could not be loaded" in err and "123.456" not in err and "row 7" not in err
    assert nothing_charged(cli_ledger, "diabetes")


def test_cli_hides_errors_of_owner_only_runs_from_analysts(cli_ledger, capsys):
    cli_ledger.charge("secret", "diabetes", "altexpm", [epsilon_to_nano(0.1)],
                      {"mode": "faithful"}, actor="owner", audience="owner", account="owner")
    cli_ledger.mark_failed("secret", "ValueError: threshold 97.25 of bmi")
    main(["runs", "diabetes"])
    listing = capsys.readouterr().out
    assert "secret" in listing and "[owner only]" in listing and "97.25" not in listing


def test_cli_has_no_float_noise_flag(cli_ledger):
    with pytest.raises(SystemExit):
        main(["mine", "--dataset", "clinic", "--noise", "continuous"])
    assert nothing_charged(cli_ledger, "clinic")


def test_cli_checks_out_before_charging_prints_the_run_id_and_fetches_results(
        cli_ledger, capsys, tmp_path):
    missing = tmp_path / "no" / "such" / "folder" / "r.json"
    assert main(["mine", "--dataset", "clinic", "--epsilon", "0.5", "--out",
                 str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert nothing_charged(cli_ledger, "clinic")

    out = tmp_path / "r.json"
    assert main(["mine", "--dataset", "clinic", "--algorithm", "altexpm", "--epsilon", "0.5",
                 "--in-tr", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    run_id = cli_ledger.list_runs("clinic")[0].run_id
    assert err.index(f"run {run_id}") < err.index("redescriptions written"), \
        "run id printed before mining"
    assert main(["result", run_id]) == 0
    fetched = json.loads(capsys.readouterr().out)
    assert fetched == json.loads(out.read_text())
    assert fetched["neighbouring"] == NEIGHBOURING_RELATION

    cli_ledger.charge("killed", "clinic", "altexpm", [epsilon_to_nano(0.1)], {},
                      actor="cli")
    assert main(["runs", "clinic"]) == 0
    listing = capsys.readouterr().out
    assert "killed" in listing and "no result yet" in listing and run_id in listing
    assert main(["result", "killed"]) == 3
    assert "no stored result" in capsys.readouterr().err


def test_cli_experiment_needs_the_owner_password(cli_ledger, tmp_path, monkeypatch):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "wrong")
    with pytest.raises(SystemExit, match="wrong account name or password"):
        main(["experiment", "--data", str(CLINIC), "--algorithms", "altexpm", "--epsilons",
              "1", "--runs", "1", "--out", str(tmp_path / "rep")])
    assert not (tmp_path / "rep").exists()


def test_load_dataset_gives_the_digest_registration_recorded(cli_ledger):
    assert cli_ledger._dataset_record("diabetes").content_digest == \
        content_digest(load_dataset(DIABETES))


def test_a_refused_request_is_a_dpcore_error(ledger):
    assert issubclass(PolicyError, DpcoreError)


# --------------------------------------------------------------------------- digests of every kind

def test_content_digest_covers_sequence_and_table_data():
    """Every dataset type has a digest: equal for two loads of the same files, different for
    one changed item or value, different across kinds; anything else is refused."""
    from dpcore.data.kinds import load_any_dataset
    from dpcore.data.loading import sample_data_dir
    from dpcore.data.sequences.dataset import SequenceDataset
    from dpcore.data.table.table import SynthesisTable

    root = sample_data_dir()
    _, seq_a = load_any_dataset(root / "clickstream")
    _, seq_b = load_any_dataset(root / "clickstream")
    assert seq_a is not seq_b and content_digest(seq_a) == content_digest(seq_b)
    items = seq_a.items.copy()
    items[-1] = (items[-1] + 1) % seq_a.schema.n_items
    changed = SequenceDataset(seq_a.schema, seq_a.indptr, items)
    assert content_digest(changed) != content_digest(seq_a)
    dropped = seq_a.subset(np.arange(seq_a.n_records - 1))
    assert content_digest(dropped) != content_digest(seq_a)

    _, tab_a = load_any_dataset(root / "pima_like")
    _, tab_b = load_any_dataset(root / "pima_like")
    assert content_digest(tab_a) == content_digest(tab_b)
    numeric = tab_a.numeric.copy()
    numeric[0, 0] += 1.0
    other = SynthesisTable(tab_a.schema, numeric, tab_a.categorical, tab_a.labels,
                           dict(tab_a.clipped), tab_a.source)
    assert content_digest(other) != content_digest(tab_a)
    assert len({content_digest(seq_a), content_digest(tab_a)}) == 2
    with pytest.raises(DataError, match="SequenceDataset"):
        content_digest(SimpleNamespace(views=()))
