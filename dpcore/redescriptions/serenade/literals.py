"""Serenade's literal candidates: per attribute, ranges of codes on a coded view.

A literal is ``lo ≤ code ≤ hi`` on one attribute (:mod:`dpcore.redescriptions.coding`):

* numeric with thresholds t_0 < … < t_{B−1}: every interval of the B + 1 bins
  except the whole range, i.e. ``t_{lo−1} < A ≤ t_hi`` (one-sided at either end);
* Boolean: ``[A]`` (code 1) only, as in the Serenade paper (a negated ``¬[A]`` would make
  near-universal queries such as "not a rare diagnosis" the best-scoring ones);
* categorical: ``[A = c]`` for each declared category.

Which thresholds exist is the privacy question, settled by the coding: the
public grid (strict) or data segments (faithful, :func:`code_view_segments`).
Nothing here reads row values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.schema import BOOLEAN, CATEGORICAL
from dpcore.redescriptions.coding import CodedView
from dpcore.redescriptions.results import AttributeTest


@dataclass(frozen=True)
class LiteralSet:
    """The candidate literals of one coded view, grouped by attribute.

    Attributes
    ----------
    coded : CodedView
    attr, lo, hi : ndarray of int64
        Literal k tests ``lo[k] ≤ code ≤ hi[k]`` on attribute ``attr[k]``.
    start : ndarray of int64, shape (n_attributes + 1,)
        Literals of attribute a are ``start[a]:start[a+1]``.
    """

    coded: CodedView
    attr: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    start: np.ndarray

    @property
    def size(self) -> int:
        return int(self.attr.size)

    def test(self, k: int) -> AttributeTest:
        """The readable test of literal ``k``."""
        a, lo, hi = int(self.attr[k]), int(self.lo[k]), int(self.hi[k])
        at = self.coded.view.attributes[a]
        if at.type == BOOLEAN:
            return AttributeTest(at.name, "is", value=True)
        if at.type == CATEGORICAL:
            return AttributeTest(at.name, "equals", value=at.categories[lo])
        thr = self.coded.thresholds[a]
        low = float(thr[lo - 1]) if lo > 0 else None
        high = float(thr[hi]) if hi < len(thr) else None
        return AttributeTest(at.name, "interval", low=low, high=high)


def literal_set(coded: CodedView) -> LiteralSet:
    """All literal candidates of a coded view (see module docstring)."""
    attr, lo, hi, start = [], [], [], [0]
    for a, at in enumerate(coded.view.attributes):
        n = int(coded.n_codes[a])
        if at.type == BOOLEAN:
            ranges = [(1, 1)]
        elif at.type == CATEGORICAL:
            ranges = [(c, c) for c in range(n)]
        else:
            ranges = [(i, j) for i in range(n) for j in range(i, n) if (i, j) != (0, n - 1)]
        for i, j in ranges:
            attr.append(a), lo.append(i), hi.append(j)
        start.append(len(attr))
    as_int = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    return LiteralSet(coded, as_int(attr), as_int(lo), as_int(hi), as_int(start))


def literal_mask(coded: CodedView, lits: LiteralSet, k: int) -> np.ndarray:
    """Rows satisfying literal ``k`` (bool, private: true data)."""
    codes = coded.codes[int(lits.attr[k])]
    return (codes >= lits.lo[k]) & (codes <= lits.hi[k])
