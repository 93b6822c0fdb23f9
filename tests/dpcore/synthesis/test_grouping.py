"""dpcore.synthesis.grouping: UPGMA groups chosen by the pairwise Davies–Bouldin index, and
the feature distances it works on."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpcore.synthesis.grouping import (
    groups_from_labels,
    pairwise_davies_bouldin,
    pearson_distance,
    upgma_groups,
)


def _blocks(sizes, inside=0.1, between=0.9):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    dist = np.where(labels[:, None] == labels[None, :], inside, between)
    np.fill_diagonal(dist, 0.0)
    return dist, labels


def _plain_db(dist, labels):
    groups = groups_from_labels(labels)

    def spread(g):
        pairs = list(itertools.combinations(g, 2))
        return np.mean([dist[a, b] for a, b in pairs]) if pairs else 0.0
    out = []
    for i, gi in enumerate(groups):
        out.append(max((spread(gi) + spread(gj)) / np.mean(dist[np.ix_(gi, gj)])
                       for j, gj in enumerate(groups) if j != i))
    return float(np.mean(out))


def test_davies_bouldin_against_its_definition():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(9, 2))
    dist = np.linalg.norm(points[:, None] - points[None, :], axis=2)
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2])
    assert pairwise_davies_bouldin(dist, labels) == pytest.approx(_plain_db(dist, labels))
    assert pairwise_davies_bouldin(dist, np.zeros(9)) == float("inf")


def test_well_separated_blocks_are_found():
    dist, labels = _blocks([3, 2, 4])
    groups, scores = upgma_groups(dist)
    assert [g.tolist() for g in groups] == [g.tolist() for g in groups_from_labels(labels)]
    assert 3 in scores and min(scores, key=scores.get) == 3


def test_a_threshold_cuts_the_tree():
    dist, _ = _blocks([2, 3])
    groups, scores = upgma_groups(dist, threshold=0.5)
    assert [g.tolist() for g in groups] == [[0, 1], [2, 3, 4]] and scores == {}
    assert len(upgma_groups(dist, threshold=0.95)[0]) == 1
    assert [g.tolist() for g in upgma_groups(np.zeros((2, 2)))[0]] == [[0, 1]]


def test_groups_from_labels_ordered_by_first_member():
    assert [g.tolist() for g in groups_from_labels(np.array([5, 1, 5, 0]))] == \
        [[0, 2], [1], [3]]


def test_pearson_distance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    x[:, 1] = 2 * x[:, 0] + 1
    data = np.column_stack([x, np.ones(200)])         # a constant column
    dist = pearson_distance(data)
    assert dist[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(np.diag(dist), 0.0) and np.allclose(dist, dist.T)
    assert dist[3, 0] == 1.0
    assert dist[0, 2] == pytest.approx(1 - np.corrcoef(x[:, 0], x[:, 2])[0, 1])
