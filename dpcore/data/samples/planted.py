"""Planted redescriptions: the rules a synthetic sample dataset hides, their masks and true
Jaccards, and the sampling helpers shared by the generators."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from dpcore.data.dataset import TwoViewDataset

GRID_INTERVALS = 33  # grid_bins + 1 with the default grid_bins = 32


# ---------------------------------------------------------------------------
# Planted rules
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PlantedRule:
    """A redescription planted by a generator, stored as structured conditions.

    Left query: the Boolean attributes ``left_attrs`` (each "= true") joined by ``left_op``
    (``"single"``, ``"and"`` or ``"or"``). Right query: ``right_attr right_op threshold`` with
    ``right_op`` ``">"`` or ``"<="`` (a missing value satisfies neither). ``jaccard_range`` is
    the intended range of the TRUE Jaccard on generated data (at the default sizes).

    Attributes
    ----------
    name : str
        Short label (e.g. "R1").
    left_attrs : tuple of str
    left_op : str
    right_attr : str
    right_op : str
    threshold : float
        In the right attribute's unit; always a threshold of the public split grid.
    jaccard_range : (float, float)
    hit_rate, false_rate : float
        Generator parameters: P(right query | left query) and P(right query | not left query)
        before missing values.
    note : str
    """

    name: str
    left_attrs: tuple[str, ...]
    left_op: str
    right_attr: str
    right_op: str
    threshold: float
    jaccard_range: tuple[float, float]
    hit_rate: float = 0.85
    false_rate: float = 0.04
    note: str = ""

    @property
    def left_text(self) -> str:
        """Left query in the app's notation, e.g. ``DX_CHF ∨ DX_CKD``."""
        sym = {"single": "", "and": " ∧ ", "or": " ∨ "}[self.left_op]
        return sym.join(self.left_attrs)

    @property
    def right_text(self) -> str:
        """Right query, e.g. ``LAB_BNP > 400``."""
        op = "≤" if self.right_op == "<=" else ">"
        return f"{self.right_attr} {op} {self.threshold:g}"

    @property
    def text(self) -> str:
        return f"{self.left_text}  ⇔  {self.right_text}"


def _get(table, name: str) -> np.ndarray:
    return np.asarray(table[name], dtype=np.float64)


def rule_masks(rule: PlantedRule, left, right) -> tuple[np.ndarray, np.ndarray]:
    """Supports (Boolean masks) of a rule's left and right query.

    Parameters
    ----------
    left, right : mapping of column name → array-like (e.g. DataFrames), row-aligned
        Boolean columns as 0/1 (NaN = missing = not in the support).
    """
    cols = [_get(left, a) == 1.0 for a in rule.left_attrs]
    if rule.left_op == "and":
        ml = np.logical_and.reduce(cols)
    elif rule.left_op == "or":
        ml = np.logical_or.reduce(cols)
    else:
        ml = cols[0]
    x = _get(right, rule.right_attr)
    with np.errstate(invalid="ignore"):
        mr = (x > rule.threshold) if rule.right_op == ">" else (x <= rule.threshold)
    return ml, mr & ~np.isnan(x)


def rule_masks_dataset(rule: PlantedRule, dataset: TwoViewDataset):
    """:func:`rule_masks` on a loaded :class:`TwoViewDataset` (columns looked up by name)."""
    tables = []
    for view in dataset.views:
        tables.append({a.name: view.values[i] for i, a in enumerate(view.attributes)})
    return rule_masks(rule, tables[0], tables[1])


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a ∧ b| / |a ∨ b| of two Boolean masks (0 when the union is empty)."""
    union = int(np.count_nonzero(a | b))
    return int(np.count_nonzero(a & b)) / union if union else 0.0


def true_jaccard(rule: PlantedRule, left, right=None) -> float:
    """TRUE Jaccard of a rule on tables (``left``, ``right``) or on a TwoViewDataset ``left``."""
    if isinstance(left, TwoViewDataset):
        return jaccard(*rule_masks_dataset(rule, left))
    return jaccard(*rule_masks(rule, left, right))


# ---------------------------------------------------------------------------
# Sampling helpers
# ---------------------------------------------------------------------------

def truncated_draws(rng, n: int, center: float, spread: float, lo: float, hi: float,
           log: bool) -> np.ndarray:
    """n draws of Normal(center, spread) (or LogNormal(median=center, σ=spread)) truncated to
    [lo, hi], by inverse CDF (vectorised, exact up to float precision)."""
    if n == 0:
        return np.empty(0)
    if log:
        with np.errstate(divide="ignore"):
            a = (math.log(lo) - math.log(center)) / spread if lo > 0 else -np.inf
        b = (math.log(hi) - math.log(center)) / spread
    else:
        a, b = (lo - center) / spread, (hi - center) / spread
    pa, pb = ndtr(a), ndtr(b)
    u = pa + rng.random(n) * (pb - pa)
    z = ndtri(np.clip(u, 1e-300, 1 - 1e-16))
    x = np.exp(math.log(center) + spread * z) if log else center + spread * z
    return np.clip(x, lo, hi)


def check_on_grid(rule: PlantedRule, lo: float, step: float) -> None:
    k = (rule.threshold - lo) / step
    assert abs(k - round(k)) < 1e-9 and 1 <= round(k) <= GRID_INTERVALS - 1, rule
