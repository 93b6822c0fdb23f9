"""Code a view's raw values into small integers and list its split candidates.

Kernels never see raw values: each view becomes a ``uint16`` matrix of codes
(attributes × rows, ``MISSING`` for a missing value) plus candidate arrays.
For a numeric attribute with sorted thresholds t_0 < ... < t_{B-1} the code of x
is the number of thresholds below x, so ``x ≤ t_j ⇔ code ≤ j``.

Where thresholds come from is the privacy question:

* ``strict`` — the public grid declared in the schema (:meth:`Schema.split_grid`);
  nothing here reads the data to decide a threshold. Coded once per dataset.
* ``faithful`` — as the paper's code: every distinct value of a fresh random
  80 % row sample, per tree. Data-derived, so NOT ε-DP (labelled as such).

Candidate kinds (``kind`` array):

* ``THRESHOLD`` (numeric and Boolean): child 0 if ``code ≤ thr`` else child 1.
* ``MULTIWAY`` (categorical with ≤ ``MAX_MULTIWAY`` categories): child = code.
* ``EQUALS`` (categorical with more categories): child 1 if ``code == thr`` else 0;
  one-vs-rest keeps trees small (a 12-way split at every level of a depth-4 tree
  would give 20,736 leaves of a few rows each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.dataset import TwoViewDataset, ViewData
from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, Schema
from dpcore.errors import DataError
from dpcore.redescriptions.results import Condition

MISSING = np.uint16(65535)
MAX_CODES = 65534
MAX_MULTIWAY = 4
THRESHOLD, MULTIWAY, EQUALS = 0, 1, 2


@dataclass(frozen=True)
class CodedView:
    """A view as kernel-ready codes plus its split candidates.

    Attributes
    ----------
    codes : ndarray of uint16, shape (n_attributes, n_rows)
        C-contiguous; ``MISSING`` marks a missing value. Private (raw-data derived).
    n_codes : ndarray of int64
        Number of distinct codes per attribute (excluding MISSING).
    thresholds : list of ndarray
        Per attribute, the real-valued thresholds behind the codes (numeric) or
        an empty array. Public in strict mode, data-derived in faithful mode.
    cand_attr, cand_kind, cand_thr, cand_nchild : ndarray of int64
        One entry per split candidate.
    fanout : int
        Largest child count of any candidate (the tree layout's arity).
    """

    view: ViewData
    codes: np.ndarray
    n_codes: np.ndarray
    thresholds: list
    cand_attr: np.ndarray
    cand_kind: np.ndarray
    cand_thr: np.ndarray
    cand_nchild: np.ndarray
    fanout: int

    @property
    def n_candidates(self) -> int:
        return int(self.cand_attr.size)

    def branch_condition(self, cand: int, child: int) -> Condition:
        """The readable test of child ``child`` of candidate ``cand``."""
        a = int(self.cand_attr[cand])
        attr = self.view.attributes[a]
        kind, thr = int(self.cand_kind[cand]), int(self.cand_thr[cand])
        if attr.type == BOOLEAN:
            return Condition(attr.name, "is", bool(child == 1))
        if kind == MULTIWAY:
            return Condition(attr.name, "=", attr.categories[child])
        if kind == EQUALS:
            return Condition(attr.name, "=" if child == 1 else "!=", attr.categories[thr])
        value = float(self.thresholds[a][thr])
        return Condition(attr.name, "<=" if child == 0 else ">", value)


def _code_numeric(column: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    codes = np.searchsorted(thresholds, column, side="left").astype(np.uint16)
    codes[np.isnan(column)] = MISSING
    return codes


def _candidates(view: ViewData, thresholds: list):
    attr, kind, thr, nchild = [], [], [], []
    for a, at in enumerate(view.attributes):
        if at.type == BOOLEAN:
            attr.append(a), kind.append(THRESHOLD), thr.append(0), nchild.append(2)
        elif at.type == CATEGORICAL:
            k = len(at.categories)
            if k <= MAX_MULTIWAY:
                attr.append(a), kind.append(MULTIWAY), thr.append(0), nchild.append(k)
            else:
                for c in range(k):
                    attr.append(a), kind.append(EQUALS), thr.append(c), nchild.append(2)
        else:
            for j in range(len(thresholds[a])):
                attr.append(a), kind.append(THRESHOLD), thr.append(j), nchild.append(2)
    as_int = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    if not attr:
        raise DataError("a view has no split candidates (numeric attributes without "
                        "thresholds?)")
    return as_int(attr), as_int(kind), as_int(thr), as_int(nchild)


def _build(view: ViewData, thresholds: list) -> CodedView:
    n_attr, n_rows = view.values.shape
    codes = np.empty((n_attr, n_rows), dtype=np.uint16)
    n_codes = np.zeros(n_attr, dtype=np.int64)
    for a, at in enumerate(view.attributes):
        col = view.values[a]
        if at.type == NUMERIC:
            codes[a] = _code_numeric(col, thresholds[a])
            n_codes[a] = len(thresholds[a]) + 1
        else:
            c = np.where(np.isnan(col), 0, col).astype(np.uint16)
            c[np.isnan(col)] = MISSING
            codes[a] = c
            n_codes[a] = 2 if at.type == BOOLEAN else len(at.categories)
    cand = _candidates(view, thresholds)
    return CodedView(view, codes, n_codes, thresholds, *cand, fanout=int(cand[3].max()))


def code_view_strict(schema: Schema, view: ViewData) -> CodedView:
    """Code a view with the schema's public thresholds (strict mode, no data-derived choice)."""
    thresholds = [schema.split_grid(a) if a.type == NUMERIC else np.empty(0)
                  for a in view.attributes]
    return _build(view, thresholds)


def code_view_faithful(view: ViewData, rng: np.random.Generator,
                       sample_share: float = 0.8) -> CodedView:
    """Code a view with thresholds = distinct values of a random 80 % row sample.

    NOT differentially private: the thresholds are raw data values (paper's code).
    More than ``MAX_CODES`` distinct values are thinned to evenly spaced ranks.
    """
    n_rows = view.values.shape[1]
    take = rng.random(n_rows) < sample_share
    thresholds = []
    for a, at in enumerate(view.attributes):
        if at.type != NUMERIC:
            thresholds.append(np.empty(0))
            continue
        col = view.values[a, take]
        vals = np.unique(col[~np.isnan(col)])
        if vals.size > MAX_CODES:
            vals = vals[np.linspace(0, vals.size - 1, MAX_CODES).astype(np.int64)]
        thresholds.append(vals[:-1] if vals.size > 1 else vals)
    return _build(view, thresholds)


def code_dataset_strict(dataset: TwoViewDataset) -> tuple[CodedView, CodedView]:
    """Both views coded with public thresholds (strict mode)."""
    return tuple(code_view_strict(dataset.schema, v) for v in dataset.views)


def code_view_segments(view: ViewData, n_segments: int = 32) -> CodedView:
    """Code a view with data-derived cut points: equal-frequency segments.

    Faithful Serenade (as the original, which builds interval literals on the
    data's own segments): cut points are the 1/n … (n−1)/n quantiles of each
    numeric attribute's non-missing values. NOT differentially private.
    """
    thresholds = []
    for a, at in enumerate(view.attributes):
        if at.type != NUMERIC:
            thresholds.append(np.empty(0))
            continue
        col = view.values[a]
        col = col[~np.isnan(col)]
        if col.size == 0:
            thresholds.append(np.empty(0))
            continue
        cuts = np.unique(np.quantile(col, np.arange(1, n_segments) / n_segments))
        thresholds.append(cuts[cuts < col.max()])
    return _build(view, thresholds)
