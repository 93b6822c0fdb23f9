"""dpcore.privacy.ledger.migrations: one step per version, run in order, leaving the tables
and the append-only rules the ledger relies on."""

from __future__ import annotations

import sqlite3

import pytest

from dpcore.privacy.ledger.migrations import MIGRATIONS, SCHEMA_VERSION, migrate


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_schema_version_counts_the_migrations():
    assert SCHEMA_VERSION == len(MIGRATIONS) >= 4


def test_migrating_an_empty_database_creates_every_table(tmp_path):
    con = sqlite3.connect(tmp_path / "l.sqlite", isolation_level=None)
    migrate(con, 0)
    assert {"datasets", "budgets", "charges", "runs"} <= _tables(con)
    kinds = [r for r in con.execute("PRAGMA table_info(datasets)") if r[1] == "kind"]
    assert kinds and kinds[0][4] == "'two_view'"


def test_migrating_step_by_step_equals_migrating_at_once(tmp_path):
    at_once = sqlite3.connect(tmp_path / "a.sqlite", isolation_level=None)
    migrate(at_once, 0)
    stepwise = sqlite3.connect(tmp_path / "b.sqlite", isolation_level=None)
    for version in range(SCHEMA_VERSION):
        MIGRATIONS[version](stepwise)

    def sql(con):
        return sorted(r for r in con.execute("SELECT type, name, sql FROM sqlite_master"))
    assert sql(at_once) == sql(stepwise)
    migrate(stepwise, SCHEMA_VERSION)  # nothing left to do
    assert sql(at_once) == sql(stepwise)


def test_a_dataset_kind_never_changes(tmp_path):
    con = sqlite3.connect(tmp_path / "l.sqlite", isolation_level=None)
    migrate(con, 0)
    cols = [r[1] for r in con.execute("PRAGMA table_info(datasets)")]
    values = {"name": "d", "schema_json": "{}", "public_demo": 0, "confirmed": 0,
              "created_at": "now", "created_by": "owner", "kind": "sequences"}
    present = [c for c in cols if c in values]
    con.execute(f"INSERT INTO datasets ({', '.join(present)}) VALUES "
                f"({', '.join('?' * len(present))})", [values[c] for c in present])
    with pytest.raises(sqlite3.IntegrityError, match="kind never changes"):
        con.execute("UPDATE datasets SET kind = 'table' WHERE name = 'd'")
    with pytest.raises(sqlite3.IntegrityError):
        con.execute("UPDATE datasets SET kind = 'graph' WHERE name = 'd'")
