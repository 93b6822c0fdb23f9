"""dpcore.privacy.ledger.sqlite_backend: connection settings, schema creation, versions."""

from __future__ import annotations

import sqlite3

import pytest

from dpcore.errors import DataError
from dpcore.privacy.ledger.migrations import SCHEMA_VERSION
from dpcore.privacy.ledger.sqlite_backend import SqliteBackend


def test_first_use_creates_folders_schema_and_wal(tmp_path):
    backend = SqliteBackend(tmp_path / "a" / "b" / "ledger.sqlite")
    assert backend.schema_version() == 0 or not backend.path.exists()
    backend.ensure_schema()
    assert backend.schema_version() == SCHEMA_VERSION
    con = backend.connect()
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert con.isolation_level is None
    finally:
        con.close()
    assert str(tmp_path) in backend.location and "ledger.sqlite" in repr(backend)


def test_a_failed_write_rolls_back(tmp_path):
    backend = SqliteBackend(tmp_path / "l.sqlite")
    with backend.write() as con:
        con.execute("CREATE TABLE probe (x INTEGER)")
    with pytest.raises(RuntimeError), backend.write() as con:
        con.execute("INSERT INTO probe VALUES (1)")
        raise RuntimeError("boom")
    with backend.read() as con:
        assert con.execute("SELECT COUNT(*) FROM probe").fetchone()[0] == 0


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(DataError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
        SqliteBackend(path).ensure_schema()
