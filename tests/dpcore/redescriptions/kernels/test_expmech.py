"""dpcore.redescriptions.kernels.expmech: split utilities against a plain Gini computation,
and createDTExpMech's tree (argmax split at a huge ε, rows routed consistently)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.kernels.expmech import expmech_tree, split_utilities
from dpcore.redescriptions.kernels.layout import (
    LEAF,
    NCHILD,
    SPLIT,
    child_of,
    init_tree,
    leaf_rows_for_codes,
    node_depths,
    tree_capacity,
)
from dpcore.redescriptions.trees import attribute_candidate_ranges, cands_matrix
from dpcore.redescriptions.warmup import tiny_dataset

N_CLASSES, DEPTH = 3, 2


@pytest.fixture(scope="module")
def view():
    data = tiny_dataset(n_rows=300, seed=8)
    data.views[1].values[1, :10] = np.nan
    coded = code_view_strict(data.schema, data.views[1])
    x1 = data.views[0].values[2]
    y = np.digitize(x1, [3.5, 7.0]).astype(np.int64)      # classes the right view predicts
    first, last = attribute_candidate_ranges(coded)
    return coded, cands_matrix(coded), y, first, last


def _plain_utility(coded, cands, s, y):
    by_child = {}
    for r in range(coded.codes.shape[1]):
        c = child_of(coded.codes, cands, s, r)
        if c >= 0:
            by_child.setdefault(c, []).append(y[r])
    total = 0.0
    for labels in by_child.values():
        counts = np.bincount(labels, minlength=N_CLASSES)
        n = counts.sum()
        total -= n - (counts**2).sum() / n
    return total


def test_root_utilities_are_minus_size_weighted_gini(view):
    coded, cands, y, first, last = view
    n = coded.codes.shape[1]
    nodes = np.zeros((4, tree_capacity(coded.fanout, DEPTH)), np.int64)
    perm, leaf = np.empty(n, np.int64), np.empty(n, np.int64)
    init_tree(nodes, perm, leaf, n)
    util = split_utilities(0, nodes, perm, coded.codes, cands, first, last, coded.n_codes, y,
                           N_CLASSES, coded.fanout)
    assert util.shape == (cands.shape[1],)
    for s in range(cands.shape[1]):
        assert util[s] == pytest.approx(_plain_utility(coded, cands, s, y)), s


def test_a_huge_epsilon_picks_the_best_split_and_routes_every_row(view):
    coded, cands, y, first, last = view
    n, f = coded.codes.shape[1], coded.fanout
    nodes = np.zeros((4, tree_capacity(f, DEPTH)), np.int64)
    perm, leaf = np.empty(n, np.int64), np.empty(n, np.int64)
    per_level = expmech_tree(coded.codes, cands, first, last, coded.n_codes, y, N_CLASSES, f,
                             node_depths(f, DEPTH), DEPTH, nodes, perm, leaf,
                             np.array([1e6, 1e6]), np.random.default_rng(0))
    best = max(_plain_utility(coded, cands, s, y) for s in range(cands.shape[1]))
    root = nodes[SPLIT, 0]
    assert root >= 0 and _plain_utility(coded, cands, root, y) == pytest.approx(best)
    assert per_level[0] == 1 and per_level[1] == cands[NCHILD, root]
    assert np.array_equal(leaf, leaf_rows_for_codes(coded.codes, cands, f, nodes, n))
    assert all(nodes[SPLIT, u] == LEAF for u in np.unique(leaf[leaf >= 0]))


def test_the_tree_repeats_under_a_seed(view):
    coded, cands, y, first, last = view
    n, f = coded.codes.shape[1], coded.fanout

    def grow(seed):
        nodes = np.zeros((4, tree_capacity(f, DEPTH)), np.int64)
        expmech_tree(coded.codes, cands, first, last, coded.n_codes, y, N_CLASSES, f,
                     node_depths(f, DEPTH), DEPTH, nodes, np.empty(n, np.int64),
                     np.empty(n, np.int64), np.array([0.5, 0.5]), np.random.default_rng(seed))
        return nodes
    assert np.array_equal(grow(4), grow(4))
