"""Pruning by noisy support (paper §4.6): pure post-processing, costs 0 ε.

After mining, the analyst picks a threshold on the noisy-support × noisy-Jaccard
scatter; redescriptions whose noisy support |E11| is below it are pruned (the
dense block at low support and high Jaccard is mostly noise). Everything here
reads only DP releases (noisy supports) and user input, so it spends no budget.

The app turns a Plotly selection into a threshold with
:func:`threshold_from_selection`, kept free of Streamlit so it can be unit-tested.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from dpcore.registry import FAITHFUL, LITERAL_QUERY_ALGORITHMS

__all__ = ["threshold_from_selection", "prune", "selection_signature", "suggest_threshold",
           "expected_jaccard_errors", "jaccard_error_sd", "cell_noise_variance"]

T = TypeVar("T")


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (bools, text, NaN, inf are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _inner_selection(selection: Mapping | None) -> Mapping | None:
    """Accept the chart event (``{"selection": {...}}``) or the selection itself."""
    if not isinstance(selection, Mapping):
        return None
    inner = selection.get("selection", selection)
    return inner if isinstance(inner, Mapping) else None


def _box_left_edge(box: Any) -> float | None:
    """Smallest x of one box-selection record (``x: [x0, x1]``, or ``x0``/``x1``, or ``range``)."""
    if not isinstance(box, Mapping):
        return None
    xs: list[Any] = []
    x = box.get("x")
    if isinstance(x, (list, tuple)):
        xs.extend(x)
    for key in ("x0", "x1"):
        if key in box:
            xs.append(box[key])
    rng = box.get("range")
    if isinstance(rng, Mapping) and isinstance(rng.get("x"), (list, tuple)):
        xs.extend(rng["x"])
    values = [v for v in (_finite(x) for x in xs) if v is not None]
    return min(values) if values else None


def _point_id(point: Mapping) -> Any:
    """The row id a point carries in ``customdata`` (scalar or one-element list), or None."""
    custom = point.get("customdata")
    if isinstance(custom, (list, tuple)):
        custom = custom[0] if custom else None
    return custom


def _point_support(point: Any, supports_by_id: Mapping) -> float | None:
    """A clicked point's noisy support: looked up by its row id, else its x coordinate."""
    if not isinstance(point, Mapping):
        return None
    row_id = _point_id(point)
    if row_id is not None:
        try:
            found = supports_by_id.get(row_id)
        except TypeError:  # unhashable customdata
            found = None
        if found is None and not isinstance(row_id, str):
            found = supports_by_id.get(str(row_id))
        value = _finite(found)
        if value is not None:
            return value
    return _finite(point.get("x"))


def threshold_from_selection(selection: dict | None, supports_by_id: dict,
                             current: float) -> float:
    """The pruning threshold a Plotly selection on the support × Jaccard scatter asks for.

    Parameters
    ----------
    selection : dict or None
        What ``st.plotly_chart(..., on_select="rerun")`` stores: either the event
        ``{"selection": {"points": [...], "box": [...], ...}}`` or the inner
        selection dict. None or an empty selection means "no new choice".
    supports_by_id : dict
        Row id (the point's ``customdata``) → noisy support |E11|.
    current : float
        The threshold in force; returned when the selection gives none.

    Returns
    -------
    float
        * a dragged box: its left x edge (a box wins over the points it contains);
        * clicked point(s): the smallest support among them, so every clicked
          point is kept; a point's support is looked up by its ``customdata`` row
          id, falling back to its ``x`` when the id is missing or unknown;
        * otherwise ``current``.

        Never negative: noisy supports are clipped at 0, so a box starting left
        of 0 means "keep everything" (0).
    """
    inner = _inner_selection(selection)
    if inner is None:
        return current
    boxes = inner.get("box") or []
    if isinstance(boxes, Mapping):
        boxes = [boxes]
    edges = [e for e in (_box_left_edge(b) for b in boxes) if e is not None]
    if edges:
        return max(0.0, min(edges))
    points = inner.get("points") or []
    supports = [s for s in (_point_support(p, supports_by_id or {}) for p in points)
                if s is not None]
    if supports:
        return max(0.0, min(supports))
    return current


def selection_signature(selection: dict | None) -> str | None:
    """A stable text form of a non-empty selection (None when empty), to apply it once.

    The chart keeps its selection across reruns; comparing signatures lets the
    page apply a click or box only when it is new, so a number typed afterwards
    is not overwritten by an old selection.
    """
    inner = _inner_selection(selection)
    if inner is None:
        return None
    boxes = inner.get("box") or []
    points = inner.get("points") or []
    if not boxes and not points:
        return None
    parts = [repr(sorted(b.items())) if isinstance(b, Mapping) else repr(b) for b in boxes]
    for p in points:
        if isinstance(p, Mapping):
            parts.append(repr((_point_id(p), p.get("x"), p.get("y"))))
        else:
            parts.append(repr(p))
    return "|".join(parts)


def prune(redescriptions: Iterable[T], threshold: float, *,
          support: Callable[[T], float] | None = None) -> tuple[list[T], list[T]]:
    """Split redescriptions into (kept, pruned) by noisy support; 0 ε (post-processing).

    Parameters
    ----------
    redescriptions : iterable
        :class:`~dpcore.redescriptions.results.Redescription` objects (or anything
        ``support`` can read).
    threshold : float
        Kept: noisy support |E11| ≥ threshold. Pruned: support < threshold.
    support : callable, optional
        How to read an item's noisy support; default ``item.support_both``.

    Returns
    -------
    (list, list)
        Kept and pruned items, each in input order.
    """
    read = support or (lambda r: r.support_both)
    limit = _finite(threshold)
    if limit is None:
        raise ValueError(f"the pruning threshold must be a finite number; got {threshold!r}")
    kept: list[T] = []
    pruned: list[T] = []
    for item in redescriptions:
        (kept if float(read(item)) >= limit else pruned).append(item)
    return kept, pruned


# --------------------------------------------------------------------------- suggested threshold
#
# Each noisy statistic of a redescription is a sum of independently noised table cells,
# and how many cells each sum covers is public (the queries' leaf sets and the trees'
# leaf counts are released), as is the noise scale (ε of the extraction and the noise
# kind). So the error of the noisy Jaccard can be estimated from the release alone.

def cell_noise_variance(epsilon: float, sensitivity: float, kind: str) -> float:
    """Variance of the noise added to one count: Laplace(Δ/ε) or its discrete version.

    Continuous Laplace with scale b = Δ/ε has variance 2b². The discrete Laplace
    (two-sided geometric) with α = exp(−ε/Δ) has variance 2α/(1 − α)².
    """
    if kind == "continuous":
        scale = sensitivity / epsilon
        return 2.0 * scale * scale
    alpha = math.exp(-epsilon / sensitivity)
    return 2.0 * alpha / (1.0 - alpha) ** 2


def jaccard_error_sd(support_both: float, union: float, left_leaves: int, right_leaves: int,
                     m: int, k: int, table_variance: float,
                     marginal_variance: float | None = None) -> float:
    """Delta-method standard deviation of a noisy Jaccard J = E / U, in Jaccard units.

    Parameters
    ----------
    support_both, union : float
        Released noisy |E11| and |qL| + |qR| − |E11| (rows).
    left_leaves, right_leaves : int
        Leaves a and c the left and right query cover; ``m``, ``k``: leaves of the trees.
    table_variance : float
        Noise variance of one table cell.
    marginal_variance : float, optional
        Faithful mode: noise variance of one separately released leaf size; |qL| and
        |qR| then sum a and c of those instead of table cells.

    Notes
    -----
    Strict: E sums a·c cells, |qL| adds a·(k − c) more, |qR| adds (m − a)·c more, so
    dJ = (n_E·(U − E) − E·(n_L + n_R)) / U² and
    Var J ≈ v·[a·c·(U − E)² + E²·(a(k − c) + (m − a)c)] / U⁴.
    Faithful: dJ = (n_E·(U + E) − E·(n_qL + n_qR)) / U² with independent marginal noise.
    """
    if union <= 0:
        return math.inf
    a, c = left_leaves, right_leaves
    e, u = max(support_both, 0.0), union
    if marginal_variance is None:
        var = table_variance * (a * c * (u - e) ** 2 + e * e * (a * (k - c) + (m - a) * c))
    else:
        var = (table_variance * a * c * (u + e) ** 2 + marginal_variance * e * e * (a + c))
    return math.sqrt(var) / (u * u)


def expected_jaccard_errors(result) -> dict[int, float]:
    """Expected |noisy J − true J| of every redescription of a run, from the release only.

    Uses the released redescriptions, trees and extractions and the recorded
    mechanism calls (ε and Δ of each extraction) — never the data — so it is
    post-processing and costs 0 ε. The estimate is the delta-method standard
    deviation times √(2/π) (the mean absolute value of a centred normal).
    """
    calls: dict[str, dict] = {}
    for call in result.mechanism_calls:
        calls[call["label"]] = call
    faithful = result.mode == FAITHFUL
    kind = "continuous" if faithful else result.params.get("noise", "discrete")
    if result.algorithm in LITERAL_QUERY_ALGORITHMS:
        return _serenade_jaccard_errors(result, calls, kind)
    out = {}
    for red in result.redescriptions:
        ext = result.extractions[red.extraction]
        prefix = f"trial {ext.trial} step {ext.step} extraction"
        table_call = calls[prefix + " table"] if faithful else calls[prefix]
        v_table = cell_noise_variance(table_call["epsilon_nano"] / 1e9,
                                      table_call["sensitivity"], kind)
        v_marg = None
        if faithful:
            left_call = calls[prefix + " left"]
            v_marg = cell_noise_variance(left_call["epsilon_nano"] / 1e9,
                                         left_call["sensitivity"], kind)
        m, k = len(ext.noisy_left), len(ext.noisy_right)
        union = red.support_left + red.support_right - red.support_both
        sd = jaccard_error_sd(red.support_both, union, len(red.left.leaves),
                              len(red.right.leaves), m, k, v_table, v_marg)
        out[red.id] = sd * math.sqrt(2.0 / math.pi)
    return out


def _serenade_jaccard_errors(result, calls: dict[str, dict], kind: str) -> dict[int, float]:
    """Serenade: strict releases a 4-cell table (J = a/(a+b+c)), faithful two counts
    (J = I/(I + D)); every measurement of a run has (nearly) the same ε, the smallest
    is used. Var J ≈ v·[(U − E)² + 2E²]/U⁴ (strict) or v·[D² + I²]/U⁴ (faithful).
    """
    suffix = " |E11|" if result.mode == FAITHFUL else " quality table"
    quality = [c for label, c in calls.items() if label.endswith(suffix)]
    if not quality:
        return {red.id: math.inf for red in result.redescriptions}
    worst = min(quality, key=lambda c: c["epsilon_nano"])
    v = cell_noise_variance(worst["epsilon_nano"] / 1e9, worst["sensitivity"], kind)
    out = {}
    for red in result.redescriptions:
        e = max(red.support_both, 0.0)
        if result.mode == FAITHFUL:
            u = e / red.jaccard if red.jaccard > 0 else 0.0
            var = v * ((u - e) ** 2 + e * e)
        else:
            u = red.support_left + red.support_right - e
            var = v * ((u - e) ** 2 + 2 * e * e)
        out[red.id] = math.sqrt(var) / (u * u) * math.sqrt(2.0 / math.pi) if u > 0 else math.inf
    return out


def suggest_threshold(results, tolerance: float = 0.1, rate: float | None = None) -> float:
    """The smallest noisy support |E11| that keeps its promise: among the redescriptions
    kept (noisy support ≥ the threshold), the expected share whose noisy Jaccard is off by
    more than ``tolerance`` from the true one is at most ``rate`` (0 ε: released values
    only).

    Each redescription's chance of missing the tolerance comes from
    :func:`dpcore.redescriptions.intervals.exceedance_probabilities`, which accounts for
    the miners' selection on noisy values (the winner's curse); the expected share among
    the kept is the mean of those chances.

    Parameters
    ----------
    results : RunResult or list of RunResult
        The runs shown on the scatter (pooled).
    tolerance : float
        Largest acceptable |noisy J − true J|, in Jaccard units (default 0.1).
    rate : float, optional
        The promised largest share of kept redescriptions beyond ``tolerance``; default
        :data:`dpcore.redescriptions.intervals.EXCEEDANCE_RATE` (10 %).

    Returns
    -------
    float
        A noisy support |E11| (rows): 0 when every redescription may be kept; above the
        largest support when no set of the largest supports keeps the promise.
    """
    from dpcore.redescriptions.intervals import EXCEEDANCE_RATE, exceedance_probabilities

    if not 0 < tolerance:
        raise ValueError(f"tolerance must be > 0; got {tolerance!r}")
    rate = EXCEEDANCE_RATE if rate is None else rate
    if not 0 < rate < 1:
        raise ValueError(f"rate must lie strictly between 0 and 1; got {rate!r}")
    runs = results if isinstance(results, (list, tuple)) else [results]
    pairs = []
    for run in runs:
        chances = exceedance_probabilities(run, tolerance)
        pairs += [(red.support_both, chances[red.id]) for red in run.redescriptions]
    if not pairs:
        return 0.0
    # from the largest support down: the lowest cut whose kept set keeps the promise
    pairs.sort(reverse=True)
    threshold = math.nextafter(pairs[0][0], math.inf)
    total = 0.0
    for count, (support, chance) in enumerate(pairs, 1):
        total += chance
        if total <= rate * count and (count == len(pairs) or pairs[count][0] < support):
            threshold = support
    return 0.0 if threshold <= pairs[-1][0] else threshold
