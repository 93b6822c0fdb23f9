"""dpcore.redescriptions.kernels.layout: heap shapes, row routing and the leaf contingency
table, checked against a plain-Python walk down the tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.kernels.layout import (
    ABSENT,
    END,
    LEAF,
    MISSING,
    NCHILD,
    SPLIT,
    START,
    child_of,
    contingency,
    count_internal,
    internal_nodes,
    leaf_rows_for_codes,
    mark_absent,
    node_depths,
    subtree_leaves,
    tree_capacity,
)
from dpcore.redescriptions.trees import cands_matrix
from dpcore.redescriptions.warmup import tiny_dataset
from tests.support.row_chains_reference import mcmc_single_tree

DEPTH = 2


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.integers(2, 6), st.integers(0, 4))
def test_capacity_and_depths(fanout, depth):
    cap = tree_capacity(fanout, depth)
    assert cap == sum(fanout**k for k in range(depth + 1))
    depths = node_depths(fanout, depth)
    assert depths.shape == (cap,)
    assert np.bincount(depths).tolist() == [fanout**k for k in range(depth + 1)]
    for u in range(1, cap):                               # a child is one deeper
        assert depths[u] == depths[(u - 1) // fanout] + 1


@pytest.fixture(scope="module")
def tree():
    data = tiny_dataset(n_rows=200, seed=5)
    data.views[0].values[2, :6] = np.nan                  # missing x1 values
    coded = code_view_strict(data.schema, data.views[0])
    cands = cands_matrix(coded)
    f, n = coded.fanout, data.n_rows
    nodes = np.zeros((4, tree_capacity(f, DEPTH)), np.int64)
    perm, leaf = np.empty(n, np.int64), np.empty(n, np.int64)
    y = data.views[0].values[0].astype(np.int64)
    mcmc_single_tree(coded.codes, cands, y, 2, f, node_depths(f, DEPTH), DEPTH, nodes, perm,
                     leaf, 1.0, 30, False, 1e-9, 10, 0, np.random.default_rng(2),
                     np.zeros(30))
    return coded, cands, nodes, perm, leaf


def _walk(coded, cands, nodes, r):
    u = 0
    while nodes[SPLIT, u] >= 0:
        c = child_of(coded.codes, cands, nodes[SPLIT, u], r)
        if c < 0:
            return -1
        u = coded.fanout * u + 1 + c
    return u


def test_child_of_is_missing_aware(tree):
    coded, cands, *_ = tree
    for s in range(cands.shape[1]):
        a = cands[0, s]
        for r in range(0, coded.codes.shape[1], 7):
            c = child_of(coded.codes, cands, s, r)
            if coded.codes[a, r] == MISSING:
                assert c == -1
            else:
                assert 0 <= c < cands[NCHILD, s]


def test_routing_and_the_row_ranges_of_leaves(tree):
    coded, cands, nodes, perm, leaf = tree
    n = coded.codes.shape[1]
    walked = np.array([_walk(coded, cands, nodes, r) for r in range(n)])
    assert np.array_equal(leaf_rows_for_codes(coded.codes, cands, coded.fanout, nodes, n), walked)
    for u in subtree_leaves(0, nodes, coded.fanout):
        rows = perm[nodes[START, u]:nodes[END, u]]
        assert sorted(rows.tolist()) == np.flatnonzero(walked == u).tolist()
    assert sorted(subtree_leaves(0, nodes, coded.fanout).tolist()) == \
        np.flatnonzero(nodes[SPLIT] == LEAF).tolist()
    assert count_internal(nodes) == len(internal_nodes(nodes)) == \
        int((nodes[SPLIT] >= 0).sum())


def test_mark_absent_clears_a_whole_subtree(tree):
    coded, _, nodes, *_ = tree
    copy = nodes.copy()
    mark_absent(0, copy, coded.fanout)
    assert (copy[SPLIT] == ABSENT).all()


def test_contingency_counts_rows_in_both_leaves():
    rng = np.random.default_rng(0)
    leaf_l = rng.integers(-1, 3, 500)
    leaf_r = rng.integers(-1, 4, 500)
    compact_l = np.array([2, 0, 1], np.int64)            # heap leaf → row of the table
    compact_r = np.array([3, 1, 0, 2], np.int64)
    table = contingency(leaf_l, leaf_r, compact_l, compact_r, 3, 4)
    both = (leaf_l >= 0) & (leaf_r >= 0)
    expected = np.zeros((3, 4), np.int64)
    np.add.at(expected, (compact_l[leaf_l[both]], compact_r[leaf_r[both]]), 1)
    assert np.array_equal(table, expected)
