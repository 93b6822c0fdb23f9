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
* :func:`exponential_choice`, :func:`exponential_index` (also under their former
  names ``gumbel_max_choice`` / ``gumbel_max_index``), :func:`bernoulli_exp`,
  :func:`discrete_laplace_sample`, :func:`mcmc_accept` and :func:`mcmc_accept_jit`
  charge **nothing**. They are the sampling cores for
  algorithms that have already charged the accountant for the draws they make
  (e.g. createDTExpMech charges each tree level once and draws at every node of
  that level: parallel composition over disjoint rows). Calling them on private
  data without such a charge is a privacy leak.

Numerics (docs/PRIVACY.md, "Numerics of each sampler")
------------------------------------------------------
* :func:`discrete_laplace` (and so :func:`noisy_counts` with ``kind="discrete"``) is
  **exact**: the sampler of Canonne, Kamath & Steinke (NeurIPS 2020) with integer
  arithmetic only (uniform integers and Bernoulli(exp(−γ)) for rational γ), so every
  integer k has exactly the probability ∝ exp(−ε|k|/Δ), with an unbounded support.
* :func:`exponential_index` (the exponential mechanism, by inversion of the float CDF)
  and :func:`mcmc_accept_jit` (the MCMC acceptance) use float64 arithmetic with a
  **stated, tested bound** on their deviation from the exact distribution:
  total variation ≤ (4n + 2)·2⁻⁵³ for n candidates (:data:`EXPONENTIAL_TV_BOUND_UNIT`)
  and ≤ 2⁻⁵¹ per accept/reject decision (:data:`MCMC_ACCEPT_TV_BOUND`).
* :func:`laplace` (continuous, float) is idealised numerics; the low-order bits
  of a float Laplace sample can leak (Mironov, CCS 2012). Strict mode never uses it.

Randomness: every mechanism draws from the ``np.random.Generator`` it is given;
:func:`dpcore.privacy.randomness.run_generator` chooses it (a ChaCha20 CSPRNG for
private data, a seeded PCG64 for public demo data and tests).
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
    "exponential_choice",
    "exponential_index",
    "exponential_cumulative_weights",
    "gumbel_max_choice",
    "gumbel_max_index",
    "bernoulli_exp",
    "discrete_laplace_sample",
    "discrete_laplace_scale",
    "mcmc_accept_probability",
    "mcmc_accept",
    "mcmc_accept_jit",
    "NOISE_KINDS",
    "EXPONENTIAL_TV_BOUND_UNIT",
    "MCMC_ACCEPT_TV_BOUND",
]

NOISE_KINDS = ("discrete", "continuous")

# Largest noise scale Δ/ε accepted by discrete_laplace: beyond it the int64
# arithmetic of counts + noise could overflow with a non-negligible probability
# (|noise| ≥ 2^62 has probability exp(−2^62/scale) < e^-4600 at this scale).
_MAX_DISCRETE_SCALE = 1e15

# The exact sampler runs in numba int64 while the scale's numerator and denominator
# stay below this (so that every intermediate sum stays below 2^63); larger ones (huge
# sensitivities such as MC-GEN's second moments) run the same algorithm on Python ints.
_INT64_SAMPLER_LIMIT = 1 << 62

#: Total-variation bound of :func:`exponential_index` per candidate: the float draw's
#: distribution is within ``EXPONENTIAL_TV_BOUND_UNIT · (4n + 2)`` of the exact
#: exponential mechanism over n candidates (docs/PRIVACY.md, "Numerics of each sampler").
EXPONENTIAL_TV_BOUND_UNIT = 2.0**-53

#: Bound on |P(accept) − min(1, exp(ε·Δs/(2Δ)))| of one :func:`mcmc_accept_jit` decision
#: with u = ``rng.random()`` (docs/PRIVACY.md, "Numerics of each sampler").
MCMC_ACCEPT_TV_BOUND = 2.0**-51

#: The replay recorder (:class:`dpcore.privacy.audit.NoiseRecorder`) while one records, else
#: None. :func:`laplace` and :func:`discrete_laplace` hand it every release (what reached the
#: noise: true values, ε, Δ, scale, the generator's state before the draw, the output) and
#: release what it returns — the drawn output, or in replay the output of a recorded run.
#: Off by default: one ``is None`` test per release. Only tests and audits on public or
#: synthetic data set it (``NoiseRecorder`` refuses to nest).
_recorder = None


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
    recorder = _recorder
    if recorder is not None:
        true_values, state = arr.copy(), recorder.state_of(rng)
    arr += rng.laplace(0.0, scale, size=arr.shape)  # in place: a 0-d input stays an ndarray
    if recorder is not None:
        arr = recorder.observe("laplace", label, epsilon_nano, sensitivity, parallel,
                               true_values, arr, scale, state)
    return arr


# --------------------------------------------------------------------------- exact samplers (CKS20)

@njit(cache=True, nogil=True)
def _bernoulli_exp_unit(num, den, rng):
    """Bernoulli(exp(−num/den)) for 0 ≤ num ≤ den (γ ∈ [0, 1]), exactly.

    Canonne, Kamath & Steinke 2020, Algorithm 1: K = 1, 2, ... while Bernoulli(γ/K)
    succeeds; return whether the final K is odd. Bernoulli(γ/K) is drawn as
    Bernoulli(num/den) AND Bernoulli(1/K) (independent uniform integers), so no
    product den·K is ever formed; Bernoulli(0) and Bernoulli(1) take no draw.
    """
    k = 1
    while True:
        if num == 0:  # Bernoulli(0) fails: no draw needed
            break
        if num < den and not rng.integers(0, den) < num:  # num = den: Bernoulli(1) succeeds
            break
        if k > 1 and not rng.integers(0, k) < 1:
            break
        k += 1
    return k % 2 == 1


@njit(cache=True, nogil=True)
def _bernoulli_exp_jit(num, den, rng):
    """Bernoulli(exp(−num/den)) for integers num ≥ 0, den ≥ 1, exactly (CKS20 Alg. 1).

    γ > 1 is split into ⌊γ⌋ independent Bernoulli(exp(−1)) draws (stopping at the first
    failure, so the expected cost is O(1) whatever γ) and one Bernoulli(exp(−(γ − ⌊γ⌋))).
    """
    # np.int64(1), not a literal 1: one compiled _bernoulli_exp_unit serves every call.
    while num > den:
        if not _bernoulli_exp_unit(np.int64(1), np.int64(1), rng):
            return False
        num -= den
    return _bernoulli_exp_unit(num, den, rng)


@njit(cache=True, nogil=True)
def _discrete_laplace_jit(s, t, rng):
    """One exact draw of the discrete Laplace with P(y) ∝ exp(−|y|·s/t), t, s < 2^62.

    CKS20 Algorithm 2: U uniform on {0..t−1} accepted with probability exp(−U/t);
    V ≥ 0 the number of successes of Bernoulli(exp(−1)) before the first failure
    (uncapped); X = U + t·V is geometric with P(X ≥ x) = exp(−x/t); Y = ⌊X/s⌋ is
    geometric with P(Y ≥ y) = exp(−y·s/t); a fair sign, rejecting (−, 0).
    ⌊(U + t·V)/s⌋ is accumulated one V at a time so no intermediate exceeds 2^63.
    """
    q = t // s
    r = t % s
    while True:
        u = rng.integers(0, t) if t > 1 else 0
        if not _bernoulli_exp_jit(u, t, rng):
            continue
        y = u // s
        rem = u % s
        while _bernoulli_exp_unit(np.int64(1), np.int64(1), rng):
            y += q
            rem += r
            if rem >= s:
                rem -= s
                y += 1
            if y > 4611686018427387904:  # 2^62: probability below exp(−2^62/scale)
                raise OverflowError("discrete Laplace draw beyond the int64 range")
        negative = rng.integers(0, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


@njit(cache=True, nogil=True)
def _add_discrete_laplace_jit(flat, s, t, rng):
    """Adds one exact discrete Laplace draw (scale t/s) to every element, in index order."""
    for i in range(flat.shape[0]):
        flat[i] += _discrete_laplace_jit(s, t, rng)


@njit(cache=True, nogil=True)
def _uniform_below_wide(t_hi, t_lo, rng):
    """Uniform integer on {0, ..., t−1}, t = t_hi·2^62 + t_lo with 1 ≤ t_hi < 2^62, exactly.

    Draws (hi, lo) uniform on {0..t_hi} × {0..2^62−1} and keeps the pairs below t
    (acceptance ≥ 1/2). Returns the pair (hi, lo) of the value hi·2^62 + lo.
    """
    while True:
        hi = rng.integers(0, t_hi + 1)
        lo = rng.integers(0, 4611686018427387904)
        if hi < t_hi or (hi == t_hi and lo < t_lo):
            return hi, lo


@njit(cache=True, nogil=True)
def _bernoulli_exp_unit_wide(u_hi, u_lo, t_hi, t_lo, rng):
    """:func:`_bernoulli_exp_unit` for γ = u/t ≤ 1 with u, t two 62-bit limbs each."""
    k = 1
    while True:
        w_hi, w_lo = _uniform_below_wide(t_hi, t_lo, rng)
        if not (w_hi < u_hi or (w_hi == u_hi and w_lo < u_lo)):  # Bernoulli(u/t)
            break
        if k > 1 and not rng.integers(0, k) < 1:
            break
        k += 1
    return k % 2 == 1


@njit(cache=True, nogil=True)
def _discrete_laplace_wide_jit(s, t_hi, t_lo, q, r, rng):
    """:func:`_discrete_laplace_jit` for 2^62 ≤ t < 2^124 (two 62-bit limbs), s < 2^62.

    ``q, r = divmod(t, s)`` are precomputed (q < 2^62: the scale t/s is bounded). U is
    drawn as two limbs, ⌊U/s⌋ and U mod s by binary long division (U < t implies
    U_hi < s, so the remainder stays below 2^63), then V is added as in the narrow case.
    """
    while True:
        u_hi, u_lo = _uniform_below_wide(t_hi, t_lo, rng)
        if not _bernoulli_exp_unit_wide(u_hi, u_lo, t_hi, t_lo, rng):
            continue
        rem = u_hi
        y = 0
        for b in range(61, -1, -1):
            rem = 2 * rem + ((u_lo >> b) & 1)
            y = 2 * y
            if rem >= s:
                rem -= s
                y += 1
        while _bernoulli_exp_unit(np.int64(1), np.int64(1), rng):
            y += q
            rem += r
            if rem >= s:
                rem -= s
                y += 1
            if y > 4611686018427387904:
                raise OverflowError("discrete Laplace draw beyond the int64 range")
        negative = rng.integers(0, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


@njit(cache=True, nogil=True)
def _add_discrete_laplace_wide_jit(flat, s, t_hi, t_lo, q, r, rng):
    for i in range(flat.shape[0]):
        flat[i] += _discrete_laplace_wide_jit(s, t_hi, t_lo, q, r, rng)


def _uniform_below(n: int, rng: np.random.Generator) -> int:
    """Uniform integer on {0, ..., n−1} for any Python int n ≥ 1, exactly (rejection)."""
    if n == 1:
        return 0
    if n < _INT64_SAMPLER_LIMIT:
        return int(rng.integers(0, n))
    bits = (n - 1).bit_length()
    words = -(-bits // 64)
    while True:
        raw = rng.bit_generator.random_raw(words)
        value = 0
        for word in np.atleast_1d(raw).tolist():
            value = (value << 64) | int(word)
        value >>= 64 * words - bits
        if value < n:
            return value


def _bernoulli_exp_unit_py(num: int, den: int, rng) -> bool:
    k = 1
    while num > 0 and (num >= den or _uniform_below(den, rng) < num) \
            and (k == 1 or _uniform_below(k, rng) < 1):
        k += 1
    return k % 2 == 1


def _bernoulli_exp_py(num: int, den: int, rng) -> bool:
    while num > den:
        if not _bernoulli_exp_unit_py(1, 1, rng):
            return False
        num -= den
    return _bernoulli_exp_unit_py(num, den, rng)


def _discrete_laplace_py(s: int, t: int, rng) -> int:
    """:func:`_discrete_laplace_jit` on Python ints (any size): the same algorithm."""
    while True:
        u = _uniform_below(t, rng)
        if not _bernoulli_exp_py(u, t, rng):
            continue
        v = 0
        while _bernoulli_exp_unit_py(1, 1, rng):
            v += 1
        y = (u + t * v) // s
        negative = _uniform_below(2, rng) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def bernoulli_exp(num: int, den: int, rng: np.random.Generator) -> bool:
    """Exact Bernoulli(exp(−num/den)) draw (Canonne, Kamath & Steinke 2020, Algorithm 1).

    Parameters
    ----------
    num, den : int
        γ = num/den ≥ 0 as integers (num ≥ 0, den ≥ 1), any size.
    rng : numpy.random.Generator
        Source of the uniform integers.

    Returns
    -------
    bool
        True with probability exactly exp(−γ) (given exactly uniform integers). The
        expected number of uniform draws is O(1) for every γ.

    Raises
    ------
    ParameterError
        num < 0, den < 1 or non-integers.
    """
    _check_rng(rng)
    for name, value, low in (("num", num, 0), ("den", den, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ParameterError(f"{name} must be an int ≥ {low}; got {value!r}")
    num, den = int(num), int(den)
    if num < _INT64_SAMPLER_LIMIT and den < _INT64_SAMPLER_LIMIT:
        return bool(_bernoulli_exp_jit(np.int64(num), np.int64(den), rng))
    return _bernoulli_exp_py(num, den, rng)


def discrete_laplace_scale(sensitivity: int, epsilon_nano: int) -> tuple[int, int]:
    """The noise scale Δ/ε as a reduced fraction t/s of integers (ε = epsilon_nano·10⁻⁹).

    Returns
    -------
    (s, t) : tuple of int
        P(k) ∝ exp(−|k|·s/t) = exp(−ε|k|/Δ) exactly, with t = Δ·10⁹/g, s = epsilon_nano/g
        and g their greatest common divisor.
    """
    t = int(sensitivity) * 10**9
    s = int(epsilon_nano)
    g = math.gcd(s, t)
    return s // g, t // g


def discrete_laplace_sample(s: int, t: int, rng: np.random.Generator, size: int = 1
                            ) -> np.ndarray:
    """``size`` exact discrete Laplace draws with P(k) ∝ exp(−|k|·s/t); **charges nothing**.

    The sampling core of :func:`discrete_laplace` (which charges first); exposed for tests
    and for callers that have already charged. Integers s, t ≥ 1 of any size: the draws
    run in numba on int64 (t, s < 2^62) or on two 62-bit limbs (t < 2^124, as MC-GEN's
    second moments need), otherwise on Python ints; the same algorithm in each case.

    Returns
    -------
    numpy.ndarray of int64, shape (size,)
    """
    _check_rng(rng)
    s, t = int(s), int(t)
    if s < 1 or t < 1:
        raise ParameterError(f"discrete Laplace needs integers s, t ≥ 1; got s={s}, t={t}")
    out = np.zeros(int(size), dtype=np.int64)
    _add_discrete_laplace(out, s, t, rng)
    return out


def _add_discrete_laplace(flat: np.ndarray, s: int, t: int, rng) -> None:
    """Adds exact discrete Laplace noise of scale t/s to ``flat`` (int64, 1-D) in place."""
    if s < _INT64_SAMPLER_LIMIT and t < _INT64_SAMPLER_LIMIT:
        _add_discrete_laplace_jit(flat, np.int64(s), np.int64(t), rng)
        return
    q, r = divmod(t, s)
    if s < _INT64_SAMPLER_LIMIT and t < _INT64_SAMPLER_LIMIT**2 and q < _INT64_SAMPLER_LIMIT:
        t_hi, t_lo = divmod(t, _INT64_SAMPLER_LIMIT)
        _add_discrete_laplace_wide_jit(flat, np.int64(s), np.int64(t_hi), np.int64(t_lo),
                                       np.int64(q), np.int64(r), rng)
        return
    for i in range(flat.shape[0]):
        flat[i] += _discrete_laplace_py(s, t, rng)


# --------------------------------------------------------------------------- discrete Laplace

def discrete_laplace(counts, *, sensitivity, epsilon_nano, rng, accountant, label, parallel=1):
    """Discrete Laplace (two-sided geometric) mechanism on integer counts, sampled exactly.

    Adds to every count an independent integer ``Z`` with

    .. math:: P(Z = k) = \\frac{1 - a}{1 + a}\\, a^{|k|}, \\quad a = e^{-ε/Δ},\\ k ∈ ℤ,

    i.e. P(k) ∝ exp(−ε|k|/Δ): the discrete Laplace distribution with scale Δ/ε, drawn by
    the exact sampler of Canonne, Kamath & Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020 (the one OpenDP's integer ``make_laplace`` uses).

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
        Source of the uniform integers the sampler consumes (a variable number per
        element; the elements are drawn in C order).
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
    Sampling: the scale is the exact rational Δ/ε = t/s with ε = epsilon_nano·10⁻⁹ (the
    charged amount, not a float); :func:`discrete_laplace_sample` draws with integer
    arithmetic only, so every k ∈ ℤ has exactly the pmf above (given exactly uniform
    integers from ``rng``). The support is unbounded: there is no tail cut, and the noise
    is non-zero with probability 2a/(1 + a) however large ε/Δ is.

    Privacy: P(Z = k)/P(Z = k + δ) ≤ a^{−|δ|} = exp(ε|δ|/Δ), so the release is
    ε-DP for neighbours whose counts differ by at most Δ in L1 norm.

    Why not OpenDP itself: its integer Laplace cannot take a seeded generator (public
    demo runs and tests must be reproducible), cannot run inside numba, costs about
    0.5 ms per call plus 33 µs per element, and installs 265 MB; the algorithm here is
    the same (docs/PRIVACY.md, "Numerics of each sampler").
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

    accountant.spend("discrete_laplace", label, epsilon_nano, delta, parallel)
    s, t = discrete_laplace_scale(delta, epsilon_nano)  # the charged ε, exactly
    recorder = _recorder
    if recorder is not None:
        true_values, state = arr.copy(), recorder.state_of(rng)
    noise = np.zeros(arr.size, dtype=np.int64)
    _add_discrete_laplace(noise, s, t, rng)
    arr += noise.reshape(arr.shape)  # in place: a 0-d input stays an ndarray
    if recorder is not None:
        arr = recorder.observe("discrete_laplace", label, epsilon_nano, delta, parallel,
                               true_values, arr, (s, t), state)
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

@njit(cache=True, nogil=True)
def exponential_cumulative_weights(scores, factor, out):
    """Float cumulative weights C_i = Σ_{j≤i} exp(factor·(s_j − max s)) into ``out``; charges
    nothing.

    The first half of :func:`exponential_index`, exposed so that tests can compute the
    exact output distribution of the float sampler (docs/PRIVACY.md, "Numerics of each
    sampler"). −inf scores (and differences that overflow to −inf) get weight 0; the best
    score gets weight exp(0) = 1 exactly, so the total is ≥ 1 whenever a score is finite.

    Parameters
    ----------
    scores : numpy.ndarray of float64, 1-D
        Utilities; −inf marks a candidate that is never chosen.
    factor : float
        ε/(2Δ) ≥ 0 for the exponential mechanism (ε in ε units, Δ in score units).
    out : numpy.ndarray of float64, 1-D, same length as ``scores``
        Receives the running sums (all 0 when every score is −inf). Filled in place rather
        than returned, so that no cached kernel hands a new array back to Python.

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
            raise ValueError("exponential_index: scores must be finite or -inf")
        if s > top:
            top = s
    total = 0.0
    for i in range(n):
        s = float(scores[i])
        if s != -np.inf:
            shifted = s - top
            if shifted != -np.inf:
                total += np.exp(shifted * fac)
        out[i] = total


@njit(cache=True, nogil=True)
def exponential_index(scores, factor, rng):
    """Exponential-mechanism draw for jitted kernels, by inversion; **charges nothing**.

    Returns index i with probability ∝ exp(factor·s_i): the float cumulative weights of
    :func:`exponential_cumulative_weights`, one uniform u = ``rng.random()`` (a multiple
    of 2⁻⁵³), and the first i with C_i > u·C_n. For the exponential mechanism pass
    ``factor = ε / (2Δ)``. The caller must already have charged the accountant for this
    draw (see :func:`exponential_choice`).

    Parameters
    ----------
    scores : numpy.ndarray of float64, 1-D, contiguous
        Utilities; −inf marks a candidate that is never chosen.
    factor : float
        ε/(2Δ) > 0.
    rng : numpy.random.Generator
        Passed into nopython code. Draws exactly one uniform per call, whatever the
        scores (so the stream never depends on the data): the same stream, and so the
        same choice, as :func:`exponential_choice` with ``scale_epsilon / (2·sensitivity)
        = factor``.

    Returns
    -------
    int
        The chosen index, or −1 if ``scores`` is empty or all −inf (no exception, so
        kernels can branch on it).

    Raises
    ------
    ValueError
        A score is NaN or +inf.

    Notes
    -----
    Numerics: the output distribution is within total variation (4n + 2)·2⁻⁵³ of the
    exact exponential mechanism on the same float scores and factor (n candidates; the
    bound of docs/PRIVACY.md, "Numerics of each sampler", checked exactly by the tests on
    extreme utilities). Candidates whose exact probability is below about 2⁻⁵³ may get
    probability 0 or a multiple of 2⁻⁵³; that deviation is inside the bound.
    """
    cum = np.empty(scores.shape[0])
    exponential_cumulative_weights(scores, factor, cum)
    u = rng.random()  # always drawn: the stream ignores the scores
    n = cum.shape[0]
    if n == 0 or cum[n - 1] == 0.0:
        return -1
    target = u * cum[n - 1]
    for i in range(n):
        if cum[i] > target:
            return i
    # Unreachable: u ≤ 1 − 2⁻⁵³ makes u·C_n round below C_n. Kept so that a violated
    # assumption returns the last candidate with weight instead of an invalid index.
    for i in range(n - 1, -1, -1):
        if i == 0 or cum[i] > cum[i - 1]:
            return i
    return 0


#: The former name of :func:`exponential_index` (the kernels call it by this name). The
#: draw is by inversion, not Gumbel-max, since the exact-numerics work (docs/PRIVACY.md).
gumbel_max_index = exponential_index


def exponential_choice(utilities, scale_epsilon, sensitivity, rng) -> int:
    """Exponential-mechanism draw **without charging the accountant**.

    Returns index i with probability ∝ exp(ε·u_i/(2Δ)) by :func:`exponential_index`,
    exactly like :func:`exponential_mechanism` but spending nothing.

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
        Draws exactly one uniform (``rng.random()``); the same stream as
        :func:`exponential_index`.

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
    return int(exponential_index(u, epsilon / (2.0 * sensitivity), rng))


#: The former name of :func:`exponential_choice`.
gumbel_max_choice = exponential_choice


def exponential_mechanism(utilities, *, sensitivity, epsilon_nano, rng, accountant, label,
                          parallel=1) -> int:
    """Exponential mechanism (McSherry & Talwar 2007), drawn by inversion.

    Chooses candidate i with probability exp(ε·u_i/(2Δ)) / Σ_j exp(ε·u_j/(2Δ)), by
    :func:`exponential_index` (float cumulative weights and one uniform).

    Parameters
    ----------
    utilities : array-like of float, 1-D
        Score of each candidate on the private data. −inf marks a candidate
        that is never chosen (its exclusion must not depend on private data
        beyond what Δ covers). NaN and +inf are rejected.
    sensitivity : float
        Δ > 0: the most any single utility changes when one row is added or
        removed (e.g. 2 for the count-weighted Gini utility: S1 in
        dpcore/redescriptions/PRIVACY.md §6.2).
    epsilon_nano : int
        ε of this draw in nano-ε (> 0).
    rng : numpy.random.Generator
        Draws exactly one uniform.
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
    the change of the normaliser), for the exact distribution. Utilities are shifted by
    their finite maximum before scaling, so huge scores cannot overflow; all-equal
    utilities give a uniform choice. Numerics: the float draw is within total variation
    τ = (4n + 2)·2⁻⁵³ of the exact one, so the release is (ε, (1 + e^ε)·τ)-DP
    (docs/PRIVACY.md, "Numerics of each sampler").
    """
    sensitivity = _check_sensitivity(sensitivity)
    epsilon_nano, label, parallel = _check_call(epsilon_nano, rng, accountant, label, parallel)
    u = _as_utilities(utilities)

    epsilon = float(accountant.spend("exponential", label, epsilon_nano, sensitivity, parallel))
    return int(exponential_index(u, epsilon / (2.0 * sensitivity), rng))


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

    Numerics: with u = ``rng.random()`` (uniform on the multiples of 2⁻⁵³ in [0, 1))
    the probability of accepting differs from the exact min(1, exp(ε·Δs/(2Δ))) (real
    arithmetic on the same float inputs) by at most :data:`MCMC_ACCEPT_TV_BOUND` = 2⁻⁵¹:
    2⁻⁵³ from the grid of u, and |x|·e^x·2⁻⁵² + 2⁻⁵³ ≤ 0.87·2⁻⁵² from rounding
    x = ε·Δs/(2Δ) (two roundings) and exp (one). A chain of T steps is then within total
    variation T·2⁻⁵¹ of the same chain in exact arithmetic (coupling, step by step);
    docs/PRIVACY.md, "Numerics of each sampler". A Hastings shift of Δs by
    (2Δ/ε)·log r adds a few roundings of |log r| to x (bound 2⁻⁵¹ + 2⁻⁵⁰·|log r|).
    """
    x = epsilon * delta_score / (2.0 * sensitivity)
    if x >= 0.0:
        return True
    if not (x < 0.0):  # NaN
        return False
    return u < np.exp(x)
