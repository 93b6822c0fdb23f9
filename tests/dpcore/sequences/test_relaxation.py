"""dpcore.sequences.relaxation: the relaxed pruning thresholds prune a candidate of support
exactly θ with probability ζ."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.errors import ParameterError
from dpcore.sequences.relaxation import (
    laplace_pruning_threshold,
    noisy_support_cdf,
    relaxed_threshold,
)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.floats(0.01, 0.9), st.floats(50, 1e5), st.floats(0.1, 50), st.floats(0.02, 0.98))
def test_relaxed_threshold_is_the_zeta_quantile(theta, n_db, phi, zeta):
    t = relaxed_threshold(theta, n_db, phi, zeta)
    sigma = math.sqrt(n_db * theta * (1 - theta))
    assert float(noisy_support_cdf(t, theta * n_db, sigma, phi)) == pytest.approx(zeta, abs=1e-6)


def test_half_means_no_relaxation():
    assert relaxed_threshold(0.2, 1000, 3.0, 0.5) == pytest.approx(200.0)
    assert laplace_pruning_threshold(200.0, 3.0, 0.5) == pytest.approx(200.0)


def test_laplace_threshold_by_simulation():
    rng = np.random.default_rng(4)
    for zeta in (0.1, 0.3, 0.8):
        t = laplace_pruning_threshold(100.0, 5.0, zeta)
        noisy = 100.0 + rng.laplace(0, 5.0, 40000)
        assert np.mean(noisy < t) == pytest.approx(zeta, abs=0.01)


def test_cdf_is_monotone_with_the_right_limits():
    z = np.linspace(-200, 400, 61)
    cdf = noisy_support_cdf(z, 100.0, 20.0, 5.0)
    assert np.all(np.diff(cdf) >= 0) and cdf[0] < 1e-6 and cdf[-1] > 1 - 1e-6


@pytest.mark.parametrize("args, match", [((0.0, 100, 1.0, 0.5), "θ"), ((0.2, 100, 1.0, 1.0), "ζ")])
def test_bad_inputs_are_named(args, match):
    with pytest.raises(ParameterError, match=match):
        relaxed_threshold(*args)
    with pytest.raises(ParameterError, match="φ"):
        laplace_pruning_threshold(1.0, 0.0, 0.5)
