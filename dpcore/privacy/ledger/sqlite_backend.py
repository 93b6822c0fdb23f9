"""The ledger's SQLite backend: one local file, a fresh connection per operation.

What only SQLite does: the connection settings (``isolation_level=None``,
``journal_mode=WAL``, ``synchronous=FULL``, ``foreign_keys=ON``, ``busy_timeout=30000``),
the schema version in ``PRAGMA user_version``, and the locking: every write runs in
``BEGIN IMMEDIATE``, which takes the database's one write lock before the first read, so
every writer (in any thread or process) sees all earlier commits and none overlaps another.
Reads run in a deferred transaction (one consistent snapshot). Keep the file on a local
disk: WAL does not work on network file systems.

:class:`~dpcore.privacy.ledger.store.Ledger` writes its SQL once for both backends with
``?`` placeholders; ``row_lock`` is empty here, because ``BEGIN IMMEDIATE`` already
serialises every write.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dpcore.errors import DataError
from dpcore.privacy.ledger.migrations import SCHEMA_VERSION, migrate

__all__ = ["SqliteBackend"]


def _use_wal(con: sqlite3.Connection, timeout: float = 30.0) -> None:
    """Put the database in WAL mode (persistent, so usually already done).

    Switching needs an exclusive lock and SQLite reports "database is locked" at once,
    without its busy handler, while another connection creates or migrates the file;
    so retry until ``timeout``.
    """
    if con.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            con.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class SqliteBackend:
    """A ledger in one SQLite file (holds the path only, never a connection).

    Parameters
    ----------
    path : pathlib.Path
        The database file (resolved); parent folders are created on first use.
    """

    name = "sqlite"
    #: Suffix that locks the selected rows until commit: none needed under BEGIN IMMEDIATE.
    row_lock = ""
    #: What the driver raises for a refused write (a trigger, UNIQUE, CHECK).
    IntegrityError = sqlite3.IntegrityError
    #: Every error of the driver (a locked or unreadable file, ...).
    Error = sqlite3.Error

    def __init__(self, path: Path):
        self.path = path
        self._ready = False

    @property
    def location(self) -> str:
        """The location as ``Ledger.open`` takes it."""
        return f"sqlite:{self.path}"

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def connect(self) -> sqlite3.Connection:
        """A new autocommit connection with the ledger's settings (rows by name and index)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        try:
            con.execute("PRAGMA busy_timeout = 30000")
            _use_wal(con)
            con.execute("PRAGMA synchronous = FULL")
            con.execute("PRAGMA foreign_keys = ON")
            con.row_factory = sqlite3.Row
        except BaseException:
            con.close()
            raise
        return con

    def ensure_schema(self) -> None:
        """Create or migrate the tables (once per object); refuse a newer schema version."""
        if self._ready:
            return
        con = self.connect()
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                con.execute("BEGIN IMMEDIATE")
                try:
                    migrate(con, con.execute("PRAGMA user_version").fetchone()[0])
                    con.execute("COMMIT")
                except BaseException:
                    if con.in_transaction:
                        con.execute("ROLLBACK")
                    raise
                version = con.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise DataError(f"ledger {str(self.path)!r} has schema version {version}, "
                                f"newer than this dpcore understands ({SCHEMA_VERSION})")
        finally:
            con.close()
        self._ready = True

    def schema_version(self) -> int:
        """The stored schema version (0 for a new file)."""
        con = self.connect()
        try:
            return con.execute("PRAGMA user_version").fetchone()[0]
        finally:
            con.close()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection inside a deferred (read) transaction: one consistent snapshot."""
        self.ensure_schema()
        con = self.connect()
        try:
            con.execute("BEGIN")
            try:
                yield con
            finally:
                if con.in_transaction:
                    con.execute("ROLLBACK")
        finally:
            con.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection inside ``BEGIN IMMEDIATE``; COMMIT on success, else ROLLBACK."""
        self.ensure_schema()
        con = self.connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    def lock_logins(self, con: sqlite3.Connection) -> None:
        """Serialise owner logins: nothing to add, ``BEGIN IMMEDIATE`` already holds the
        database's one write lock from before the login log is read until COMMIT."""

    def reset_identities(self, con: sqlite3.Connection) -> None:
        """After rows were inserted with explicit ids: nothing to do (AUTOINCREMENT follows)."""
