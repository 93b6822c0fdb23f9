"""The layout rules a newcomer relies on (docs/ARCHITECTURE.md): dpcore's top level holds
only its entry points, every other module lives in a layer package with a docstring,
dpcore never imports Streamlit, and the Streamlit pages stay thin."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DPCORE = REPO / "dpcore"
TOP_LEVEL_MODULES = {"__init__", "__main__", "cli", "runs", "registry", "errors"}
MAX_PAGE_LINES = 40


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_dpcore_top_level_holds_only_the_entry_points():
    modules = {p.stem for p in DPCORE.glob("*.py")}
    assert modules == TOP_LEVEL_MODULES, (
        f"move {sorted(modules - TOP_LEVEL_MODULES)} into a layer package")


def test_every_dpcore_package_has_an_init_docstring():
    packages = sorted(p.parent for p in DPCORE.rglob("__init__.py"))
    assert len(packages) > 5
    missing = [str(p.relative_to(REPO)) for p in packages
               if not ast.get_docstring(ast.parse((p / "__init__.py").read_text("utf-8")))]
    assert not missing, f"packages without an __init__ docstring: {missing}"


def test_every_dpcore_folder_with_modules_is_a_package():
    folders = {p.parent for p in DPCORE.rglob("*.py")}
    assert all((f / "__init__.py").exists() for f in folders), sorted(
        str(f) for f in folders if not (f / "__init__.py").exists())


def test_dpcore_never_imports_streamlit():
    offenders = [str(p.relative_to(REPO)) for p in DPCORE.rglob("*.py")
                 if any(m == "streamlit" or m.startswith("streamlit.")
                        for m in _imported_modules(p))]
    assert not offenders, f"dpcore imports Streamlit in {offenders}"


def test_the_import_scan_sees_a_streamlit_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import streamlit as st\nfrom streamlit.runtime import x\n")
    assert {"streamlit", "streamlit.runtime"} <= _imported_modules(probe)


@pytest.mark.parametrize("page", sorted((REPO / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_are_thin(page):
    n_lines = len(page.read_text(encoding="utf-8").splitlines())
    assert n_lines < MAX_PAGE_LINES, (
        f"{page.name} has {n_lines} lines; move its logic into a component")
