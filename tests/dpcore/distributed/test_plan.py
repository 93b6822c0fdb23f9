"""Batch plan files (dpcore.distributed.plan): a plan is checked in full before anything is
charged; a bad plan names the entry and the field, and changes nothing in the ledger."""

import json
import shutil
from pathlib import Path

import pytest

from dpcore.distributed.plan import PlanError, check_plan, parse_plan, read_plan
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester, content_digest
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.params import TreeParams
from dpcore.registry import ALTEXPM, MCMCTREEPAIR

REPO = Path(__file__).resolve().parents[3]


def private_clinic(root: Path) -> Path:
    """The clinic sample as a *private* dataset folder (public_demo false) under ``root``."""
    folder = root / "clinic_private"
    shutil.copytree(REPO / "sample_data" / "clinic", folder)
    schema = json.loads((folder / "schema.json").read_text(encoding="utf-8"))
    schema["public_demo"] = False
    (folder / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    return folder


def register(ledger: Ledger, folder: Path, name: str = "clinic", cap: float = 2.0):
    from dpcore.data.loading import load_dataset

    data = load_dataset(folder)
    ledger.register_dataset(name, data.schema, str(folder), cap, actor="owner", confirmed=True,
                            content_digest=content_digest(data))


@pytest.fixture()
def ledger(ledger_location, tmp_path):
    led = Ledger(ledger_location)
    register(led, private_clinic(tmp_path))
    return led


def _nothing_changed(ledger: Ledger) -> None:
    assert ledger.budget("clinic").spent_nano == 0
    assert ledger.list_runs("clinic") == []
    assert ledger.audit_log() == []


def test_a_toml_plan_reads_with_defaults_and_parameters_by_name(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[defaults]\ndataset = "clinic"\n\n'
                    '[[runs]]\nrun_id = "a-1"\nalgorithm = "altexpm"\nepsilon = 0.5\nin_tr = 3\n\n'
                    '[[runs]]\nalgorithm = "mcmctreepair"\nepsilon = 0.25\n', encoding="utf-8")
    first, second = read_plan(plan)
    assert (first.index, first.run_id, first.dataset) == (1, "a-1", "clinic")
    assert first.params == TreeParams(algorithm=ALTEXPM, epsilon=0.5, in_tr=3).validate()
    assert second.run_id is None and second.params.algorithm == MCMCTREEPAIR
    assert second.params.epsilon == 0.25


@pytest.mark.parametrize("document, entry, field", [
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm"},
               {"dataset": "clinic", "algorithm": "altexpm", "epsilon": -1}]},
     "entry 2", "epsilon"),
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm", "in_tr": 0}]}, "entry 1", "in_tr"),
    ({"runs": [{"dataset": "clinic", "algorithm": "nope"}]}, "entry 1", "algorithm"),
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm", "inn_tr": 2}]}, "entry 1",
     "inn_tr"),
    ({"runs": [{"algorithm": "altexpm"}]}, "entry 1", "dataset"),
    ({"runs": [{"run_id": "x", "dataset": "clinic", "algorithm": "altexpm"},
               {"run_id": "x", "dataset": "clinic", "algorithm": "altexpm"}]},
     "entry 2 (run_id 'x')", "run_id"),
    ({"runs": [{"run_id": "a b", "dataset": "clinic", "algorithm": "altexpm"}]}, "entry 1",
     "run_id"),
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm", "seed": -3}]}, "entry 1", "seed"),
    ({"runs": []}, "file", "runs"),
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm"}], "extra": 1}, "file", "extra"),
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm"}], "name": ""}, "file", "name"),
    ({"runs": [{"dataset": "clinic", "algorithm": "altexpm"}], "name": 3}, "file", "name"),
])
def test_a_bad_entry_is_named_with_its_field(document, entry, field):
    with pytest.raises(PlanError) as info:
        parse_plan(document)
    message = str(info.value)
    assert f"plan {entry}, field {field!r}" in message and "Nothing was charged" in message


def test_a_plan_file_that_does_not_parse_is_refused(tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text('{"runs": [', encoding="utf-8")
    with pytest.raises(PlanError, match="not valid JSON"):
        read_plan(bad)
    with pytest.raises(PlanError, match=r"\.json or \.toml"):
        read_plan(tmp_path / "plan.yaml")


def test_bad_plans_against_the_ledger_charge_nothing(ledger):
    analyst = Requester()
    cases = [
        ({"dataset": "nowhere", "algorithm": ALTEXPM}, "entry 2", "dataset"),
        ({"dataset": "clinic", "algorithm": ALTEXPM, "seed": 4}, "entry 2", "seed"),
        ({"dataset": "clinic", "algorithm": ALTEXPM, "mode": "faithful"}, "entry 2", None),
        ({"dataset": "clinic", "algorithm": "pfs2"}, "entry 2", "algorithm"),
    ]
    good = {"dataset": "clinic", "algorithm": ALTEXPM, "epsilon": 0.5}
    for bad, entry, field in cases:
        with pytest.raises(PlanError) as info:
            check_plan(ledger, parse_plan({"runs": [good, bad]}), analyst)
        where = f"plan {entry}" + (f", field {field!r}" if field else "")
        assert str(info.value).startswith(where), str(info.value)
        _nothing_changed(ledger)
    # Each run fits the cap of ε = 2, all five together do not: refused as a whole.
    five = parse_plan({"runs": [dict(good, epsilon=0.5) for _ in range(5)]})
    with pytest.raises(PlanError, match="entry 5, field 'epsilon'.*cost ε = 2.5 together"):
        check_plan(ledger, five, analyst)
    _nothing_changed(ledger)


def test_a_run_id_charged_before_is_replayed_or_refused(ledger):
    from dpcore.privacy.policy import recorded_params

    analyst = Requester()
    part = epsilon_to_nano(0.5)
    same = {"run_id": "old", "dataset": "clinic", "algorithm": ALTEXPM, "epsilon": 0.5}
    (planned,) = check_plan(ledger, parse_plan({"runs": [same]}), analyst)
    ledger.charge("old", "clinic", ALTEXPM, [part], recorded_params(planned.permit),
                  actor="analyst")
    (run,) = check_plan(ledger, parse_plan({"runs": [same]}), analyst)
    assert run.state == "charged" and run.run_id == "old"
    with pytest.raises(PlanError, match="entry 1 \\(run_id 'old'\\), field 'run_id'"):
        check_plan(ledger, parse_plan({"runs": [dict(same, epsilon=0.25)]}), analyst)
    ledger.mark_failed("old", "killed")
    with pytest.raises(PlanError, match="that run failed"):
        check_plan(ledger, parse_plan({"runs": [same]}), analyst)
    assert ledger.budget("clinic").spent_nano == part


def test_entries_without_run_ids_get_the_same_ids_each_time_the_plan_is_checked(ledger):
    """Automatic run ids are a digest of the plan, the entry and the dataset: the same plan
    gets the same ids (a rerun resumes); another plan, a reordered one or a renamed one gets
    other ids (a fresh draw); ids are distinct within a plan."""
    from dpcore.distributed.plan import auto_run_id

    analyst = Requester()
    runs = [{"dataset": "clinic", "algorithm": ALTEXPM, "epsilon": 0.25},
            {"dataset": "clinic", "algorithm": MCMCTREEPAIR, "epsilon": 0.25},
            {"dataset": "clinic", "algorithm": ALTEXPM, "epsilon": 0.25}]
    ids = lambda document: [r.run_id for r in check_plan(ledger, parse_plan(document),
                                                         analyst)]
    first = ids({"runs": runs})
    assert len(set(first)) == 3 and all(i.startswith("auto-") and len(i) == 32 for i in first)
    assert ids({"runs": runs}) == first
    assert set(ids({"runs": [runs[1], runs[0], runs[2]]})).isdisjoint(first)
    assert set(ids({"runs": runs, "name": "again"})).isdisjoint(first)
    assert set(ids({"runs": [dict(runs[0], epsilon=0.5)] + runs[1:]})).isdisjoint(first)
    # an entry's given run id is kept, the others stay automatic
    given = ids({"runs": [dict(runs[0], run_id="mine")] + runs[1:]})
    assert given[0] == "mine" and given[1].startswith("auto-")
    assert auto_run_id("k", parse_plan({"runs": runs})[0]) == \
        auto_run_id("k", parse_plan({"runs": runs})[0])
    _nothing_changed(ledger)


def test_a_failed_automatic_run_is_reported_failed_again_and_never_recharged(ledger):
    """A rerun of a plan of automatic ids whose run failed resumes the plan: the failed run
    is reported failed (its charge kept), not refused as a whole, and not charged again."""
    from dpcore.distributed.batch import _charge, run_batch

    analyst = Requester()
    document = {"runs": [{"dataset": "clinic", "algorithm": ALTEXPM, "epsilon": 0.5}]}
    (run,) = check_plan(ledger, parse_plan(document), analyst)
    _charge(ledger, run)
    ledger.mark_failed(run.run_id, "KilledWorker: the worker died three times")
    (again,) = check_plan(ledger, parse_plan(document), analyst)
    assert (again.run_id, again.state) == (run.run_id, "failed")
    (outcome,) = run_batch(ledger, [again], None)  # nothing to mine: no cluster needed
    assert outcome.status == "failed" and "KilledWorker" in outcome.error
    assert [e.run_id for e in ledger.audit_log()] == [run.run_id]
    assert ledger.budget("clinic").spent_nano == run.cost_nano
