"""The strict-mode bitset chains must be the row-based chains, bit for bit.

Both implementations draw the same proposals from the same random stream, so
with one seed they must visit the same trees and record the same score trace
(to float rounding). The row-based kernels are themselves checked against
naive references in test_kernels.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.trees import cands_matrix, child_bitsets

SEED = int(os.environ.get("DPRM_TEST_SEED", "11"))
DEPTH = 3


def mixed_dataset(n_rows: int, seed: int) -> TwoViewDataset:
    """Boolean, 3-category (multiway) and 6-category (one-vs-rest) attributes, missing values."""
    rng = np.random.default_rng(seed)
    left = np.vstack([(rng.random((4, n_rows)) < 0.4).astype(float),
                      rng.integers(0, 3, (1, n_rows)).astype(float),
                      rng.integers(0, 6, (1, n_rows)).astype(float)])
    left[0, rng.random(n_rows) < 0.05] = np.nan
    right = rng.random((3, n_rows)) * 10
    right[1, rng.random(n_rows) < 0.05] = np.nan
    attrs = [Attribute(f"B{i}", 0, "boolean") for i in range(4)]
    attrs += [Attribute("C3", 0, "categorical", categories=("x", "y", "z")),
              Attribute("C6", 0, "categorical", categories=tuple("abcdef"))]
    attrs += [Attribute(f"N{i}", 1, "numeric", domain=(0.0, 10.0)) for i in range(3)]
    schema = Schema("mixed", tuple(attrs), (ViewSpec("l"), ViewSpec("r")), grid_bins=8)
    return TwoViewDataset.from_arrays(schema, left, right)


@pytest.fixture(scope="module")
def coded():
    ds = mixed_dataset(700, SEED)
    return [code_view_strict(ds.schema, v) for v in ds.views], ds


def test_popcount_matches_python():
    rng = np.random.default_rng(SEED)
    words = rng.integers(0, 2**63, 200, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    assert [int(B.popcount(w)) for w in words] == [bin(int(w)).count("1") for w in words]
    assert B.count_bits(words) == sum(bin(int(w)).count("1") for w in words)


def test_child_bitsets_match_row_routing(coded):
    (cl, cr), ds = coded
    for c in (cl, cr):
        bits, offset = child_bitsets(c)
        cands = cands_matrix(c)
        for s in range(c.n_candidates):
            for child in range(int(cands[K.NCHILD, s])):
                want = [r for r in range(ds.n_rows) if K.child_of(c.codes, cands, s, r) == child]
                row = bits[offset[s] + child]
                got = [r for r in range(ds.n_rows) if (int(row[r >> 6]) >> (r & 63)) & 1]
                assert got == want, f"candidate {s} child {child} (seed {SEED})"


def _classes(ds, n_classes=3):
    return np.random.default_rng(SEED).integers(0, n_classes, ds.n_rows).astype(np.int64)


@pytest.mark.parametrize("epsilon", [0.01, 3.0, 500.0])
@pytest.mark.parametrize("rep", range(3))
@pytest.mark.parametrize("view", [1, 0])
def test_single_tree_chain_is_identical(coded, epsilon, rep, view):
    """View 1: numeric only (every move symmetric). View 0: a 3-category multiway split,
    so moves that change the number of children use the Hastings ratio."""
    cr = coded[0][view]
    ds = coded[1]
    y = _classes(ds)
    out = []
    for path in ("rows", "bits"):
        rng = np.random.default_rng(SEED + rep)
        nodes = np.zeros((4, K.tree_capacity(cr.fanout, DEPTH)), np.int64)
        trace = np.zeros(800)
        depths = K.node_depths(cr.fanout, DEPTH)
        if path == "rows":
            n = ds.n_rows
            K.mcmc_single_tree(cr.codes, cands_matrix(cr), y, 3, cr.fanout, depths, DEPTH,
                               nodes, np.empty(n, np.int64), np.empty(n, np.int64), epsilon,
                               800, False, 1e-9, 10, 0, rng, trace)
        else:
            bits, offset = child_bitsets(cr)
            B.mcmc_single_tree_bits(cands_matrix(cr), bits, offset, y, 3, ds.n_rows,
                                    cr.fanout, depths, DEPTH, nodes, epsilon, 800, rng, trace)
        out.append((nodes[K.SPLIT].copy(), trace))
    assert np.array_equal(out[0][0], out[1][0]), f"seed {SEED + rep}, view {view}"
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=0, atol=1e-8)


@pytest.mark.parametrize("epsilon", [0.01, 3.0, 500.0])
@pytest.mark.parametrize("rep", range(3))
def test_tree_pair_chain_is_identical(coded, epsilon, rep):
    (cl, cr), ds = coded
    y = _classes(ds, 4)
    out = []
    n = ds.n_rows
    d1, d2 = K.node_depths(cl.fanout, DEPTH), K.node_depths(cr.fanout, DEPTH)
    for path in ("rows", "bits"):
        rng = np.random.default_rng(SEED + rep)
        n1 = np.zeros((4, K.tree_capacity(cl.fanout, DEPTH)), np.int64)
        n2 = np.zeros((4, K.tree_capacity(cr.fanout, DEPTH)), np.int64)
        trace = np.zeros(800)
        if path == "rows":
            K.mcmc_tree_pair(cl.codes, cands_matrix(cl), cl.fanout, d1, n1,
                             np.empty(n, np.int64), np.empty(n, np.int64),
                             cr.codes, cands_matrix(cr), cr.fanout, d2, n2,
                             np.empty(n, np.int64), np.empty(n, np.int64),
                             y, 4, DEPTH, epsilon, 800, False, 1e-9, 10, 0, rng, trace)
        else:
            b1, o1 = child_bitsets(cl)
            b2, o2 = child_bitsets(cr)
            B.mcmc_tree_pair_bits(cands_matrix(cl), b1, o1, cl.fanout, d1, n1,
                                  cands_matrix(cr), b2, o2, cr.fanout, d2, n2,
                                  y, 4, n, DEPTH, epsilon, 800, rng, trace)
        out.append((n1[K.SPLIT].copy(), n2[K.SPLIT].copy(), trace))
    assert np.array_equal(out[0][0], out[1][0]), f"seed {SEED + rep}"
    assert np.array_equal(out[0][1], out[1][1]), f"seed {SEED + rep}"
    np.testing.assert_allclose(out[0][2], out[1][2], rtol=0, atol=1e-12)
