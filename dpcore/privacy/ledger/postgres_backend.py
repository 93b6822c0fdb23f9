"""The ledger's PostgreSQL backend: one shared database, a fresh connection per operation.

Selected by a ``postgresql://`` (or ``postgres://``) URL in ``DPRM_LEDGER`` or
``Ledger(url)``; the driver is psycopg 3. What only PostgreSQL does:

* **Locking.** Writes run at READ COMMITTED, and every write that depends on what it reads
  first locks the rows it reads with ``SELECT … FOR UPDATE`` (``row_lock``): a charge, a new
  cap, a schema confirmation or a digest locks the *dataset's* row; storing a result or
  failing a run locks the *run's* row. Two writers of one dataset therefore run one after
  the other, and the second, once it holds the lock, reads (each statement takes a new
  snapshot at READ COMMITTED) every charge the first committed. The argument that the cap
  holds is in docs/PRIVACY.md.
* **Owner logins.** Reading the login log, checking the password and recording the
  attempt is one transaction holding a transaction-scoped advisory lock
  (:meth:`PostgresBackend.lock_logins`; there is no row to lock before the first event):
  logins of every server run one after the other, and each reads every earlier attempt.
* **Unique names and run ids.** Two transactions inserting the same dataset name or the same
  run id at once (on different datasets, so no shared row lock) are stopped by the UNIQUE
  index: the second waits for the first and then fails; that failure is reported as a
  :class:`~dpcore.errors.ParameterError` naming the clash, and nothing is written.
* **Reads** run in one READ ONLY, REPEATABLE READ transaction: one consistent snapshot, as
  SQLite's deferred read transaction.
* **Schema.** :mod:`dpcore.privacy.ledger.postgres_migrations`; the migrating transaction
  holds a transaction-scoped advisory lock, so app servers starting together migrate once.

:class:`~dpcore.privacy.ledger.store.Ledger` writes its SQL once with ``?`` placeholders;
:class:`PgConnection` turns them into psycopg's ``%s``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger.postgres_migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["PostgresBackend", "PgConnection", "Row", "is_postgres_url"]

#: URL schemes that select this backend.
SCHEMES = ("postgresql://", "postgres://")
# Key of the advisory lock held while the schema is created or migrated (any fixed int64).
_MIGRATION_LOCK = 0x6470726D_6C656467          # "dprmledg"
# Key of the advisory lock held by every write of the owner-login log ("dprmlogn").
_LOGIN_LOCK = 0x6470726D_6C6F676E
_IDENTITY_TABLES = ("budgets", "charges", "auth_events", "refunds")


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL ledger (a ``postgresql://`` URL)."""
    return text.startswith(SCHEMES)


def _without_password(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for repr and messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class Row(tuple):
    """A result row read by column name (``row["cap_nano"]``) or position (``row[0]``)."""

    __slots__ = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """Column names, in order (as :class:`sqlite3.Row`)."""
        return list(self._index)


def _row_factory(cursor):
    """psycopg row factory making :class:`Row` objects for the cursor's columns."""
    if cursor.description is None:
        return tuple
    index = {col.name: i for i, col in enumerate(cursor.description)}
    row_type = type("Row", (Row,), {"__slots__": (), "_index": index})
    return row_type


_PLACEHOLDER = re.compile(r"\?")


class PgConnection:
    """A psycopg connection that takes the ledger's ``?`` placeholders (as sqlite3 does).

    ``execute`` returns the psycopg cursor (``fetchone``, ``fetchall``, iteration).
    """

    def __init__(self, raw):
        self.raw = raw

    def execute(self, sql: str, args=()):
        if args:
            sql = _PLACEHOLDER.sub("%s", sql.replace("%", "%%"))
        return self.raw.execute(sql, tuple(args) if args else None)

    def close(self) -> None:
        self.raw.close()


class PostgresBackend:
    """A ledger in a PostgreSQL database (holds the URL only, never a connection).

    Parameters
    ----------
    url : str
        ``postgresql://user:password@host:port/database`` (any libpq connection URL).
    """

    name = "postgresql"
    #: Suffix that locks the selected rows until the transaction ends.
    row_lock = " FOR UPDATE"

    def __init__(self, url: str):
        import psycopg

        self.url = url
        self.IntegrityError = psycopg.IntegrityError
        self.Error = psycopg.Error
        self._ready = False

    @property
    def location(self) -> str:
        """The location without its password (for messages)."""
        return _without_password(self.url)

    def __repr__(self) -> str:
        return f"Ledger({self.location!r})"

    def connect(self) -> PgConnection:
        """A new autocommit connection (rows by name and index); the caller closes it."""
        import psycopg

        try:
            raw = psycopg.connect(self.url, autocommit=True, row_factory=_row_factory,
                                  connect_timeout=30, application_name="dpcore ledger")
        except psycopg.OperationalError as exc:
            raise DataError(f"cannot connect to the PostgreSQL ledger {self.location!r}: "
                            f"{str(exc).strip()}") from None
        return PgConnection(raw)

    @contextmanager
    def _transaction(self, con: PgConnection, mode: str) -> Iterator[PgConnection]:
        con.execute("BEGIN " + mode)
        try:
            yield con
        except BaseException:
            if not con.raw.closed:
                con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def schema_version(self) -> int:
        """The stored schema version (0 for an empty database)."""
        con = self.connect()
        try:
            return self._version(con)
        finally:
            con.close()

    @staticmethod
    def _version(con: PgConnection) -> int:
        exists = con.execute("SELECT to_regclass('ledger_schema') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        row = con.execute("SELECT version FROM ledger_schema").fetchone()
        return 0 if row is None else int(row[0])

    def ensure_schema(self) -> None:
        """Create or migrate the tables (once per object); refuse a newer schema version."""
        if self._ready:
            return
        con = self.connect()
        try:
            version = self._version(con)
            if version < SCHEMA_VERSION:
                with self._transaction(con, "ISOLATION LEVEL READ COMMITTED"):
                    con.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
                    con.execute("CREATE TABLE IF NOT EXISTS ledger_schema "
                                "(version INTEGER NOT NULL)")
                    version = self._version(con)
                    for step in range(version, SCHEMA_VERSION):
                        MIGRATIONS[step](con)
                    if version < SCHEMA_VERSION:
                        con.execute("DELETE FROM ledger_schema")
                        con.execute("INSERT INTO ledger_schema (version) VALUES (?)",
                                    (SCHEMA_VERSION,))
                version = self._version(con)
            if version > SCHEMA_VERSION:
                raise DataError(f"ledger {self.location!r} has schema version {version}, "
                                f"newer than this dpcore understands ({SCHEMA_VERSION})")
        finally:
            con.close()
        self._ready = True

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """A fresh connection in a READ ONLY, REPEATABLE READ transaction (one snapshot)."""
        self.ensure_schema()
        con = self.connect()
        try:
            con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield con
            finally:
                con.execute("ROLLBACK")
        finally:
            con.close()

    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A fresh connection in a READ COMMITTED transaction; COMMIT on success.

        The caller locks what it reads with ``row_lock``. A UNIQUE clash with a concurrent
        writer (same dataset name or run id) becomes a ParameterError; nothing is written.
        """
        self.ensure_schema()
        con = self.connect()
        try:
            con.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            try:
                yield con
            except self.IntegrityError as exc:
                con.execute("ROLLBACK")
                if getattr(exc, "sqlstate", None) == "23505":       # unique_violation
                    detail = getattr(exc.diag, "message_detail", None) or str(exc)
                    raise ParameterError(f"a concurrent write got there first: {detail}; "
                                         "nothing was written") from None
                raise
            except BaseException:
                if not con.raw.closed:
                    con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    def lock_logins(self, con: PgConnection) -> None:
        """Serialise owner logins: take the login advisory lock, held until the transaction
        ends. Statements after it (READ COMMITTED) see every login committed before."""
        con.execute("SELECT pg_advisory_xact_lock(?)", (_LOGIN_LOCK,))

    def reset_identities(self, con: PgConnection) -> None:
        """After rows were inserted with explicit ids: move each id sequence past the largest."""
        for table in _IDENTITY_TABLES:
            con.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)")
