"""dpcore.redescriptions.kernels.hastings: the Metropolis–Hastings test accepts with
min(1, exp(ε·Δ/(2·Δs))·r), and the proposal ratio of a move is minus that of its reverse."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.kernels.hastings import (
    hastings_workspace,
    log_proposal_ratio,
    metropolis_hastings_accept,
    move_options,
    scores_stabilised,
)
from dpcore.redescriptions.kernels.layout import ABSENT, SPLIT, node_depths, tree_capacity
from dpcore.redescriptions.kernels.moves import apply_move, propose_move, valid_move
from dpcore.redescriptions.trees import cands_matrix
from dpcore.redescriptions.warmup import tiny_dataset
from tests.support.row_chains_reference import mcmc_single_tree

DEPTH = 3


def test_sure_accepts_and_sure_rejects():
    rng = np.random.default_rng(0)
    assert all(metropolis_hastings_accept(0.5, 1.0, 2.0, 0.0, rng) for _ in range(200))
    assert all(metropolis_hastings_accept(0.0, 1.0, 2.0, 0.3, rng) for _ in range(200))
    assert not any(metropolis_hastings_accept(5.0, 1.0, 2.0, -np.inf, rng) for _ in range(200))


@pytest.mark.parametrize("delta, eps, sens, log_r", [(-2.0, 1.0, 2.0, 0.0),
                                                     (-1.0, 2.0, 1.0, math.log(0.5)),
                                                     (1.0, 1.0, 1.0, math.log(0.2))])
def test_acceptance_rate(delta, eps, sens, log_r):
    p = min(1.0, math.exp(eps * delta / (2 * sens) + log_r))
    rng = np.random.default_rng(17)
    n = 4000
    accepted = sum(bool(metropolis_hastings_accept(delta, eps, sens, log_r, rng))
                   for _ in range(n))
    assert stats.binomtest(accepted, n, p).pvalue > 1e-4


def test_the_ratio_of_a_move_is_minus_that_of_its_reverse():
    data = tiny_dataset(n_rows=200, seed=12)
    coded = code_view_strict(data.schema, data.views[0])   # threshold, Boolean and multiway
    cands = cands_matrix(coded)
    f, n = coded.fanout, data.n_rows
    depth_of = node_depths(f, DEPTH)
    work = hastings_workspace(cands)
    no_tree = np.full((4, 1), ABSENT, dtype=np.int64)
    y = data.views[0].values[0].astype(np.int64)
    rng = np.random.default_rng(1)
    dummy = np.empty(1, np.int64)
    checked = nonzero = 0
    for seed in range(6):
        nodes = np.zeros((4, tree_capacity(f, DEPTH)), np.int64)
        mcmc_single_tree(coded.codes, cands, y, 2, f, depth_of, DEPTH, nodes,
                         np.empty(n, np.int64), np.empty(n, np.int64), 0.3, 20, False, 1e-9,
                         10, 0, np.random.default_rng(seed), np.zeros(20))
        for _ in range(10):
            h, s = propose_move(nodes, cands, f, rng)
            if h < 0:
                continue
            old_split = int(nodes[SPLIT, h])
            old = nodes.copy()
            new = nodes.copy()
            apply_move(h, s, new, np.empty_like(new), cands, f, depth_of, DEPTH, rng, False,
                       dummy, coded.codes, dummy, 0)
            forward = log_proposal_ratio(h, old, new, no_tree, cands, f, depth_of, DEPTH,
                                         True, work)
            assert valid_move(h, old_split, new, cands, f) or forward == -np.inf
            if forward == -np.inf:
                continue
            backward = log_proposal_ratio(h, new, old, no_tree, cands, f, depth_of, DEPTH,
                                          True, work)
            assert forward == pytest.approx(-backward, abs=1e-9)
            assert move_options(h, old, cands, f, work) >= 1
            checked += 1
            nonzero += forward != 0.0
    assert checked >= 20 and nonzero >= 1


def test_scores_stabilised():
    flat = np.full(10, 3.0)
    assert not scores_stabilised(flat, 9, 10, 0.1)       # not enough accepted yet
    assert scores_stabilised(flat, 10, 10, 0.1)
    spread = np.arange(10, dtype=float)   # sample variance 55/6 ≈ 9.17 (population 8.25)
    assert not scores_stabilised(spread, 50, 10, 9.0) and scores_stabilised(spread, 50, 10, 9.2)
    pair = np.array([0.0, 0.1])            # sample variance 0.005 (population 0.0025), as Weka
    assert not scores_stabilised(pair, 2, 2, 0.005) and scores_stabilised(pair, 2, 2, 0.0051)
