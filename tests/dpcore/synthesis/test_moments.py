"""dpcore.synthesis.moments: group layouts, exact cell statistics, their DP release (charged
first, integer noise) and the Gaussian cells built from them."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.table.schema import Feature, TableSchema
from dpcore.errors import BudgetExceededError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.synthesis.fixedpoint import half_range
from dpcore.synthesis.moments import (
    cell_sufficient_statistics,
    clip_eigenvalues,
    group_layout,
    prior_moments,
    release_cell_statistics,
    sample_gaussians,
)

SCHEMA = TableSchema(name="t", label="y", classes=(0, 1), file="t.csv",
                     features=(Feature("a", "numeric", bounds=(0.0, 1.0)),
                               Feature("c", "categorical", levels=("x", "y")),
                               Feature("b", "numeric", bounds=(0.0, 1.0))))
BITS = 8


def test_layout_pairs_skip_within_feature_cross_terms():
    layout = group_layout(SCHEMA, [2, 0, 1])            # any order: sorted
    assert layout.features == (0, 1, 2) and layout.widths == (1, 2, 1)
    pairs = set(zip(*(p.tolist() for p in layout.pairs), strict=True))
    assert (1, 2) not in pairs and (1, 1) not in pairs  # one-hot: x·y = 0, x² = x
    assert {(0, 0), (3, 3), (0, 1), (0, 3), (2, 3)} <= pairs


def test_cell_statistics_equal_plain_sums():
    layout = group_layout(SCHEMA, [0, 1, 2])
    rng = np.random.default_rng(0)
    L = half_range(BITS)
    values = np.column_stack([rng.integers(-L, L + 1, 60), np.eye(2, dtype=int)[
        rng.integers(0, 2, 60)] * L, rng.integers(-L, L + 1, 60)]).astype(np.int64)
    cells = rng.integers(0, 3, 60)
    counts, sums, moments = cell_sufficient_statistics(values, cells, 3, layout, BITS)
    for c in range(3):
        rows = values[cells == c]
        assert counts[c] == len(rows) and sums[c].tolist() == rows.sum(axis=0).tolist()
        expected = [int((rows[:, a] * rows[:, b]).sum())
                    for a, b in zip(*layout.pairs, strict=True)]
        assert moments[c].tolist() == expected


def test_release_charges_before_noise_and_returns_integers():
    layout = group_layout(SCHEMA, [0, 2])
    counts = np.array([5, 7], np.int64)
    sums = np.zeros((2, 2), np.int64)
    moments = np.zeros((2, len(layout.pairs[0])), np.int64)
    acc = PrivacyAccountant(30)
    noisy = release_cell_statistics(counts, sums, moments, layout=layout, bits=BITS,
                                    epsilon_nano=(10, 10, 10), rng=np.random.default_rng(1),
                                    accountant=acc, label="g")
    assert acc.spent_nano == 30 and len(acc.calls) == 3
    assert noisy.counts.dtype.kind == "i" and noisy.sums.shape == (2, 2)
    with pytest.raises(BudgetExceededError):
        release_cell_statistics(counts, sums, moments, layout=layout, bits=BITS,
                                epsilon_nano=(10, 10, 10), rng=np.random.default_rng(1),
                                accountant=PrivacyAccountant(25), label="g")


def test_prior_moments_of_the_uniform_box():
    mu, second = prior_moments(group_layout(SCHEMA, [0, 1, 2]))
    assert mu.tolist() == [0.0, 0.5, 0.5, 0.0]
    assert np.allclose(np.diag(second), [1 / 3, 0.5, 0.5, 1 / 3])
    assert second[1, 2] == 0.0 and second[0, 1] == 0.0


def test_clip_eigenvalues_and_sampling():
    cov = np.array([[[2.0, 3.0], [3.0, 2.0]]])            # eigenvalues 5 and −1
    fixed, factors = clip_eigenvalues(cov, 0.1, 4.0)
    assert np.allclose(np.linalg.eigvalsh(fixed[0]), [0.1, 4.0])
    assert np.allclose(factors[0] @ factors[0].T, fixed[0])
    draws = sample_gaussians(np.array([[1.0, -1.0]]), factors, np.zeros(20000, np.int64),
                             np.random.default_rng(2))
    assert np.allclose(draws.mean(axis=0), [1.0, -1.0], atol=0.06)
    assert np.allclose(np.cov(draws.T), fixed[0], atol=0.15)
