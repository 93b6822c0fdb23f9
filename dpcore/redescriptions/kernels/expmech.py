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


@njit(cache=True, nogil=True)
def split_utilities(u, nodes, perm, codes, cands, attr_first, attr_last, n_codes, y,
                    n_classes, fanout):
    """Utility of every candidate at node ``u``: −Σ_children |child|·gini(child) (Δ = 2).

    Candidates used on the path to ``u``, or not useful there (see :func:`useful_at`),
    get −inf. One histogram pass per
    attribute over the node's rows, so O(rows · attributes + candidates · classes).
    """
    n_cand = cands.shape[1]
    util = np.full(n_cand, -np.inf)
    lo, hi = nodes[START, u], nodes[END, u]
    left = np.zeros(n_classes, dtype=np.int64)
    total = np.zeros(n_classes, dtype=np.int64)
    for a in range(codes.shape[0]):
        if attr_first[a] >= attr_last[a]:
            continue
        nc = n_codes[a]
        hist = np.zeros((nc, n_classes), dtype=np.int64)
        for i in range(lo, hi):
            r = perm[i]
            x = np.int64(codes[a, r])
            if x != MISSING:
                hist[x, y[r]] += 1
        total[:] = 0
        for x in range(nc):
            for c in range(n_classes):
                total[c] += hist[x, c]
        left[:] = 0
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
                        left[c] += hist[next_code, c]
                    next_code += 1
                q = gini_contribution(left) + gini_contribution(total - left)
            elif kind == MULTIWAY:
                for x in range(nc):
                    q += gini_contribution(hist[x])
            else:
                q = gini_contribution(hist[thr]) + gini_contribution(total - hist[thr])
            util[s] = q
    return util


@njit(cache=True, nogil=True)
def expmech_tree(codes, cands, attr_first, attr_last, n_codes, y, n_classes, fanout,
                 depth_of, max_depth, nodes, perm, leaf_of_row, level_epsilons, rng):
    """createDTExpMech (Alg. 2): level by level, every node picks its split by the
    exponential mechanism with the level's ε (disjoint rows: parallel composition).

    Grows every node to ``max_depth`` (no purity or size stopping). Returns the
    number of nodes that drew a split at each level.
    """
    n_rows = codes.shape[1]
    pos_buf = np.empty(n_rows, dtype=np.int64)
    child_buf = np.empty(n_rows, dtype=np.int64)
    init_tree(nodes, perm, leaf_of_row, n_rows)
    nodes[SPLIT, 0] = LEAF
    per_level = np.zeros(max_depth, dtype=np.int64)
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] != LEAF or depth_of[u] >= max_depth:
            continue
        level = depth_of[u]
        util = split_utilities(u, nodes, perm, codes, cands, attr_first, attr_last,
                               n_codes, y, n_classes, fanout)
        s = exponential_index(util, level_epsilons[level] / (2.0 * 2.0), rng)
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
