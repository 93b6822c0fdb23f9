"""Number boxes that explain what they refuse, next to the field.

A Streamlit ``number_input`` with ``min_value``/``max_value`` silently snaps an
out-of-range entry back (or ignores it). These fields have no hard bounds: the
value the user typed stays in the box, and :func:`number_problem` (pure) says
right under it what is wrong and what would be accepted. Whoever uses the value
checks it too (:func:`components.redescriptions.params_form.form_problems` keeps Launch disabled
while a field of the run is out of range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st

from dpcore.family import ParamField

__all__ = ["Bounds", "bounds_of", "fmt_eps", "number_problem", "number_field"]


def fmt_eps(value: float) -> str:
    """How the app prints an ε (6 significant digits)."""
    return f"{value:.6g}"


@dataclass(frozen=True)
class Bounds:
    """The accepted range of a field: ``low`` ≤ x ≤ ``high`` (``low_open``: low < x;
    ``high_open``: x < high).

    ``why`` says in a few words why the range is what it is (shown with a refusal).
    """

    low: float | None = None
    high: float | None = None
    integer: bool = False
    low_open: bool = False
    why: str = ""
    high_open: bool = False


def bounds_of(declared: ParamField, why: str = "") -> Bounds:
    """The range a parameter's declaration accepts (what its type's ``validate()`` checks),
    for its number box."""
    return Bounds(declared.low, declared.high, integer=declared.kind is int,
                  low_open=declared.low_open, high_open=declared.high_open, why=why)


def _fmt(x: float) -> str:
    """A bound or a typed value as people write it: ``100,000,000``, not ``1e+08``."""
    if abs(x) >= 10_000 and float(x) == int(x):
        return f"{int(x):,}"
    return f"{x:g}"


def number_problem(label: str, value, bounds: Bounds) -> str | None:
    """Why ``value`` is refused for the field ``label`` (None when it is accepted)."""
    if value is None:
        return f"{label}: enter a number."
    if isinstance(value, bool):
        return f"{label}: enter a number, not {value!r}."
    try:
        x = float(value)
    except (TypeError, ValueError):
        return f"{label}: {value!r} is not a number."
    why = f" ({bounds.why})" if bounds.why else ""
    if not math.isfinite(x):
        return f"{label}: {value!r} is not a finite number."
    if bounds.integer and x != int(x):
        return f"{label}: {_fmt(x)} is not a whole number{why}."
    low, high = bounds.low, bounds.high
    below = (f"below {_fmt(high)}" if bounds.high_open else f"at most {_fmt(high)}") \
        if high is not None else ""
    if low is not None and (x <= low if bounds.low_open else x < low):
        if bounds.low_open:
            need = f"above {_fmt(low)}"
        else:
            need = f"at least {_fmt(low)}"
        if high is not None:
            need += f" and {below}"
        return f"{label}: {_fmt(x)} is refused — it must be {need}{why}."
    if high is not None and (x >= high if bounds.high_open else x > high):
        return f"{label}: {_fmt(x)} is refused — it must be {below}{why}."
    return None


def number_field(container, label: str, key: str, bounds: Bounds, *, step=None,
                 format: str | None = None, help: str | None = None, disabled: bool = False,
                 on_change=None, args: tuple = ()) -> str | None:
    """Draw a number box (no hard bounds) in ``container`` and, under it, why its value
    is refused, if it is. Returns that message (None when the value is accepted)."""
    container.number_input(label, step=step, format=format, key=key, help=help,
                           disabled=disabled, on_change=on_change, args=args)
    problem = None if disabled else number_problem(label, st.session_state.get(key), bounds)
    if problem:
        container.error(problem)
    return problem
