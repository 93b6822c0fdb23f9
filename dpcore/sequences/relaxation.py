"""Threshold relaxation for pruning on a sample database (Xu et al. 2015, §V-B).

A candidate whose true relative support is exactly θ has, in a sample database of n_db
records, a support X ~ Binomial(n_db, θ) ≈ Normal(μ = θ·n_db, σ² = n_db·θ(1 − θ)); its
noisy local support is Z = X + ξ with ξ ~ Laplace(0, φ), φ = Δ_k/ε4 (assuming shrinking
loses nothing). The CDF of a Normal plus an independent Laplace (Díaz-Francés & Montoya
2008) is, with u = z − μ and Φ the standard normal CDF,

    F(z) = Φ(u/σ) − ½·exp(σ²/(2φ²) − u/φ)·Φ(u/σ − σ/φ)
                  + ½·exp(σ²/(2φ²) + u/φ)·Φ(−u/σ − σ/φ).

The relaxed threshold θ′ solves F(θ′) = ζ: a frequent candidate is pruned with probability
about ζ or less (a heuristic; it affects utility only). θ′ is an absolute count of records
in the sample database and may be negative (then nothing is pruned).

Privacy: θ′ depends only on public parameters and DP outputs (n_db = N̂/L_f with the noisy
record count N̂, never the true size of a sample database), so computing it costs no ε.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from dpcore.errors import ParameterError

__all__ = ["noisy_support_cdf", "relaxed_threshold", "laplace_pruning_threshold"]


def noisy_support_cdf(z, mu: float, sigma: float, phi: float):
    """CDF of Normal(mu, sigma²) + Laplace(0, phi) at z (array-like or float).

    The exp·Φ products are evaluated in log space (``log_ndtr``) so that they cannot
    overflow when φ ≪ σ.
    """
    z = np.asarray(z, dtype=np.float64)
    if not (sigma > 0 and phi > 0):
        raise ParameterError(f"need σ > 0 and φ > 0; got σ = {sigma!r}, φ = {phi!r}")
    u = z - mu
    a = u / sigma
    c = sigma * sigma / (2.0 * phi * phi)
    lower = np.exp(c - u / phi + log_ndtr(a - sigma / phi))
    upper = np.exp(c + u / phi + log_ndtr(-a - sigma / phi))
    out = ndtr(a) - 0.5 * lower + 0.5 * upper
    return np.clip(out, 0.0, 1.0)


def relaxed_threshold(theta: float, n_db: float, phi: float, zeta: float) -> float:
    """The relaxed pruning threshold θ′ (records of the sample database).

    Parameters
    ----------
    theta : float
        Relative support threshold θ in (0, 1).
    n_db : float
        Size of the sample database (records): N̂ / L_f in strict mode, a DP estimate.
    phi : float
        Laplace scale of the noisy local supports, Δ_k / ε4 (records).
    zeta : float
        Relaxation ζ in (0, 1): the target probability of pruning a candidate whose true
        relative support is exactly θ.

    Returns
    -------
    float
        θ′ with F(θ′) = ζ; μ = θ·n_db exactly when ζ = ½.
    """
    if not 0.0 < theta < 1.0:
        raise ParameterError(f"θ must lie in (0, 1); got {theta!r}")
    if not 0.0 < zeta < 1.0:
        raise ParameterError(f"ζ must lie in (0, 1); got {zeta!r}")
    if not (n_db > 0 and math.isfinite(n_db)):
        raise ParameterError(f"the sample size must be > 0; got {n_db!r}")
    if not (phi > 0 and math.isfinite(phi)):
        raise ParameterError(f"the noise scale φ must be > 0; got {phi!r}")
    mu = theta * n_db
    sigma = math.sqrt(n_db * theta * (1.0 - theta))
    if zeta == 0.5:
        return mu
    width = 60.0 * (sigma + phi)
    return float(brentq(lambda z: float(noisy_support_cdf(z, mu, sigma, phi)) - zeta,
                        mu - width, mu + width, xtol=1e-9, rtol=1e-12, maxiter=500))


def laplace_pruning_threshold(threshold: float, phi: float, zeta: float) -> float:
    """Strict PFS2's pruning threshold θ′ on all records (records; may be negative).

    A candidate whose support is exactly ``threshold`` (θ·N̂) and whose noisy support is
    that plus Laplace(0, φ) noise falls below θ′ with probability ζ:
    θ′ = threshold + φ·ln(2ζ) for ζ ≤ ½ and threshold − φ·ln(2(1 − ζ)) above. There is no
    sampling term: strict mode prunes on all records (no sample database), so only the
    noise spreads the noisy support. Inputs are public or released (θ·N̂, φ = Δ_k/ε, ζ):
    computing θ′ costs no ε. The discrete Laplace noise actually drawn has a slightly
    lighter tail at the same scale, so the pruning chance is at most about ζ.
    """
    if not 0.0 < zeta < 1.0:
        raise ParameterError(f"ζ must lie in (0, 1); got {zeta!r}")
    if not (phi > 0 and math.isfinite(phi)):
        raise ParameterError(f"the noise scale φ must be > 0; got {phi!r}")
    if zeta <= 0.5:
        return float(threshold + phi * math.log(2.0 * zeta))
    return float(threshold - phi * math.log(2.0 * (1.0 - zeta)))
