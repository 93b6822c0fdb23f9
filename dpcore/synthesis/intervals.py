"""90 % intervals on what a strict synthesis run releases as numbers: the noisy class counts
(MC-GEN and the floor) and the floor's per-feature class × bin histograms.

Post-processing only (0 ε): everything here reads the result — the released counts and the
ε and Δ of the mechanism calls that drew them (``mechanism_calls``, public) — never the data.

The law and why the coverage holds
----------------------------------
Both releases are exact discrete Laplace histograms with Δ = 1 (one record is in one class
and, per feature, in one class × bin cell): each count y = s + Z, P(Z = z) ∝ q^|z|,
q = exp(−ε/Δ). The interval is [max(y − k, 0), max(y + k, 0)] with k the exact smallest
integer with P(|Z| ≤ k) ≥ 90 % (:func:`dpcore.privacy.count_intervals.noise_halfwidth`,
closed form, no normal approximation). No selection: every class and every bin of the public
grid is released whatever its noisy value, so P(s ∈ interval) = P(|Z| ≤ k) ≥ 90 % for every
true s.

A class count is stored clamped, r = max(N̂, 0) (N̂ is an integer, so the rounding does
nothing). When r > 0 it is N̂ itself. When r = 0 the interval [0, k] still covers: it misses
only if s > k, and then N̂ ≤ 0 means Z ≤ −s < −k, an event inside {|Z| > k}; it is also the
equal-tailed test inversion of the censored observation {N̂ ≤ 0} (the largest s with
P_s(N̂ ≤ 0) = P(Z ≥ s) > 5 % is k).

Each interval is marginal (90 % for that count, not for all counts at once). Faithful runs
release the true class counts (not DP, listed in ``not_dp``): they get no interval. The
synthetic table's own marginals are a further random draw from these releases; their
intervals are not given here.
"""

from __future__ import annotations

from dpcore.privacy.count_intervals import count_bounds
from dpcore.privacy.units import nano_to_epsilon

__all__ = ["COVERAGE", "CLASS_COUNTS_PREFIX", "MARGINAL_PREFIX", "call_scale",
           "class_count_intervals", "marginal_intervals", "result_intervals"]

#: The stated coverage of every interval here.
COVERAGE = 0.9
#: The accountant label of the class-count release starts so (floor and MC-GEN).
CLASS_COUNTS_PREFIX = "N̂_y"
#: The floor labels the histogram of feature f ``MARGINAL_PREFIX + f``.
MARGINAL_PREFIX = "class × bin histogram of "


def call_scale(mechanism_calls: list[dict], label: str, *, prefix: bool = False
               ) -> float | None:
    """Δ/ε (records) of the recorded call named ``label`` (or starting so); None if absent."""
    for call in mechanism_calls:
        name = call["label"]
        if name == label or (prefix and name.startswith(label)):
            return call["sensitivity"] / nano_to_epsilon(call["epsilon_nano"])
    return None


def class_count_intervals(counts: dict[str, int], scale: float, coverage: float = COVERAGE
                          ) -> dict[str, tuple[float, float]]:
    """Per class, the interval (records) of its true count from the stored clamped N̂_y.

    Parameters
    ----------
    counts : dict of str → int
        ``SynthesisResult.noisy_class_counts`` (max(N̂_y, 0)).
    scale : float
        Δ/ε of the class-count release (records; 1/ε_Y).
    coverage : float
        Stated coverage of each interval.
    """
    return {c: count_bounds(max(float(n), 0.0), scale, coverage=coverage)
            for c, n in counts.items()}


def marginal_intervals(marginal: dict, scale: float, coverage: float = COVERAGE) -> dict:
    """Per class, lists of per-bin lows and highs (records) of one stored floor histogram."""
    low, high = {}, {}
    for c, row in marginal["counts"].items():
        lo, hi = count_bounds(row, scale, coverage=coverage)
        low[c], high[c] = lo.tolist(), hi.tolist()
    return {"feature": marginal["feature"], "low": low, "high": high}


def result_intervals(result) -> dict | None:
    """The intervals of a stored synthesis result (0 ε), JSON-ready; None when it releases
    no noisy count (faithful: its counts are true values, not DP).

    Returns ``{"coverage": 0.9, "class_counts": {class: [low, high]}, "marginals": [...] or
    null}``; ``marginals`` has one entry per floor histogram (:func:`marginal_intervals`).
    """
    if result.not_dp:
        return None
    scale = call_scale(result.mechanism_calls, CLASS_COUNTS_PREFIX, prefix=True)
    if scale is None:
        return None
    out = {"coverage": COVERAGE,
           "class_counts": {c: [lo, hi] for c, (lo, hi) in
                            class_count_intervals(result.noisy_class_counts, scale).items()},
           "marginals": None}
    if result.noisy_marginals:
        marginals = []
        for m in result.noisy_marginals:
            m_scale = call_scale(result.mechanism_calls, MARGINAL_PREFIX + m["feature"])
            if m_scale is not None:
                marginals.append(marginal_intervals(m, m_scale))
        out["marginals"] = marginals
    return out
