"""Ledger: exact integer budgets, idempotent append-only charges, atomic errors, results.

Every test that takes ``db`` or ``ledger`` runs on both backends (``ledger_location`` in
tests/conftest.py): a SQLite file and a fresh database of the session's PostgreSQL server.
Raw checks go through the driver directly, not through dpcore.
"""

from __future__ import annotations

import json
import math
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

import psycopg
import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import BudgetExceededError, DataError, ParameterError
from dpcore.privacy.ledger import SCHEMA_VERSION, BudgetStatus, Ledger, postgres_migrations
from dpcore.privacy.ledger import migrations as sqlite_migrations
from dpcore.privacy.ledger.postgres_backend import PgConnection
from dpcore.privacy.units import NANO, epsilon_to_nano, split_evenly
from dpcore.redescriptions.params import TreeParams, plan_budget, read_params
from dpcore.redescriptions.results import (
    Condition,
    ExtractionRecord,
    Literal,
    OwnerDiagnostics,
    Query,
    Redescription,
    RunResult,
    TreeNode,
    TreeRecord,
)

SCHEMA = Schema(
    name="clinic",
    attributes=(Attribute("DX_CHF", 0, "boolean"),
                Attribute("sex", 0, "categorical", categories=("F", "M")),
                Attribute("LAB_BNP", 1, "numeric", domain=(0.0, 5000.0), unit="pg/mL")),
    views=(ViewSpec("diagnoses", "diagnoses.csv"), ViewSpec("labs", "labs.csv")),
    id_column="patient_id",
)


#: What either driver raises when a trigger, UNIQUE or CHECK refuses a write.
INTEGRITY = (sqlite3.IntegrityError, psycopg.IntegrityError)
DB_ERROR = (sqlite3.DatabaseError, psycopg.Error)


def on_postgres(db) -> bool:
    """A PostgreSQL URL (str) rather than a SQLite file (Path)."""
    return isinstance(db, str)


def raw(db):
    """A raw autocommit driver connection to the ledger's database (no ledger code), whose
    ``execute`` takes ``?`` placeholders on both backends."""
    if on_postgres(db):
        return PgConnection(psycopg.connect(db, autocommit=True))
    return sqlite3.connect(db, isolation_level=None)


def migration(db, version: int):
    """The backend's migration that brings a database to ``version``."""
    module = postgres_migrations if on_postgres(db) else sqlite_migrations
    return module.MIGRATIONS[version - 1]


def set_version(con, db, version: int) -> None:
    """Write the stored schema version, as the backend keeps it."""
    if on_postgres(db):
        con.execute("CREATE TABLE IF NOT EXISTS ledger_schema (version INTEGER NOT NULL)")
        con.execute("DELETE FROM ledger_schema")
        con.execute("INSERT INTO ledger_schema (version) VALUES (?)", (version,))
    else:
        con.execute(f"PRAGMA user_version = {version:d}")


def stored_version(db) -> int:
    con = raw(db)
    try:
        if on_postgres(db):
            return con.execute("SELECT version FROM ledger_schema").fetchone()[0]
        return con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()


def dump(db) -> dict:
    """Every table's rows (and the schema version) with a raw connection."""
    con = raw(db)
    try:
        if on_postgres(db):
            sql = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        else:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        tables = [r[0] for r in con.execute(sql)]
        out = {t: [tuple(r) for r in con.execute(f'SELECT * FROM "{t}" ORDER BY 1')]
               for t in tables}
    finally:
        con.close()
    out["version"] = stored_version(db)
    return out


@pytest.fixture
def db(ledger_location) -> Path | str:
    """A new ledger location: a SQLite file (Path) or a PostgreSQL database URL (str)."""
    return ledger_location


@pytest.fixture
def ledger(db) -> Ledger:
    led = Ledger(db)
    led.register_dataset("clinic", SCHEMA, "/data/clinic", 1.0, actor="owner", confirmed=True)
    return led


# ------------------------------------------------------------------ location and schema version

def test_path_from_env_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("DPRM_LEDGER", str(tmp_path / "env" / "l.sqlite"))
    assert Ledger().path == (tmp_path / "env" / "l.sqlite").resolve()
    monkeypatch.delenv("DPRM_LEDGER")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    led = Ledger()
    assert led.path == (tmp_path / "home/.local/share/dprm/ledger.sqlite").resolve()
    assert led._dataset_records() == []          # parent folders created on first use
    assert led.path.exists()
    with pytest.raises(ParameterError):
        Ledger(":memory:")


def test_the_location_picks_the_backend(tmp_path, monkeypatch):
    """A postgresql:// URL selects PostgreSQL (nothing connects until first use); a path or
    sqlite:PATH selects SQLite; the password never shows in the ledger's repr."""
    url = "postgresql://dprm:s3cret@db.example:5432/ledger"
    monkeypatch.setenv("DPRM_LEDGER", url)
    led = Ledger()
    assert led.backend == "postgresql" and led.path is None
    assert "s3cret" not in repr(led) and "s3cret" not in led.location
    assert led.location == "postgresql://dprm:***@db.example:5432/ledger"
    assert Ledger.open("postgres://h/d").backend == "postgresql"
    file = Ledger.open(f"sqlite:{tmp_path / 'a.sqlite'}")
    assert file.backend == "sqlite" and file.path == (tmp_path / "a.sqlite").resolve()
    assert file.location == f"sqlite:{file.path}" and file.folder == tmp_path.resolve()
    with pytest.raises(ParameterError, match="postgresql://"):
        Ledger("sqlite:")
    # a server that is not there: a clear DataError naming the ledger, never the password
    gone = Ledger("postgresql://dprm:s3cret@127.0.0.1:1/ledger")
    with pytest.raises(DataError, match=r"cannot connect to the PostgreSQL ledger") as err:
        gone._dataset_records()
    assert "s3cret" not in str(err.value)


def test_migration_v1_to_v2_keeps_rows_and_hides_old_faithful_private_runs(db):
    """A version-1 ledger opens as version 2: charges kept, faithful runs on private data
    become owner-only, everything else stays readable by everyone, triggers still hold."""
    from dpcore.privacy.ledger import _schema_to_json

    con = raw(db)
    migration(db, 1)(con)
    set_version(con, db, 1)
    demo = replace(SCHEMA, name="demo", public_demo=True)
    for name, schema, flag in (("clinic", SCHEMA, 0), ("demo", demo, 1)):
        con.execute("INSERT INTO datasets (name, schema_json, source_path, public_demo, "
                    "confirmed, sandbox_of, created_by, created_at) VALUES (?, ?, NULL, ?, 1, "
                    "NULL, 'owner', '2026-01-01')", (name, _schema_to_json(schema), flag))
        con.execute("INSERT INTO budgets (dataset, cap_nano, actor, created_at) "
                    "VALUES (?, ?, 'owner', '2026-01-01')", (name, NANO))
    for run_id, dataset, mode in (("f-priv", "clinic", "faithful"), ("s-priv", "clinic", "strict"),
                                  ("f-demo", "demo", "faithful")):
        params = json.dumps({"mode": mode})
        con.execute("INSERT INTO charges (run_id, dataset, algorithm, epsilon_nano, parts_json, "
                    "params_json, actor, created_at) VALUES (?, ?, 'altexpm', 10, '[10]', ?, "
                    "'a', '2026-01-01')", (run_id, dataset, params))
        con.execute("INSERT INTO runs (run_id, dataset, algorithm, status, params_json, error, "
                    "created_at, finished_at) VALUES (?, ?, 'altexpm', 'done', ?, NULL, "
                    "'2026-01-01', '2026-01-01')", (run_id, dataset, params))
    con.close()
    led = Ledger(db)
    audiences = {r.run_id: r.audience for r in led.list_runs("clinic") + led.list_runs("demo")}
    assert audiences == {"f-priv": "owner", "s-priv": "everyone", "f-demo": "everyone"}
    assert led.budget("clinic").spent_nano == 20
    assert led._dataset_record("clinic").content_digest is None
    assert stored_version(db) == SCHEMA_VERSION
    con = raw(db)
    with pytest.raises(DB_ERROR, match="only changes status once"):
        con.execute("UPDATE runs SET audience = 'everyone' WHERE run_id = 'f-priv'")
    con.close()


def test_migration_sets_user_version_and_reopen_is_noop(ledger, db):
    assert stored_version(db) == SCHEMA_VERSION == 8
    if not on_postgres(db):
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        con.close()
    before = dump(db)
    again = Ledger(db)
    assert again.budget("clinic").cap_nano == NANO
    assert dump(db) == before


def _v2_ledger(db) -> None:
    """A version-2 ledger as dpcore wrote it before dataset kinds: a dataset, a charged
    and finished run with a stored redescription result (the JSON of that time)."""
    from dpcore.privacy.ledger import _schema_to_json

    con = raw(db)
    migration(db, 1)(con)
    migration(db, 2)(con)
    set_version(con, db, 2)
    con.execute("INSERT INTO datasets (name, schema_json, source_path, public_demo, confirmed, "
                "sandbox_of, created_by, created_at, content_digest) VALUES ('clinic', ?, "
                "'/data/clinic', 0, 1, NULL, 'owner', '2026-01-01', NULL)",
                (_schema_to_json(SCHEMA),))
    con.execute("INSERT INTO budgets (dataset, cap_nano, actor, created_at) "
                "VALUES ('clinic', ?, 'owner', '2026-01-01')", (NANO,))
    con.execute("INSERT INTO charges (run_id, dataset, algorithm, epsilon_nano, parts_json, "
                "params_json, actor, created_at) VALUES ('old-run', 'clinic', 'altexpm', 100, "
                "'[100]', '{\"mode\": \"strict\"}', 'a', '2026-01-01')")
    con.execute("INSERT INTO runs (run_id, dataset, algorithm, status, params_json, error, "
                "created_at, finished_at, audience) VALUES ('old-run', 'clinic', 'altexpm', "
                "'charged', '{\"mode\": \"strict\"}', NULL, '2026-01-01', NULL, 'everyone')")
    old = RunResult(run_id="old-run", dataset="clinic", algorithm="altexpm", mode="strict",
                    params={}, version="0.9", created_at="2026-01-01", epsilon_nano=100,
                    redescriptions=[], trees=[], extractions=[], mechanism_calls=[])
    con.execute("INSERT INTO results (run_id, result_json, diagnostics_json, created_at) "
                "VALUES ('old-run', ?, NULL, '2026-01-01')", (old.to_json(),))
    con.execute("UPDATE runs SET status = 'done', finished_at = '2026-01-01' "
                "WHERE run_id = 'old-run'")
    con.close()


def test_migration_v2_to_v3_reads_a_v2_ledger_as_two_view_datasets(db):
    """A version-2 ledger opens as version 3: its datasets are two-view, their schema reads,
    its charges and stored results are kept, and a kind can never be changed afterwards."""
    _v2_ledger(db)
    led = Ledger(db)
    record = led._dataset_record("clinic")
    assert record.kind == "two_view" and record.schema == SCHEMA and record.confirmed
    assert led.budget("clinic").spent_nano == 100
    assert [r.run_id for r in led.list_runs("clinic")] == ["old-run"]
    assert json.loads(led.get_result("old-run")[0])["algorithm"] == "altexpm"
    assert [d.name for d in led._dataset_records(kind="two_view")] == ["clinic"]
    assert led._dataset_records(kind="sequences") == []
    assert stored_version(db) == SCHEMA_VERSION == 8
    con = raw(db)
    with pytest.raises(DB_ERROR, match="kind never changes"):
        con.execute("UPDATE datasets SET kind = 'table' WHERE name = 'clinic'")
    with pytest.raises(INTEGRITY):
        con.execute("INSERT INTO datasets (name, schema_json, public_demo, confirmed, "
                    "created_by, created_at, kind) VALUES ('x', '{}', 0, 0, 'o', 't', 'graph')")
    con.close()


def test_every_dataset_kind_registers_and_reads_back(db):
    from dpcore.data.sequences.schema import SequenceSchema
    from dpcore.data.table.schema import Feature, TableSchema
    from dpcore.registry import DATASET_KINDS

    seq = SequenceSchema(name="clicks", alphabet=("home", "news", "sports"), l1=5,
                         files={"format": "lines", "records": "records.txt"})
    table = TableSchema(name="pima", label="outcome", classes=(0, 1),
                        features=(Feature("age", "numeric", bounds=(18.0, 90.0)),
                                  Feature("sex", "categorical", levels=("F", "M"))),
                        file="pima.csv", public_demo=True)
    led = Ledger(db)
    for name, schema in (("clinic", SCHEMA), ("clicks", seq), ("pima", table)):
        led.register_dataset(name, schema, f"/data/{name}", 2.0, actor="owner")
    records = {r.name: r for r in led._dataset_records()}
    assert {n: r.kind for n, r in records.items()} == dict(zip(("clicks", "clinic", "pima"),
                                                               ("sequences", "two_view",
                                                                "table")))
    assert set(DATASET_KINDS) == {r.kind for r in records.values()}
    assert records["clicks"].schema == seq and records["pima"].schema == table
    assert records["pima"].public_demo is True and records["clicks"].public_demo is False
    assert [r.name for r in led._dataset_records(kind="table")] == ["pima"]
    sandbox = led.create_sandbox("clicks", "clicks~sandbox", 1.0, actor="owner")
    assert sandbox.kind == "sequences" and sandbox.schema == seq
    # listed by kind (registry order), then by name
    assert [r.name for r in led._dataset_records()] == ["clinic", "clicks", "clicks~sandbox",
                                                     "pima"]
    # a schema of another kind never replaces a dataset's schema; nothing changes
    before = dump(db)
    with pytest.raises(DataError, match="sequence dataset.*two-view table"):
        led.confirm_schema("clicks", SCHEMA, actor="owner")
    assert dump(db) == before
    assert led.confirm_schema("clicks", seq, actor="owner").confirmed
    with pytest.raises(ParameterError, match="kind must be one of"):
        led._dataset_records(kind="graph")


def test_a_schema_of_no_known_type_registers_nothing(db):
    led = Ledger(db)
    with pytest.raises(DataError, match="SequenceSchema"):
        led.register_dataset("odd", {"name": "odd"}, None, 1.0, actor="owner")
    assert led._dataset_records() == []


def test_newer_database_is_refused(db):
    Ledger(db)._dataset_records()
    con = raw(db)
    set_version(con, db, SCHEMA_VERSION + 1)
    con.close()
    with pytest.raises(DataError, match="newer"):
        Ledger(db)._dataset_records()


# ------------------------------------------------------------------ datasets

def test_register_and_read_dataset(ledger):
    rec = ledger._dataset_record("clinic")
    assert rec.schema == SCHEMA
    assert rec.source_path == "/data/clinic"
    assert rec.confirmed and not rec.public_demo and not rec.is_sandbox
    assert [d.name for d in ledger._dataset_records()] == ["clinic"]
    b = ledger.budget("clinic")
    assert b == BudgetStatus(NANO, 0, NANO)
    assert (b.cap, b.spent, b.remaining) == (1.0, 0.0, 1.0)


def test_confirm_schema(db):
    led = Ledger(db)
    led.register_dataset("d", SCHEMA, None, 2.0, actor="owner")
    assert not led._dataset_record("d").confirmed
    with pytest.raises(ParameterError, match="not confirmed"):
        led.charge("r", "d", "altexpm", [1], {})
    assert led.budget("d").spent_nano == 0
    fixed = replace(SCHEMA, public_demo=True, description="checked")
    rec = led.confirm_schema("d", fixed, actor="owner")
    assert rec.confirmed and rec.public_demo and rec.schema == fixed
    led.charge("r", "d", "altexpm", [1], {})
    assert led.budget("d").spent_nano == 1


@pytest.mark.parametrize("name", ["", "   ", " lead", "trail ", "bad\nname", "x" * 129, None, 3])
def test_bad_dataset_name_changes_nothing(ledger, db, name):
    before = dump(db)
    with pytest.raises(ParameterError):
        ledger.register_dataset(name, SCHEMA, None, 1.0, actor="owner")
    assert dump(db) == before


@pytest.mark.parametrize("cap", [0, -1.0, float("nan"), float("inf"), 1e-12, "abc", True])
def test_bad_cap_changes_nothing(ledger, db, cap):
    before = dump(db)
    with pytest.raises(ParameterError):
        ledger.register_dataset("other", SCHEMA, None, cap, actor="owner")
    with pytest.raises(ParameterError):
        ledger.set_cap("clinic", cap, actor="owner")
    with pytest.raises(ParameterError):
        ledger.create_sandbox("clinic", "sb", cap, actor="owner")
    assert dump(db) == before


def test_duplicate_and_bad_schema_change_nothing(ledger, db):
    before = dump(db)
    with pytest.raises(ParameterError, match="already exists"):
        ledger.register_dataset("clinic", SCHEMA, None, 5.0, actor="owner")
    with pytest.raises(DataError):
        ledger.register_dataset("x", {"name": "x"}, None, 1.0, actor="owner")
    bad = replace(SCHEMA, attributes=(Attribute("v", 1, "numeric", domain=(0.0, math.nan)),))
    with pytest.raises(DataError, match="JSON"):
        ledger.register_dataset("x", bad, None, 1.0, actor="owner")
    with pytest.raises(ParameterError):
        ledger.register_dataset("x", SCHEMA, None, 1.0, actor="")
    assert dump(db) == before


def test_cap_rounds_down(db):
    led = Ledger(db)
    led.register_dataset("d", SCHEMA, None, 0.1234567899, actor="o", confirmed=True)
    assert led.budget("d").cap_nano == 123456789


# ------------------------------------------------------------------ caps

def test_set_cap_raise_and_lower_but_never_below_spent(ledger, db):
    ledger.charge("r1", "clinic", "altexpm", [600_000_000], {})
    assert ledger.set_cap("clinic", 2.0, actor="owner").remaining_nano == 1_400_000_000
    assert ledger.set_cap("clinic", 0.6, actor="owner").remaining_nano == 0
    before = dump(db)
    with pytest.raises(ParameterError, match=r"0\.5.*0\.6") as err:
        ledger.set_cap("clinic", 0.5, actor="owner")
    assert "already spent" in str(err.value)
    assert dump(db) == before
    con = raw(db)
    caps = [r[0] for r in con.execute("SELECT cap_nano FROM budgets ORDER BY id")]
    con.close()
    assert caps == [NANO, 2 * NANO, 600_000_000]       # history kept


def test_sandbox_budget_is_independent(ledger):
    ledger.charge("real", "clinic", "altexpm", [250_000_000], {})
    sb = ledger.create_sandbox("clinic", "clinic~sandbox", 3.0, actor="owner")
    assert sb.sandbox_of == "clinic" and sb.is_sandbox
    assert sb.schema == SCHEMA and sb.source_path == "/data/clinic" and sb.confirmed
    for i, eps in enumerate((0.01, 0.1, 1.0)):
        ledger.charge(f"sb{i}", "clinic~sandbox", "altexpm", [epsilon_to_nano(eps)], {},
                      actor="owner")
    assert ledger.budget("clinic~sandbox").spent_nano == 1_110_000_000
    assert ledger.budget("clinic") == BudgetStatus(NANO, 250_000_000, 750_000_000)
    with pytest.raises(BudgetExceededError):
        ledger.charge("sb-big", "clinic~sandbox", "altexpm", [2 * NANO], {})
    assert ledger.budget("clinic").spent_nano == 250_000_000
    assert [d.name for d in ledger._dataset_records(include_sandboxes=False)] == ["clinic"]
    assert len(ledger._dataset_records()) == 2
    with pytest.raises(ParameterError, match="already exists"):
        ledger.create_sandbox("clinic", "clinic", 1.0, actor="owner")
    with pytest.raises(ParameterError, match="unknown dataset"):
        ledger.create_sandbox("nope", "nope2", 1.0, actor="owner")


# ------------------------------------------------------------------ charges

def test_charge_is_idempotent_per_run_id(ledger, db):
    first = ledger.charge("run-1", "clinic", "altexpm", [100, 200], {"epsilon": 3e-7})
    assert not first.replayed and first.epsilon_nano == 300 and first.parts_nano == (100, 200)
    again = ledger.charge("run-1", "clinic", "altexpm", [100, 200], {"epsilon": 3e-7})
    assert again.replayed and again.id == first.id
    assert replace(again, replayed=False) == first
    assert ledger.budget("clinic").spent_nano == 300
    assert len(ledger.audit_log()) == 1
    before = dump(db)
    with pytest.raises(ParameterError, match="already charged"):
        ledger.charge("run-1", "clinic", "altexpm", [301], {})
    assert dump(db) == before


def test_charges_are_append_only(ledger, db):
    ledger.charge("run-1", "clinic", "altexpm", [5], {})
    ledger.record_auth_event(actor="owner", entry="app", outcome="success")
    con = raw(db)
    try:
        with pytest.raises(INTEGRITY, match="append-only"):
            con.execute("UPDATE charges SET epsilon_nano = 1")
        with pytest.raises(INTEGRITY, match="append-only"):
            con.execute("DELETE FROM charges")
        with pytest.raises(INTEGRITY, match="append-only"):
            con.execute("DELETE FROM budgets")
        with pytest.raises(INTEGRITY):
            con.execute("DELETE FROM runs")
        with pytest.raises(INTEGRITY, match="append-only"):
            con.execute("DELETE FROM auth_events")
        if on_postgres(db):                           # TRUNCATE skips row triggers
            for table in ("charges", "budgets", "runs", "auth_events"):
                with pytest.raises(INTEGRITY):
                    con.execute(f"TRUNCATE {table} CASCADE")
        with pytest.raises(INTEGRITY):   # a second charge of the same run id
            con.execute("INSERT INTO charges (run_id, dataset, algorithm, epsilon_nano, "
                        "parts_json, params_json, actor, created_at) "
                        "SELECT run_id, dataset, algorithm, 1, '[1]', '{}', actor, created_at "
                        "FROM charges")
    finally:
        con.close()
    assert ledger.budget("clinic").spent_nano == 5


def test_exact_integer_ninths():
    ninths = split_evenly(NANO, 9)
    assert sum(ninths) == NANO
    assert sum([1 / 9] * 9) > 1.0            # what floats would have done


def test_nine_ninths_fill_the_cap_exactly(ledger):
    for i, part in enumerate(split_evenly(NANO, 9)):
        ledger.charge(f"ninth-{i}", "clinic", "altexpm", [part], {})
    assert ledger.budget("clinic") == BudgetStatus(NANO, NANO, 0)
    with pytest.raises(BudgetExceededError) as err:
        ledger.charge("tenth", "clinic", "altexpm", [1], {})
    assert err.value.remaining == 0.0 and err.value.requested == 1e-9
    assert len(ledger.list_runs("clinic")) == 9


@pytest.mark.parametrize("params", [
    TreeParams(algorithm="mcmctreepair", epsilon=1 / 3, omega=0.1, in_tr=7),
    TreeParams(algorithm="mcmctreepair", epsilon=0.7, omega=1 / 3, in_tr=3),
    TreeParams(algorithm="altexpm", epsilon=1 / 9, in_tr=4, rm_iter=2),
])
def test_plan_budget_parts_sum_to_charge(ledger, params):
    parts = [s.epsilon_nano for s in plan_budget(params)]
    rec = ledger.charge("plan", "clinic", params.algorithm, parts, params.to_dict())
    assert rec.epsilon_nano == sum(rec.parts_nano) == epsilon_to_nano(params.epsilon)
    assert list(rec.parts_nano) == parts
    entry = ledger.audit_log("clinic")[0]
    assert sum(entry.parts_nano) == entry.epsilon_nano == ledger.budget("clinic").spent_nano
    assert read_params(entry.params) == params


def test_budget_exceeded_writes_nothing(ledger, db):
    ledger.charge("a", "clinic", "altexpm", [700_000_000], {})
    before = dump(db)
    with pytest.raises(BudgetExceededError) as err:
        ledger.charge("b", "clinic", "altexpm", [200_000_000, 100_000_001], {})
    assert err.value.requested == pytest.approx(0.300000001)
    assert err.value.remaining == pytest.approx(0.3)
    assert "nothing was charged" in str(err.value)
    assert dump(db) == before


@pytest.mark.parametrize("parts", [[], [0], [-5], [1.5], [0.1], [True], [float("nan")],
                                   "12", 7, None, [2**62]])
def test_bad_parts_change_nothing(ledger, db, parts):
    before = dump(db)
    with pytest.raises(ParameterError):
        ledger.charge("r", "clinic", "altexpm", parts, {})
    assert dump(db) == before


def test_bad_charge_inputs_change_nothing(ledger, db):
    before = dump(db)
    with pytest.raises(ParameterError, match="unknown dataset"):
        ledger.charge("r", "nope", "altexpm", [1], {})
    with pytest.raises(ParameterError):
        ledger.charge("", "clinic", "altexpm", [1], {})
    with pytest.raises(ParameterError):
        ledger.charge("r", "clinic", "altexpm", [1], {"epsilon": float("nan")})
    with pytest.raises(ParameterError):
        ledger.charge("r", "clinic", "altexpm", [1], {"x": object()})
    with pytest.raises(ParameterError):
        ledger.charge("r", "clinic", "altexpm", [1], [("epsilon", 1)])
    with pytest.raises(ParameterError):
        ledger.budget("nope")
    with pytest.raises(ParameterError):
        epsilon_to_nano(float("nan"))
    with pytest.raises(ParameterError):
        epsilon_to_nano(0)
    assert dump(db) == before


def test_threads_share_a_ledger_but_not_connections(ledger):
    def spend(i):
        try:
            ledger.charge(f"t{i}", "clinic", "altexpm", [150_000_000], {})
            return True
        except BudgetExceededError:
            return False

    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(spend, range(24)))
    assert sum(won) == 6
    assert ledger.budget("clinic").spent_nano == 900_000_000


# ------------------------------------------------------------------ runs and results

def make_result(run_id: str, epsilon_nano: int) -> RunResult:
    """A minimal but complete RunResult built by hand."""
    left_leaf = (Condition("DX_CHF", "is", True),)
    tree = TreeRecord(
        id=0, view=0, trial=0, step=0,
        nodes=(TreeNode(0, -1, 0, "DX_CHF", "boolean", None, (1, 2), None),
               TreeNode(1, 0, 1, None, None, None, (), Condition("DX_CHF", "is", True), 0),
               TreeNode(2, 0, 1, None, None, None, (), Condition("DX_CHF", "is", False), 1)),
        leaf_conditions=(left_leaf, (Condition("DX_CHF", "is", False),)))
    rtree = TreeRecord(
        id=1, view=1, trial=0, step=0,
        nodes=(TreeNode(0, -1, 0, "LAB_BNP", "numeric", 400.0, (1, 2), None),
               TreeNode(1, 0, 1, None, None, None, (), Condition("LAB_BNP", "<=", 400.0), 0),
               TreeNode(2, 0, 1, None, None, None, (), Condition("LAB_BNP", ">", 400.0), 1)),
        leaf_conditions=((Condition("LAB_BNP", "<=", 400.0),),
                         (Condition("LAB_BNP", ">", 400.0),)))
    red = Redescription(
        id=0,
        left=Query(0, 0, (Literal(0),), (0,), "[DX_CHF]"),
        right=Query(1, 1, (Literal(1),), (1,), "[LAB_BNP > 400]"),
        support_left=41.5, support_right=39.25, support_both=30.0, jaccard=0.59,
        pvalue=1e-6, trial=0, step=0, extraction=0)
    ext = ExtractionRecord(id=0, left_tree=0, right_tree=1, trial=0, step=0,
                           noisy_table=((8.5, 30.0), (50.25, 11.0)),
                           noisy_left=(38.5, 61.25), noisy_right=(58.75, 41.0), noisy_n=99.75)
    return RunResult(
        run_id=run_id, dataset="clinic", algorithm="mcmctreepair", mode="strict",
        params=TreeParams().to_dict(), version="0.1.0",
        created_at="2025-01-01T00:00:00+00:00", epsilon_nano=epsilon_nano,
        redescriptions=[red], trees=[tree, rtree], extractions=[ext],
        mechanism_calls=[{"mechanism": "mcmc", "label": "trial 0 / tree pair",
                          "epsilon_nano": epsilon_nano // 2, "sensitivity": 1.0},
                         {"mechanism": "discrete_laplace", "label": "trial 0 / counts",
                          "epsilon_nano": epsilon_nano - epsilon_nano // 2,
                          "sensitivity": 1.0}],
        seed=7, diagnostics=OwnerDiagnostics({"trial 0 / tree pair": [1.0, 2.5, 3.0]}))


def test_store_then_get_result_round_trip(ledger):
    rec = ledger.charge("run-r", "clinic", "mcmctreepair", [100_000_000, 100_000_000], {})
    assert ledger.get_run("run-r").status == "charged"
    assert ledger.get_result("run-r") is None
    result = make_result("run-r", rec.epsilon_nano)
    diag = json.dumps(asdict(result.diagnostics))
    ledger.store_result("run-r", result.to_json(), diag)
    run = ledger.get_run("run-r")
    assert run.status == "done" and run.finished_at is not None and run.error is None
    stored, stored_diag = ledger.get_result("run-r")
    back = RunResult.from_json(stored)
    assert back.to_dict() == result.to_dict()
    assert back.redescriptions[0].text == "[DX_CHF]  ⇔  [LAB_BNP > 400]"
    assert "diagnostics" not in json.loads(stored)
    assert OwnerDiagnostics(**json.loads(stored_diag)) == result.diagnostics
    ledger.store_result("run-r", result.to_json(), diag)          # identical again: no-op
    with pytest.raises(ParameterError, match="already has"):
        ledger.store_result("run-r", result.to_json(), None)
    with pytest.raises(ParameterError, match="done"):
        ledger.mark_failed("run-r", "late")


def test_store_result_guards(ledger, db):
    ledger.charge("run-g", "clinic", "mcmctreepair", [100], {})
    before = dump(db)
    good = make_result("run-g", 100)
    with pytest.raises(ParameterError, match="unknown run"):
        ledger.store_result("nope", good.to_json())
    with pytest.raises(ParameterError, match="diagnostics"):
        ledger.store_result("run-g", good.to_json(include_diagnostics=True))
    with pytest.raises(ParameterError, match="run_id"):
        ledger.store_result("run-g", make_result("other", 100).to_json())
    with pytest.raises(ParameterError, match="charged only"):
        ledger.store_result("run-g", make_result("run-g", 101).to_json())
    with pytest.raises(ParameterError, match="JSON"):
        ledger.store_result("run-g", "{not json")
    with pytest.raises(ParameterError, match="JSON"):
        ledger.store_result("run-g", good.to_json(), "{")
    assert dump(db) == before


def _with_budget(result, charged: int, spent: int, refunded: int):
    result.budget = {"charged_nano": charged, "spent_nano": spent, "refunded_nano": refunded}
    return result


def _refund_rows(db) -> list[tuple]:
    con = raw(db)
    try:
        return [tuple(r) for r in con.execute("SELECT run_id, dataset, epsilon_nano, account "
                                              "FROM refunds ORDER BY id")]
    finally:
        con.close()


def test_a_refund_returns_the_unspent_charge_once_with_the_result(ledger, db):
    """Issue 30: a run that stopped early returns what it never spent; the dataset's spent
    ε, the run record and the audit log agree on charged, spent and returned."""
    ledger.charge("r", "clinic", "pfs2", [100_000_000, 300_000_000], {})
    assert ledger.budget("clinic").spent_nano == 400_000_000
    result = _with_budget(make_result("r", 150_000_000), 400_000_000, 150_000_000,
                          250_000_000)
    ledger.store_result("r", result.to_json())
    status = ledger.budget("clinic")
    assert (status.spent_nano, status.refunded_nano) == (150_000_000, 250_000_000)
    assert status.remaining_nano == NANO - 150_000_000
    run = ledger.get_run("r")
    assert (run.epsilon_nano, run.refunded_nano, run.spent_nano) == (
        400_000_000, 250_000_000, 150_000_000)
    assert [e.refunded_nano for e in ledger.audit_log("clinic")] == [250_000_000]
    ledger.store_result("r", result.to_json())                  # identical again: no-op
    assert _refund_rows(db) == [("r", "clinic", 250_000_000, None)]
    # what was returned can be charged again, up to the cap and no further
    ledger.charge("next", "clinic", "altexpm", [NANO - 150_000_000], {})
    with pytest.raises(BudgetExceededError):
        ledger.charge("over", "clinic", "altexpm", [1], {})
    # the raw table refuses every change, a second refund and a refund for a finished run
    con = raw(db)
    try:
        for sql in ("UPDATE refunds SET epsilon_nano = 1", "DELETE FROM refunds"):
            with pytest.raises(DB_ERROR, match="append-only"):
                con.execute(sql)
        with pytest.raises(INTEGRITY):
            con.execute("INSERT INTO refunds (run_id, dataset, epsilon_nano, account, reason, "
                        "created_at) VALUES ('r', 'clinic', 1, NULL, 'again', 'now')")
    finally:
        con.close()
    assert _refund_rows(db) == [("r", "clinic", 250_000_000, None)]


def test_the_raw_refund_table_checks_run_state_and_amount(ledger, db):
    ledger.charge("open", "clinic", "pfs2", [100], {})
    ledger.charge("done", "clinic", "pfs2", [100], {})
    ledger.store_result("done", make_result("done", 100).to_json())
    con = raw(db)
    insert = ("INSERT INTO refunds (run_id, dataset, epsilon_nano, account, reason, "
              "created_at) VALUES (?, 'clinic', ?, NULL, 'test', 'now')")
    try:
        with pytest.raises(DB_ERROR, match="charged, unfinished run"):
            con.execute(insert, ("done", 10))
        with pytest.raises(DB_ERROR, match="no more"):
            con.execute(insert, ("open", 101))
    finally:
        con.close()
    assert _refund_rows(db) == []


@pytest.mark.parametrize("budget, message", [
    ((100, 60, 50), "at most what it left unspent"),
    ((99, 40, 59), "ledger charged it 100"),
    ((100, -1, 10), "at most what it left unspent"),
])
def test_a_refund_beyond_the_unspent_part_changes_nothing(ledger, db, budget, message):
    ledger.charge("r", "clinic", "pfs2", [100], {})
    before = dump(db)
    with pytest.raises(ParameterError, match=message):
        ledger.store_result("r", _with_budget(make_result("r", 40), *budget).to_json())
    assert dump(db) == before


def test_a_crash_between_the_refund_and_the_result_leaves_neither(ledger, db, monkeypatch):
    """The refund, the result and the run's status are one transaction: a crash after the
    refund's row was written but before the result's leaves the run charged and its whole
    charge spent; the retried store returns it exactly once."""
    from contextlib import contextmanager

    ledger.charge("r", "clinic", "pfs2", [400], {})
    result = _with_budget(make_result("r", 100), 400, 100, 300).to_json()
    real_write = ledger._backend.write

    class Crashing:
        def __init__(self, con):
            self.con = con

        def execute(self, sql, *args):
            if sql.startswith("INSERT INTO results"):
                raise KeyboardInterrupt("the process dies here")
            return self.con.execute(sql, *args)

    @contextmanager
    def crashing_write():
        with real_write() as con:
            yield Crashing(con)

    before = dump(db)
    monkeypatch.setattr(ledger._backend, "write", crashing_write)
    with pytest.raises(KeyboardInterrupt):
        ledger.store_result("r", result)
    monkeypatch.undo()
    assert dump(db) == before
    assert ledger.get_run("r").status == "charged"
    assert ledger.budget("clinic").spent_nano == 400
    ledger.store_result("r", result)
    ledger.store_result("r", result)
    assert ledger.budget("clinic").spent_nano == 100
    assert _refund_rows(db) == [("r", "clinic", 300, None)]


def test_a_refund_returns_to_the_account_s_quota_too(ledger):
    from dpcore.privacy.roles import hash_password

    ledger.add_account("ann", "analyst", actor="owner",
                       password_hash=hash_password("pw", n=2**4))
    ledger.set_quota("clinic", "ann", 0.5, actor="owner")
    ledger.charge("r", "clinic", "pfs2", [400_000_000], {}, account="ann")
    ledger.store_result("r", _with_budget(make_result("r", 100_000_000), 400_000_000,
                                          100_000_000, 300_000_000).to_json())
    quota = ledger.quota_status("clinic", "ann")
    assert quota.spent_nano == 100_000_000 and quota.remaining_nano == 400_000_000
    assert ledger.get_run("r").account == "ann"


def test_failed_runs_keep_their_charge(ledger):
    ledger.charge("f1", "clinic", "altexpm", [300_000_000], {})
    ledger.mark_failed("f1", "numba exploded")
    ledger.mark_failed("f1", "again")                                # no-op
    run = ledger.get_run("f1")
    assert run.status == "failed" and run.error == "numba exploded"
    assert ledger.budget("clinic").spent_nano == 300_000_000
    with pytest.raises(ParameterError, match="failed"):
        ledger.store_result("f1", make_result("f1", 300_000_000).to_json())
    assert ledger.get_result("f1") is None
    again = ledger.charge("f1", "clinic", "altexpm", [300_000_000], {})  # no second charge
    assert again.replayed and ledger.budget("clinic").spent_nano == 300_000_000


def test_fail_stale_runs(ledger):
    ledger.charge("old", "clinic", "altexpm", [1], {})
    ledger.charge("done", "clinic", "altexpm", [1], {})
    ledger.store_result("done", make_result("done", 1).to_json())
    assert ledger.fail_stale_runs(3600) == []
    assert ledger.fail_stale_runs(0) == ["old"]
    assert ledger.get_run("old").status == "failed"
    assert "stale" in ledger.get_run("old").error
    assert ledger.get_run("done").status == "done"
    assert ledger.budget("clinic").spent_nano == 2
    with pytest.raises(ParameterError):
        ledger.fail_stale_runs(-1)
    with pytest.raises(ParameterError):
        ledger.fail_stale_runs(float("nan"))


def test_audit_log_and_list_runs(ledger):
    sb = ledger.create_sandbox("clinic", "sb", 1.0, actor="owner")
    ledger.charge("a", "clinic", "altexpm", [10], {"k": 1}, actor="alice")
    ledger.charge("b", sb.name, "altmcmc", [20], {}, actor="owner")
    ledger.charge("c", "clinic", "mcmctreepair", [5, 25], {}, actor="bob")
    ledger.mark_failed("c", "boom")
    log = ledger.audit_log()
    assert [(e.run_id, e.actor, e.epsilon_nano, e.status) for e in log] == [
        ("a", "alice", 10, "charged"), ("b", "owner", 20, "charged"), ("c", "bob", 30, "failed")]
    assert [e.charge_id for e in log] == sorted(e.charge_id for e in log)
    assert [e.run_id for e in ledger.audit_log("clinic")] == ["a", "c"]
    assert log[2].parts_nano == (5, 25) and log[2].error == "boom"
    assert log[0].params == {"k": 1}
    runs = ledger.list_runs("clinic")
    assert [(r.run_id, r.status, r.epsilon_nano) for r in runs] == [
        ("a", "charged", 10), ("c", "failed", 30)]
    with pytest.raises(ParameterError):
        ledger.list_runs("nope")
    with pytest.raises(ParameterError):
        ledger.audit_log("nope")


# ------------------------------------------------------------------ copying a ledger

def _busy_ledger(location) -> Ledger:
    """A ledger with something in every table: datasets of every kind and a sandbox, a cap
    history, done / failed / still-charged runs (one owner-only), stored results with owner
    diagnostics, and owner logins."""
    from dpcore.data.sequences.schema import SequenceSchema

    led = Ledger(location)
    seq = SequenceSchema(name="clicks", alphabet=("home", "news"), l1=5,
                         files={"format": "lines", "records": "records.txt"})
    led.register_dataset("clinic", SCHEMA, "/data/clinic", 1.0, actor="owner", confirmed=True,
                         content_digest="ab" * 32)
    led.register_dataset("clicks", seq, "/data/clicks", 2.0, actor="owner")
    led.confirm_schema("clicks", seq, actor="owner")
    led.create_sandbox("clinic", "clinic~sandbox", 0.5, actor="owner")
    led.set_cap("clinic", 1.5, actor="owner")
    done = make_result("run-done", 300_000_000)
    led.charge("run-done", "clinic", "mcmctreepair", [100_000_000, 200_000_000],
               {"epsilon": 0.3}, actor="alice")
    led.store_result("run-done", done.to_json(), json.dumps(asdict(done.diagnostics)))
    led.charge("run-failed", "clinic", "altexpm", [50_000_000], {}, actor="bob")
    led.mark_failed("run-failed", "numba exploded")
    led.charge("run-open", "clicks", "pfs2", [7], {"theta": 0.1}, audience="owner")
    led.charge("run-refund", "clicks", "pfs2", [1_000], {"theta": 0.2})
    refunded = replace(make_result("run-refund", 400), dataset="clicks")
    led.store_result("run-refund", _with_budget(refunded, 1_000, 400, 600).to_json())
    led.charge("run-sb", "clinic~sandbox", "altmcmc", [123], {}, actor="owner")
    for outcome in ("failure", "success"):
        led.record_auth_event(actor="owner", entry="cli", outcome=outcome, detail=outcome)
    _people(led)
    led.save_workspace("clinic", "analyst", "alice", json.dumps(
        {"dataset": "clinic", "entries": {"run-done:0": {"decision": "reject",
                                                         "tags": ["chf", "ünï"]}}}))
    led.save_workspace("clinic", "analyst", "alice", '{"dataset": "clinic", "threshold": 3}')
    led.save_workspace("clinic", "owner", "alice", '{"note": "the owner\'s own"}')
    led.save_workspace("clicks", "analyst", "bob", "{}")
    return led


def _rows(location) -> dict:
    """Every row of every ledger table, in a fixed column order (through the driver)."""
    from dpcore.privacy.ledger.copying import TABLES

    con = raw(location)
    try:
        return {t: [tuple(r) for r in con.execute(
                    f"SELECT {', '.join(cols)} FROM {t} ORDER BY {order}")]
                for t, (cols, order) in TABLES.items()}
    finally:
        con.close()


def _same_ledger(a: Ledger, b: Ledger) -> None:
    """Record by record: what every reading method returns, and every stored row."""
    assert a._dataset_records() == b._dataset_records()
    for d in a._dataset_records():
        assert a.budget(d.name) == b.budget(d.name)
        assert a.list_runs(d.name) == b.list_runs(d.name)
        for run in a.list_runs(d.name):
            assert a.get_result(run.run_id) == b.get_result(run.run_id)
    assert a.audit_log() == b.audit_log()
    assert a.auth_events() == b.auth_events()
    for d in a._dataset_records():
        assert a.list_workspaces(d.name) == b.list_workspaces(d.name)
    assert len(a.list_workspaces("clinic")) == 2
    assert b.get_workspace("clinic", "analyst", "alice").revision == 2     # saved twice


def test_ledger_copy_from_sqlite_to_postgresql_keeps_every_record(tmp_path, postgres_server,
                                                                  capsys):
    from dpcore.cli import main

    source = _busy_ledger(tmp_path / "ledger.sqlite")
    url = postgres_server.new_database()
    assert main(["ledger", "copy", "--from", f"sqlite:{source.path}", "--to", url]) == 0
    said = capsys.readouterr().out
    assert ("copied 3 datasets, 3 accounts, 4 caps, 0 quotas, 5 charges, 1 refunds, 5 runs, "
            "2 results, 2 sign-in events, 3 workspaces and 0 workspace shares") in said
    target = Ledger(url)
    assert target.backend == "postgresql"
    _same_ledger(source, target)
    assert _rows(source.path) == _rows(url)
    assert target.get_run("run-open").audience == "owner"
    # the copy goes on as a ledger: ids continue, the cap still holds, triggers still refuse
    assert target.charge("after", "clinic", "altexpm", [1], {}, account="analyst").id == 6
    assert target.budget("clicks").refunded_nano == 600
    with pytest.raises(BudgetExceededError):
        target.charge("too-much", "clinic", "altexpm", [1_150_000_000], {}, account="bob")
    with pytest.raises(ParameterError, match="already has a stored result"):
        target.store_result("run-done", '{"run_id": "run-done"}')
    # never into a ledger that holds anything: refused, nothing written
    before = dump(url)
    assert main(["ledger", "copy", "--from", str(source.path), "--to", url]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert dump(url) == before
    # and back into a new SQLite file: the same rows again
    back = tmp_path / "back.sqlite"
    assert main(["ledger", "copy", "--from", url, "--to", f"sqlite:{back}"]) == 0
    assert _rows(back) == _rows(url)


def test_ledger_copy_refuses_the_same_ledger_and_a_used_sqlite_target(tmp_path):
    from dpcore.privacy.ledger.copying import copy_ledger

    source = _busy_ledger(tmp_path / "a.sqlite")
    with pytest.raises(ParameterError, match="same ledger"):
        copy_ledger(source, Ledger(f"sqlite:{source.path}"))
    used = Ledger(tmp_path / "b.sqlite")
    used.record_auth_event(actor="owner", entry="app", outcome="failure")
    before = dump(used.path)
    with pytest.raises(ParameterError, match=r"not empty \(1 auth_events\)"):
        copy_ledger(source, used)
    assert dump(used.path) == before


# ------------------------------------------------------------------ workspaces (version 4)

def _people(led: Ledger) -> None:
    """The accounts the workspace tests save as (workspaces belong to accounts, version 6)."""
    from dpcore.privacy.roles import hash_password

    stored = hash_password("pw", n=2**4)
    for name, role in (("analyst", "analyst"), ("owner", "owner"), ("bob", "analyst")):
        led.add_account(name, role, actor="test", password_hash=stored)


def test_workspaces_are_saved_per_dataset_role_and_name_and_replaced(ledger, db):
    _people(ledger)
    ledger.register_dataset("other", replace(SCHEMA, name="other"), None, 1.0, actor="owner")
    assert ledger.get_workspace("clinic", "analyst", "alice") is None
    first = ledger.save_workspace("clinic", "analyst", "alice", '{"dataset": "clinic", "a": 1}')
    ledger.save_workspace("clinic", "owner", "alice", '{"b": 2}')
    ledger.save_workspace("other", "analyst", "alice", '{"c": 3}')
    again = ledger.save_workspace("clinic", "analyst", "alice", '{"dataset": "clinic", "a": 9}')
    assert again.created_at == first.created_at and again.updated_at >= first.updated_at
    assert json.loads(ledger.get_workspace("clinic", "analyst", "alice").workspace_json) == {
        "dataset": "clinic", "a": 9}
    assert json.loads(ledger.get_workspace("clinic", "owner", "alice").workspace_json) == {
        "b": 2}
    assert [(w.role, w.name) for w in ledger.list_workspaces("clinic")] == [
        ("analyst", "alice"), ("owner", "alice")]
    assert [w.name for w in ledger.list_workspaces("clinic", "owner")] == ["alice"]
    # mutable user state: updates and deletes are allowed (no append-only trigger)
    assert ledger.delete_workspace("clinic", "owner", "alice") is True
    assert ledger.delete_workspace("clinic", "owner", "alice") is False
    assert ledger.get_workspace("clinic", "owner", "alice") is None
    con = raw(db)
    try:
        con.execute("UPDATE workspaces SET workspace_json = '{}' WHERE name = 'alice'")
    finally:
        con.close()
    assert ledger.get_workspace("other", "analyst", "alice").workspace_json == "{}"


def test_a_stale_workspace_save_is_refused_and_changes_nothing(ledger, db):
    """Two tabs read revision 1; the first saves (revision 2), the second is refused."""
    from dpcore.errors import WorkspaceConflict

    _people(ledger)
    key = ("clinic", "analyst", "alice")
    first = ledger.save_workspace(*key, '{"v": 1}', expected_revision=0)
    assert first.revision == 1
    with pytest.raises(WorkspaceConflict) as refused:       # created meanwhile elsewhere
        ledger.save_workspace(*key, '{"v": "other creator"}', expected_revision=0)
    assert (refused.value.expected, refused.value.revision) == (0, 1)
    tab_a = ledger.save_workspace(*key, '{"v": "a"}', expected_revision=first.revision)
    assert tab_a.revision == 2 and tab_a.created_at == first.created_at
    before = dump(db)
    with pytest.raises(WorkspaceConflict, match="changed elsewhere .* nothing was saved") \
            as refused:
        ledger.save_workspace(*key, '{"v": "b"}', expected_revision=first.revision)
    assert refused.value.revision == 2 and refused.value.updated_at == tab_a.updated_at
    assert refused.value.updated_at in str(refused.value)
    assert dump(db) == before
    assert ledger.get_workspace(*key).workspace_json == '{"v": "a"}'
    # the refused tab reloads (revision 2) and saves on it, or overwrites explicitly
    tab_b = ledger.save_workspace(*key, '{"v": "b"}', expected_revision=tab_a.revision)
    assert tab_b.revision == 3
    forced = ledger.save_workspace(*key, '{"v": "forced"}')
    assert forced.revision == 4 and ledger.get_workspace(*key).workspace_json == '{"v": "forced"}'
    ledger.delete_workspace(*key)
    with pytest.raises(WorkspaceConflict, match="deleted elsewhere") as refused:
        ledger.save_workspace(*key, '{"v": "late"}', expected_revision=4)
    assert refused.value.revision is None and ledger.get_workspace(*key) is None
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ParameterError, match="expected_revision"):
            ledger.save_workspace(*key, "{}", expected_revision=bad)


def test_migration_v4_to_v5_gives_saved_workspaces_revision_1(db):
    _v2_ledger(db)
    con = raw(db)
    for version in (3, 4):
        migration(db, version)(con)
    set_version(con, db, 4)
    con.execute("INSERT INTO workspaces (dataset, role, name, workspace_json, created_at, "
                "updated_at) VALUES ('clinic', 'analyst', 'old', '{}', 't', 't')")
    con.close()
    led = Ledger(db)
    assert led.list_workspaces("clinic")[0].revision == 1
    assert stored_version(db) == SCHEMA_VERSION == 8
    # version 6: a workspace saved before accounts belongs to nobody who signs in
    assert led.list_workspaces("clinic")[0].account == "~legacy-analyst"


@pytest.mark.parametrize("args, message", [
    (("nope", "analyst", "a", "{}"), "unknown dataset"),
    (("clinic", "admin", "a", "{}"), "unknown account 'admin'"),
    (("clinic", "~x", "a", "{}"), "a workspace's account"),
    (("clinic", "analyst", " a", "{}"), "workspace name"),
    (("clinic", "analyst", "", "{}"), "workspace name"),
    (("clinic", "analyst", "a" * 129, "{}"), "workspace name"),
    (("clinic", "analyst", "a", "{not json"), "not valid JSON"),
    (("clinic", "analyst", "a", "[1, 2]"), "JSON object"),
    (("clinic", "analyst", "a", '{"dataset": "other"}'), "names dataset 'other'"),
    (("clinic", "analyst", "a", 5), "JSON text"),
])
def test_bad_workspaces_change_nothing(ledger, db, args, message):
    _people(ledger)
    ledger.save_workspace("clinic", "analyst", "a", '{"kept": true}')
    before = dump(db)
    with pytest.raises(ParameterError, match=message):
        ledger.save_workspace(*args)
    assert dump(db) == before


def test_a_too_long_workspace_changes_nothing(ledger, db):
    from dpcore.privacy.ledger.records import MAX_WORKSPACE_CHARS

    before = dump(db)
    with pytest.raises(ParameterError, match="at most"):
        ledger.save_workspace("clinic", "analyst", "a",
                              json.dumps({"x": "y" * MAX_WORKSPACE_CHARS}))
    assert dump(db) == before


def test_migration_v3_to_v4_adds_empty_workspaces_and_keeps_rows(db):
    """A version-3 ledger opens as version 4: its rows are kept, workspaces start empty."""
    _v2_ledger(db)
    con = raw(db)
    migration(db, 3)(con)
    set_version(con, db, 3)
    con.close()
    assert Ledger(db)._dataset_records()[0].kind == "two_view"  # migrates to the newest
    assert stored_version(db) == SCHEMA_VERSION
    con = raw(db)
    try:
        assert con.execute("SELECT COUNT(*) FROM workspaces").fetchone()[0] == 0
        with pytest.raises(INTEGRITY):
            con.execute("INSERT INTO workspaces (dataset, role, name, workspace_json, "
                        "created_at, updated_at) VALUES ('clinic', 'boss', 'x', '{}', 't', 't')")
        if not on_postgres(db):
            con.execute("PRAGMA foreign_keys = ON")   # as every ledger connection has it
        with pytest.raises(INTEGRITY):
            con.execute("INSERT INTO workspaces (dataset, role, name, workspace_json, "
                        "created_at, updated_at) "
                        "VALUES ('ghost', 'analyst', 'x', '{}', 't', 't')")
    finally:
        con.close()
    led = Ledger(db)
    assert [r.run_id for r in led.list_runs("clinic")] == ["old-run"]
    _people(led)
    led.save_workspace("clinic", "analyst", "x", "{}")
    assert [w.name for w in led.list_workspaces("clinic")] == ["x"]
