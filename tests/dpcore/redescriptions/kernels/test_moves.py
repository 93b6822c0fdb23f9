"""dpcore.redescriptions.kernels.moves: which splits a node may take, the proposals, and the
structural move, checked against plain scans of the candidates on chain-built trees."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.kernels.layout import (
    ABSENT,
    GROW,
    LEAF,
    NCHILD,
    SPLIT,
    internal_nodes,
    node_depths,
    tree_capacity,
)
from dpcore.redescriptions.kernels.moves import (
    apply_move,
    propose_move,
    random_split,
    replace_split,
    used_on_path,
    useful_at,
    valid_move,
)
from dpcore.redescriptions.trees import cands_matrix
from dpcore.redescriptions.warmup import tiny_dataset
from tests.support.row_chains_reference import mcmc_single_tree

DEPTH = 3


def _trees(view, count=4):
    data = tiny_dataset(n_rows=200, seed=9)
    coded = code_view_strict(data.schema, data.views[view])
    cands = cands_matrix(coded)
    f, n = coded.fanout, data.n_rows
    y = data.views[0].values[0].astype(np.int64)
    out = []
    for seed in range(count):
        nodes = np.zeros((4, tree_capacity(f, DEPTH)), np.int64)
        mcmc_single_tree(coded.codes, cands, y, 2, f, node_depths(f, DEPTH), DEPTH, nodes,
                         np.empty(n, np.int64), np.empty(n, np.int64), 0.5, 25, False, 1e-9,
                         10, 0, np.random.default_rng(seed), np.zeros(25))
        out.append(nodes)
    return coded, cands, out


def _ancestors(u, f):
    while u > 0:
        u = (u - 1) // f
        yield u


@pytest.mark.parametrize("view", [0, 1])
def test_used_on_path_is_the_ancestors_splits(view):
    coded, cands, trees = _trees(view)
    f = coded.fanout
    for nodes in trees:
        for u in np.flatnonzero(nodes[SPLIT] != ABSENT):
            on_path = {int(nodes[SPLIT, a]) for a in _ancestors(int(u), f)}
            for s in range(cands.shape[1]):
                assert used_on_path(int(u), s, nodes, f) == (s in on_path)


@pytest.mark.parametrize("view", [0, 1])
def test_chain_trees_never_reuse_a_split_or_leave_a_useless_one(view):
    coded, cands, trees = _trees(view)
    f = coded.fanout
    for nodes in trees:
        for u in internal_nodes(nodes):
            s = int(nodes[SPLIT, u])
            assert not used_on_path(int(u), s, nodes, f)
            assert useful_at(int(u), s, nodes, cands, f)


@pytest.mark.parametrize("view", [0, 1])
def test_random_split_and_propose_move_draw_allowed_splits(view):
    coded, cands, trees = _trees(view)
    f = coded.fanout
    rng = np.random.default_rng(3)
    for nodes in trees:
        for u in np.flatnonzero(nodes[SPLIT] != ABSENT):
            u = int(u)
            allowed = [s for s in range(cands.shape[1])
                       if not used_on_path(u, s, nodes, f) and useful_at(u, s, nodes, cands, f)]
            for _ in range(5):
                s = random_split(u, nodes, cands, f, rng)
                assert (s in allowed) if allowed else s == -1
        for _ in range(20):
            h, s = propose_move(nodes, cands, f, rng)
            assert h in set(internal_nodes(nodes).tolist())
            assert valid_move(h, s, nodes, cands, f)


def test_replace_split_keeps_common_children_and_grows_new_ones():
    coded, cands, trees = _trees(0)
    f = coded.fanout
    nchild = cands[NCHILD]
    wide = np.flatnonzero(nchild == nchild.max())
    narrow = np.flatnonzero(nchild == 2)
    assert nchild.max() == 3 and wide.size and narrow.size
    nodes = np.full((4, tree_capacity(f, DEPTH)), ABSENT, np.int64)
    nodes[SPLIT, 0] = narrow[0]
    nodes[SPLIT, 1], nodes[SPLIT, 2] = LEAF, LEAF
    replace_split(0, int(wide[0]), nodes, cands, f)
    assert nodes[SPLIT, 0] == wide[0] and nodes[SPLIT, 1:4].tolist() == [LEAF, LEAF, GROW]
    replace_split(0, int(narrow[0]), nodes, cands, f)
    assert nodes[SPLIT, 1:4].tolist() == [LEAF, LEAF, ABSENT]


def test_apply_move_saves_the_old_tree_and_grows_to_full_depth():
    coded, cands, trees = _trees(0, count=2)
    f = coded.fanout
    rng = np.random.default_rng(5)
    depth_of = node_depths(f, DEPTH)
    for nodes in trees:
        h, s = propose_move(nodes, cands, f, rng)
        before = nodes.copy()
        saved = np.empty_like(nodes)
        dummy = np.empty(1, np.int64)
        apply_move(h, s, nodes, saved, cands, f, depth_of, DEPTH, rng, False, dummy,
                   coded.codes, dummy, 0)
        assert np.array_equal(saved, before) and nodes[SPLIT, h] == s
        assert not (nodes[SPLIT] == GROW).any()   # strict growth fills every GROW node
