"""90 % intervals on a custom query's noisy 4-cell table and on a region map's noisy cells.

Post-processing only (0 ε): everything here reads a release — the noisy counts and the ε and
Δ of the mechanism call that drew them (``mechanism_calls``, public) — never the data.

The law used
------------
Both releases add to every count an independent exact discrete Laplace draw Z with
P(Z = z) ∝ q^|z|, q = exp(−1/b), b = Δ/ε (Δ = 1: one row changes one count by one;
:func:`dpcore.privacy.mechanisms.discrete_laplace`). Its tails are exact and closed-form:
P(Z > k) = q^(k+1)/(1 + q) for k ≥ 0, so the smallest integer half-width k with
P(|Z| ≤ k) ≥ 1 − α is exact — no normal approximation. A sum of two cells (a query's
support |qL| = E11 + E10, |qR| = E11 + E01) carries the sum of two independent draws, whose
law is also closed-form: P(S = s) = c² q^|s| (|s| + 1 + 2q²/(1 − q²)), c = (1 − q)/(1 + q).

Why the coverage holds
----------------------
No selection: a custom query is one fixed pair chosen by the analyst before the release, and
a map releases every cell of the public grid; no count is shown because of its noisy value.
So for a true count s and the release y = s + Z, P(s ∈ [y − k, y + k]) = P(|Z| ≤ k) ≥ 1 − α
for every s, and cutting the interval at 0 (a count is never negative) loses no coverage.

The Jaccard index J = E11 / (E11 + E10 + E01) is increasing in E11 and decreasing in E10 and
E01. Its interval is J's range over the box of the three cells' intervals, each at coverage
(1 − α)^(1/3): the three noise draws are independent, so the box holds the true cells with
probability ≥ 1 − α, and then J's true value lies in the range. It is conservative (the
range of a box, not J's own quantiles).

Each interval is marginal: 90 % for that count, not 90 % for all of a map's cells at once
(about one cell in ten is expected outside its interval). The p-value's interval is not
given.
"""

from __future__ import annotations

import numpy as np

from dpcore.errors import ParameterError
from dpcore.privacy.count_intervals import COVERAGE, count_bounds
from dpcore.privacy.units import nano_to_epsilon

__all__ = ["table_intervals", "map_intervals", "release_scale", "result_intervals"]

#: Statistics of a query's table with an interval, in the order of ``table_intervals``.
TABLE_STATISTICS = ("E11", "E10", "E01", "E00", "support_left", "support_right",
                    "support_both", "jaccard")


def _jaccard(e11: float, e10: float, e01: float) -> float:
    union = e11 + e10 + e01
    return e11 / union if union > 0 else 0.0


def table_intervals(noisy_cells, scale: float, coverage: float = COVERAGE
                    ) -> dict[str, tuple[float, float]]:
    """Intervals of a query's true 4-cell table and of the statistics derived from it.

    Parameters
    ----------
    noisy_cells : sequence of 4 float
        The released raw (unclipped) noisy |E11|, |E10|, |E01|, |E00| (rows).
    scale : float
        The discrete Laplace scale Δ/ε of each cell (rows; 1/ε for the custom query).
    coverage : float
        Stated coverage of each interval.

    Returns
    -------
    dict
        ``{name: (low, high)}`` for the names of :data:`TABLE_STATISTICS`: cells and
        supports in rows, ``support_both`` = |E11|, ``jaccard`` in [0, 1].
    """
    cells = np.asarray(noisy_cells, dtype=np.float64)
    if cells.shape != (4,) or not np.all(np.isfinite(cells)):
        raise ParameterError(f"a query table has 4 finite cells; got {noisy_cells!r}")
    e11, e10, e01, e00 = (float(x) for x in cells)
    out = {name: count_bounds(y, scale, coverage=coverage)
           for name, y in zip(("E11", "E10", "E01", "E00"), (e11, e10, e01, e00))}
    out["support_left"] = count_bounds(e11 + e10, scale, terms=2, coverage=coverage)
    out["support_right"] = count_bounds(e11 + e01, scale, terms=2, coverage=coverage)
    out["support_both"] = out["E11"]
    # J's range over the box of three cells, each at coverage^(1/3) (module docstring)
    box = [count_bounds(y, scale, coverage=coverage ** (1.0 / 3.0)) for y in (e11, e10, e01)]
    (l11, h11), (l10, h10), (l01, h01) = box
    out["jaccard"] = (_jaccard(l11, h10, h01), _jaccard(h11, l10, l01))
    return out


def map_intervals(noisy_counts, scale: float, coverage: float = COVERAGE
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per-count intervals (rows) of a map's released (n_cells, 3) E11/E10/E01 counts.

    Marginal per count (module docstring); ``scale`` is Δ/ε of the map's histogram (1/ε).
    """
    counts = np.asarray(noisy_counts, dtype=np.float64)
    if counts.ndim != 2 or not np.all(np.isfinite(counts)):
        raise ParameterError("map counts must be a finite (cells × categories) array; got "
                             f"shape {counts.shape}")
    return count_bounds(counts, scale, coverage=coverage)


def release_scale(result, label: str) -> float:
    """Δ/ε (rows) of the mechanism call ``label`` recorded in a stored result (public)."""
    for call in result.mechanism_calls:
        if call["label"] == label:
            return call["sensitivity"] / nano_to_epsilon(call["epsilon_nano"])
    raise ParameterError(f"run {result.run_id} records no mechanism call {label!r}")


def _pair(bounds) -> list[float]:
    return [float(bounds[0]), float(bounds[1])]


def result_intervals(result) -> dict | None:
    """The intervals of a stored custom-query or region-map result (0 ε), JSON-ready.

    Returns ``{"coverage": 0.9, "table": {statistic: [low, high]}}`` for a custom query,
    ``{"coverage": 0.9, "categories": [...], "low": [[...]], "high": [[...]]}`` (one row per
    cell) for a map; None for any other result, or one that records no such mechanism call
    (no public scale, so no interval).
    """
    from dpcore.redescriptions.custom_query import QUERY_TABLE_LABEL
    from dpcore.redescriptions.regions import CATEGORIES, MAP_LABEL
    from dpcore.registry import CUSTOM_QUERY, REGION_MAP

    label = {CUSTOM_QUERY: QUERY_TABLE_LABEL, REGION_MAP: MAP_LABEL}.get(result.algorithm)
    if label is None or not result.extractions or not any(
            call["label"] == label for call in result.mechanism_calls):
        return None
    scale = release_scale(result, label)
    if result.algorithm == CUSTOM_QUERY:
        (e11, e10), (e01, e00) = result.extractions[0].noisy_table
        table = table_intervals([e11, e10, e01, e00], scale)
        return {"coverage": COVERAGE, "table": {k: _pair(v) for k, v in table.items()}}
    low, high = map_intervals(result.extractions[0].noisy_table, scale)
    return {"coverage": COVERAGE, "categories": list(CATEGORIES),
            "low": low.tolist(), "high": high.tolist()}
