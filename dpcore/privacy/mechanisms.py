"""Differential-privacy mechanisms: Laplace, discrete Laplace, exponential mechanism, MCMC test.

Every *releasing* mechanism here follows the same protocol:

1. validate its arguments (a bad argument charges nothing and draws nothing);
2. call ``accountant.spend(mechanism, label, epsilon_nano, sensitivity, parallel)``
   (a refused spend raises :class:`~dpcore.errors.BudgetExceededError` and draws
   nothing: the generator's state is untouched);
3. only then draw noise from the explicit ``np.random.Generator`` it was given.

Units
-----
* Budgets enter as ``epsilon_nano``: an ``int`` number of nano-ε (1 ε = 10⁹ units,
  see :mod:`dpcore.privacy.units`). The float ε used for the noise scale is the one the
  accountant returns, so the noise is calibrated to exactly what was charged.
* ``sensitivity`` Δ is the global sensitivity of the released quantity under the
  project's neighbouring relation (one row added or removed), in the units of
  that quantity: rows for counts, score units for utilities. For vector releases
  it is the **L1** sensitivity of the whole vector.

What is DP here
---------------
* :func:`laplace`, :func:`discrete_laplace`, :func:`noisy_counts` and
  :func:`exponential_mechanism` are ε-DP releases (ε = ``epsilon_nano``·10⁻⁹) when
  Δ is a true bound of the sensitivity. They charge the accountant themselves.
* :func:`gumbel_max_choice`, :func:`gumbel_max_index`, :func:`mcmc_accept` and
  :func:`mcmc_accept_jit` charge **nothing**. They are the sampling cores for
  algorithms that have already charged the accountant for the draws they make
  (e.g. createDTExpMech charges each tree level once and draws at every node of
  that level: parallel composition over disjoint rows). Calling them on private
  data without such a charge is a privacy leak.

Floating point (docs/PRIVACY.md §9)
---------------------------------
Continuous Laplace noise from a float sampler is *idealised numerics*: the
textbook proof assumes real arithmetic, and the low-order bits of a float
Laplace sample can leak (Mironov, CCS 2012). Use :func:`discrete_laplace`
(the default ``noise="discrete"`` of :class:`dpcore.redescriptions.params.MiningParams`) for
counts. The exponential mechanism (Gumbel-max) and the MCMC acceptance test
also use floats; they release only an index / a decision, not a float.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import njit

from dpcore.errors import ParameterError
from dpcore.privacy.units import nano_to_epsilon

__all__ = [
    "laplace",
    "discrete_laplace",
    "noisy_counts",
    "exponential_mechanism",
    "gumbel_max_choice",
    "gumbel_max_index",
    "mcmc_accept_probability",
    "mcmc_accept",
    "mcmc_accept_jit",
    "NOISE_KINDS",
]

NOISE_KINDS = ("discrete", "continuous")

# Largest noise scale Δ/ε accepted by discrete_laplace: beyond it the int64
# arithmetic of counts + noise could overflow (geometric tails reach ~40 scales
# with probability 2^-58).
_MAX_DISCRETE_SCALE = 1e15

# Smallest positive float64: Exp(1) draws of exactly 0.0 (possible with
# probability ~2^-53 in NumPy's ziggurat) are raised to it so that the Gumbel
# variable −log(E) stays finite (≤ 708.4) and no NaN can appear.
_TINY = float(np.finfo(np.float64).tiny)


# --------------------------------------------------------------------------- validation

def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(
            "rng must be a numpy.random.Generator (e.g. np.random.default_rng()); "
            f"got {type(rng).__name__}")


def _check_accountant(accountant) -> None:
    if accountant is None or not callable(getattr(accountant, "spend", None)):
        raise ParameterError("an accountant with a spend(...) method is required; "
                             "every release must be charged before noise is drawn")


def _check_epsilon_nano(epsilon_nano) -> int:
    # Reject floats on purpose: a float here is almost always ε passed where
    # nano-ε was expected (1.0 would silently mean ε = 1e-9).
    if isinstance(epsilon_nano, bool) or not isinstance(epsilon_nano, numbers.Integral):
        raise ParameterError(
            "epsilon_nano must be an int number of nano-ε (1 ε = 10**9); got "
            f"{epsilon_nano!r} — convert with dpcore.privacy.units.epsilon_to_nano")
    epsilon_nano = int(epsilon_nano)
    if epsilon_nano <= 0:
        raise ParameterError(f"ε must be > 0; got epsilon_nano = {epsilon_nano}")
    return epsilon_nano


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a number > 0; got {value!r}")
    out = float(value)
    if not (math.isfinite(out) and out > 0):
        raise ParameterError(f"{name} must be finite and > 0; got {value!r}")
    return out


def _check_sensitivity(sensitivity) -> float:
    return _check_positive(sensitivity, "sensitivity")


def _check_int_sensitivity(sensitivity) -> int:
    value = _check_sensitivity(sensitivity)
    if not value.is_integer() or value < 1:
        raise ParameterError(
            f"discrete Laplace needs an integer sensitivity ≥ 1; got {sensitivity!r}")
    return int(value)


def _check_parallel(parallel) -> int:
    if isinstance(parallel, bool) or not isinstance(parallel, numbers.Integral) or parallel < 1:
        raise ParameterError(f"parallel must be an int ≥ 1; got {parallel!r}")
    return int(parallel)


def _check_label(label) -> str:
    if not isinstance(label, str) or not label:
        raise ParameterError(f"label must be a non-empty str naming the release; got {label!r}")
    return label


def _check_call(epsilon_nano, rng, accountant, label, parallel) -> tuple[int, str, int]:
    """The checks every charging mechanism makes before it spends: (ε nano, label, parallel)."""
    epsilon_nano = _check_epsilon_nano(epsilon_nano)
    _check_rng(rng)
    _check_accountant(accountant)
    return epsilon_nano, _check_label(label), _check_parallel(parallel)


def _as_float_values(values) -> np.ndarray:
    try:
        arr = np.array(values, dtype=np.float64)  # a copy: the input is never modified
    except (TypeError, ValueError):
        raise ParameterError("values must be numbers (array-like of float)") from None
    if not np.all(np.isfinite(arr)):
        raise ParameterError("values must be finite (no NaN or ±inf)")
    return arr


def _as_int_counts(counts) -> np.ndarray:
    arr = np.asarray(counts)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise ParameterError(f"counts must be integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ParameterError("counts must be integer-valued (got non-integral floats)")
        if arr.size and np.max(np.abs(arr)) > 2.0**53:
            raise ParameterError("counts are too large to be represented exactly")
    elif arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ParameterError("counts exceed the int64 range")
    return arr.astype(np.int64, copy=True)


def _as_utilities(utilities) -> np.ndarray:
    try:
        u = np.array(utilities, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("utilities must be numbers (1-D array-like of float)") from None
    if u.ndim != 1:
        raise ParameterError("utilities must be 1-D (one score per candidate); "
                             f"got shape {u.shape}")
    if u.size == 0:
        raise ParameterError("the exponential mechanism needs at least one candidate; got none")
    if np.any(np.isnan(u)):
        raise ParameterError("utilities contain NaN")
    if np.any(u == np.inf):
        raise ParameterError("utilities contain +inf (use finite scores; "
                             "−inf excludes a candidate)")
    if not np.any(np.isfinite(u)):
        raise ParameterError("every candidate has utility −inf: there is nothing to choose")
    return u


# --------------------------------------------------------------------------- Laplace

def laplace(values, *, sensitivity, epsilon_nano, rng, accountant, label, parallel=1):
    """Continuous Laplace mechanism: ``values + Laplace(0, Δ/ε)`` element-wise.

    Parameters
    ----------
    values : array-like of float
        The true values (e.g. counts, in rows). Must be finite. Not modified.
    sensitivity : float
        Δ > 0: the L1 sensitivity of the whole ``values`` vector under one row
        added or removed (1 for a histogram of disjoint cells).
    epsilon_nano : int
        ε of this release in nano-ε (> 0).
    rng : numpy.random.Generator
        Source of the noise. Draws exactly ``values.size`` Laplace variates in
        one ``rng.laplace`` call (C order).
    accountant : PrivacyAccountant
        Charged ``spend("laplace", label, epsilon_nano, sensitivity, parallel)``
        before any noise is drawn.
    label : str
        What is released, for the accountant's record.
    parallel : int, optional
        Number of disjoint parts the same ε covers (recorded only), default 1.

    Returns
    -------
    numpy.ndarray of float64
        Same shape as ``values`` (0-d for a scalar).

    Raises
    ------
    ParameterError
        Bad arguments (ε ≤ 0, Δ ≤ 0, non-finite values, ...); nothing charged.
    BudgetExceededError
        The accountant refused the spend; no noise drawn.

    Notes
    -----
    Privacy: ε-DP for neighbours whose ``values`` differ by at most Δ in L1
    norm, since the density ratio of Laplace(b) at x and x + δ is at most
    exp(|δ|/b) = exp(ε|δ|/Δ) ≤ exp(ε).

    **Idealised numerics**: the proof assumes exact real arithmetic; NumPy's
    float sampler does not realise it exactly, and the low-order bits of the
    output can leak information (Mironov 2012). Prefer :func:`discrete_laplace`
    for counts; this mechanism exists for the paper-faithful
    ``noise="continuous"`` option.
    """
    sensitivity = _check_sensitivity(sensitivity)
    epsilon_nano, label, parallel = _check_call(epsilon_nano, rng, accountant, label, parallel)
    arr = _as_float_values(values)

    epsilon = float(accountant.spend("laplace", label, epsilon_nano, sensitivity, parallel))
    scale = sensitivity / epsilon
    arr += rng.laplace(0.0, scale, size=arr.shape)  # in place: a 0-d input stays an ndarray
    return arr


# --------------------------------------------------------------------------- discrete Laplace

def discrete_laplace(counts, *, sensitivity, epsilon_nano, rng, accountant, label, parallel=1):
    """Discrete Laplace (two-sided geometric) mechanism on integer counts.

    Adds to every count an independent integer ``Z`` with

    .. math:: P(Z = k) = \\frac{1 - a}{1 + a}\\, a^{|k|}, \\quad a = e^{-ε/Δ},\\ k ∈ ℤ,

    i.e. P(k) ∝ exp(−ε|k|/Δ): the discrete Laplace distribution with scale
    Δ/ε, the same distribution as OpenDP's discrete Laplace mechanism
    (``make_laplace`` on integers) and as the sampler of Canonne, Kamath &
    Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.

    Parameters
    ----------
    counts : array-like of int
        True counts (rows). Integer dtype, or floats with integral values.
    sensitivity : int
        Δ ≥ 1: L1 sensitivity of the whole ``counts`` vector (1 for a histogram
        of disjoint cells under one row added/removed).
    epsilon_nano : int
        ε of this release in nano-ε (> 0).
    rng : numpy.random.Generator
        Source of the noise. Draws ``2·counts.size`` geometric variates in one
        ``rng.geometric`` call.
    accountant : PrivacyAccountant
        Charged ``spend("discrete_laplace", label, epsilon_nano, sensitivity,
        parallel)`` before any noise is drawn.
    label : str
        What is released, for the accountant's record.
    parallel : int, optional
        Number of disjoint parts the same ε covers (recorded only), default 1.

    Returns
    -------
    numpy.ndarray of int64
        Noisy counts, same shape as ``counts``. They can be negative.

    Raises
    ------
    ParameterError
        Bad arguments (non-integer Δ, ε ≤ 0, non-integral counts, a noise scale
        so large that int64 could overflow, ...); nothing charged.
    BudgetExceededError
        The accountant refused the spend; no noise drawn.

    Notes
    -----
    Sampling: ``Z = X − Y`` with X, Y i.i.d. geometric on {0, 1, ...} with
    success probability p = 1 − e^{−ε/Δ} (``rng.geometric(p) − 1``); the
    difference of two such variables has exactly the pmf above.

    Privacy: P(Z = k)/P(Z = k + δ) ≤ a^{−|δ|} = exp(ε|δ|/Δ), so the release is
    ε-DP for neighbours whose counts differ by at most Δ in L1 norm.

    Caveat: the output is an integer, so it does not leak float low-order
    bits the way continuous Laplace does; but NumPy's geometric sampler itself
    computes with floats (inversion with ``log1p`` for small p, a float
    search for large p), so the sampled distribution equals the exact pmf only
    up to float rounding. OpenDP / CKS20 sample with exact rational arithmetic
    and avoid even that.
    """
    delta = _check_int_sensitivity(sensitivity)
    epsilon_nano, label, parallel = _check_call(epsilon_nano, rng, accountant, label, parallel)
    arr = _as_int_counts(counts)
    # Validate the scale before charging, with the ε the accountant will return.
    epsilon_check = nano_to_epsilon(epsilon_nano)
    if delta / epsilon_check > _MAX_DISCRETE_SCALE:
        raise ParameterError(
            f"discrete Laplace scale Δ/ε = {delta / epsilon_check:.3g} is too large "
            f"(max {_MAX_DISCRETE_SCALE:.0e}): the noisy counts could overflow int64")

    epsilon = float(accountant.spend("discrete_laplace", label, epsilon_nano, delta, parallel))
    p = -math.expm1(-epsilon / delta)  # 1 − e^{−ε/Δ}, accurate for small ε/Δ
    p = min(p, 1.0)
    geo = rng.geometric(p, size=(2,) + arr.shape).astype(np.int64, copy=False) - 1
    arr += geo[0] - geo[1]  # in place: a 0-d input stays an ndarray
    return arr


# --------------------------------------------------------------------------- dispatcher

def noisy_counts(counts, *, kind="discrete", sensitivity, epsilon_nano, rng, accountant, label,
                 parallel=1):
    """Noisy counts for extractReds: discrete or continuous Laplace, as float64.

    Parameters
    ----------
    counts : array-like
        True counts (rows). Integer-valued for ``kind="discrete"``.
    kind : {"discrete", "continuous"}
        ``"discrete"`` (default): :func:`discrete_laplace` (needs an integer Δ);
        ``"continuous"``: :func:`laplace` (idealised numerics).
    sensitivity, epsilon_nano, rng, accountant, label, parallel
        As in :func:`discrete_laplace` / :func:`laplace`; the accountant is
        charged once, by the chosen mechanism, before noise is drawn.

    Returns
    -------
    numpy.ndarray of float64
        Noisy counts, same shape as ``counts``.

    Raises
    ------
    ParameterError
        Unknown ``kind`` or bad arguments; nothing charged.
    BudgetExceededError
        The accountant refused the spend; no noise drawn.
    """
    if kind == "discrete":
        out = discrete_laplace(counts, sensitivity=sensitivity, epsilon_nano=epsilon_nano,
                               rng=rng, accountant=accountant, label=label, parallel=parallel)
        return out.astype(np.float64)
    if kind == "continuous":
        return laplace(counts, sensitivity=sensitivity, epsilon_nano=epsilon_nano, rng=rng,
                       accountant=accountant, label=label, parallel=parallel)
    raise ParameterError(f"noise kind must be one of {NOISE_KINDS}; got {kind!r}")


# --------------------------------------------------------------------------- exponential mechanism

def _gumbel_max(u: np.ndarray, factor: float, rng: np.random.Generator) -> int:
    """Gumbel-max draw on validated utilities (finite or −inf, at least one finite)."""
    n = u.shape[0]
    e = rng.standard_exponential(n)  # one Exp(1) per candidate, −inf ones included
    np.maximum(e, _TINY, out=e)
    gumbel = -np.log(e)
    finite = np.isfinite(u)
    top = np.max(u[finite])
    # Shift by the best finite utility first so that huge utilities cannot overflow;
    # a difference that overflows to −inf has probability e^{-huge} = 0 anyway.
    with np.errstate(over="ignore"):
        shifted = np.where(finite, u - top, -np.inf)
        keys = np.full(n, -np.inf)
        keys[finite] = shifted[finite] * factor + gumbel[finite]
    return int(np.argmax(keys))


def gumbel_max_choice(utilities, scale_epsilon, sensitivity, rng) -> int:
    """Exponential-mechanism draw **without charging the accountant**.

    Returns index i with probability ∝ exp(ε·u_i/(2Δ)) using the Gumbel-max
    trick, exactly like :func:`exponential_mechanism` but spending nothing.

    .. warning::
       The caller must already have charged the accountant for this draw, e.g.
       an algorithm that charged one tree level's ε once and draws at every
       node of that level (parallel composition over disjoint rows, as in
       createDTExpMech, docs/ALGORITHMS.md §2.4). Any other use on private data is
       a privacy leak.

    Parameters
    ----------
    utilities : array-like of float, 1-D
        Score of every candidate; −inf marks a candidate that is never chosen.
        NaN and +inf are rejected.
    scale_epsilon : float
        The ε (float, ε units, > 0) the caller already charged for this draw.
    sensitivity : float
        Δ > 0 of the utility function.
    rng : numpy.random.Generator
        Draws exactly ``len(utilities)`` Exp(1) variates
        (``rng.standard_exponential(n)``); the same stream as :func:`gumbel_max_index`.

    Returns
    -------
    int
        Index of the chosen candidate.

    Raises
    ------
    ParameterError
        Empty candidate set, all utilities −inf, NaN/+inf utilities, ε ≤ 0 or
        Δ ≤ 0.
    """
    epsilon = _check_positive(scale_epsilon, "scale_epsilon (ε)")
    sensitivity = _check_sensitivity(sensitivity)
    _check_rng(rng)
    u = _as_utilities(utilities)
    return _gumbel_max(u, epsilon / (2.0 * sensitivity), rng)


def exponential_mechanism(utilities, *, sensitivity, epsilon_nano, rng, accountant, label,
                          parallel=1) -> int:
    """Exponential mechanism (McSherry & Talwar 2007) by Gumbel-max.

    Chooses candidate i with probability
    exp(ε·u_i/(2Δ)) / Σ_j exp(ε·u_j/(2Δ)), drawn as
    argmax_i (ε·u_i/(2Δ) + G_i) with G_i = −log(E_i), E_i ~ Exp(1) i.i.d.
    (G_i is standard Gumbel, so the argmax follows the softmax exactly).

    Parameters
    ----------
    utilities : array-like of float, 1-D
        Score of each candidate on the private data. −inf marks a candidate
        that is never chosen (its exclusion must not depend on private data
        beyond what Δ covers). NaN and +inf are rejected.
    sensitivity : float
        Δ > 0: the most any single utility changes when one row is added or
        removed (e.g. 2 for the count-weighted Gini score of §3.3).
    epsilon_nano : int
        ε of this draw in nano-ε (> 0).
    rng : numpy.random.Generator
        Draws exactly ``len(utilities)`` Exp(1) variates.
    accountant : PrivacyAccountant
        Charged ``spend("exponential", label, epsilon_nano, sensitivity,
        parallel)`` before anything is drawn.
    label : str
        What is released, for the accountant's record.
    parallel : int, optional
        Number of disjoint parts the same ε covers (recorded only), default 1.

    Returns
    -------
    int
        Index of the chosen candidate.

    Raises
    ------
    ParameterError
        Empty candidate set, all −inf, NaN/+inf utilities, ε ≤ 0, Δ ≤ 0;
        nothing charged.
    BudgetExceededError
        The accountant refused the spend; nothing drawn.

    Notes
    -----
    Privacy: ε-DP when every utility has sensitivity ≤ Δ (the factor 2 covers
    the change of the normaliser). Utilities are shifted by their finite
    maximum before scaling, so huge scores cannot overflow; all-equal
    utilities give a uniform choice. Only the index is released, but the
    Gumbel keys are floats: the usual idealised-numerics caveat applies.
    """
    sensitivity = _check_sensitivity(sensitivity)
    epsilon_nano, label, parallel = _check_call(epsilon_nano, rng, accountant, label, parallel)
    u = _as_utilities(utilities)

    epsilon = float(accountant.spend("exponential", label, epsilon_nano, sensitivity, parallel))
    return _gumbel_max(u, epsilon / (2.0 * sensitivity), rng)


@njit(cache=True)
def gumbel_max_index(scores, factor, rng):
    """Numba Gumbel-max draw for jitted kernels; **charges nothing**.

    Returns argmax_i (factor·(s_i − max s) + G_i), G_i = −log(E_i),
    E_i ~ Exp(1): index i with probability ∝ exp(factor·s_i). For the
    exponential mechanism pass ``factor = ε / (2Δ)``. The caller must already
    have charged the accountant for this draw (see :func:`gumbel_max_choice`).

    Parameters
    ----------
    scores : numpy.ndarray of float64, 1-D, contiguous
        Utilities; −inf marks a candidate that is never chosen.
    factor : float
        ε/(2Δ) > 0.
    rng : numpy.random.Generator
        Passed into nopython code (numba supports Generator arguments and
        reproduces NumPy's streams). Draws exactly ``len(scores)`` Exp(1)
        variates, in index order: the same stream, and so the same choice, as
        :func:`gumbel_max_choice` with ``scale_epsilon / (2·sensitivity) = factor``.

    Returns
    -------
    int
        The chosen index, or −1 if ``scores`` is empty or all −inf (no
        exception, so kernels can branch on it).

    Raises
    ------
    ValueError
        A score is NaN or +inf.
    """
    # Scalars are converted with float(): the arithmetic is the same IEEE float64, and
    # under NUMBA_DISABLE_JIT=1 Python floats overflow to ±inf silently instead of
    # raising NumPy's RuntimeWarning (tests turn warnings into errors).
    n = scores.shape[0]
    fac = float(factor)
    top = -np.inf
    for i in range(n):
        s = float(scores[i])
        if np.isnan(s) or s == np.inf:
            raise ValueError("gumbel_max_index: scores must be finite or -inf")
        if s > top:
            top = s
    best = -1
    best_key = -np.inf
    for i in range(n):
        e = float(rng.standard_exponential())  # always drawn: the stream ignores the scores
        if e < 2.2250738585072014e-308:
            e = 2.2250738585072014e-308
        s = float(scores[i])
        if s == -np.inf:
            continue
        shifted = s - top
        if shifted == -np.inf:
            continue
        key = shifted * fac - np.log(e)
        if best == -1 or key > best_key:
            best = i
            best_key = key
    return best


# --------------------------------------------------------------------------- MCMC acceptance

def _check_mcmc(delta_score, epsilon, sensitivity):
    if isinstance(delta_score, bool) or not isinstance(delta_score, numbers.Real):
        raise ParameterError(f"delta_score must be a number; got {delta_score!r}")
    d = float(delta_score)
    if math.isnan(d) or d == math.inf:
        raise ParameterError(f"delta_score must be finite or −inf; got {delta_score!r}")
    return d, _check_positive(epsilon, "epsilon (ε)"), _check_sensitivity(sensitivity)


def mcmc_accept_probability(delta_score, epsilon, sensitivity) -> float:
    """Metropolis acceptance probability min(1, exp(ε·Δs/(2Δ))); charges nothing.

    Parameters
    ----------
    delta_score : float
        S(new) − S(old) in score units (−inf allowed: probability 0).
    epsilon : float
        The chain's ε (ε units, > 0), charged by the sampler, not here.
    sensitivity : float
        Δ > 0 of the score (2 for createDTMCMC, 1 for sampleTreePair).

    Returns
    -------
    float
        In [0, 1]; computed as exp(min(0, x)) so it never overflows.
    """
    d, eps, sens = _check_mcmc(delta_score, epsilon, sensitivity)
    x = eps * d / (2.0 * sens)
    return 1.0 if x >= 0 else math.exp(x)


def mcmc_accept(delta_score, epsilon, sensitivity, u) -> bool:
    """Metropolis accept/reject: ``u < min(1, exp(ε·Δs/(2Δ)))``; charges nothing.

    Pure function (the randomness is the caller's uniform ``u``); the
    reference for :func:`mcmc_accept_jit`, which the numba samplers call.

    Parameters
    ----------
    delta_score, epsilon, sensitivity
        As in :func:`mcmc_accept_probability`.
    u : float
        A Uniform[0, 1) draw, e.g. ``rng.random()``.

    Returns
    -------
    bool
        True to accept the proposal (always when Δs ≥ 0).

    Notes
    -----
    The chain targets π(T) ∝ exp(ε·S(T)/(2Δ)), the exponential mechanism's
    distribution once the caller multiplies in the proposal ratio (Hastings); it is ε-DP
    only upon convergence (Bai et al. 2017, docs/PRIVACY.md §7).
    """
    if isinstance(u, bool) or not isinstance(u, numbers.Real) or not (0.0 <= float(u) < 1.0):
        raise ParameterError(f"u must be a uniform draw in [0, 1); got {u!r}")
    return bool(float(u) < mcmc_accept_probability(delta_score, epsilon, sensitivity))


@njit(cache=True)
def mcmc_accept_jit(delta_score, epsilon, sensitivity, u):
    """Numba version of :func:`mcmc_accept` for the samplers; charges nothing.

    Same decision as :func:`mcmc_accept` for valid inputs (ε > 0, Δ > 0,
    u ∈ [0, 1)); it does not validate them. A NaN ``delta_score`` is never
    accepted.
    """
    x = epsilon * delta_score / (2.0 * sensitivity)
    if x >= 0.0:
        return True
    if not (x < 0.0):  # NaN
        return False
    return u < np.exp(x)
