"""The layout rules a newcomer relies on (docs/ARCHITECTURE.md): dpcore's top level holds
only its entry points, every other module lives in a layer package with a docstring,
dpcore never imports Streamlit, the Streamlit pages stay thin, and tests mirror the package
folders (every dpcore module ``dpcore/a/b.py`` has its own ``tests/dpcore/a/test_b.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DPCORE = REPO / "dpcore"
TOP_LEVEL_MODULES = {"__init__", "__main__", "cli", "runs", "registry", "errors", "family",
                     "executor"}
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


@pytest.mark.parametrize("page", sorted((REPO / "pages").glob("*/*.py")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pages_are_thin(page):
    n_lines = len(page.read_text(encoding="utf-8").splitlines())
    assert n_lines < MAX_PAGE_LINES, (
        f"{page.name} has {n_lines} lines; move its logic into a component")


def _declared_pages() -> dict[str, str]:
    """URL path → page script of every page of the app's navigation (the default page: ""):
    the workbench's and each built-in family's (components/common/navigation.py)."""
    from components.common.family_ui import family_uis
    from components.common.navigation import WORKBENCH_PAGES

    pages = [*WORKBENCH_PAGES, *(p for ui in family_uis().values() for p in ui.pages)]
    return {page.url_path or "": page.page for page in pages}


def test_pages_folder_holds_only_section_packages_and_deep_link_shims():
    """Issue 32, point 2: Streamlit routes a fresh server's first request by pages/*.py, so
    page scripts live in pages/<section>/, and pages/ holds one shim per URL path that runs
    the app (components/common/deep_links.py) — so every deep link works as a first request."""
    declared = _declared_pages()
    assert len(declared) == 7 and all(p.startswith("pages/") and p.count("/") == 2
                                      for p in declared.values()), declared
    assert all((REPO / p).is_file() for p in declared.values())
    shims = {p.stem: p for p in (REPO / "pages").glob("*.py")}
    named = {url or Path(script).stem for url, script in declared.items()}
    assert set(shims) == named, (sorted(shims), sorted(named))
    for shim in shims.values():
        body = ast.parse(shim.read_text(encoding="utf-8")).body
        calls = [n for n in body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
        assert len(body) == 3 and [c.value.func.id for c in calls] == ["run_app"], shim.name


# ------------------------------------------------------------ tests mirror the package folders

TESTS = REPO / "tests"

#: What may sit at the top of tests/: the suite's configuration, not tests.
TESTS_TOP_LEVEL = {"__init__.py", "conftest.py", "run.sh"}

#: Modules without a test module of their own, and why. Each ``__init__.py`` listed here
#: must stay a pure re-export (docstring, imports, ``__all__``) and each ``__main__.py`` a
#: shim of at most three statements: the check below fails if code moves into them.
EXEMPT = {
    "dpcore/data/samples/__main__.py":
        "shim: `python -m dpcore.data.samples` calls write.main "
        "(tests/dpcore/data/samples/test_write.py)",
    "dpcore/data/__init__.py": "package docstring only",
    "dpcore/data/sequences/__init__.py": "package docstring only",
    "dpcore/data/table/__init__.py": "package docstring only",
    "dpcore/data/samples/__init__.py": "re-exports clinic, cms, planted and write",
    "dpcore/distributed/__init__.py": "package docstring only",
    "dpcore/experiments/__init__.py": "package docstring only",
    "dpcore/privacy/__init__.py": "package docstring only",
    "dpcore/redescriptions/__init__.py":
        "re-exports FAMILY (tests/dpcore/redescriptions/test_contract.py)",
    "dpcore/redescriptions/serenade/__init__.py": "package docstring only",
    "dpcore/sequences/__init__.py": "re-exports FAMILY (tests/dpcore/sequences/test_contract.py)",
    "dpcore/synthesis/__init__.py": "re-exports FAMILY (tests/dpcore/synthesis/test_contract.py)",
}


def _dotted(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def mirror_test(module: Path, root: Path = REPO) -> Path:
    """The test module of the code module at ``module``: its folders under ``tests/`` and
    ``test_`` before its name (``dpcore/privacy/ledger/store.py`` →
    ``tests/dpcore/privacy/ledger/test_store.py``). A package's ``__init__.py`` is mirrored by
    ``test_<package>.py`` in the package's folder, a ``__main__.py`` by ``test_main.py``."""
    rel = module.relative_to(root)
    name = rel.parent.name if rel.name == "__init__.py" else rel.stem.strip("_")
    return root / "tests" / rel.parent / f"test_{name}.py"


def _imports_module(test_path: Path, dotted: str) -> bool:
    tree = ast.parse(test_path.read_text(encoding="utf-8"), filename=str(test_path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == dotted for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == dotted or any(f"{node.module}.{a.name}" == dotted
                                            for a in node.names):
                return True
    return False


def _is_pure_reexport(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if path.name == "__main__.py":
        return len(body) <= 4  # docstring + at most three statements
    for i, node in enumerate(body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        dunder_all = (isinstance(node, ast.Assign)
                      and [ast.unparse(t) for t in node.targets] == ["__all__"])
        if not (docstring or dunder_all or isinstance(node, ast.Import | ast.ImportFrom)):
            return False
    return True


def _mirror_table(root: Path = REPO) -> dict[str, Path]:
    """dpcore module (path relative to ``root``, exemptions left out) → its mirror test path."""
    return {str(p.relative_to(root)): mirror_test(p, root)
            for p in sorted((root / "dpcore").rglob("*.py"))
            if str(p.relative_to(root)) not in EXEMPT}


def _shared_mirrors(table: dict[str, Path]) -> dict[Path, list[str]]:
    """Mirror test paths that two modules would claim (``x/__init__.py`` and ``x/x.py``)."""
    by_test: dict[Path, list[str]] = {}
    for module, test in table.items():
        by_test.setdefault(test, []).append(module)
    return {test: modules for test, modules in by_test.items() if len(modules) > 1}


def test_every_dpcore_module_has_its_own_test_module():
    missing = [f"{module} (write {test.relative_to(REPO)})"
               for module, test in _mirror_table().items() if not test.is_file()]
    assert not missing, "dpcore modules without a test module of their own:\n" + "\n".join(
        missing)


def test_no_two_dpcore_modules_share_a_test_path():
    shared = _shared_mirrors(_mirror_table())
    assert not shared, f"modules whose mirror test paths coincide (rename one): {shared}"


def test_each_mirror_test_module_imports_its_module():
    unrelated = [f"{test.relative_to(REPO)} does not import {_dotted(REPO / module)}"
                 for module, test in _mirror_table().items()
                 if test.is_file() and not _imports_module(test, _dotted(REPO / module))]
    assert not unrelated, "\n".join(unrelated)


def test_the_exemptions_are_still_exempt():
    stale = [m for m in EXEMPT if not (REPO / m).exists()]
    assert not stale, f"EXEMPT lists modules that no longer exist: {stale}"
    grown = [m for m in EXEMPT if not _is_pure_reexport(REPO / m)]
    assert not grown, f"these exempt modules now hold code, so they need tests: {grown}"


def test_no_test_module_is_left_at_the_top_of_tests():
    """A test belongs in the folder of what it tests: ``tests/<code path>/test_<module>.py``,
    or tests/app/ (AppTests), tests/browser/ (real browser), tests/repo/ (whole repository)."""
    strays = sorted(p.name for p in TESTS.iterdir()
                    if p.is_file() and p.name not in TESTS_TOP_LEVEL)
    assert not strays, f"move these into the folder of what they test: {strays}"


def test_every_test_folder_is_a_package():
    """Test modules of one name in two folders import as two modules only inside packages
    (pytest's default import mode); a folder without ``__init__.py`` breaks collection."""
    folders = {p.parent for p in TESTS.rglob("*.py")} | {TESTS}
    missing = sorted(str(f.relative_to(REPO)) for f in folders
                     if not (f / "__init__.py").is_file())
    assert not missing, f"test folders without an __init__.py: {missing}"


def test_the_mirror_path_follows_the_code():
    def mirror(p):
        return mirror_test(REPO / p).relative_to(REPO).as_posix()
    assert mirror("dpcore/privacy/ledger/store.py") == "tests/dpcore/privacy/ledger/test_store.py"
    assert mirror("dpcore/sequences/kernels.py") == "tests/dpcore/sequences/test_kernels.py"
    assert mirror("dpcore/redescriptions/kernels/__init__.py") == \
        "tests/dpcore/redescriptions/kernels/test_kernels.py"
    assert mirror("dpcore/__init__.py") == "tests/dpcore/test_dpcore.py"
    assert mirror("dpcore/__main__.py") == "tests/dpcore/test_main.py"
    probe = TESTS / "repo" / "test_layout.py"
    assert _imports_module(probe, "pytest") and not _imports_module(probe, "dpcore.cli")


def test_the_mirror_check_sees_a_missing_or_shared_test(tmp_path):
    for module in ("dpcore/x/store.py", "dpcore/x/kernels.py", "dpcore/y/kernels.py",
                   "dpcore/y/__init__.py", "dpcore/y/y.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text('"""m"""\n', encoding="utf-8")
    for test in ("tests/dpcore/x/test_store.py", "tests/dpcore/x/test_kernels.py",
                 "tests/dpcore/test_kernels.py"):     # a flat name mirrors no kernels.py
        (tmp_path / test).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / test).write_text("", encoding="utf-8")
    table = _mirror_table(tmp_path)
    present = {m for m, test in table.items() if test.is_file()}
    assert present == {"dpcore/x/store.py", "dpcore/x/kernels.py"}
    assert set(table) - present == {"dpcore/y/kernels.py", "dpcore/y/__init__.py",
                                    "dpcore/y/y.py"}
    assert _shared_mirrors(table) == {
        tmp_path / "tests/dpcore/y/test_y.py": ["dpcore/y/__init__.py", "dpcore/y/y.py"]}


# ------------------------------------------------------------ import graph

def _module_name(path: Path) -> str:
    return _dotted(path)


def _top_level_imports(path: Path, known: set[str]) -> set[str]:
    """dpcore modules ``path`` imports at module level, ``if TYPE_CHECKING:`` blocks included
    (a type checker follows them); function-level imports run only when called, after every
    module is loaded, so they are left out. ``from pkg import name`` counts ``pkg.name`` when
    that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    out: set[str] = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                out.add(base)
                out.update(f"{base}.{a.name}" for a in node.names)

    visit(tree.body)
    # Importing a.b.c imports a and a.b first; a module's own ancestor packages are being
    # imported already when it runs, so they are edges only when named explicitly.
    ancestors = {".".join(own.split(".")[:i]) for i in range(1, own.count(".") + 1)}
    closed = set(out)
    for name in out:
        parts = name.split(".")
        closed.update(p for p in (".".join(parts[:i]) for i in range(1, len(parts)))
                      if p not in ancestors)
    return {m for m in closed if m in known and m != own}


def _import_graph(root: Path = REPO, package: str = "dpcore") -> dict[str, set[str]]:
    paths = sorted((root / package).rglob("*.py"))
    known = {_dotted(p, root) for p in paths}
    return {_dotted(p, root): _top_level_imports(p, known) for p in paths}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module names, first repeated last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_dpcore_has_no_import_cycle():
    graph = _import_graph()
    assert len(graph) > 100
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_components_have_no_import_cycle():
    graph = _import_graph(package="components")
    assert len(graph) > 40
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle)


#: The family folders of components/: their code is reached from common/ only through
#: the FamilyUI binding (components.common.family_ui, at call time), never imported there.
COMPONENT_FAMILIES = ("components.redescriptions", "components.sequences",
                      "components.synthesis")


def test_common_components_import_no_family_folder():
    graph = _import_graph(package="components")
    offenders = {m: sorted(i for i in imports if i.startswith(COMPONENT_FAMILIES))
                 for m, imports in graph.items() if m.startswith("components.common")}
    offenders = {m: i for m, i in offenders.items() if i}
    assert not offenders, f"components/common imports family folders: {offenders}"
    # and the graph does see an edge into a family folder where there is one
    assert "components.common.family_ui" in graph["components.redescriptions.ui"]


def test_the_cycle_finder_sees_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: The layers below the run path: they receive plans, schemas, types and data, and never
#: reach a mining family's code themselves.
BELOW_THE_RUN_PATH = ("dpcore/data", "dpcore/privacy")
FAMILY_CODE = ("dpcore.redescriptions", "dpcore.sequences", "dpcore.synthesis",
               "dpcore.family", "dpcore.executor", "dpcore.runs")

def _reaches_family_code(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""]
            found += [n for n in names if any(n == f or n.startswith(f + ".")
                                              for f in FAMILY_CODE)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            # spec.resolve("miner") (a registry name → code), or importlib by family name
            if node.func.attr == "resolve" or (
                    node.func.attr == "import_module"
                    and node.args[0].value.startswith(FAMILY_CODE)):
                found.append(ast.unparse(node))
    return found


def test_no_module_below_the_run_path_imports_or_resolves_family_code():
    offenders = {}
    for folder in BELOW_THE_RUN_PATH:
        for path in sorted((REPO / folder).rglob("*.py")):
            key = str(path.relative_to(REPO))
            hits = _reaches_family_code(path)
            if hits:
                offenders[key] = hits
    assert not offenders, f"modules below the run path reach family code: {offenders}"


def test_the_layer_scan_sees_an_import_and_a_resolve(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from dpcore.sequences.miner import x\n"
                     "    return spec.resolve('miner')\n")
    assert len(_reaches_family_code(probe)) == 2
