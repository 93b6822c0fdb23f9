"""dpcore.privacy.ledger.copying: a whole ledger into an empty one, or nothing at all."""

from __future__ import annotations

import json

import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.ledger.copying import TABLES, copy_command, copy_ledger


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    """These tests' tables are ≈ 100 KiB: store from 64 KiB (the default is 1 MiB; the
    behaviour is the same at any threshold)."""
    from dpcore.privacy.ledger import result_store

    monkeypatch.setattr(result_store, "THRESHOLD_BYTES", 64 * 1024)


SCHEMA = Schema(
    name="d",
    attributes=(Attribute("A", 0, "boolean"), Attribute("B", 1, "boolean")),
    views=(ViewSpec("l", "l.csv"), ViewSpec("r", "r.csv")),
    id_column="id",
)


def _filled(path) -> Ledger:
    led = Ledger(path)
    led.register_dataset("d", SCHEMA, "/data/d", 2.0, actor="owner", confirmed=True)
    led.create_sandbox("d", "d~sandbox", 0.5, actor="owner")
    led.charge("run-1", "d", "algo", [3 * 10**8, 2 * 10**8], {"k": 1}, actor="ana")
    led.store_result("run-1", '{"r": 1}', '{"diag": 1}')
    led.charge("run-2", "d", "algo", [10**8], {}, actor="ana")
    led.mark_failed("run-2", "boom")
    led.record_auth_event(actor="owner", entry="cli", outcome="success")
    return led


def test_everything_reads_the_same_after_a_copy(tmp_path):
    source = _filled(tmp_path / "a.sqlite")
    target = Ledger(tmp_path / "b.sqlite")
    copied = copy_ledger(source, target)
    assert set(copied) == set(TABLES) | {"result_tables"} and copied["result_tables"] == 0
    assert copied["datasets"] == 2 and copied["charges"] == 2 and copied["runs"] == 2
    assert target.budget("d") == source.budget("d")
    assert target.list_runs("d") == source.list_runs("d")
    assert target.get_result("run-1") == source.get_result("run-1")
    assert target.audit_log() == source.audit_log()
    assert target._dataset_record("d~sandbox") == source._dataset_record("d~sandbox")
    # identities continue after the copied ids: a new charge gets a fresh id
    new = target.charge("run-3", "d", "algo", [10**8], {}, actor="ana")
    assert new.id > max(e.charge_id for e in source.audit_log())


def test_a_non_empty_target_or_the_same_ledger_is_refused(tmp_path):
    source = _filled(tmp_path / "a.sqlite")
    target = Ledger(tmp_path / "b.sqlite")
    target.record_auth_event(actor="x", entry="cli", outcome="success")
    with pytest.raises(ParameterError, match="not empty .*1 auth_events.*nothing was copied"):
        copy_ledger(source, target)
    assert target._dataset_records() == []
    with pytest.raises(ParameterError, match="same ledger"):
        copy_ledger(source, Ledger(tmp_path / "a.sqlite"))


def test_the_command_prints_what_it_copied(tmp_path, capsys):
    _filled(tmp_path / "a.sqlite")
    assert copy_command(f"sqlite:{tmp_path / 'a.sqlite'}", str(tmp_path / "c.sqlite")) == 0
    out = capsys.readouterr().out
    assert "c.sqlite" in out and "2" in out
    assert Ledger(tmp_path / "c.sqlite").budget("d").spent_nano == 6 * 10**8


# ------------------------------------------------------------------ stored result tables

#: A release with a table large enough to leave the ledger row (≈ 150 KiB of JSON).
BIG = {"run_id": "big", "dataset": "d",
       "synthetic": {"columns": ["a", "b"], "rows": [[i, i / 7] for i in range(6000)]}}


def _with_big_result(location, **kwargs) -> Ledger:
    led = _filled(location)
    led.charge("big", "d", "algo", [10**8], {}, actor="ana")
    led.store_result("big", json.dumps(BIG))
    return led


def _files(led: Ledger) -> list[str]:
    return sorted(p.name for p in led.results_store.folder.glob("*.parquet"))


def test_a_copy_carries_the_stored_tables_and_checks_them(tmp_path):
    source = _with_big_result(tmp_path / "a.sqlite")
    assert len(_files(source)) == 1
    copied = copy_ledger(source, Ledger(tmp_path / "b.sqlite"))
    target = Ledger(tmp_path / "b.sqlite")
    assert copied["result_tables"] == 1 and _files(target) == _files(source)
    assert json.loads(target.get_result("big")[0]) == BIG
    # a damaged file in the source is refused by name, and nothing is copied
    (path,) = source.results_store.folder.glob("*.parquet")
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    empty = Ledger(tmp_path / "c.sqlite")
    with pytest.raises(DataError, match=f"result of run 'big'.*{path.name}.*no longer matches"):
        copy_ledger(source, empty)
    assert empty._dataset_records() == [] and _files(empty) == []


def test_sqlite_to_postgresql_and_back_carries_the_stored_tables(tmp_path, postgres_server,
                                                                 capsys):
    """Through the command: SQLite → PostgreSQL (its store: a directory of its own, given by
    --to-results) → a new SQLite file; the table reads back identical at every step."""
    source = _with_big_result(tmp_path / "a.sqlite")
    url = postgres_server.new_database()
    shared = tmp_path / "pg-results"
    shared.mkdir()
    assert copy_command(str(source.path), url, target_results=str(shared)) == 0
    assert "(with 1 stored result tables)" in capsys.readouterr().out
    middle = Ledger(url, results_dir=shared)
    assert sorted(p.name for p in shared.iterdir()) == _files(source)
    assert json.loads(middle.get_result("big")[0]) == BIG
    back = tmp_path / "back.sqlite"
    assert copy_command(url, f"sqlite:{back}", source_results=str(shared)) == 0
    assert json.loads(Ledger(back).get_result("big")[0]) == BIG
    assert _files(Ledger(back)) == _files(source)
    with pytest.raises(ParameterError, match="results store is .*for PostgreSQL ledgers"):
        copy_command(str(back), str(tmp_path / "x.sqlite"), source_results=str(shared))
