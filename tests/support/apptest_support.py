"""Shared AppTest fixtures for the app's page tests (loaded by ``tests/conftest.py``).

* :func:`apptest_workarounds` — use it with
  ``pytestmark = pytest.mark.usefixtures("apptest_workarounds")``: AppTest's script runner
  installs a fake ``__main__`` (``__file__`` = app.py) and leaves it; later tests that start
  ``spawn`` processes would re-run app.py in every child. The real one is put back.
  (Streamlit's legacy routing of ``pages/*.py``, which AppTest turns back on before every
  run, needs no patch: ``pages/`` holds only the deep-link shims, which run app.py.)
* :func:`ledger_path` — a fresh SQLite ledger and upload folder per test, no owner hash.
* :func:`app` — the app started once on that ledger, checked for exceptions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

#: The app's entry point, as AppTest wants it (an absolute path).
APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def apptest_workarounds():
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture
def ledger_path(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPRM_LEDGER", str(path))
    monkeypatch.setenv("DPRM_DATA_DIR", str(tmp_path / "datasets"))
    monkeypatch.delenv("DPRM_OWNER_PASSWORD_HASH", raising=False)
    return path


@pytest.fixture
def app(ledger_path, apptest_workarounds):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at
