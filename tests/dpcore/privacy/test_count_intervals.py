"""Exact intervals of a discrete Laplace count (dpcore/privacy/count_intervals.py): the
half-width is the exact smallest quantile (checked against the brute-force pmf), intervals
are cut at 0 and cover the true count at the stated rate through the real mechanism, and bad
scales or coverages are refused naming them."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.privacy.count_intervals import COVERAGE, count_bounds, noise_halfwidth
from dpcore.privacy.mechanisms import discrete_laplace_sample, discrete_laplace_scale
from dpcore.privacy.units import epsilon_to_nano

SEED = int(os.environ.get("DPRM_TEST_SEED", 20231126))


def _pmf(scale: float, terms: int) -> tuple[np.ndarray, np.ndarray]:
    """The discrete Laplace pmf (and of a sum of two) by brute force on a wide support."""
    reach = int(60 * scale) + 20
    z = np.arange(-reach, reach + 1)
    p = np.exp(-np.abs(z) / scale)
    p /= p.sum()
    if terms == 2:
        p = np.convolve(p, p)
        z = np.arange(-2 * reach, 2 * reach + 1)
    return z, p


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.3, 10.0, 40.0])
@pytest.mark.parametrize("terms", [1, 2])
def test_the_half_width_is_the_exact_smallest_discrete_laplace_quantile(scale, terms):
    z, p = _pmf(scale, terms)
    k = noise_halfwidth(scale, terms=terms)
    inside = p[np.abs(z) <= k].sum()
    assert inside >= 0.9 - 1e-12
    if k > 0:
        assert p[np.abs(z) <= k - 1].sum() < 0.9, "not the smallest half-width"


def test_bad_scales_and_coverages_are_refused_naming_them():
    for scale in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ParameterError, match="noise scale"):
            noise_halfwidth(scale)
    with pytest.raises(ParameterError, match="coverage"):
        noise_halfwidth(1.0, coverage=1.0)
    with pytest.raises(ParameterError, match="terms"):
        noise_halfwidth(1.0, terms=3)


def test_bounds_are_cut_at_zero_and_keep_the_shape():
    k = noise_halfwidth(2.0)
    assert count_bounds(100.0, 2.0) == (100.0 - k, 100.0 + k)
    assert count_bounds(-3.0, 2.0) == (0.0, max(k - 3.0, 0.0))
    low, high = count_bounds(np.array([[1.0, 50.0]]), 2.0)
    assert low.shape == high.shape == (1, 2) and low[0, 0] == max(1.0 - k, 0.0)


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_the_stated_coverage_holds_through_the_real_mechanism(epsilon):
    rng = np.random.default_rng([SEED, int(epsilon * 10)])
    truth = np.full(4000, 7.0)          # a small count: cutting at 0 must not lose coverage
    s, t = discrete_laplace_scale(1, epsilon_to_nano(epsilon))
    noisy = truth + discrete_laplace_sample(s, t, rng, size=truth.size)
    low, high = count_bounds(noisy, 1.0 / epsilon)
    covered = float(np.mean((low <= truth) & (truth <= high)))
    # P(|Z| <= k) is at least 90 % and below 90 % for k - 1: the rate sits just above it;
    # 4000 draws give a standard error under 0.5 point
    assert COVERAGE - 0.015 <= covered <= COVERAGE + 0.06, (epsilon, covered, SEED)
