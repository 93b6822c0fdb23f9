"""dpcore.redescriptions.kernels.row_chains: the row-based chains keep their bookkeeping
(every row's leaf, the score trace) consistent with a fresh routing, repeat under a seed,
and faithful mode's stopping rule."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.kernels.layout import (
    LEAF,
    SPLIT,
    leaf_rows_for_codes,
    node_depths,
    tree_capacity,
)
from dpcore.redescriptions.trees import cands_matrix
from dpcore.redescriptions.warmup import tiny_dataset
from tests.support.row_chains_reference import mcmc_single_tree

DEPTH, N_CLASSES = 2, 3


def _view(seed=3, view=0):
    data = tiny_dataset(n_rows=240, seed=seed)
    coded = code_view_strict(data.schema, data.views[view])
    y = ((data.views[0].values[0] + data.views[0].values[1]) % N_CLASSES).astype(np.int64)
    return coded, cands_matrix(coded), y


def _chain(coded, cands, y, epsilon, iters, seed, faithful=False):
    f, n = coded.fanout, coded.codes.shape[1]
    nodes = np.zeros((4, tree_capacity(f, DEPTH)), np.int64)
    perm, leaf = np.empty(n, np.int64), np.empty(n, np.int64)
    trace = np.zeros(max(iters, 1))
    done = mcmc_single_tree(coded.codes, cands, y, N_CLASSES, f, node_depths(f, DEPTH), DEPTH,
                            nodes, perm, leaf, epsilon, iters, faithful, 1e-9, 10, 0,
                            np.random.default_rng(seed), trace)
    return done, nodes, perm, leaf, trace


def _score(leaf, y):
    score = 0.0
    for u in np.unique(leaf[leaf >= 0]):
        counts = np.bincount(y[leaf == u], minlength=N_CLASSES)
        n = counts.sum()
        score -= n - (counts**2).sum() / n
    return score


@pytest.mark.parametrize("epsilon", [0.05, 5.0])
def test_after_a_chain_every_row_sits_in_the_leaf_a_fresh_routing_gives(epsilon):
    coded, cands, y = _view()
    done, nodes, perm, leaf, trace = _chain(coded, cands, y, epsilon, 60, seed=1)
    assert done == 60
    fresh = leaf_rows_for_codes(coded.codes, cands, coded.fanout, nodes, coded.codes.shape[1])
    assert np.array_equal(leaf, fresh)
    assert all(nodes[SPLIT, u] == LEAF for u in np.unique(leaf[leaf >= 0]))
    assert sorted(perm.tolist()) == list(range(coded.codes.shape[1]))
    assert trace[-1] == pytest.approx(_score(leaf, y))


def test_a_seed_repeats_the_chain_and_another_seed_need_not():
    coded, cands, y = _view()
    a = _chain(coded, cands, y, 1.0, 40, seed=7)
    b = _chain(coded, cands, y, 1.0, 40, seed=7)
    assert np.array_equal(a[1], b[1]) and np.array_equal(a[4], b[4])
    others = [_chain(coded, cands, y, 1.0, 40, seed=s)[4] for s in range(8, 12)]
    assert any(not np.array_equal(t, a[4]) for t in others)


def test_a_large_epsilon_climbs():
    coded, cands, y = _view()
    scores = [_chain(coded, cands, y, 500.0, 80, seed=s)[4] for s in range(4)]
    assert all(t[-1] >= t[0] for t in scores)
