"""Tree scores: the Gini score of a classification tree and the purity of a tree pair.

Sensitivities (docs/PRIVACY.md, S1, S2 and S2c): −Σ_leaves |leaf|·gini(leaf) has Δ = 2;
the paper's pair score g(T_L)(1 + g(T_R))/2 has Δ = 1; the count-scale pair score
Q(T_L) + [Q(T_R) − Q(root of T_R)], Q(T) = Σ_leaves Σ_c n_c²/|leaf| (rows), has Δ = 3 and is
not normalised by N. These
functions read true (private) counts; their values only ever enter a mechanism charged
beforehand.
"""

from __future__ import annotations

import numpy as np

from dpcore.redescriptions.kernels.inner import inner_njit
from dpcore.redescriptions.kernels.layout import END, LEAF, SPLIT, START

#: Sensitivity of the paper's pair score g(T_L)(1 + g(T_R))/2 ∈ [0, 1] (S2).
PAIR_SENSITIVITY_PAPER = 1.0
#: Sensitivity of the count-scale pair score Q(T_L) + [Q(T_R) − Q(root)], in rows (S2c).
PAIR_SENSITIVITY_COUNT = 3.0


@inner_njit
def pair_score(g_l, g_r, count_scale):
    """The tree-pair score from the two purities.

    ``count_scale=False``: the paper's g(T_L)(1 + g(T_R))/2, with g = Q/N ∈ [0, 1].
    ``count_scale=True``: Q(T_L) + G(T_R), in rows (not divided by N), where the caller
    passes G(T_R) = Q(T_R) − Q(root of T_R), T_R's purity gain over its root.
    """
    if count_scale:
        return g_l + g_r
    return g_l * (1.0 + g_r) / 2.0


@inner_njit
def gini_contribution(counts):
    """−|leaf|·gini(leaf) = −(n − Σ_c n_c²/n); 0 for an empty leaf."""
    n = counts.sum()
    if n == 0:
        return 0.0
    sq = 0.0
    for c in range(counts.size):
        sq += counts[c] * counts[c]
    return -(n - sq / n)


@inner_njit
def purity_contribution(counts, n_rows):
    """(|leaf|/N)·Σ_c (n_c/|leaf|)² = Σ_c n_c² / (|leaf|·N); 0 for an empty leaf."""
    n = counts.sum()
    if n == 0:
        return 0.0
    sq = 0.0
    for c in range(counts.size):
        sq += counts[c] * counts[c]
    return sq / (n * n_rows)


@inner_njit
def pair_table(nodes_r, leaf_r, leaf_l, cap_l, n_rows):
    """Leaf×leaf table (R-leaf rows, L-leaf columns + a 'no L-leaf' column) and Σ² per row."""
    table = np.zeros((nodes_r.shape[1], cap_l + 1), dtype=np.int64)
    for r in range(n_rows):
        j = leaf_r[r]
        if j >= 0:
            c = leaf_l[r]
            table[j, c if c >= 0 else cap_l] += 1
    sumsq = np.zeros(nodes_r.shape[1], dtype=np.int64)
    for j in range(nodes_r.shape[1]):
        for c in range(cap_l + 1):
            sumsq[j] += table[j, c] * table[j, c]
    return table, sumsq


@inner_njit
def purity_from_table(nodes_r, sumsq, n_rows):
    """g(T_R) with T_L's leaves as classes, from the incremental Σ² per R-leaf."""
    g = 0.0
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] == LEAF:
            n = nodes_r[END, j] - nodes_r[START, j]
            if n > 0:
                g += sumsq[j] / (n * n_rows)
    return g
