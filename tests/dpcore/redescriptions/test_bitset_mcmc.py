"""The strict-mode bitset chains must be the row-based chains, bit for bit.

Both implementations draw the same proposals from the same random stream, so
with one seed they must visit the same trees and record the same score trace
(to float rounding). The row-based kernels are themselves checked against
naive references in tests/dpcore/redescriptions/kernels/test_kernels.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions.coding import code_view_faithful, code_view_strict
from dpcore.redescriptions.trees import cands_matrix, child_bitsets
from tests.support import row_chains_reference as RC

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
            RC.mcmc_single_tree(cr.codes, cands_matrix(cr), y, 3, cr.fanout, depths, DEPTH,
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
            RC.mcmc_tree_pair(cl.codes, cands_matrix(cl), cl.fanout, d1, n1,
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


def test_pair_chain_subtracts_only_where_children_partition_the_rows(coded):
    """The pair chain gets a split's last child by subtraction (bitset and counts) only when
    the split's attribute has no missing value; both cases occur in this dataset, and
    test_tree_pair_chain_is_identical checks the chain through both."""
    (cl, cr), ds = coded
    seen = set()
    for c in (cl, cr):
        bits, offset = child_bitsets(c)
        cands = cands_matrix(c)
        root = B.all_rows(ds.n_rows)
        memo = np.full(int(cands[K.ATTR].max()) + 1, -1, dtype=np.int8)
        for s in range(c.n_candidates):
            want = not bool((c.codes[cands[K.ATTR, s]] == K.MISSING).any())
            assert B._whole(s, cands, bits, offset, root, memo) == want, f"candidate {s}"
            seen.add(want)
    assert seen == {True, False}


# --- Faithful mode: data-derived candidates, children built on demand -------------------

FAITHFUL_ITER = 1500


def correlated_dataset(n_rows: int, seed: int) -> TwoViewDataset:
    """:func:`mixed_dataset` with the right view following the left one (N0 from B1, N2
    from C3), so that faithful growth often meets pure nodes, in either view."""
    ds = mixed_dataset(n_rows, seed)
    rng = np.random.default_rng(seed)
    left = ds.views[0].values.copy()
    right = ds.views[1].values.copy()
    right[0] = 5.0 * left[1] + rng.random(n_rows) * 4.0
    right[2] = 3.0 * left[4] + rng.random(n_rows) * 2.5
    return TwoViewDataset.from_arrays(ds.schema, left, right)


@pytest.fixture(scope="module")
def coded_faithful():
    """Faithful codings (every distinct value of an 80 % sample is a threshold: hundreds of
    candidates per numeric attribute), with missing values, multiway and one-vs-rest
    categorical attributes."""
    ds = correlated_dataset(700, SEED + 1)
    rng = np.random.default_rng(SEED)
    return [code_view_faithful(v, rng) for v in ds.views], ds


def _faithful_classes(ds, rep):
    """Classes that both views can predict: B1, C3 (3 classes), B1 xor B2."""
    left = ds.views[0].values
    b1, b2, c3 = left[1].astype(np.int64), left[2].astype(np.int64), left[4].astype(np.int64)
    y = (b1, c3, b1 ^ b2)[rep]
    return np.ascontiguousarray(y), int(y.max()) + 1


def _stopping(case, sigma):
    """(σ, window): the σ rule may stop the chain early (``sigma``, a variance of scores
    that the chains reach after a few hundred iterations on this data), or (σ = 0) never."""
    return (sigma, 25) if case == "stops" else (0.0, 10)


@pytest.mark.parametrize("min_rows", [2, 10, 40])
@pytest.mark.parametrize("case", ["stops", "runs"])
@pytest.mark.parametrize("rep", range(3))
@pytest.mark.parametrize("view", [1, 0])
def test_faithful_single_tree_bits_is_the_row_chain(coded_faithful, min_rows, case, rep,
                                                    view):
    """The faithful bitset chain returns exactly the row chain's tree, trace, iteration
    count and rows touched (same draws, same integer counts, same float arithmetic)."""
    c = coded_faithful[0][view]
    ds = coded_faithful[1]
    y, n_classes = _faithful_classes(ds, rep)
    sigma, window = _stopping(case, 1.0)    # single-tree scores are in rows
    out = []
    for path in ("rows", "bits"):
        rng = np.random.default_rng(SEED + 7 * rep)
        nodes = np.zeros((4, K.tree_capacity(c.fanout, DEPTH)), np.int64)
        trace = np.zeros(FAITHFUL_ITER)
        stats = np.zeros(1, np.int64)
        depths = K.node_depths(c.fanout, DEPTH)
        if path == "rows":
            n = ds.n_rows
            done = RC.mcmc_single_tree(c.codes, cands_matrix(c), y, n_classes, c.fanout, depths,
                                      DEPTH, nodes, np.empty(n, np.int64),
                                      np.empty(n, np.int64), 2.0, FAITHFUL_ITER, True, sigma,
                                      window, min_rows, rng, trace, stats, False)
        else:
            done = B.mcmc_single_tree_faithful_bits(c.codes, cands_matrix(c), y, n_classes,
                                                    c.fanout, depths, DEPTH, nodes, 2.0,
                                                    FAITHFUL_ITER, sigma, window, min_rows,
                                                    rng, trace, stats)
        out.append((nodes[K.SPLIT].copy(), trace[:done].copy(), done, int(stats[0]),
                    float(rng.random())))
    rows, bits = out
    msg = f"seed {SEED}, rep {rep}, view {view}, {case}"
    assert np.array_equal(rows[0], bits[0]), msg
    assert rows[2] == bits[2], msg
    assert case == "stops" or rows[2] == FAITHFUL_ITER, msg
    assert np.array_equal(rows[1], bits[1]), msg          # bit for bit, not to rounding
    assert rows[3] == bits[3] and rows[4] == bits[4], msg  # rows touched; stream position
    assert (rows[0] >= 0).sum() >= 1, msg


@pytest.mark.parametrize("min_rows", [2, 10, 40])
@pytest.mark.parametrize("case", ["stops", "runs"])
@pytest.mark.parametrize("rep", range(3))
def test_faithful_tree_pair_bits_is_the_row_chain(coded_faithful, min_rows, case, rep):
    (cl, cr), ds = coded_faithful
    n = ds.n_rows
    y, n_classes = _faithful_classes(ds, rep)
    sigma, window = _stopping(case, 1e-6)   # the pair score is in [0, 1]
    out = []
    for first, second in ((cl, cr), (cr, cl)):
        d1 = K.node_depths(first.fanout, DEPTH)
        d2 = K.node_depths(second.fanout, DEPTH)
        for path in ("rows", "bits"):
            rng = np.random.default_rng(SEED + 7 * rep)
            n1 = np.zeros((4, K.tree_capacity(first.fanout, DEPTH)), np.int64)
            n2 = np.zeros((4, K.tree_capacity(second.fanout, DEPTH)), np.int64)
            trace = np.zeros(FAITHFUL_ITER)
            stats = np.zeros(1, np.int64)
            if path == "rows":
                done = RC.mcmc_tree_pair(first.codes, cands_matrix(first), first.fanout, d1,
                                        n1, np.empty(n, np.int64), np.empty(n, np.int64),
                                        second.codes, cands_matrix(second), second.fanout,
                                        d2, n2, np.empty(n, np.int64), np.empty(n, np.int64),
                                        y, n_classes, DEPTH, 5.0, FAITHFUL_ITER, True, sigma,
                                        window, min_rows, rng, trace, stats, False)
            else:
                done = B.mcmc_tree_pair_faithful_bits(
                    first.codes, cands_matrix(first), first.fanout, d1, n1,
                    second.codes, cands_matrix(second), second.fanout, d2, n2,
                    y, n_classes, DEPTH, 5.0, FAITHFUL_ITER, sigma, window, min_rows, rng,
                    trace, stats)
            out.append((n1[K.SPLIT].copy(), n2[K.SPLIT].copy(), trace[:done].copy(), done,
                        int(stats[0]), float(rng.random())))
    for rows, bits in (out[0:2], out[2:4]):
        msg = f"seed {SEED}, rep {rep}, {case}"
        assert np.array_equal(rows[0], bits[0]) and np.array_equal(rows[1], bits[1]), msg
        assert rows[3] == bits[3], msg
        assert case == "stops" or rows[3] == FAITHFUL_ITER, msg
        assert np.array_equal(rows[2], bits[2]), msg
        assert rows[4] == bits[4] and rows[5] == bits[5], msg


def test_split_bits_match_row_routing(coded_faithful):
    (cl, cr), ds = coded_faithful
    for c in (cl, cr):
        cands = cands_matrix(c)
        out = np.zeros((c.fanout, (ds.n_rows + 63) // 64), np.uint64)
        for s in np.random.default_rng(SEED).choice(c.n_candidates, min(60, c.n_candidates),
                                                     replace=False):
            B.split_bits(c.codes, cands, s, out)
            for child in range(int(cands[K.NCHILD, s])):
                want = [r for r in range(ds.n_rows) if K.child_of(c.codes, cands, s, r) == child]
                got = [r for r in range(ds.n_rows) if (int(out[child, r >> 6]) >> (r & 63)) & 1]
                assert got == want, f"candidate {s} child {child} (seed {SEED})"
