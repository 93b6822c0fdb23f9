"""The complexity budget: no dpcore function is longer than 100 lines (def to last line,
docstring included), so a reader can hold each one; ruff's C901/PLR0912/PLR0915 (thresholds
in pyproject.toml) flag branching and statements the same way. The functions still over the
length when the budget came in are listed with their length then; each may only shrink, and
one that fits is taken off the list (the test says so)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 100

#: ``path::function`` → its length (lines) when the budget came in. Only shrinks.
STILL_LONG: dict[str, int] = {}


def function_lengths(root: Path) -> dict[str, int]:
    """``path::name`` → lines of every function (methods and nested ones included; the
    longest of a repeated name) in the ``.py`` files under ``root/dpcore``."""
    out: dict[str, int] = {}
    for path in sorted((root / "dpcore").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{path.relative_to(root).as_posix()}::{node.name}"
                out[key] = max(out.get(key, 0), node.end_lineno - node.lineno + 1)
    return out


def over_budget(lengths: dict[str, int], still_long: dict[str, int]) -> list[str]:
    """Why the budget fails: a new long function, a listed one that grew, a stale entry."""
    problems = [f"{name} has {n} lines (at most {MAX_LINES}): split it"
                for name, n in lengths.items() if n > MAX_LINES and name not in still_long]
    problems += [f"{name} grew to {lengths[name]} lines (listed at {n}): split it"
                 for name, n in still_long.items() if lengths.get(name, 0) > n]
    problems += [f"{name} now fits ({lengths.get(name, 0)} lines, or is gone): take it off "
                 "STILL_LONG" for name in still_long if lengths.get(name, 0) <= MAX_LINES]
    return problems


def test_no_dpcore_function_is_over_the_budget():
    lengths = function_lengths(REPO)
    assert len(lengths) > 500
    problems = over_budget(lengths, STILL_LONG)
    assert not problems, "\n".join(problems)


def test_the_budget_sees_a_long_function_a_grown_one_and_a_stale_entry(tmp_path):
    module = tmp_path / "dpcore" / "m.py"
    module.parent.mkdir()
    module.write_text("def short():\n    return 1\n\n\ndef long():\n"
                      + "    x = 1\n" * 120 + "    return x\n")
    lengths = function_lengths(tmp_path)
    assert lengths == {"dpcore/m.py::short": 2, "dpcore/m.py::long": 122}
    assert len(over_budget(lengths, {})) == 1
    assert "grew" in over_budget(lengths, {"dpcore/m.py::long": 110})[0]
    assert over_budget(lengths, {"dpcore/m.py::long": 122}) == []
    assert "take it off" in over_budget(lengths, {"dpcore/m.py::long": 122,
                                                  "dpcore/m.py::short": 130})[0]
