"""MDAV (numba) against a plain-Python reference; grouping helpers against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.table.schema import schema_from_dict
from dpcore.errors import ParameterError
from dpcore.synthesis.grouping import (
    association_distance,
    pairwise_davies_bouldin,
    pearson_distance,
    upgma_groups,
)
from dpcore.synthesis.mdav import mdav


def reference_mdav(x, k):
    """Plain MDAV (Domingo-Ferrer & Torra 2005), lists and loops; ties to the lower index."""
    x = [list(map(float, row)) for row in x]
    remaining = list(range(len(x)))
    labels = [-1] * len(x)
    label = 0

    def d2(a, b):
        return sum((p - q) ** 2 for p, q in zip(a, b))

    def centroid(rows):
        return [sum(x[i][j] for i in rows) / len(rows) for j in range(len(x[0]))]

    def farthest(rows, point):
        best, best_d = None, -1.0
        for i in rows:  # rows are in increasing index order
            d = d2(x[i], point)
            if d > best_d:
                best, best_d = i, d
        return best

    def take(centre):
        nonlocal remaining, label
        others = sorted((d2(x[i], x[centre]), i) for i in remaining if i != centre)
        members = [centre] + [i for _, i in others[:k - 1]]
        for i in members:
            labels[i] = label
        label += 1
        remaining = [i for i in remaining if i not in set(members)]

    while len(remaining) >= 3 * k:
        r = farthest(remaining, centroid(remaining))
        s = farthest(remaining, x[r])
        point = x[r]
        take(r)
        if s not in remaining:
            s = farthest(remaining, point)
        take(s)
    if len(remaining) >= 2 * k:
        take(farthest(remaining, centroid(remaining)))
    if remaining:
        for i in remaining:
            labels[i] = label
    return np.asarray(labels)


@pytest.mark.parametrize("n, d, k, seed", [(50, 2, 3, 0), (97, 3, 5, 1), (40, 1, 7, 2),
                                           (10, 2, 4, 3), (7, 2, 4, 4), (120, 4, 10, 5)])
def test_mdav_matches_the_plain_reference(n, d, k, seed):
    x = np.random.default_rng(seed).standard_normal((n, d))
    np.testing.assert_array_equal(mdav(x, k), reference_mdav(x, k))


def test_mdav_with_ties_matches_the_reference():
    x = np.random.default_rng(7).integers(0, 3, size=(60, 2)).astype(float)
    for k in (2, 3, 5):
        np.testing.assert_array_equal(mdav(x, k), reference_mdav(x, k))


def test_mdav_cluster_sizes_are_k_except_the_last():
    x = np.random.default_rng(11).standard_normal((203, 3))
    for k in (1, 4, 25, 100, 203, 300):
        sizes = np.bincount(mdav(x, k))
        assert sizes.sum() == 203
        if 203 < 2 * k:
            assert sizes.tolist() == [203]
        else:
            assert (sizes[:-1] == k).all() and k <= sizes[-1] <= 2 * k - 1


def test_mdav_refuses_bad_k():
    with pytest.raises(ParameterError):
        mdav(np.zeros((3, 2)), 0)
    assert mdav(np.zeros((0, 2)), 3).shape == (0,)


def brute_db(dist, labels):
    groups = sorted(set(labels))
    members = {g: [i for i, v in enumerate(labels) if v == g] for g in groups}

    def mean(pairs):
        return sum(dist[a][b] for a, b in pairs) / len(pairs) if pairs else 0.0

    spread = {g: mean([(a, b) for a in m for b in m if a < b]) for g, m in members.items()}
    worst = []
    for g in groups:
        worst.append(max((spread[g] + spread[h]) / mean([(a, b) for a in members[g]
                                                          for b in members[h]])
                         for h in groups if h != g))
    return sum(worst) / len(worst)


def test_pairwise_davies_bouldin_matches_brute_force():
    rng = np.random.default_rng(3)
    pts = rng.standard_normal((9, 2))
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 0, 3])
    assert pairwise_davies_bouldin(dist, labels) == pytest.approx(brute_db(dist, labels))


def test_upgma_finds_planted_feature_blocks():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 5000))
    x = np.column_stack([a + 0.3 * rng.standard_normal(5000) for _ in range(3)]
                        + [b + 0.3 * rng.standard_normal(5000) for _ in range(3)])
    groups, scores = upgma_groups(pearson_distance(x))
    assert [g.tolist() for g in groups] == [[0, 1, 2], [3, 4, 5]]
    assert min(scores, key=scores.get) == 2
    assert [g.tolist() for g in upgma_groups(np.zeros((2, 2)))[0]] == [[0, 1]]


def test_association_distance_extends_abs_correlation_to_categoricals():
    schema = schema_from_dict({"name": "t", "label": {"name": "y", "classes": [0]},
                               "features": [{"name": n, "type": "numeric", "bounds": [-1, 1]}
                                            for n in "abc"]})
    cov = np.array([[1.0, -0.6, 0.0], [-0.6, 1.0, 0.3], [0.0, 0.3, 4.0]])
    dist = association_distance(cov, schema, np.zeros(3))
    assert dist[0, 1] == pytest.approx(0.4)
    assert dist[1, 2] == pytest.approx(1 - 0.3 / 2)
    assert dist[0, 2] == pytest.approx(1.0)
    # A categorical that determines a numeric (η² = 1), one independent of it (η² = 0), and
    # two categoricals that determine each other (Cramér's V = 1), from exact moments.
    rng = np.random.default_rng(0)
    level = rng.integers(0, 4, 20_000)
    other = rng.integers(0, 3, 20_000)
    x = np.column_stack([np.eye(4)[level], np.eye(3)[other], (level - 1.5) / 2,
                         np.eye(4)[(level + 1) % 4]])
    schema = schema_from_dict({"name": "t", "label": {"name": "y", "classes": [0]}, "features": [
        {"name": "c4", "type": "categorical", "levels": list("abcd")},
        {"name": "c3", "type": "categorical", "levels": list("xyz")},
        {"name": "num", "type": "numeric", "bounds": [-1, 1]},
        {"name": "c4b", "type": "categorical", "levels": list("abcd")}]})
    dist = association_distance(np.cov(x.T, bias=True), schema, x.mean(axis=0))
    assert dist[0, 2] == pytest.approx(0.0, abs=1e-9)
    assert dist[0, 3] == pytest.approx(0.0, abs=1e-9)
    assert dist[1, 2] > 0.95 and dist[0, 1] > 0.95
