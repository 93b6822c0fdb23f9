"""inner_njit: kernels call the wrapper-less compile, Python calls a twin with wrappers, and
the miners' Python entry points are never inner (their twin would be a second compile)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions import trees
from dpcore.redescriptions.kernels.inner import TWIN_SUFFIX, InnerDispatcher, inner_njit


@inner_njit
def _weighted(a, w):
    total = 0.0
    for i in range(a.size):
        total += a[i] * w
    return total


@njit(cache=True)
def _caller(a, w):
    return _weighted(a, w) + 1.0


def test_a_kernel_calls_the_wrapperless_compile_and_python_a_twin():
    a = np.arange(5, dtype=np.float64)
    assert _caller(a, 2.0) == 21.0
    inner_sigs = list(_weighted.overloads)
    assert len(inner_sigs) == 1
    assert _weighted.targetoptions["no_cpython_wrapper"]
    assert _weighted.targetoptions["no_cfunc_wrapper"]
    # From Python: same value through the twin, which has its wrappers and its own name
    # (numba's cache would otherwise hand it the wrapper-less machine code).
    assert _weighted(a, 2.0) == 20.0
    twin = _weighted.from_python
    assert twin is _weighted.from_python
    assert twin.py_func.__qualname__ == "_weighted" + TWIN_SUFFIX
    assert not twin.targetoptions.get("no_cpython_wrapper", False)
    assert inner_sigs[0] in twin.overloads
    assert list(_weighted.overloads) == inner_sigs  # the Python call compiled nothing here


def test_inner_kernels_are_still_recognised_by_numba_in_other_kernels():
    nodes = np.full((4, 7), K.ABSENT, dtype=np.int64)
    nodes[K.SPLIT, 0] = 0
    nodes[K.SPLIT, 1] = K.LEAF
    nodes[K.SPLIT, 2] = K.LEAF
    assert isinstance(K.internal_nodes, InnerDispatcher)
    assert list(K.internal_nodes(nodes)) == [0]
    assert K.count_internal(nodes) == 1


@pytest.mark.parametrize("name", ["candidate_child_bits", "mcmc_single_tree_bits",
                                  "mcmc_tree_pair_bits", "mcmc_single_tree_faithful_bits",
                                  "mcmc_tree_pair_faithful_bits"])
def test_the_chains_python_entry_points_keep_their_wrappers(name):
    assert not isinstance(getattr(B, name), InnerDispatcher)


def test_every_kernel_trees_calls_from_python_keeps_its_wrappers():
    import ast
    import inspect

    source = ast.parse(inspect.getsource(trees))
    called = {(node.value.id, node.attr) for node in ast.walk(source)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in ("B", "K")}
    modules = {"B": B, "K": K}
    inner = [f"{mod}.{attr}" for mod, attr in sorted(called)
             if isinstance(getattr(modules[mod], attr), InnerDispatcher)]
    assert len(called) > 8
    assert not inner, f"called from Python by trees.py, so not inner_njit: {inner}"
