"""Exact intervals of a true count ≥ 0 from its discrete Laplace release(s).

One helper for every family that releases counts with exact discrete Laplace noise (Δ = 1):
custom-query and map cells (:mod:`dpcore.redescriptions.query_intervals`), synthesis class
counts and floor histograms (:mod:`dpcore.synthesis.intervals`).

Post-processing only (0 ε): the functions take a released value and the public noise scale
b = Δ/ε of the call that drew it, never data.

The law
-------
Z with P(Z = z) ∝ q^|z|, q = exp(−1/b) (:func:`dpcore.privacy.mechanisms.discrete_laplace`).
Its tails are exact and closed-form: P(Z > k) = q^(k+1)/(1 + q) for k ≥ 0, so the smallest
integer half-width k with P(|Z| ≤ k) ≥ 1 − α is exact — no normal approximation. The sum of
two independent draws (a count that is the sum of two noised cells) has the closed-form law
P(S = s) = c² q^|s| (|s| + 1 + 2q²/(1 − q²)), c = (1 − q)/(1 + q).

Why the coverage holds: for a release y = s + Z of a count fixed before the release (no
selection on noisy values), P(s ∈ [y − k, y + k]) = P(|Z| ≤ k) ≥ 1 − α for every s, and
cutting the interval at 0 (a count is never negative) loses no coverage.
"""

from __future__ import annotations

import math

import numpy as np

from dpcore.errors import ParameterError

__all__ = ["COVERAGE", "noise_halfwidth", "count_bounds"]

#: The default stated coverage (90 %).
COVERAGE = 0.9


def _check(scale: float, coverage: float) -> None:
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ParameterError(f"a noise scale must be finite and > 0 (rows); got {scale!r}")
    if not (isinstance(coverage, (int, float)) and 0 < coverage < 1):
        raise ParameterError(f"coverage must be in (0, 1); got {coverage!r}")


def _tail(k: int, scale: float, terms: int) -> float:
    """P(S > k) for S the sum of ``terms`` (1 or 2) independent discrete Laplace draws."""
    log_q = -1.0 / scale
    one_minus_q = -math.expm1(log_q)
    q = math.exp(log_q)
    q_k1 = math.exp((k + 1) * log_q)
    if terms == 1:
        return q_k1 / (1.0 + q)
    c2 = (one_minus_q / (1.0 + q)) ** 2
    a = 2.0 * q * q / (one_minus_q * (1.0 + q))          # 2q²/(1 − q²)
    # Σ_{s>k} (s + 1) q^s and Σ_{s>k} q^s, closed form
    weighted = q_k1 * ((k + 2) * one_minus_q + q) / one_minus_q ** 2
    plain = q_k1 / one_minus_q
    return c2 * (weighted + a * plain)


def noise_halfwidth(scale: float, *, terms: int = 1, coverage: float = COVERAGE) -> int:
    """The smallest integer k (rows) with P(|Z₁ + … + Z_terms| ≤ k) ≥ ``coverage``.

    Parameters
    ----------
    scale : float
        b = Δ/ε of each draw (rows).
    terms : int
        1 (one count) or 2 (a sum of two independently noised counts).
    coverage : float
        1 − α.
    """
    _check(scale, coverage)
    if terms not in (1, 2):
        raise ParameterError(f"terms must be 1 or 2; got {terms!r}")
    alpha = 1.0 - coverage

    def ok(k: int) -> bool:                    # symmetric law: P(|S| > k) = 2 P(S > k)
        return 2.0 * _tail(k, scale, terms) <= alpha

    high = max(1, int(math.ceil(scale)))
    while not ok(high):
        high *= 2
    low = 0
    if ok(low):
        return 0
    while high - low > 1:                      # ok(high), not ok(low)
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high


def count_bounds(noisy, scale: float, *, terms: int = 1, coverage: float = COVERAGE):
    """The interval (rows) of a true count ≥ 0 from its noisy release(s) ``noisy``.

    ``noisy`` may be a number or an array; returns ``(low, high)`` of the same shape:
    ``max(y − k, 0)`` and ``max(y + k, 0)`` with k from :func:`noise_halfwidth`.
    """
    k = noise_halfwidth(scale, terms=terms, coverage=coverage)
    y = np.asarray(noisy, dtype=np.float64)
    low, high = np.maximum(y - k, 0.0), np.maximum(y + k, 0.0)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high
