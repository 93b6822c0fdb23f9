"""Serenade's quality f = J·σ(|E11|) and its sensitivity Δf (docs/ALGORITHMS.md §3.2).

σ(x) = 1 / (1 + exp(−s·(x − x0))) with x0 = 0.1·N and steepness s. The
exponential mechanism needs Δf: the largest change of f when one row is added
to or removed from the data, for any fixed pair of queries. Such a row either
joins the union only (|E11| = i, |E1∪| = u → u + 1) or joins both the union and
the intersection (i → i + 1, u → u + 1); removal is the reverse move. So

    Δf = max over 0 ≤ i ≤ u < M of  max(|f(i, u) − f(i, u+1)|, |f(i+1, u+1) − f(i, u)|)

with f(0, 0) = 0 (empty union, J = 0). The published values come out of this
definition: Mammals (N = 2575, s = 0.02) gives σ(1) = 0.00588, from the move
(0, 0) → (1, 1) (starting the sum at "1 ≤ i" would give s/4 = 0.005 instead), and a large
N with s = 0.01 gives s/4 = 0.0025 (the sigmoid's steepest step at x0).

:func:`quality_sensitivity` computes the maximum in O(M) time and memory: for
each i the first move is largest at the smallest union, and the second is a
one-variable rational function of u whose extremes are the two ends of the
range and one interior critical point (found in closed form). Nothing here
reads data: Δf depends only on (N, s) — public parameters, or N̂ released by a
charged noisy count (see :mod:`dpcore.redescriptions.serenade.miner`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sigmoid(x, steepness, x0):
    """σ(x) = 1/(1 + e^(−s(x − x0))), computed without overflow."""
    z = -steepness * (x - x0)
    if z > 0.0:
        e = math.exp(-z)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(z))


@njit(cache=True, nogil=True)
def quality(e11, union, steepness, x0):
    """f = |E11|/|E1∪| · σ(|E11|); 0 when the union is empty. Counts in rows."""
    if union <= 0:
        return 0.0
    return (e11 / union) * sigmoid(float(e11), steepness, x0)


def _sigma(x: np.ndarray, steepness: float, x0: float) -> np.ndarray:
    z = np.clip(-steepness * (x - x0), -700.0, 700.0)
    return 1.0 / (1.0 + np.exp(z))


def sensitivity_range(n_rows: float, steepness: float) -> int:
    """M, the largest union size searched: 4·N + 100/s rows.

    Beyond x0 + a few 1/s both moves shrink like 1/u, so the maximum sits far
    below M; searching past N also keeps Δf valid when N is only estimated.
    """
    return int(math.ceil(4.0 * max(float(n_rows), 1.0) + 100.0 / steepness))


@lru_cache(maxsize=64)
def quality_sensitivity(n_rows: float, steepness: float, x0: float | None = None,
                        max_union: int | None = None) -> float:
    """Δf of f = J·σ(|E11|) under adding or removing one row (see module docstring).

    Parameters
    ----------
    n_rows : float
        N (rows): public, or a released noisy estimate. Sets x0 = 0.1·N unless
        ``x0`` is given, and the searched range M (:func:`sensitivity_range`).
    steepness : float
        s > 0.
    x0 : float, optional
        Centre of the sigmoid, in rows (default 0.1·N).
    max_union : int, optional
        M, the largest union size considered (default :func:`sensitivity_range`).

    Returns
    -------
    float
        Δf (quality units). Not DP-relevant itself: a function of public inputs.
    """
    if not steepness > 0:
        raise ValueError(f"steepness must be > 0; got {steepness!r}")
    x0 = 0.1 * float(n_rows) if x0 is None else float(x0)
    m = sensitivity_range(n_rows, steepness) if max_union is None else int(max_union)
    if m < 1:
        return 0.0
    i = np.arange(0, m, dtype=np.float64)            # |E11| before the move, u ∈ [i, m−1]
    sig_i, sig_next = _sigma(i, steepness, x0), _sigma(i + 1.0, steepness, x0)
    # Row joins the union only: σ(i)·i/(u(u+1)), largest at u = max(i, 1).
    union_only = np.where(i >= 1, sig_i / (i + 1.0), 0.0)
    # Row joins both: g(u) = a/(u+1) − b/u (u ≥ 1); g(0) = σ(1) for the empty start.
    a, b = (i + 1.0) * sig_next, i * sig_i
    lo, hi = np.maximum(i, 1.0), float(m - 1)
    c = a - b
    with np.errstate(divide="ignore", invalid="ignore"):
        crit = np.where(c > 0, (b + np.sqrt(b * b + c * b)) / c, lo)
    both = np.where(i == 0, sig_next, 0.0)          # (0, 0) → (1, 1)
    for u in (lo, np.full_like(i, hi), np.floor(crit), np.ceil(crit)):
        u = np.clip(u, lo, max(hi, 1.0))
        g = a / (u + 1.0) - b / u
        both = np.maximum(both, np.abs(g))
    return float(max(union_only.max(), both.max()))


def brute_force_sensitivity(n_rows: int, steepness: float, x0: float | None = None) -> float:
    """Δf by enumerating every (i, u) with 0 ≤ i ≤ u < N — O(N²), for tests only."""
    x0 = 0.1 * n_rows if x0 is None else x0
    best = 0.0
    for i in range(n_rows):
        u = np.arange(i, n_rows, dtype=np.float64)
        f_iu = np.where(u > 0, i / np.maximum(u, 1.0), 0.0) * _sigma(np.float64(i), steepness, x0)
        f_iu1 = i / (u + 1.0) * _sigma(np.float64(i), steepness, x0)
        f_i1u1 = (i + 1.0) / (u + 1.0) * _sigma(np.float64(i + 1), steepness, x0)
        best = max(best, float(np.abs(f_iu - f_iu1).max()), float(np.abs(f_i1u1 - f_iu).max()))
    return best
