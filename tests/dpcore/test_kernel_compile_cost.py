"""What the numba kernels cost to compile (issue 32: a cold start paid 25 s of CPU).

Three source patterns made numba compile far more than the code needs; these checks read the
kernels' source (no compile, milliseconds) and name the line that brings one back:

* a slice assignment of an array (``a[:] = b``, ``a[i, :] = b[j]``) inside a kernel: numba
  lowers each site into its own broadcasting copy whose shape check compiles string
  formatting (about 0.3 s of cold compile per site); a loop, or ``layout.copy_1d`` /
  ``copy_2d``, costs almost nothing (a scalar fill such as ``a[:] = 0`` is cheap and allowed);
* a kernel called with a literal int or bool at some call sites and a variable (or another
  literal) at others at the same position: numba types a literal argument as ``Literal[..]``
  and compiles the callee, and everything it calls, once more;
* a reduction along an axis (``t.sum(axis=1)``): numba's axis check formats its error
  message with the axis number, which compiles string formatting (seconds of the
  intervals' kernel's cold compile, issue 32); loops do not.

The row-based reference chains live under tests/ (``row_chains_reference.py``) and are not
checked: only the tests compile them.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DPCORE = REPO / "dpcore"


def _is_njit(node: ast.FunctionDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit", "inner_njit"):
            return True
    return False


def _kernels(sources: dict[Path, str]) -> dict[Path, list[ast.FunctionDef]]:
    out = {}
    for path, text in sources.items():
        tree = ast.parse(text)
        out[path] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _is_njit(n)]
    return out


def _dpcore_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(DPCORE.rglob("*.py"))
            if "njit" in p.read_text(encoding="utf-8")}


def _scalar(value: ast.expr) -> bool:
    if isinstance(value, ast.UnaryOp):
        value = value.operand
    return isinstance(value, ast.Constant) or (isinstance(value, ast.Name)
                                               and value.id.isupper())


def _has_slice(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Slice) for p in parts)


def slice_assignments(sources: dict[Path, str]) -> list[str]:
    """``file:line`` of every array slice assignment of a non-scalar inside a kernel."""
    found = []
    for path, kernels in _kernels(sources).items():
        for kernel in kernels:
            for node in ast.walk(kernel):
                if isinstance(node, ast.Assign | ast.AugAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if (isinstance(t, ast.Subscript) and _has_slice(t.slice)
                                and not _scalar(node.value)):
                            found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def mixed_literal_arguments(sources: dict[Path, str]) -> list[str]:
    """Kernel × argument positions passed a literal int/bool at one call site and something
    else at another (each such position compiles the callee twice)."""
    kernels = _kernels(sources)
    names = defaultdict(list)
    for path, defs in kernels.items():
        for d in defs:
            names[d.name].append(path)
    seen: dict[tuple, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, defs in kernels.items():
        for kernel in defs:
            for node in ast.walk(kernel):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in names):
                    continue
                owners = names[node.func.id]
                key = (node.func.id, path if path in owners or len(owners) > 1 else owners[0])
                for i, arg in enumerate(node.args):
                    kind = (repr(arg.value) if isinstance(arg, ast.Constant)
                            and isinstance(arg.value, bool | int) else "a variable")
                    seen[(key, i)][kind].append(f"{path.relative_to(REPO)}:{node.lineno}")
    return [f"{name} argument {i + 1}: " + "; ".join(f"{kind} at {', '.join(sites)}"
                                                     for kind, sites in kinds.items())
            for ((name, _), i), kinds in seen.items()
            if len(kinds) > 1 and any(k != "a variable" for k in kinds)]


_REDUCTIONS = {"sum", "prod", "max", "min", "mean", "argmax", "argmin", "any", "all", "std",
               "var", "cumsum"}


def axis_reductions(sources: dict[Path, str]) -> list[str]:
    """``file:line`` of every reduction along an axis inside a kernel."""
    found = []
    for path, kernels in _kernels(sources).items():
        for kernel in kernels:
            for node in ast.walk(kernel):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in _REDUCTIONS
                        and (node.args or any(k.arg == "axis" for k in node.keywords))):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_kernel_reduces_along_an_axis():
    found = axis_reductions(_dpcore_sources())
    assert not found, f"reductions along an axis in kernels (write the loop): {found}"


def test_no_kernel_assigns_an_array_to_a_slice():
    found = slice_assignments(_dpcore_sources())
    assert not found, ("slice assignments in kernels (use a loop or kernels.layout.copy_1d / "
                       f"copy_2d): {found}")


def test_no_kernel_is_called_with_a_literal_at_some_sites_only():
    found = mixed_literal_arguments(_dpcore_sources())
    assert not found, ("pass np.int64(..) / np.bool_(..) so one specialisation serves every "
                       "call:\n" + "\n".join(found))


def test_the_checks_see_what_they_look_for():
    source = '''
from numba import njit

@inner_njit
def helper(h, flag, a):
    return h

@njit(cache=True)
def chain(a, b, h):
    a[:] = b
    a[0, :] = b[1]
    a[:] = 0
    a[:, 1] = -ABSENT
    helper(0, False, a)
    helper(h, False, a)
    helper(h, True, a)
    return helper(h, np.bool_(True), a)

@njit(cache=True)
def seeds(t, h):
    row = t.sum(axis=1)
    return helper(h, False, row) + t.sum()

def not_a_kernel(a, b):
    a[:] = b
    helper(0, 1, a)
    a.sum(axis=0)
'''
    sources = {DPCORE / "probe.py": source}
    assert slice_assignments(sources) == ["dpcore/probe.py:10", "dpcore/probe.py:11"]
    mixed = mixed_literal_arguments(sources)
    assert len(mixed) == 2
    assert mixed[0].startswith("helper argument 1: 0 at dpcore/probe.py:14; a variable at")
    assert mixed[1].startswith("helper argument 2: False at") and "True at" in mixed[1]
    assert axis_reductions(sources) == ["dpcore/probe.py:21"]
