"""Intervals on PFS2's released supports, and the flags of releases that look like noise.

Post-processing only (0 ε): everything here reads a run's release — each pattern's noisy
support, its level's verification sensitivity, ε and threshold θ·N̂, the noisy record count
N̂ — and the public noise law, never the data.

The interval, and why it accounts for the selection
---------------------------------------------------
A strict level verifies its kept candidates on all records with discrete Laplace noise,
P(Z = z) ∝ exp(−|z|/b), b = |C′_k| / ε′_k (the level's ``verify_sensitivity`` over its
``verify_epsilon_nano``), and releases the candidates whose noisy support Y = s + Z reaches
T = θ·N̂. A released support is therefore a draw of Y *given Y ≥ T*: read without the
condition, the high noise draws that carried a pattern over the threshold would be taken
for support (the winner's curse that listed noise as the top result, issue 30).

The interval inverts that conditional law. For a true support s the conditional survival
function G_s(y) = P(Y ≥ y | Y ≥ T) = P(Z ≥ y − s) / P(Z ≥ T − s) increases with s (the
discrete Laplace is log-concave, so the truncated family has a monotone likelihood ratio);
the interval for a release y at coverage 1 − α is every s ≥ 0 with
P_s(Y ≥ y | Y ≥ T) > α/2 and P_s(Y ≤ y | Y ≥ T) > α/2 — the discrete form of the
equal-tailed test inversion of selective inference (Fithian, Sun & Taylor 2014; Lee, Sun,
Sun & Taylor 2016), whose coverage *conditional on being released* is at least 1 − α for
every s. What else selects a candidate is independent of this noise: the pruning step's
noise is an independent draw on other counts (shrunk records), and a level's candidates
come from the previous level's releases (other draws); conditioning on them leaves Z's law
unchanged, so only the event Y ≥ T needs accounting for. T is a function of the released
N̂, so conditioning on it is conditioning on public values. The level's cap M_k (keep the
largest) is a further selection that the interval does not model; the level records how
many it dropped (``capped``), and a pattern of such a level is flagged.

Faithful runs use the true record count in T (not released) and continuous noise: their
intervals are the unconditional ones (flagged as not adjusted for the selection).

The flags
---------
A release is flagged when its interval reaches 0 (the noise alone could have put it over
the threshold) or when it lies above N̂'s own upper bound (a support cannot exceed the
number of records: such a value is mostly noise). The result's warnings say how many.

The length cut
--------------
A run mines sequences of at most lmax = min(l1, the η-quantile of the lengths) items. A
y-sequence fits only in records of at least y items, so the released length histogram
α̂_1..α̂_l1 (records of each length up to l1) and N̂ bound which longer lengths may hold
frequent sequences: the noisy number of records of at least y items,
N̂ − Σ_{j<y} α̂_j, must reach θ·N̂. :func:`length_cut_warning` says, from those released
values only, which lengths above lmax may be frequent and were not mined (and whether
records longer than l1 may hold more): a necessary condition, so "may".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.errors import ParameterError
from dpcore.privacy.units import nano_to_epsilon

__all__ = ["COVERAGE", "SupportInterval", "discrete_laplace_sf", "laplace_sf",
           "discrete_laplace_log_sf", "laplace_log_sf",
           "support_interval", "count_interval", "pattern_intervals", "release_warnings",
           "length_cut_warning",
           "with_intervals", "ranked",
           "FLAG_NOISE", "FLAG_ABOVE_RECORDS", "FLAG_CAPPED", "FLAG_UNADJUSTED"]

#: The stated coverage of every interval here.
COVERAGE = 0.9

FLAG_NOISE = "interval reaches 0: may be noise"
FLAG_ABOVE_RECORDS = "above the estimated number of records: mostly noise"
FLAG_CAPPED = "level capped: interval not adjusted for the cap"
FLAG_UNADJUSTED = "faithful: interval not adjusted for the selection"


@dataclass(frozen=True)
class SupportInterval:
    """A released support's interval (records) at ``coverage``, and its flags."""

    low: float
    high: float
    coverage: float
    flags: tuple[str, ...] = ()


def discrete_laplace_log_sf(k: float, scale: float) -> float:
    """log P(Z ≥ k) for integer ``k``, Z discrete Laplace with P(z) ∝ exp(−|z|/scale)."""
    k = math.ceil(k)
    log_norm = math.log1p(math.exp(-1.0 / scale))
    if k >= 1:
        return -k / scale - log_norm
    return math.log1p(-math.exp(-(1 - k) / scale - log_norm))


def laplace_log_sf(x: float, scale: float) -> float:
    """log P(Z ≥ x), Z continuous Laplace with density ∝ exp(−|z|/scale)."""
    if x >= 0:
        return math.log(0.5) - x / scale
    return math.log1p(-0.5 * math.exp(x / scale))


def discrete_laplace_sf(k: float, scale: float) -> float:
    """P(Z ≥ k) for integer ``k``, Z discrete Laplace with P(z) ∝ exp(−|z|/scale)."""
    return math.exp(discrete_laplace_log_sf(k, scale))


def laplace_sf(x: float, scale: float) -> float:
    """P(Z ≥ x), Z continuous Laplace with density ∝ exp(−|z|/scale)."""
    return math.exp(laplace_log_sf(x, scale))


def _check(scale: float, coverage: float) -> None:
    if not (scale > 0 and math.isfinite(scale)):
        raise ParameterError(f"a noise scale must be finite and > 0; got {scale!r}")
    if not 0 < coverage < 1:
        raise ParameterError(f"coverage must be in (0, 1); got {coverage!r}")


def _largest(ok, lo: int, hi: int) -> int:
    """The largest integer s in [lo, hi] with ok(s), ok decreasing in s (lo − 1 if none)."""
    if not ok(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def support_interval(noisy: float, scale: float, *, threshold: float | None = None,
                     coverage: float = COVERAGE, discrete: bool = True
                     ) -> tuple[float, float]:
    """The interval (records) of a true count s ≥ 0 from one noisy release ``noisy``.

    Parameters
    ----------
    noisy : float
        The released value y (records).
    scale : float
        The noise scale b = Δ/ε (records).
    threshold : float, optional
        T when the value was released only because y ≥ T: the interval is then conditional
        on that selection (module docstring). None: unconditional.
    coverage : float
        1 − α.
    discrete : bool
        Discrete Laplace (integer s; strict mode) or continuous Laplace.

    Returns
    -------
    (low, high) : tuple of float
        low ≥ 0; 0 when every small s is plausible.
    """
    _check(scale, coverage)
    alpha = 1.0 - coverage
    log_sf = discrete_laplace_log_sf if discrete else laplace_log_sf
    y = float(noisy)
    step = 1 if discrete else 0

    def upper_tail(s: float) -> float:           # P_s(Y ≥ y | selected), increasing in s
        log_num = log_sf(y - s, scale)
        if threshold is None:
            return math.exp(log_num)
        return math.exp(min(log_num - log_sf(threshold - s, scale), 0.0))

    def lower_tail(s: float) -> float:           # P_s(Y ≤ y | selected), decreasing in s
        above = log_sf(y - s + step, scale)
        if threshold is None:
            return -math.expm1(above)
        return -math.expm1(min(above - log_sf(threshold - s, scale), 0.0))

    reach = int(math.ceil(abs(y) + 60.0 * scale + 10))
    if discrete:
        # low: the smallest s ≥ 0 with upper_tail(s) > α/2; high: the largest with
        # lower_tail(s) > α/2 (both monotone: bisection over integers)
        below = _largest(lambda s: upper_tail(s) <= alpha / 2, 0, reach)
        low = float(below + 1)
        high = float(_largest(lambda s: lower_tail(s) > alpha / 2, 0, reach))
        return max(low, 0.0), max(high, 0.0)
    low_s, high_s = 0.0, float(reach)
    if upper_tail(0.0) > alpha / 2:
        low = 0.0
    else:
        a, b = 0.0, float(reach)
        for _ in range(80):
            m = 0.5 * (a + b)
            a, b = (m, b) if upper_tail(m) <= alpha / 2 else (a, m)
        low = b
    if lower_tail(0.0) <= alpha / 2:
        high = 0.0
    else:
        a, b = low_s, high_s
        for _ in range(80):
            m = 0.5 * (a + b)
            a, b = (m, b) if lower_tail(m) > alpha / 2 else (a, m)
        high = a
    return low, high


def count_interval(noisy: float, scale: float, *, coverage: float = COVERAGE,
                   discrete: bool = True) -> tuple[float, float]:
    """The unconditional interval of a count released with noise of scale ``scale``."""
    return support_interval(noisy, scale, threshold=None, coverage=coverage,
                            discrete=discrete)


def _records_high(result, coverage: float) -> float | None:
    """The upper bound of the record count from the released N̂ (None if no call found)."""
    for call in result.mechanism_calls:
        if call["label"].startswith("N̂"):
            scale = call["sensitivity"] / nano_to_epsilon(call["epsilon_nano"])
            return count_interval(result.noisy_records, scale, coverage=coverage)[1]
    return None


def pattern_intervals(result, coverage: float = COVERAGE) -> list[SupportInterval]:
    """One :class:`SupportInterval` per released pattern of a PFS2 (or baseline) result, in
    the order of ``result.patterns``; read from the release only (0 ε)."""
    from dpcore.registry import PFS2, STRICT

    strict = result.mode == STRICT
    levels = {lv.length: lv for lv in result.levels}
    records_high = _records_high(result, coverage)
    out = []
    for p in result.patterns:
        lv = levels[p.length]
        scale = lv.verify_sensitivity / nano_to_epsilon(lv.verify_epsilon_nano)
        threshold = lv.verify_threshold if strict else None
        # faithful PFS2 verifies with continuous noise; the faithful baseline, discrete
        discrete = strict or result.algorithm != PFS2
        low, high = support_interval(p.noisy_support, scale, threshold=threshold,
                                     coverage=coverage, discrete=discrete)
        flags = []
        if low <= 0:
            flags.append(FLAG_NOISE)
        if records_high is not None and low > records_high:
            flags.append(FLAG_ABOVE_RECORDS)
        if strict and lv.capped:
            flags.append(FLAG_CAPPED)
        if not strict:
            flags.append(FLAG_UNADJUSTED)
        out.append(SupportInterval(low, high, coverage, tuple(flags)))
    return out


def release_warnings(result, intervals: list[SupportInterval] | None = None) -> list[str]:
    """Sentences for the result's ``warnings``: how many released patterns are flagged."""
    intervals = pattern_intervals(result) if intervals is None else intervals
    out = []
    noise = sum(FLAG_NOISE in iv.flags for iv in intervals)
    above = sum(FLAG_ABOVE_RECORDS in iv.flags for iv in intervals)
    if noise:
        out.append(f"{noise} of {len(intervals)} released patterns have a "
                   f"{COVERAGE:.0%} interval reaching 0: noise alone could have carried them "
                   "over the threshold; read them as unconfirmed.")
    if above:
        out.append(f"{above} released patterns have noisy supports above the estimated "
                   f"number of records (≈ {result.noisy_records:,.0f}); a support cannot "
                   "exceed it, so these values are mostly noise.")
    cut = length_cut_warning(result)
    if cut:
        out.append(cut)
    return out


def length_cut_warning(result) -> str | None:
    """The sentence telling how many lengths above lmax may hold frequent sequences the run
    did not mine, or None (post-processing of N̂ and the length histogram; 0 ε).

    ``at_least(y)`` = N̂ − Σ_{j<y} α̂_j estimates the records of at least y items (α̂ counts
    records of each length 1..l1, so the records longer than l1 are in the remainder). The
    lengths lmax + 1..y_max, y_max the largest y ≤ l1 with at_least(y) ≥ θ·N̂, may be
    frequent; if at_least(l1 + 1) ≥ θ·N̂ as well, longer ones may be too.
    """
    hist = [float(x) for x in (result.noisy_length_histogram or [])]
    theta = float((result.params or {}).get("theta", 0.0))
    n_hat, lmax = float(result.noisy_records), int(result.lmax)
    threshold = theta * max(n_hat, 1.0)
    if not hist or not threshold > 0 or lmax >= len(hist) + 1:
        return None
    shorter = [0.0]
    for x in hist:
        shorter.append(shorter[-1] + x)
    # at_least[y] for y = 1..l1 + 1: records of at least y items (noisy)
    reach = [y for y in range(lmax + 1, len(hist) + 2) if n_hat - shorter[y - 1] >= threshold]
    if not reach:
        return None
    l1 = len(hist)
    within = [y for y in reach if y <= l1]
    parts = [] if not within else [
        f"{lmax + 1}" if within[-1] == lmax + 1 else f"{lmax + 1}–{within[-1]}"]
    if reach[-1] == l1 + 1:
        parts.append(f"more than l1 = {l1}")
    return (f"Length cut: this run mined sequences of at most lmax = {lmax} items, but about "
            f"{n_hat - shorter[lmax]:,.0f} records (noisy) hold more than {lmax} items, at "
            f"or above θ·N̂ ≈ {threshold:,.0f}: frequent sequences of {' or '.join(parts)} "
            f"items may exist and are not in this release"
            + (" (raise l1 to mine them)." if lmax == l1 else " (raise η or l1 to mine them)."))


def with_intervals(result):
    """``result`` with every pattern's interval and flags and the run's warnings filled in,
    from its release only (0 ε); the patterns keep their order (:func:`ranked` lists the
    unflagged ones first)."""
    from dataclasses import replace

    intervals = pattern_intervals(result)
    result.patterns = [replace(p, support_low=iv.low, support_high=iv.high, flags=iv.flags)
                       for p, iv in zip(result.patterns, intervals)]
    result.warnings = release_warnings(result, intervals)
    return result


def ranked(patterns):
    """Patterns by noisy support, largest first, the flagged ones after all unflagged ones:
    a release that may be noise is never on top of a list without a word."""
    return sorted(patterns, key=lambda p: (bool(p.flags), -p.noisy_support))
