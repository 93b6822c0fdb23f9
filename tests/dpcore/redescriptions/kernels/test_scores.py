"""dpcore.redescriptions.kernels.scores: the Gini and purity contributions and the pair
score, against plain-Python formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.redescriptions.kernels.scores import (
    PAIR_SENSITIVITY_COUNT,
    PAIR_SENSITIVITY_PAPER,
    gini_contribution,
    pair_score,
    purity_contribution,
)

COUNTS = st.lists(st.integers(0, 1000), min_size=1, max_size=8)


@settings(deadline=None)  # the first call may compile the kernel
@given(COUNTS)
def test_gini_contribution_is_minus_size_times_gini(counts):
    arr = np.asarray(counts, dtype=np.int64)
    n = sum(counts)
    expected = 0.0 if n == 0 else -n * (1 - sum((c / n) ** 2 for c in counts))
    assert gini_contribution(arr) == pytest.approx(expected, abs=1e-9)
    assert gini_contribution(arr) <= 0.0


@settings(deadline=None)
@given(COUNTS, st.integers(1, 5000))
def test_purity_contribution(counts, extra):
    arr = np.asarray(counts, dtype=np.int64)
    n = sum(counts)
    n_rows = n + extra
    expected = 0.0 if n == 0 else sum(c * c for c in counts) / (n * n_rows)
    assert purity_contribution(arr, n_rows) == pytest.approx(expected)
    assert 0.0 <= purity_contribution(arr, n_rows) <= n / n_rows + 1e-12


def test_a_pure_leaf_scores_best():
    assert gini_contribution(np.array([10, 0])) == 0.0
    assert gini_contribution(np.array([5, 5])) == -5.0
    assert purity_contribution(np.array([10, 0]), 10) == 1.0


def test_pair_score_on_both_scales():
    assert pair_score(0.5, 0.5, False) == pytest.approx(0.375)
    assert pair_score(40.0, 60.0, True) == 100.0
    assert PAIR_SENSITIVITY_PAPER == 1.0    # g ∈ [0, 1]: the paper's score moves by ≤ 1
    assert PAIR_SENSITIVITY_COUNT >= 2.0    # rows: at least one row's change on each tree
