"""Where a ledger lives: a location string → the backend that keeps it.

A location is a SQLite file (a plain path or ``sqlite:PATH``) or a PostgreSQL database
(``postgresql://user:password@host:port/database``). :class:`~dpcore.privacy.ledger.store.Ledger`
holds one backend; a backend holds only its location (never a connection), so a ledger
stays cheap to keep, e.g. one per Streamlit session.

Every backend offers the same small seam: ``read()`` and ``write()`` (context managers
yielding a connection whose ``execute`` takes ``?`` placeholders and returns rows readable
by name and position), ``row_lock`` (the SQL suffix that locks the rows a write reads),
``lock_logins(con)`` (serialises owner logins inside a write), ``connect()``,
``ensure_schema()``, ``schema_version()``, ``reset_identities()`` and the driver's
``IntegrityError`` / ``Error`` classes.
"""

from __future__ import annotations

import os
from pathlib import Path

from dpcore.errors import ParameterError
from dpcore.privacy.ledger.postgres_backend import PostgresBackend, is_postgres_url
from dpcore.privacy.ledger.sqlite_backend import SqliteBackend

__all__ = ["backend_for", "SqliteBackend", "PostgresBackend"]

SQLITE_PREFIX = "sqlite:"


def backend_for(location: str | os.PathLike) -> SqliteBackend | PostgresBackend:
    """The backend for ``location`` (ParameterError for an in-memory or empty location).

    Parameters
    ----------
    location : str or os.PathLike
        ``postgresql://…`` / ``postgres://…`` (PostgreSQL), ``sqlite:PATH`` or a file path
        (SQLite; ``~`` is expanded, the path resolved).
    """
    text = os.fspath(location)
    if not isinstance(text, str):
        raise ParameterError(f"a ledger location must be a path or URL; got {location!r}")
    if is_postgres_url(text):
        return PostgresBackend(text)
    if text.startswith(SQLITE_PREFIX):
        text = text[len(SQLITE_PREFIX):]
        if text.startswith("//"):                  # sqlite:///abs/path, as in other tools
            text = text[2:]
    if not text or text == ":memory:" or text.startswith("file:"):
        raise ParameterError("the ledger needs a file path (an in-memory database cannot "
                             f"be shared between connections) or a postgresql:// URL; "
                             f"got {os.fspath(location)!r}")
    return SqliteBackend(Path(text).expanduser().resolve())
