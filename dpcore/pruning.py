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

__all__ = ["threshold_from_selection", "prune", "selection_signature"]

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
        :class:`~dpcore.results.Redescription` objects (or anything ``support`` can read).
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
