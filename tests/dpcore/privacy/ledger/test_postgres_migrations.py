"""dpcore.privacy.ledger.postgres_migrations: the same tables and columns as the SQLite
schema, version for version (live tests on the session's PostgreSQL server)."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from dpcore.privacy.ledger import migrations as sqlite_migrations
from dpcore.privacy.ledger import postgres_migrations
from dpcore.privacy.ledger.postgres_backend import PgConnection


def test_both_dialects_have_the_same_number_of_versions():
    assert postgres_migrations.SCHEMA_VERSION == sqlite_migrations.SCHEMA_VERSION
    assert len(postgres_migrations.MIGRATIONS) == postgres_migrations.SCHEMA_VERSION


def _sqlite_columns(tmp_path, version: int) -> dict[str, list[str]]:
    con = sqlite3.connect(tmp_path / f"v{version}.sqlite", isolation_level=None)
    for step in range(version):
        sqlite_migrations.MIGRATIONS[step](con)
    tables = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    return {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")] for t in sorted(tables)}


@pytest.mark.parametrize("version", range(1, postgres_migrations.SCHEMA_VERSION + 1))
def test_each_version_has_sqlites_tables_and_columns(postgres_server, tmp_path, version):
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as raw:
        con = PgConnection(raw)
        for step in range(version):
            postgres_migrations.MIGRATIONS[step](con)
        rows = raw.execute("SELECT table_name, column_name FROM information_schema.columns "
                           "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
                           ).fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    assert columns == _sqlite_columns(tmp_path, version)


@pytest.mark.parametrize("table", ["charges", "budgets", "auth_events"])
def test_truncating_an_append_only_table_is_refused(postgres_server, table):
    """TRUNCATE skips row triggers, so the schema refuses it by a statement trigger."""
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as raw:
        con = PgConnection(raw)
        for step in postgres_migrations.MIGRATIONS:
            step(con)
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation):
            raw.execute(f"TRUNCATE {table} CASCADE")
