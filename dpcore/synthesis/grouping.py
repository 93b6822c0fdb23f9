"""Feature groups (MC-GEN's independent feature sets): UPGMA over a feature distance, the number
of groups chosen by the pairwise Davies–Bouldin index of the authors' code.

* :func:`upgma_groups` — agglomerative clustering with average linkage
  (``scipy.cluster.hierarchy.linkage(method="average")``), cut into m = 2 … n−1 groups
  (``fcluster(criterion="maxclust")``), keeping the cut with the lowest
  :func:`pairwise_davies_bouldin` (the paper's rule); or, with ``threshold``, cut where the
  average-linkage distance reaches it (``fcluster(criterion="distance")``). Both are
  functions of the distance matrix only: applied to a DP distance matrix, post-processing.
  The pairwise Davies–Bouldin index scores a singleton's spread as 0, so it readily splits
  even a strongly correlated pair into singletons (two features at distance 0.15 from each
  other and 0.98 from the rest score 0.14 as singletons, 0.29 as a pair); the threshold
  rule does not.
* :func:`association_distance` (strict) — the distance 1 − √s between two *features* from
  the means and the covariance of their encoded columns, with s a squared correlation that
  extends Pearson's to one-hot blocks: r² for two numeric features, the correlation ratio
  η² = Σ_i Cov(1{A=i}, b)²/π_i / Var(b) for a categorical A and a numeric b, and Cramér's
  V² = Σ_ij Cov(1{A=i}, 1{B=j})²/(π_i·π_j) / (min(q_A, q_B) − 1) for two categoricals
  (π_i = P(A = i), floored at ``MIN_LEVEL_SHARE`` so that rare, noisy levels cannot blow the
  ratio up; s is clipped to [0, 1]). A categorical is thus never split across groups, and
  a feature determined by another one (education by education_num) is at distance ≈ 0.
  This departs from the paper's 1 − Corr on single columns (a labelled deviation): a
  categorical must stay whole for the sensitivity bounds of :mod:`dpcore.synthesis.moments`,
  and a strong negative correlation is as much a reason to model two features together as a
  positive one. In strict mode the means and covariance come from noisy sufficient
  statistics (post-processing).
* :func:`pearson_distance` (faithful) — the paper's eq. 5 on raw data: 1 − Corr(X_a, X_b)
  over encoded columns (the constant factor 2n does not change the clustering). NOT DP
  (critique C1).
"""

from __future__ import annotations

import numpy as np

from dpcore.data.table.schema import TableSchema

__all__ = ["MIN_LEVEL_SHARE", "pairwise_davies_bouldin", "upgma_groups", "association_distance",
           "pearson_distance", "groups_from_labels"]


def pairwise_davies_bouldin(dist: np.ndarray, labels: np.ndarray) -> float:
    """Davies–Bouldin index on a distance matrix (the authors' variant; lower is better).

    S_i = mean pairwise distance inside group i (0 for a singleton); M_ij = mean distance
    between the members of groups i and j; R_ij = (S_i + S_j)/M_ij; DB = mean_i max_{j≠i}
    R_ij. A pair of distinct groups at distance 0 scores +inf unless both are tight (0/0 = 0).
    """
    dist = np.asarray(dist, dtype=np.float64)
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    m = int(codes.max()) + 1 if codes.size else 0
    if m < 2:
        return float("inf")
    member = np.zeros((dist.shape[0], m))
    member[np.arange(dist.shape[0]), codes] = 1.0
    sizes = member.sum(axis=0)
    totals = member.T @ dist @ member          # Σ of distances between (and inside) groups
    between = totals / np.outer(sizes, sizes)  # M_ij
    pairs = sizes * (sizes - 1) / 2.0
    inside = np.diag(totals) / 2.0             # the diagonal counts each pair twice
    spread = np.divide(inside, pairs, out=np.zeros(m), where=pairs > 0)
    num = spread[:, None] + spread[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(between > 0, num / np.where(between > 0, between, 1.0),
                         np.where(num == 0, 0.0, np.inf))
    np.fill_diagonal(ratio, -np.inf)
    return float(np.mean(ratio.max(axis=1)))


def groups_from_labels(labels: np.ndarray) -> list[np.ndarray]:
    """Cluster labels → groups of indices, ordered by their first member."""
    labels = np.asarray(labels)
    out = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    return sorted(out, key=lambda g: int(g[0]))


def upgma_groups(dist: np.ndarray, threshold: float | None = None
                 ) -> tuple[list[np.ndarray], dict[int, float]]:
    """Groups of the items of a distance matrix (UPGMA + pairwise Davies–Bouldin or a cut).

    Parameters
    ----------
    dist : numpy.ndarray, shape (n, n)
        Symmetric, non-negative, zero diagonal.
    threshold : float, optional
        Cut the tree where the average-linkage distance exceeds this (items joined below it
        share a group). Default: the Davies–Bouldin choice over m = 2 … n−1.

    Returns
    -------
    groups : list of int64 arrays
        The chosen partition, groups ordered by their first member. With n ≤ 2 and no
        threshold (no cut m ∈ 2 … n−1 exists) all items form one group.
    scores : dict of m → DB index
        The index of every cut tried (empty with a threshold).
    """
    dist = np.asarray(dist, dtype=np.float64)
    n = dist.shape[0]
    if n == 1 or (n <= 2 and threshold is None):
        return [np.arange(n)], {}
    # Imported here: scipy.cluster and scipy.spatial cost ~0.7 s to import, and only runs
    # that build feature groups from DP correlations need them.
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    sym = 0.5 * (dist + dist.T)
    np.fill_diagonal(sym, 0.0)
    tree = linkage(squareform(np.maximum(sym, 0.0), checks=False), method="average")
    if threshold is not None:
        return groups_from_labels(fcluster(tree, float(threshold), criterion="distance")), {}
    scores: dict[int, float] = {}
    best_labels, best_score = None, np.inf
    for m in range(2, n):
        labels = fcluster(tree, m, criterion="maxclust")
        got = int(np.unique(labels).size)
        if got in scores:
            continue
        score = pairwise_davies_bouldin(sym, labels)
        scores[got] = score
        if best_labels is None or score < best_score:
            best_labels, best_score = labels, score
    if best_labels is None:
        return [np.arange(n)], scores
    return groups_from_labels(best_labels), scores


#: Smallest level share used when dividing by π_i in η² and Cramér's V².
MIN_LEVEL_SHARE = 0.005


def association_distance(cov: np.ndarray, schema: TableSchema, means: np.ndarray
                         ) -> np.ndarray:
    """Feature distance 1 − √s (p × p) from the covariance (D × D) and means (D) of the
    encoded columns (see the module docstring for s)."""
    p = schema.n_features
    blocks = [np.asarray(schema.columns_of(i)) for i in range(p)]
    numeric = [f.is_numeric for f in schema.features]
    share = np.clip(np.asarray(means, dtype=np.float64), MIN_LEVEL_SHARE, 1.0)
    var = np.maximum(np.diag(cov), 1e-12)
    out = np.zeros((p, p))
    for a in range(p):
        for b in range(a + 1, p):
            cross = cov[np.ix_(blocks[a], blocks[b])]
            if numeric[a] and numeric[b]:
                s = cross[0, 0] ** 2 / (var[blocks[a][0]] * var[blocks[b][0]])
            elif numeric[a] or numeric[b]:
                cat, num = (b, a) if numeric[a] else (a, b)
                c = cross[:, 0] if cat == a else cross[0, :]
                s = float(np.sum(c ** 2 / share[blocks[cat]])) / var[blocks[num][0]]
            else:
                ratio = cross ** 2 / np.outer(share[blocks[a]], share[blocks[b]])
                s = float(ratio.sum()) / (min(len(blocks[a]), len(blocks[b])) - 1)
            out[a, b] = out[b, a] = 1.0 - np.sqrt(min(max(float(s), 0.0), 1.0))
    return out


def pearson_distance(encoded: np.ndarray) -> np.ndarray:
    """1 − Corr between encoded columns (faithful mode; raw data, NOT DP).

    A constant column has correlation 0 with every other column.
    """
    x = np.asarray(encoded, dtype=np.float64)
    d = x.shape[1]
    centred = x - x.mean(axis=0)
    sd = np.sqrt((centred ** 2).sum(axis=0))
    ok = sd > 0
    corr = np.zeros((d, d))
    if ok.any():
        z = centred[:, ok] / sd[ok]
        corr[np.ix_(ok, ok)] = np.clip(z.T @ z, -1.0, 1.0)
    np.fill_diagonal(corr, 1.0)
    return 1.0 - corr
