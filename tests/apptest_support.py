"""Shared AppTest fixtures for the app's page tests (loaded by ``tests/conftest.py``).

* :func:`apptest_workarounds` — two fixes every AppTest module needs (use it with
  ``pytestmark = pytest.mark.usefixtures("apptest_workarounds")``):

  - streamlit 1.67's AppTest resets ``PagesManager.uses_pages_directory`` to None before
    every run, and a new PagesManager then sets it to True because ``pages/`` exists; the
    script runner then takes the legacy multipage path and, from the second run on,
    executes only the page file — the entrypoint (sidebar, budget meter, navigation) is
    skipped. The real server sets the flag once and ``st.navigation`` turns it off, so only
    tests need this: a subclass turns the flag off right after AppTest builds its manager.
  - AppTest's script runner installs a fake ``__main__`` (``__file__`` = app.py) and
    leaves it; later tests that start ``spawn`` processes would re-run app.py in every
    child. The real one is put back.
* :func:`ledger_path` — a fresh SQLite ledger and upload folder per test, no owner hash.
* :func:`app` — the app started once on that ledger, checked for exceptions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

#: The app's entry point, as AppTest wants it (an absolute path).
APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def apptest_workarounds(monkeypatch):
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager

    class _PagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test_module, "PagesManager", _PagesManager)
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
