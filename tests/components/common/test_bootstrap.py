"""First-start bootstrap (components.common.bootstrap): every sample folder of every kind."""

from __future__ import annotations

import shutil

from components.common.bootstrap import register_sample_datasets
from dpcore.data.kinds import list_sample_folders, load_registered_data
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import content_digest
from dpcore.registry import DATASET_KINDS


def test_every_kind_of_sample_is_registered_confirmed_with_its_digest(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    report = register_sample_datasets(ledger, cap_epsilon=3.0)
    assert not report.problems
    records = {r.name: r for r in ledger._dataset_records()}
    assert {"clickstream", "house_power", "pima_like", "clinic"} <= set(records)
    assert {r.kind for r in records.values()} == set(DATASET_KINDS)
    assert records["clickstream"].kind == "sequences" and not records["clickstream"].public_demo
    assert records["house_power"].public_demo and records["pima_like"].kind == "table"
    for record in records.values():
        assert record.confirmed and ledger.budget(record.name).cap == 3.0
        data = load_registered_data(record.kind, record.source_path, record.schema)
        assert record.content_digest == content_digest(data)
    # two-view tables come first, so a picker's default stays a redescription dataset
    assert records[ledger._dataset_records()[0].name].kind == "two_view"
    again = register_sample_datasets(ledger)
    assert again.registered == [] and sorted(again.present) == sorted(records)


def test_a_broken_sample_folder_of_a_new_kind_is_reported_not_raised(tmp_path, monkeypatch):
    root = tmp_path / "sample_data"
    root.mkdir()
    folders = dict((f.name, f) for _, f in list_sample_folders())
    shutil.copytree(folders["house_power"], root / "house_power")
    shutil.copytree(folders["pima_like"], root / "pima_like")
    (root / "house_power" / "records.txt").write_text("L01 NOT_AN_ITEM\n", encoding="utf-8")
    monkeypatch.setattr("dpcore.data.kinds.sample_data_dir", lambda: root)
    ledger = Ledger(tmp_path / "l.sqlite")
    report = register_sample_datasets(ledger)
    assert report.registered == ["pima_like"]
    assert len(report.problems) == 1 and report.problems[0].startswith("house_power: ")
    assert "NOT_AN_ITEM" in report.problems[0]
    assert [r.name for r in ledger._dataset_records()] == ["pima_like"]
