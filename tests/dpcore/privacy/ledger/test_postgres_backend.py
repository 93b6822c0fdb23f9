"""dpcore.privacy.ledger.postgres_backend: URLs, passwords kept out of messages, ``?``
placeholders, rows by name, schema versions (the live tests use the session's server)."""

from __future__ import annotations

import psycopg
import pytest

from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger.postgres_backend import (
    SCHEMES,
    PgConnection,
    PostgresBackend,
    Row,
    is_postgres_url,
)
from dpcore.privacy.ledger.postgres_migrations import SCHEMA_VERSION


def test_only_postgres_schemes_are_postgres_urls():
    assert all(is_postgres_url(s + "h/db") for s in SCHEMES)
    for text in ("sqlite:x", "/tmp/postgresql://x", "mysql://h/db", "POSTGRESQL://h"):
        assert not is_postgres_url(text)


def test_the_password_never_shows():
    backend = PostgresBackend("postgresql://alice:s3cret@db.example:5432/ledger")
    assert "s3cret" not in backend.location and "s3cret" not in repr(backend)
    assert backend.location == "postgresql://alice:***@db.example:5432/ledger"
    assert PostgresBackend("postgresql://db/x").location == "postgresql://db/x"


class _Recorder:
    def __init__(self):
        self.calls = []

    def execute(self, sql, args):
        self.calls.append((sql, args))


def test_placeholders_become_psycopg_ones_and_percent_signs_stay_literal():
    raw = _Recorder()
    con = PgConnection(raw)
    con.execute("SELECT * FROM t WHERE a = ? AND b LIKE '5%' AND c = ?", [1, "x"])
    con.execute("SELECT '100%'")
    assert raw.calls == [("SELECT * FROM t WHERE a = %s AND b LIKE '5%%' AND c = %s", (1, "x")),
                         ("SELECT '100%'", None)]


def test_rows_read_by_name_and_position():
    row_type = type("Row", (Row,), {"__slots__": (), "_index": {"cap_nano": 0, "name": 1}})
    row = row_type((5, "d"))
    assert row["cap_nano"] == 5 and row[1] == "d" and row.keys() == ["cap_nano", "name"]
    with pytest.raises(KeyError):
        row["missing"]


def test_an_unreachable_server_is_a_data_error_without_the_password():
    backend = PostgresBackend("postgresql://u:hunter2@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(DataError, match="cannot connect") as info:
        backend.connect()
    assert "hunter2" not in str(info.value)


def test_schema_is_created_once_and_a_newer_one_refused(postgres_server):
    url = postgres_server.new_database()
    backend = PostgresBackend(url)
    assert backend.schema_version() == 0
    backend.ensure_schema()
    assert backend.schema_version() == SCHEMA_VERSION
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("UPDATE ledger_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(DataError, match="newer than this dpcore"):
        PostgresBackend(url).ensure_schema()


def test_a_unique_clash_is_a_parameter_error_and_rolls_back(postgres_server):
    backend = PostgresBackend(postgres_server.new_database())
    with backend.write() as con:
        con.execute("CREATE TABLE probe (x INTEGER PRIMARY KEY)")
        con.execute("INSERT INTO probe VALUES (?)", (1,))
    with pytest.raises(ParameterError, match="concurrent write got there first"), \
            backend.write() as con:
        con.execute("INSERT INTO probe VALUES (?)", (2,))
        con.execute("INSERT INTO probe VALUES (?)", (1,))
    with backend.read() as con:
        assert [r["x"] for r in con.execute("SELECT x FROM probe")] == [1]
