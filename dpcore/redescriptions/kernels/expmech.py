"""createDTExpMech's kernels: split utilities and a tree grown by the exponential mechanism.

Reads true (coded) data; each node's split is drawn by
:func:`~dpcore.privacy.mechanisms.exponential_index` with the level's ε, which
``trees.build_expmech_tree`` charges to the accountant before calling
:func:`expmech_tree` (utility Δ = 2, parallel composition over a level's disjoint rows).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpcore.privacy.mechanisms import exponential_index
from dpcore.redescriptions.kernels.inner import inner_njit
from dpcore.redescriptions.kernels.layout import (
    END,
    KEPT,
    KIND,
    LEAF,
    MISSING,
    MULTIWAY,
    NCHILD,
    SPLIT,
    START,
    THR,
    THRESHOLD,
    init_tree,
    partition_node,
)
from dpcore.redescriptions.kernels.moves import used_on_path, useful_at
from dpcore.redescriptions.kernels.scores import gini_contribution


@inner_njit
def _attribute_histogram(a, codes, key, stride, hist):
    """``hist[x·stride + key[r]]`` counts the rows ``r`` with ``key[r] ≥ 0`` and code
    ``x`` (not missing) in attribute ``a``.

    One pass over the rows in storage order: reading ``codes[a, perm[i]]`` node by node
    gathers from all over the attribute once the tree has split, about 3× slower per row
    on CMS-2-16 (issue 32), and every node of a level is counted in the same pass.
    """
    for i in range(hist.shape[0]):
        hist[i] = 0
    for r in range(codes.shape[1]):
        k = key[r]
        if k >= 0:
            x = np.int64(codes[a, r])
            if x != MISSING:
                hist[x * stride + k] += 1


@inner_njit
def _attribute_utilities(u, a, hist, stride, base, nc, nodes, cands, attr_first, attr_last,
                         fanout, total, left, right, cell, util):
    """Write ``util[s]`` for attribute ``a``'s candidates at node ``u`` from its class
    histogram ``hist[x·stride + base + c]`` (see :func:`_attribute_histogram`); the same
    sums in the same order as one histogram per node, so the same floats."""
    n_classes = left.shape[0]
    for c in range(n_classes):
        total[c] = 0
        left[c] = 0
    for x in range(nc):
        for c in range(n_classes):
            total[c] += hist[x * stride + base + c]
    next_code = 0
    for s in range(attr_first[a], attr_last[a]):
        if used_on_path(u, s, nodes, fanout) or not useful_at(u, s, nodes, cands, fanout):
            continue
        kind = cands[KIND, s]
        thr = cands[THR, s]
        q = 0.0
        if kind == THRESHOLD:
            while next_code <= thr:
                for c in range(n_classes):
                    left[c] += hist[next_code * stride + base + c]
                next_code += 1
            for c in range(n_classes):
                right[c] = total[c] - left[c]
            q = gini_contribution(left) + gini_contribution(right)
        elif kind == MULTIWAY:
            for x in range(nc):
                for c in range(n_classes):
                    cell[c] = hist[x * stride + base + c]
                q += gini_contribution(cell)
        else:
            for c in range(n_classes):
                cell[c] = hist[thr * stride + base + c]
                right[c] = total[c] - cell[c]
            q = gini_contribution(cell) + gini_contribution(right)
        util[s] = q


@inner_njit
def _level_utilities(level_nodes, nodes, perm, codes, cands, attr_first, attr_last, n_codes,
                     y, n_classes, fanout, key, util):
    """Utilities of every candidate at each node of ``level_nodes`` (disjoint rows):
    ``util[k, s]`` for node ``level_nodes[k]``, as :func:`split_utilities` of that node.

    ``key`` (one int64 per row) is overwritten: −1, or ``k·n_classes + y[r]`` for a row
    reaching node ``level_nodes[k]``.
    """
    n_level = level_nodes.shape[0]
    stride = n_level * n_classes
    for r in range(key.shape[0]):
        key[r] = -1
    for k in range(n_level):
        u = level_nodes[k]
        for i in range(nodes[START, u], nodes[END, u]):
            r = perm[i]
            key[r] = k * n_classes + y[r]
    for k in range(n_level):
        for s in range(util.shape[1]):
            util[k, s] = -np.inf
    max_codes = 0
    for a in range(n_codes.shape[0]):
        max_codes = max(max_codes, n_codes[a])
    hist = np.zeros(max_codes * stride, dtype=np.int64)
    total = np.zeros(n_classes, dtype=np.int64)
    left = np.zeros(n_classes, dtype=np.int64)
    right = np.zeros(n_classes, dtype=np.int64)
    cell = np.zeros(n_classes, dtype=np.int64)
    for a in range(codes.shape[0]):
        if attr_first[a] >= attr_last[a]:
            continue
        _attribute_histogram(a, codes, key, stride, hist)
        for k in range(n_level):
            _attribute_utilities(level_nodes[k], a, hist, stride, k * n_classes, n_codes[a],
                                 nodes, cands, attr_first, attr_last, fanout, total, left,
                                 right, cell, util[k])


@inner_njit
def split_utilities(u, nodes, perm, codes, cands, attr_first, attr_last, n_codes, y,
                    n_classes, fanout):
    """Utility of every candidate at node ``u``: −Σ_children |child|·gini(child) (Δ = 2).

    Candidates used on the path to ``u``, or not useful there (see :func:`useful_at`),
    get −inf. One histogram pass per attribute over the rows, so
    O(rows · attributes + candidates · classes). :func:`expmech_tree` computes a whole
    level at once with the same code (:func:`_level_utilities`).
    """
    util = np.empty((1, cands.shape[1]))
    level_nodes = np.full(1, u, dtype=np.int64)
    key = np.empty(codes.shape[1], dtype=np.int64)
    _level_utilities(level_nodes, nodes, perm, codes, cands, attr_first, attr_last, n_codes,
                     y, n_classes, fanout, key, util)
    return util[0]


@njit(cache=True, nogil=True)
def expmech_tree(codes, cands, attr_first, attr_last, n_codes, y, n_classes, fanout,
                 depth_of, max_depth, nodes, perm, leaf_of_row, level_epsilons, rng):
    """createDTExpMech (Alg. 2): level by level, every node picks its split by the
    exponential mechanism with the level's ε (disjoint rows: parallel composition).

    Grows every node to ``max_depth`` (no purity or size stopping). A level's utilities
    are computed together (they read only their own node's rows and path), then its
    nodes draw in heap order, one uniform each, as one node at a time would. Returns
    the number of nodes that drew a split at each level.
    """
    n_rows = codes.shape[1]
    pos_buf = np.empty(n_rows, dtype=np.int64)
    child_buf = np.empty(n_rows, dtype=np.int64)
    key = np.empty(n_rows, dtype=np.int64)
    init_tree(nodes, perm, leaf_of_row, n_rows)
    nodes[SPLIT, 0] = LEAF
    per_level = np.zeros(max_depth, dtype=np.int64)
    for level in range(max_depth):
        n_level = 0
        for u in range(nodes.shape[1]):
            if nodes[SPLIT, u] == LEAF and depth_of[u] == level:
                n_level += 1
        if n_level == 0:
            break
        level_nodes = np.empty(n_level, dtype=np.int64)
        n_level = 0
        for u in range(nodes.shape[1]):
            if nodes[SPLIT, u] == LEAF and depth_of[u] == level:
                level_nodes[n_level] = u
                n_level += 1
        util = np.empty((n_level, cands.shape[1]))
        _level_utilities(level_nodes, nodes, perm, codes, cands, attr_first, attr_last,
                         n_codes, y, n_classes, fanout, key, util)
        for k in range(n_level):
            u = level_nodes[k]
            s = exponential_index(util[k], level_epsilons[level] / (2.0 * 2.0), rng)
            per_level[level] += 1
            if s < 0:
                continue
            nodes[SPLIT, u] = s
            partition_node(u, nodes, perm, codes, cands, fanout, pos_buf, child_buf)
            for i in range(cands[NCHILD, s]):
                nodes[SPLIT, fanout * u + 1 + i] = LEAF
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] == LEAF:
            for i in range(nodes[START, u], nodes[END, u]):
                leaf_of_row[perm[i]] = u
        elif nodes[SPLIT, u] >= 0:
            for i in range(nodes[KEPT, u], nodes[END, u]):
                leaf_of_row[perm[i]] = -1
    return per_level
