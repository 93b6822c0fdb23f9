"""dpcore.privacy.ledger.copying: a whole ledger into an empty one, or nothing at all."""

from __future__ import annotations

import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.ledger.copying import TABLES, copy_command, copy_ledger

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
    assert set(copied) == set(TABLES)
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
