"""The ledger's SQL schema, one migration per version (``PRAGMA user_version``).

``MIGRATIONS[k]`` brings a database from version k to k + 1, inside the one ``BEGIN
IMMEDIATE`` transaction :class:`~dpcore.privacy.ledger.store.Ledger` opens on first use. A
migration, once released, never changes: a new column or table is a new version.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]


def _migrate_v1(con: sqlite3.Connection) -> None:
    """Version 1: datasets, budgets, charges, runs, results, append-only triggers."""
    statements = [
        """CREATE TABLE datasets (
            name        TEXT PRIMARY KEY CHECK (length(name) > 0),
            schema_json TEXT NOT NULL,
            source_path TEXT,
            public_demo INTEGER NOT NULL DEFAULT 0 CHECK (public_demo IN (0, 1)),
            confirmed   INTEGER NOT NULL DEFAULT 0 CHECK (confirmed IN (0, 1)),
            sandbox_of  TEXT REFERENCES datasets(name),
            created_by  TEXT NOT NULL,
            created_at  TEXT NOT NULL)""",
        """CREATE TABLE budgets (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            dataset    TEXT NOT NULL REFERENCES datasets(name),
            cap_nano   INTEGER NOT NULL CHECK (typeof(cap_nano) = 'integer' AND cap_nano > 0),
            actor      TEXT NOT NULL,
            created_at TEXT NOT NULL)""",
        "CREATE INDEX budgets_by_dataset ON budgets(dataset, id)",
        """CREATE TABLE charges (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id       TEXT NOT NULL UNIQUE CHECK (length(run_id) > 0),
            dataset      TEXT NOT NULL REFERENCES datasets(name),
            algorithm    TEXT NOT NULL,
            epsilon_nano INTEGER NOT NULL
                         CHECK (typeof(epsilon_nano) = 'integer' AND epsilon_nano > 0),
            parts_json   TEXT NOT NULL,
            params_json  TEXT NOT NULL,
            actor        TEXT NOT NULL,
            created_at   TEXT NOT NULL)""",
        "CREATE INDEX charges_by_dataset ON charges(dataset)",
        """CREATE TABLE runs (
            run_id      TEXT PRIMARY KEY REFERENCES charges(run_id),
            dataset     TEXT NOT NULL REFERENCES datasets(name),
            algorithm   TEXT NOT NULL,
            status      TEXT NOT NULL CHECK (status IN ('charged', 'done', 'failed')),
            params_json TEXT NOT NULL,
            error       TEXT,
            created_at  TEXT NOT NULL,
            finished_at TEXT)""",
        "CREATE INDEX runs_by_status ON runs(status, created_at)",
        """CREATE TABLE results (
            run_id           TEXT PRIMARY KEY REFERENCES runs(run_id),
            result_json      TEXT NOT NULL,
            diagnostics_json TEXT,
            created_at       TEXT NOT NULL)""",
        # Charges and the cap history are append-only: no update, no delete, no refund.
        """CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges BEGIN
            SELECT RAISE(ABORT, 'charges are append-only: a charge can never be changed');
           END""",
        """CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges BEGIN
            SELECT RAISE(ABORT, 'charges are append-only: no delete, no refunds');
           END""",
        """CREATE TRIGGER budgets_no_update BEFORE UPDATE ON budgets BEGIN
            SELECT RAISE(ABORT, 'the cap history is append-only: add a new cap instead');
           END""",
        """CREATE TRIGGER budgets_no_delete BEFORE DELETE ON budgets BEGIN
            SELECT RAISE(ABORT, 'the cap history is append-only: add a new cap instead');
           END""",
        # A run changes once, and only its status (+ error, finished_at): charged → done|failed.
        """CREATE TRIGGER runs_status_flow BEFORE UPDATE ON runs
           WHEN OLD.status <> 'charged' OR NEW.status NOT IN ('done', 'failed')
             OR NEW.run_id IS NOT OLD.run_id OR NEW.dataset IS NOT OLD.dataset
             OR NEW.algorithm IS NOT OLD.algorithm OR NEW.params_json IS NOT OLD.params_json
             OR NEW.created_at IS NOT OLD.created_at
           BEGIN
            SELECT RAISE(ABORT, 'a run only changes status once, from charged to done or failed');
           END""",
        """CREATE TRIGGER runs_no_delete BEFORE DELETE ON runs BEGIN
            SELECT RAISE(ABORT, 'runs are never deleted');
           END""",
        # A result is stored once, for a run that is still 'charged', and never changed.
        """CREATE TRIGGER results_need_charged_run BEFORE INSERT ON results
           WHEN (SELECT status FROM runs WHERE run_id = NEW.run_id) IS NOT 'charged'
           BEGIN
            SELECT RAISE(ABORT, 'a result can only be stored for a charged, unfinished run');
           END""",
        """CREATE TRIGGER results_no_update BEFORE UPDATE ON results BEGIN
            SELECT RAISE(ABORT, 'stored results are never changed');
           END""",
        """CREATE TRIGGER results_no_delete BEFORE DELETE ON results BEGIN
            SELECT RAISE(ABORT, 'stored results are never deleted');
           END""",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v2(con: sqlite3.Connection) -> None:
    """Version 2: content digests, result audiences and the owner-login log.

    * ``datasets.content_digest``: SHA-256 of the registered data's content
      (:func:`dpcore.privacy.policy.content_digest`); a run whose data does not match it is
      refused before charging. NULL for datasets registered before version 2: the
      first run records the digest of the registered files (trust on first use).
    * ``runs.audience``: ``everyone`` or ``owner``. Decided by the policy before the
      charge (faithful runs on private data are for the owner only) and never
      changed afterwards. Faithful runs on private datasets stored before version 2
      become ``owner``.
    * ``auth_events``: append-only log of owner logins (successes and failures),
      read by the login back-off and shown in the audit log.
    """
    statements = [
        "ALTER TABLE datasets ADD COLUMN content_digest TEXT",
        "ALTER TABLE runs ADD COLUMN audience TEXT NOT NULL DEFAULT 'everyone' "
        "CHECK (audience IN ('everyone', 'owner'))",
        # The status-flow trigger refuses updates of finished runs; lift it for the one
        # back-fill below, inside this migration's transaction, then put it back.
        "DROP TRIGGER runs_status_flow",
        """UPDATE runs SET audience = 'owner'
           WHERE json_extract(params_json, '$.mode') = 'faithful'
             AND dataset IN (SELECT name FROM datasets WHERE public_demo = 0)""",
        """CREATE TRIGGER runs_status_flow BEFORE UPDATE ON runs
           WHEN OLD.status <> 'charged' OR NEW.status NOT IN ('done', 'failed')
             OR NEW.run_id IS NOT OLD.run_id OR NEW.dataset IS NOT OLD.dataset
             OR NEW.algorithm IS NOT OLD.algorithm OR NEW.params_json IS NOT OLD.params_json
             OR NEW.created_at IS NOT OLD.created_at OR NEW.audience IS NOT OLD.audience
           BEGIN
            SELECT RAISE(ABORT, 'a run only changes status once, from charged to done or failed');
           END""",
        """CREATE TABLE auth_events (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            created_at TEXT NOT NULL,
            actor      TEXT NOT NULL,
            entry      TEXT NOT NULL,
            outcome    TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'throttled')),
            detail     TEXT)""",
        "CREATE INDEX auth_events_by_time ON auth_events(created_at)",
        """CREATE TRIGGER auth_events_no_update BEFORE UPDATE ON auth_events BEGIN
            SELECT RAISE(ABORT, 'the login log is append-only');
           END""",
        """CREATE TRIGGER auth_events_no_delete BEFORE DELETE ON auth_events BEGIN
            SELECT RAISE(ABORT, 'the login log is append-only');
           END""",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v3(con: sqlite3.Connection) -> None:
    """Version 3: a dataset *kind*, so one ledger holds every mining family's datasets.

    * ``datasets.kind``: ``two_view`` (redescriptions; every dataset registered before
      version 3), ``sequences`` (frequent sequences) or ``table`` (labelled tables for
      synthesis) — :data:`dpcore.registry.DATASET_KINDS`. ``schema_json`` is read by kind.
    * A dataset's kind never changes (a trigger refuses it), so a schema of another kind
      can never replace a dataset's confirmed one.
    """
    statements = [
        "ALTER TABLE datasets ADD COLUMN kind TEXT NOT NULL DEFAULT 'two_view' "
        "CHECK (kind IN ('two_view', 'sequences', 'table'))",
        """CREATE TRIGGER datasets_kind_fixed BEFORE UPDATE OF kind ON datasets
           WHEN NEW.kind IS NOT OLD.kind
           BEGIN
            SELECT RAISE(ABORT, 'a dataset''s kind never changes');
           END""",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v4(con: sqlite3.Connection) -> None:
    """Version 4: workspaces, an analyst's saved state on the Explore page.

    One row per (dataset, role, name): the keep/reject decisions, tags, notes, picked runs,
    threshold and list settings of :mod:`dpcore.redescriptions.workspace`, as JSON. Unlike
    charges, a workspace is mutable user state (updated and deleted freely); it refers to
    released redescriptions only, so it is no privacy record. ``role`` keeps an owner's
    workspaces apart from analysts' (an analyst session never reads an owner's).
    """
    statements = [
        """CREATE TABLE workspaces (
            dataset        TEXT NOT NULL REFERENCES datasets(name),
            role           TEXT NOT NULL CHECK (role IN ('analyst', 'owner')),
            name           TEXT NOT NULL CHECK (length(name) > 0),
            workspace_json TEXT NOT NULL,
            created_at     TEXT NOT NULL,
            updated_at     TEXT NOT NULL,
            PRIMARY KEY (dataset, role, name))""",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v5(con: sqlite3.Connection) -> None:
    """Version 5: a revision counter per workspace (optimistic concurrency between tabs).

    ``workspaces.revision`` starts at 1 and grows by one with every save. A save names the
    revision it was based on and is refused when the stored one moved on (another tab or
    session saved meanwhile), so two tabs no longer overwrite each other silently.
    Workspaces saved before version 5 get revision 1.
    """
    statements = [
        "ALTER TABLE workspaces ADD COLUMN revision INTEGER NOT NULL DEFAULT 1 "
        "CHECK (typeof(revision) = 'integer' AND revision >= 1)",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v6(con: sqlite3.Connection) -> None:
    """Version 6: accounts, per-analyst quotas, who spent what, owned workspaces.

    * ``accounts``: the people who may sign in — name, role (``analyst`` or ``owner``), a
      scrypt password hash and/or a verified external identity (an OpenID Connect issuer and
      subject), who created it and when, and when it was disabled (a disabled account can
      never sign in or spend again; accounts are never deleted, so charges keep their name).
    * ``quotas``: an analyst's share of a dataset's cap, in nano-ε; append-only history like
      the caps (the latest row per dataset and account counts).
    * ``charges.account``: the signed-in account that spent (NULL for charges made before
      version 6 and on a ledger without accounts); ``charges.params_digest``: SHA-256 of the
      recorded parameters, so a run id can only ever be resumed with the same parameters.
    * ``auth_events.account`` / ``auth_events.client``: the account a sign-in named and the
      client it came from, so the back-off is per account and per client.
    * ``workspaces`` are keyed by the account that owns them (dataset, account, name);
      workspaces saved before version 6 belong to the pseudo-account ``~legacy-<role>``,
      which nobody signs in as. ``workspace_shares`` lists the colleagues an owner of a
      workspace shared it with, explicitly.
    """
    statements = [
        """CREATE TABLE accounts (
            name              TEXT PRIMARY KEY CHECK (length(name) > 0),
            role              TEXT NOT NULL CHECK (role IN ('analyst', 'owner')),
            password_hash     TEXT,
            external_identity TEXT UNIQUE,
            created_by        TEXT NOT NULL,
            created_at        TEXT NOT NULL,
            disabled_at       TEXT,
            CHECK (password_hash IS NOT NULL OR external_identity IS NOT NULL))""",
        """CREATE TRIGGER accounts_fixed BEFORE UPDATE ON accounts
           WHEN NEW.name IS NOT OLD.name OR NEW.role IS NOT OLD.role
             OR NEW.created_at IS NOT OLD.created_at OR NEW.created_by IS NOT OLD.created_by
             OR (OLD.disabled_at IS NOT NULL AND NEW.disabled_at IS NOT OLD.disabled_at)
           BEGIN
            SELECT RAISE(ABORT, 'an account keeps its name and role, and stays disabled');
           END""",
        """CREATE TRIGGER accounts_no_delete BEFORE DELETE ON accounts BEGIN
            SELECT RAISE(ABORT, 'accounts are never deleted (disable them)');
           END""",
        """CREATE TABLE quotas (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            dataset    TEXT NOT NULL REFERENCES datasets(name),
            account    TEXT NOT NULL REFERENCES accounts(name),
            quota_nano INTEGER NOT NULL
                       CHECK (typeof(quota_nano) = 'integer' AND quota_nano >= 0),
            actor      TEXT NOT NULL,
            created_at TEXT NOT NULL)""",
        "CREATE INDEX quotas_by_key ON quotas(dataset, account, id)",
        """CREATE TRIGGER quotas_no_update BEFORE UPDATE ON quotas BEGIN
            SELECT RAISE(ABORT, 'the quota history is append-only: add a new quota instead');
           END""",
        """CREATE TRIGGER quotas_no_delete BEFORE DELETE ON quotas BEGIN
            SELECT RAISE(ABORT, 'the quota history is append-only: add a new quota instead');
           END""",
        "ALTER TABLE charges ADD COLUMN account TEXT REFERENCES accounts(name)",
        "ALTER TABLE charges ADD COLUMN params_digest TEXT",
        "CREATE INDEX charges_by_account ON charges(dataset, account)",
        "ALTER TABLE auth_events ADD COLUMN account TEXT",
        "ALTER TABLE auth_events ADD COLUMN client TEXT",
        # The columns in PostgreSQL's order (there the account column is added last).
        """CREATE TABLE workspaces_v6 (
            dataset        TEXT NOT NULL REFERENCES datasets(name),
            role           TEXT NOT NULL CHECK (role IN ('analyst', 'owner')),
            name           TEXT NOT NULL CHECK (length(name) > 0),
            workspace_json TEXT NOT NULL,
            created_at     TEXT NOT NULL,
            updated_at     TEXT NOT NULL,
            revision       INTEGER NOT NULL DEFAULT 1
                           CHECK (typeof(revision) = 'integer' AND revision >= 1),
            account        TEXT NOT NULL CHECK (length(account) > 0),
            PRIMARY KEY (dataset, account, name))""",
        """INSERT INTO workspaces_v6 (dataset, account, role, name, workspace_json, created_at,
                                      updated_at, revision)
           SELECT dataset, '~legacy-' || role, role, name, workspace_json, created_at,
                  updated_at, revision FROM workspaces""",
        "DROP TABLE workspaces",
        "ALTER TABLE workspaces_v6 RENAME TO workspaces",
        """CREATE TABLE workspace_shares (
            dataset    TEXT NOT NULL,
            account    TEXT NOT NULL,
            name       TEXT NOT NULL,
            colleague  TEXT NOT NULL REFERENCES accounts(name),
            created_at TEXT NOT NULL,
            PRIMARY KEY (dataset, account, name, colleague),
            FOREIGN KEY (dataset, account, name) REFERENCES workspaces(dataset, account, name)
                ON DELETE CASCADE)""",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v7(con: sqlite3.Connection) -> None:
    """Version 7: refunds, the part of a run's charge it never spent, returned to the cap.

    A run whose mechanisms stop early on released values only (PFS2's levels, SerenadeCS's
    stopped redescriptions) spends less than it was charged; the rest is returned by one
    ``refunds`` row, written in the same transaction as the run's result (so a crash leaves
    both or neither) and at most once per run (``run_id`` is unique). Charges stay as they
    were: a dataset's spent ε is the sum of its charges minus the sum of its refunds. The
    proof that returning it is safe (a privacy filter on a fixed cap) is in docs/PRIVACY.md
    ("Charged = spent: refunds"). Refunds are append-only; a refund is only written for a
    run that is still ``charged`` and never exceeds that run's charge.
    """
    statements = [
        """CREATE TABLE refunds (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id       TEXT NOT NULL UNIQUE REFERENCES charges(run_id),
            dataset      TEXT NOT NULL REFERENCES datasets(name),
            epsilon_nano INTEGER NOT NULL
                         CHECK (typeof(epsilon_nano) = 'integer' AND epsilon_nano > 0),
            account      TEXT REFERENCES accounts(name),
            reason       TEXT NOT NULL,
            created_at   TEXT NOT NULL)""",
        "CREATE INDEX refunds_by_dataset ON refunds(dataset, account)",
        """CREATE TRIGGER refunds_no_update BEFORE UPDATE ON refunds BEGIN
            SELECT RAISE(ABORT, 'refunds are append-only: a refund can never be changed');
           END""",
        """CREATE TRIGGER refunds_no_delete BEFORE DELETE ON refunds BEGIN
            SELECT RAISE(ABORT, 'refunds are append-only: a refund can never be removed');
           END""",
        """CREATE TRIGGER refunds_need_charged_run BEFORE INSERT ON refunds
           WHEN (SELECT status FROM runs WHERE run_id = NEW.run_id) IS NOT 'charged'
           BEGIN
            SELECT RAISE(ABORT, 'a refund can only be written for a charged, unfinished run');
           END""",
        """CREATE TRIGGER refunds_within_charge BEFORE INSERT ON refunds
           WHEN NEW.epsilon_nano > (SELECT epsilon_nano FROM charges WHERE run_id = NEW.run_id)
             OR NEW.dataset IS NOT (SELECT dataset FROM charges WHERE run_id = NEW.run_id)
             OR NEW.account IS NOT (SELECT account FROM charges WHERE run_id = NEW.run_id)
           BEGIN
            SELECT RAISE(ABORT, 'a refund returns part of its own run''s charge, no more');
           END""",
    ]
    for sql in statements:
        con.execute(sql)


def _migrate_v8(con: sqlite3.Connection) -> None:
    """Version 8: a dataset's declared row bound, public metadata set by its owner.

    ``datasets.row_bound``: at most this many rows (two-view data, labelled tables) or items
    (sequences: all records' items together), declared public by the owner; NULL when none
    was declared. The Dask preflight sizes a run's memory from it instead of the private
    row count (docs/PRIVACY.md §15).
    """
    con.execute("ALTER TABLE datasets ADD COLUMN row_bound INTEGER "
                "CHECK (row_bound IS NULL OR (typeof(row_bound) = 'integer' AND row_bound > 0))")


#: Migration functions; ``MIGRATIONS[k]`` brings a database from version k to k + 1.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_v1, _migrate_v2, _migrate_v3,
                                                          _migrate_v4, _migrate_v5, _migrate_v6,
                                                          _migrate_v7, _migrate_v8]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(con: sqlite3.Connection, version: int) -> None:
    """Run every migration after ``version`` on ``con`` (the caller holds the transaction)."""
    for step in range(version, SCHEMA_VERSION):
        MIGRATIONS[step](con)
        con.execute(f"PRAGMA user_version = {step + 1:d}")
