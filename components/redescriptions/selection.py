"""A selection on the support × Jaccard scatter → the pruning threshold (pure, 0 ε).

``st.plotly_chart(..., on_select="rerun")`` stores what the user selected: clicked
points, or a dragged box (its x *and* y ranges, and the points Plotly found in it).
:func:`threshold_from_selection` turns that into a threshold:

* **clicked point(s)**: the smallest noisy support among them, so every clicked point
  is kept (a point is found by its row id in ``customdata``, else by its ``x``);
* **a box** selects the redescriptions it covers on **both** axes (noisy support in its
  x range and noisy Jaccard in its y range): the threshold becomes the smallest noisy
  support among them, so each of them is kept. A box that covers none leaves the
  threshold as it was, and says so.

No Streamlit here: this is unit-tested (``tests/components/redescriptions/test_selection.py``).
It reads only released noisy statistics and the user's gesture, so it costs 0 ε.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SelectionChoice", "box_ranges", "covered_by_boxes", "threshold_from_selection",
           "selection_signature"]


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (bools, text, NaN, inf are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _inner(selection: Any) -> Mapping | None:
    """Accept the chart event (``{"selection": {...}}``) or the selection itself."""
    if not isinstance(selection, Mapping):
        return None
    inner = selection.get("selection", selection)
    return inner if isinstance(inner, Mapping) else None


def _span(box: Mapping, axis: str) -> tuple[float, float] | None:
    """(low, high) of a box on ``axis`` ("x" or "y"): ``x: [a, b]``, ``x0``/``x1`` or
    ``range: {"x": [a, b]}``; None if the box does not give it."""
    values: list[Any] = []
    direct = box.get(axis)
    if isinstance(direct, (list, tuple)):
        values.extend(direct)
    for key in (f"{axis}0", f"{axis}1"):
        if key in box:
            values.append(box[key])
    rng = box.get("range")
    if isinstance(rng, Mapping) and isinstance(rng.get(axis), (list, tuple)):
        values.extend(rng[axis])
    numbers = [v for v in (_finite(x) for x in values) if v is not None]
    if len(numbers) < 2:
        return None
    return min(numbers), max(numbers)


def box_ranges(box: Any) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """((x low, x high), (y low, y high)) of one box-selection record, or None when it
    lacks either range (a box is only usable with both) or has no area (a click)."""
    if not isinstance(box, Mapping):
        return None
    xs, ys = _span(box, "x"), _span(box, "y")
    if xs is None or ys is None or xs[0] == xs[1] or ys[0] == ys[1]:
        return None                   # no box, or a click (a box of no area): not a box
    return xs, ys


def _boxes(inner: Mapping) -> list:
    boxes = inner.get("box") or []
    return [boxes] if isinstance(boxes, Mapping) else list(boxes)


def covered_by_boxes(boxes: list, points: Mapping[Any, tuple[float, float]]) -> list:
    """Ids of the points ``(noisy support, noisy Jaccard)`` inside any of ``boxes`` on both
    axes (edges included), in the order of ``points``."""
    ranges = [r for r in (box_ranges(b) for b in boxes) if r is not None]
    out = []
    for pid, (x, y) in points.items():
        if any(xl <= x <= xh and yl <= y <= yh for (xl, xh), (yl, yh) in ranges):
            out.append(pid)
    return out


def _point_id(point: Mapping) -> Any:
    custom = point.get("customdata")
    if isinstance(custom, (list, tuple)):
        custom = custom[0] if custom else None
    return custom


def _point_support(point: Any, points: Mapping[Any, tuple[float, float]]) -> float | None:
    """A clicked point's noisy support: looked up by its row id, else its x coordinate."""
    if not isinstance(point, Mapping):
        return None
    row_id = _point_id(point)
    if row_id is not None:
        try:
            found = points.get(row_id)
        except TypeError:  # unhashable customdata
            found = None
        if found is None and not isinstance(row_id, str):
            found = points.get(str(row_id))
        if found is not None:
            value = _finite(found[0])
            if value is not None:
                return value
    return _finite(point.get("x"))


@dataclass(frozen=True)
class SelectionChoice:
    """What a selection asks for: the threshold, the ids it selected, and a note."""

    threshold: float
    selected: tuple = ()
    note: str | None = None
    changed: bool = False


def threshold_from_selection(selection: Any, points: Mapping[Any, tuple[float, float]],
                             current: float) -> SelectionChoice:
    """The pruning threshold a Plotly selection on the scatter asks for.

    Parameters
    ----------
    selection : dict or None
        The chart event ``{"selection": {"points": [...], "box": [...], ...}}`` or the
        inner selection dict. None or an empty selection means "no new choice".
    points : mapping
        Row id (the point's ``customdata``) → (noisy support |E11|, noisy Jaccard).
    current : float
        The threshold in force; kept when the selection gives none.

    Returns
    -------
    SelectionChoice
        ``threshold`` (never negative), the ``selected`` row ids, ``changed`` and a
        ``note`` for the user when a box covered no redescription.
    """
    inner = _inner(selection)
    if inner is None:
        return SelectionChoice(current)
    boxes = _boxes(inner)
    usable = [b for b in boxes if box_ranges(b) is not None]
    if usable:
        ids = covered_by_boxes(usable, points)
        if not ids:
            return SelectionChoice(current, (), "The box covers no redescription (it selects "
                                               "what lies inside it on both axes); the "
                                               "threshold is unchanged.")
        low = min(points[i][0] for i in ids)
        return SelectionChoice(max(0.0, low), tuple(ids), None, True)
    raw = inner.get("points") or []
    supports, ids = [], []
    for p in raw:
        s = _point_support(p, points)
        if s is not None:
            supports.append(s)
            if isinstance(p, Mapping) and _point_id(p) is not None:
                ids.append(_point_id(p))
    if supports:
        return SelectionChoice(max(0.0, min(supports)), tuple(ids), None, True)
    return SelectionChoice(current)


def selection_signature(selection: Any) -> str | None:
    """A stable text form of a non-empty selection (None when empty), to apply it once.

    The chart keeps its selection across reruns; comparing signatures lets the page
    apply a click or box only when it is new, so a number typed afterwards is not
    overwritten by an old selection.
    """
    inner = _inner(selection)
    if inner is None:
        return None
    boxes = _boxes(inner)
    raw = inner.get("points") or []
    if not boxes and not raw:
        return None
    parts = [repr(sorted(b.items())) if isinstance(b, Mapping) else repr(b) for b in boxes]
    for p in raw:
        parts.append(repr((_point_id(p), p.get("x"), p.get("y"))) if isinstance(p, Mapping)
                     else repr(p))
    return "|".join(parts)
