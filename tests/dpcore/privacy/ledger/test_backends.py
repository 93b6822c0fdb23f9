"""dpcore.privacy.ledger.backends: a location string picks its backend, or is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpcore.errors import ParameterError
from dpcore.privacy.ledger.backends import PostgresBackend, SqliteBackend, backend_for


def test_paths_and_sqlite_urls_pick_sqlite(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    target = tmp_path / "l.sqlite"
    for location in (target, str(target), f"sqlite:{target}", f"sqlite://{target}"):
        backend = backend_for(location)
        assert isinstance(backend, SqliteBackend) and backend.path == target.resolve()
    assert backend_for("~/x.sqlite").path == (tmp_path / "x.sqlite").resolve()
    monkeypatch.chdir(tmp_path)
    assert backend_for("rel.sqlite").path == tmp_path / "rel.sqlite"


@pytest.mark.parametrize("url", ["postgresql://u:p@h:5432/db", "postgres://h/db"])
def test_postgres_urls_pick_postgres(url):
    backend = backend_for(url)
    assert isinstance(backend, PostgresBackend) and backend.url == url


@pytest.mark.parametrize("bad", ["", ":memory:", "sqlite::memory:", "sqlite:",
                                 "file:x?mode=memory"])
def test_in_memory_or_empty_locations_are_refused(bad):
    with pytest.raises(ParameterError, match="needs a file path"):
        backend_for(bad)


def test_bytes_path_is_refused():
    with pytest.raises(ParameterError, match="must be a path or URL"):
        backend_for(Path("x").__fspath__().encode())
