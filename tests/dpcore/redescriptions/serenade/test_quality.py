"""dpcore.redescriptions.serenade.quality: f = J·σ(|E11|), its overflow-free sigmoid, and a
sensitivity that bounds every one-row change."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.redescriptions.serenade.quality import (
    brute_force_sensitivity,
    quality,
    quality_sensitivity,
    sensitivity_range,
    sigmoid,
)


def test_sigmoid_is_stable_at_the_extremes():
    assert sigmoid(0.0, 1.0, 0.0) == 0.5
    assert sigmoid(1e6, 10.0, 0.0) == 1.0 and sigmoid(-1e6, 10.0, 0.0) == 0.0
    assert sigmoid(3.0, 2.0, 1.0) == pytest.approx(1 / (1 + math.exp(-4.0)))


@settings(deadline=None)
@given(st.integers(0, 500), st.integers(0, 500), st.floats(0.01, 2.0))
def test_quality_is_jaccard_times_sigmoid(e11, extra, s):
    union = e11 + extra
    f = quality(e11, union, s, 50.0)
    if union == 0:
        assert f == 0.0
    else:
        assert f == pytest.approx(e11 / union * sigmoid(float(e11), s, 50.0))
        assert 0.0 <= f <= 1.0


def test_sensitivity_range():
    assert sensitivity_range(1000, 0.5) == 4 * 1000 + 200


@pytest.mark.parametrize("n, s", [(30, 0.2), (60, 1.0), (80, 0.05)])
def test_sensitivity_bounds_brute_force(n, s):
    assert quality_sensitivity(n, s) >= brute_force_sensitivity(n, s) - 1e-12
    assert 0 < quality_sensitivity(n, s) <= 1.0


def test_a_one_row_change_never_moves_f_by_more_than_the_sensitivity():
    n, s = 40, 0.3
    x0 = 0.1 * n
    delta = quality_sensitivity(n, s)
    for e11 in range(n):
        for union in range(max(e11, 1), n):
            f = quality(e11, union, s, x0)
            for d11, du in ((0, 1), (1, 1), (0, -1), (-1, -1)):
                if 0 <= e11 + d11 <= union + du and union + du >= 0:
                    assert abs(quality(e11 + d11, union + du, s, x0) - f) <= delta + 1e-12
