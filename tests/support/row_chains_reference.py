"""The row-based MCMC chains (createDTMCMC, sampleTreePair): the test suite's reference.

Not part of dpcore: no miner runs these chains, so they live with the tests and cost the
product no compile time.

Each iteration proposes a move (``moves.propose_move`` / ``moves.propose_pair_move``),
applies it (``moves.apply_move``), re-routes only the rows of the changed node
(``layout.relayout``: O(rows reaching the node), not O(rows)), rescores incrementally
(``scores``) and keeps or undoes it by the Metropolis–Hastings test
(``hastings.hastings_accept``). The miners run the same chains on row bitsets
(``dpcore.redescriptions.bitset_mcmc``, strict and faithful mode), drawing the same random
numbers in the same order; these row chains are the plain reference they are tested against
(and the chains of the kernel-level tests), 10–100× slower on faithful codings.

These kernels read true (coded) data; the ε of a chain is charged by ``trees.py`` before
it starts. The score traces they return are NOT private (owner diagnostics only).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpcore.redescriptions.kernels.hastings import (
    hastings_accept,
    hastings_workspace,
    scores_stabilised,
)
from dpcore.redescriptions.kernels.layout import (
    ABSENT,
    END,
    LEAF,
    SPLIT,
    START,
    init_tree,
    relayout,
    subtree_leaves,
)
from dpcore.redescriptions.kernels.moves import (
    apply_move,
    grow_structure,
    propose_move,
    propose_pair_move,
)
from dpcore.redescriptions.kernels.scores import (
    gini_contribution,
    pair_table,
    purity_contribution,
    purity_from_table,
)


@njit(cache=True, nogil=True)
def random_tree(h_rows, nodes, perm, leaf_of_row, codes, cands, fanout, depth_of, max_depth,
                faithful, y, min_rows, rng, stop_buf, pos_buf, offset, hist, do_hist):
    """A random tree over all rows (createDT* start): grow from a GROW root, then lay out."""
    init_tree(nodes, perm, leaf_of_row, h_rows)
    grow_structure(0, nodes, depth_of, max_depth, fanout, cands, rng, faithful, perm, codes,
                   y, min_rows)
    dummy_i = np.zeros(1, dtype=np.int64)
    dummy_t = np.zeros((1, 1), dtype=np.int64)
    relayout(0, nodes, perm, codes, cands, fanout, leaf_of_row, stop_buf, pos_buf, offset, y,
             hist, do_hist, dummy_i, dummy_t, dummy_i, 0, 0)


@njit(cache=True, nogil=True)
def mcmc_single_tree(codes, cands, y, n_classes, fanout, depth_of, max_depth, nodes, perm,
                     leaf_of_row, epsilon, mc_iter, faithful, sigma, window, min_rows, rng,
                     trace, stats=None, hastings=True):
    """createDTMCMC (Alg. 3): Metropolis–Hastings over trees, score −Σ_leaves |leaf|·gini,
    Δ = 2, acceptance min(1, exp(ε·ΔS/4)·q(T′→T)/q(T→T′))
    (``hastings.log_proposal_ratio``).

    Starts from a random tree of depth ``max_depth``. Strict: exactly ``mc_iter``
    iterations. Faithful: stops early when the variance of the last ``window``
    accepted scores is below ``sigma``. Returns the number of iterations run;
    ``trace[i]`` is the score after iteration ``i`` (not private). ``hastings=False``
    drops the proposal ratio (plain Metropolis, NOT the exponential mechanism): faithful
    mode passes it, as the paper and the authors' code accept with
    min(1, exp(ε·ΔS/4)) (docs/ALGORITHMS.md §4.3); strict mode never does.
    """
    n_rows = codes.shape[1]
    cap = nodes.shape[1]
    stop_buf = np.empty(n_rows, dtype=np.int64)
    pos_buf = np.empty(n_rows, dtype=np.int64)
    offset = np.zeros(cap, dtype=np.int64)
    hist = np.zeros((cap, n_classes), dtype=np.int64)
    no_i = np.zeros(1, dtype=np.int64)
    no_t = np.zeros((1, 1), dtype=np.int64)
    random_tree(n_rows, nodes, perm, leaf_of_row, codes, cands, fanout, depth_of, max_depth,
                faithful, y, min_rows, rng, stop_buf, pos_buf, offset, hist, True)
    contrib = np.zeros(cap, dtype=np.float64)
    score = 0.0
    for u in range(cap):
        if nodes[SPLIT, u] == LEAF:
            contrib[u] = gini_contribution(hist[u])
            score += contrib[u]
    saved_nodes = nodes.copy()
    saved_contrib = contrib.copy()
    # undo buffers: a rejected move restores the rows of h (their order in perm, their
    # leaves) and the class counts of its old leaves instead of re-routing the rows
    saved_perm = np.empty(n_rows, dtype=np.int64)
    saved_leaf = np.empty(n_rows, dtype=np.int64)
    saved_hist = np.zeros((cap, n_classes), dtype=np.int64)
    work = hastings_workspace(cands)
    no_tree = np.full((4, 1), ABSENT, dtype=np.int64)
    ring = np.zeros(window, dtype=np.float64)
    n_acc = 0
    done = 0
    for it in range(mc_iter):
        done = it + 1
        h, s_new = propose_move(nodes, cands, fanout, rng)
        if h < 0:
            trace[it] = score
            continue
        lo, hi = nodes[START, h], nodes[END, h]
        if stats is not None:
            stats[0] += hi - lo
        for i in range(lo, hi):
            r = perm[i]
            saved_perm[i] = r
            saved_leaf[i] = leaf_of_row[r]
        saved_contrib[:] = contrib
        old_part = 0.0
        old_leaves = subtree_leaves(h, nodes, fanout)
        for u in old_leaves:
            old_part += contrib[u]
            contrib[u] = 0.0
            saved_hist[u, :] = hist[u, :]
        apply_move(h, s_new, nodes, saved_nodes, cands, fanout, depth_of, max_depth, rng,
                   faithful, perm, codes, y, min_rows)
        relayout(h, nodes, perm, codes, cands, fanout, leaf_of_row, stop_buf, pos_buf,
                 offset, y, hist, True, no_i, no_t, no_i, 0, 0)
        new_part = 0.0
        for u in subtree_leaves(h, nodes, fanout):
            contrib[u] = gini_contribution(hist[u])
            new_part += contrib[u]
        new_score = score - old_part + new_part
        if hastings_accept(new_score - score, epsilon, 2.0, hastings, h, saved_nodes, nodes,
                           no_tree, cands, fanout, depth_of, max_depth, not faithful, work,
                           rng):
            score = new_score
            ring[n_acc % window] = score
            n_acc += 1
        else:
            nodes[:, :] = saved_nodes
            contrib[:] = saved_contrib
            for i in range(lo, hi):
                r = saved_perm[i]
                perm[i] = r
                leaf_of_row[r] = saved_leaf[i]
            for u in old_leaves:
                hist[u, :] = saved_hist[u, :]
        trace[it] = score
        if faithful and scores_stabilised(ring, n_acc, window, sigma):
            break
    return done


@njit(cache=True, nogil=True)
def mcmc_tree_pair(codes_l, cands_l, fanout_l, depth_l, nodes_l, perm_l, leaf_l,
                   codes_r, cands_r, fanout_r, depth_r, nodes_r, perm_r, leaf_r,
                   y, n_classes, max_depth, epsilon, mc_iter, faithful, sigma, window,
                   min_rows, rng, trace, stats=None, hastings=True):
    """sampleTreePair (Alg. 5): joint Metropolis–Hastings over (T_L, T_R), score
    g(T_L)(1+g(T_R))/2, Δ = 1, acceptance min(1, exp(ε·ΔS/2)·q(T′→T)/q(T→T′)).

    ``T_L`` (codes_l) has the initial target ``y`` as class; ``T_R`` (codes_r) has
    T_L's leaves as classes. Each iteration picks an internal node uniformly from
    both trees and proposes a uniformly random valid split there; the proposal ratio
    (``hastings.log_proposal_ratio``) counts the internal nodes of both trees. One step
    serves both trees: it moves the chosen tree and keeps the leaf×leaf table current
    (T_L's rows give its columns, T_R's its rows); only a move of T_L changes g(T_L).
    Returns the number of iterations run; ``trace`` gets the score after each (not
    private). ``hastings=False``: plain Metropolis, min(1, exp(ε·ΔS/2)), as faithful mode
    runs it (see :func:`mcmc_single_tree`).
    """
    n_rows = codes_l.shape[1]
    cap_l = nodes_l.shape[1]
    cap_r = nodes_r.shape[1]
    stop_buf = np.empty(n_rows, dtype=np.int64)
    pos_buf = np.empty(n_rows, dtype=np.int64)
    offset = np.zeros(max(cap_l, cap_r), dtype=np.int64)
    hist = np.zeros((cap_l, n_classes), dtype=np.int64)
    no_hist = np.zeros((1, 1), dtype=np.int64)
    random_tree(n_rows, nodes_l, perm_l, leaf_l, codes_l, cands_l, fanout_l, depth_l,
                max_depth, faithful, y, min_rows, rng, stop_buf, pos_buf, offset, hist, True)
    # T_R's classes (for faithful growth): T_L's leaves, rows in no leaf as one more class.
    y_r = np.empty(n_rows, dtype=np.int64)
    for r in range(n_rows):
        y_r[r] = leaf_l[r] if leaf_l[r] >= 0 else cap_l
    random_tree(n_rows, nodes_r, perm_r, leaf_r, codes_r, cands_r, fanout_r, depth_r,
                max_depth, faithful, y_r, min_rows, rng, stop_buf, pos_buf, offset, no_hist,
                False)
    contrib_l = np.zeros(cap_l, dtype=np.float64)
    g_l = 0.0
    for u in range(cap_l):
        if nodes_l[SPLIT, u] == LEAF:
            contrib_l[u] = purity_contribution(hist[u], n_rows)
            g_l += contrib_l[u]
    table, sumsq = pair_table(nodes_r, leaf_r, leaf_l, cap_l, n_rows)
    g_r = purity_from_table(nodes_r, sumsq, n_rows)
    score = g_l * (1.0 + g_r) / 2.0
    saved_l = nodes_l.copy()
    saved_r = nodes_r.copy()
    saved_contrib = contrib_l.copy()
    work_l = hastings_workspace(cands_l)
    work_r = hastings_workspace(cands_r)
    ring = np.zeros(window, dtype=np.float64)
    n_acc = 0
    done = 0
    for it in range(mc_iter):
        done = it + 1
        on_left, h, s_new = propose_pair_move(nodes_l, cands_l, fanout_l, nodes_r, cands_r,
                                              fanout_r, rng)
        if h < 0:
            trace[it] = score
            continue
        # The moved tree's arrays; ``role``: how its rows enter the leaf×leaf table.
        if on_left:
            codes, cands, fanout, depth_of, nodes, saved = (codes_l, cands_l, fanout_l,
                                                            depth_l, nodes_l, saved_l)
            perm, leaf, classes, side_hist, work = perm_l, leaf_l, y, hist, work_l
            other_nodes, other_leaf, role = nodes_r, leaf_r, 2
        else:
            codes, cands, fanout, depth_of, nodes, saved = (codes_r, cands_r, fanout_r,
                                                            depth_r, nodes_r, saved_r)
            perm, leaf, classes, side_hist, work = perm_r, leaf_r, y_r, no_hist, work_r
            other_nodes, other_leaf, role = nodes_l, leaf_l, 1
        if stats is not None:
            stats[0] += nodes[END, h] - nodes[START, h]
        old_part = 0.0
        if on_left:
            saved_contrib[:] = contrib_l
            for u in subtree_leaves(h, nodes_l, fanout_l):
                old_part += contrib_l[u]
                contrib_l[u] = 0.0
        elif faithful:
            for r in range(n_rows):
                y_r[r] = leaf_l[r] if leaf_l[r] >= 0 else cap_l
        apply_move(h, s_new, nodes, saved, cands, fanout, depth_of, max_depth, rng, faithful,
                   perm, codes, classes, min_rows)
        relayout(h, nodes, perm, codes, cands, fanout, leaf, stop_buf, pos_buf, offset,
                 classes, side_hist, on_left, other_leaf, table, sumsq, role, cap_l)
        new_g_l = g_l
        if on_left:
            new_part = 0.0
            for u in subtree_leaves(h, nodes_l, fanout_l):
                contrib_l[u] = purity_contribution(hist[u], n_rows)
                new_part += contrib_l[u]
            new_g_l = g_l - old_part + new_part
        new_g_r = purity_from_table(nodes_r, sumsq, n_rows)
        new_score = new_g_l * (1.0 + new_g_r) / 2.0
        if hastings_accept(new_score - score, epsilon, 1.0, hastings, h, saved, nodes,
                           other_nodes, cands, fanout, depth_of, max_depth, not faithful,
                           work, rng):
            score, g_l, g_r = new_score, new_g_l, new_g_r
            ring[n_acc % window] = score
            n_acc += 1
        else:
            nodes[:, :] = saved
            if on_left:
                contrib_l[:] = saved_contrib
            relayout(h, nodes, perm, codes, cands, fanout, leaf, stop_buf, pos_buf, offset,
                     classes, side_hist, False, other_leaf, table, sumsq, role, cap_l)
        trace[it] = score
        if faithful and scores_stabilised(ring, n_acc, window, sigma):
            break
    return done
