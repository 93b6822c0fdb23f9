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


def _fixed_candidates(view: ViewData):
    """Per attribute: candidate count, kind and child count of the non-numeric attributes
    (numeric ones get count 0 here; their count is their number of thresholds)."""
    n_attr = len(view.attributes)
    count = np.zeros(n_attr, dtype=np.int64)
    kind = np.full(n_attr, THRESHOLD, dtype=np.int64)
    nchild = np.full(n_attr, 2, dtype=np.int64)
    for a, at in enumerate(view.attributes):
        if at.type == BOOLEAN:
            count[a] = 1
        elif at.type == CATEGORICAL:
            k = len(at.categories)
            if k <= MAX_MULTIWAY:
                count[a], kind[a], nchild[a] = 1, MULTIWAY, k
            else:
                count[a], kind[a] = k, EQUALS
    return count, kind, nchild


def _candidate_arrays(count: np.ndarray, kind: np.ndarray, nchild: np.ndarray):
    """The candidate arrays from per-attribute counts: attribute ``a`` contributes ``count[a]``
    candidates with ``thr`` 0, 1, ..., in attribute order (vectorised, no per-candidate
    Python work)."""
    total = int(count.sum())
    if total == 0:
        raise DataError("a view has no split candidates (numeric attributes without "
                        "thresholds?)")
    attr = np.repeat(np.arange(count.size, dtype=np.int64), count)
    first = np.cumsum(count) - count
    thr = np.arange(total, dtype=np.int64) - np.repeat(first, count)
    return attr, np.repeat(kind, count), thr, np.repeat(nchild, count)


def _candidates(view: ViewData, thresholds: list):
    count, kind, nchild = _fixed_candidates(view)
    for a, at in enumerate(view.attributes):
        if at.type == NUMERIC:
            count[a] = len(thresholds[a])
    return _candidate_arrays(count, kind, nchild)


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


def _sample_thresholds(column: np.ndarray) -> np.ndarray:
    """Faithful thresholds of one sampled column: its distinct non-missing values but the
    largest, thinned to ``MAX_CODES`` evenly spaced ranks when there are more."""
    vals = np.unique(column[~np.isnan(column)])
    if vals.size > MAX_CODES:
        vals = vals[np.linspace(0, vals.size - 1, MAX_CODES).astype(np.int64)]
    return vals[:-1] if vals.size > 1 else vals


_SIGN = np.uint64(1 << 63)


def _order_and_sorted(col: np.ndarray, row_index: np.ndarray, bits: int):
    """An argsort of ``col`` (missing values last) and its ``k`` non-missing values sorted.

    ``np.sort`` of 64-bit integers is several times faster than ``np.argsort`` of floats
    (vectorised sorting networks), so each value becomes an order-preserving integer key
    whose low ``bits`` bits are replaced by the row index; sorting the keys gives the row
    order. Two values differing only in those dropped bits could come out of order: the
    result is checked to be sorted, and such a column falls back to ``np.argsort``.
    """
    raw = col.view(np.uint64)
    key = np.where(raw >= _SIGN, ~raw, raw | _SIGN)        # float order as integer order
    shift = np.uint64(bits)
    key >>= shift
    key <<= shift
    key |= row_index
    missing = np.isnan(col)
    key[missing] |= ~np.uint64((1 << bits) - 1)           # above +inf: missing sort last
    key.sort()
    order = (key & np.uint64((1 << bits) - 1)).astype(np.intp)
    k = col.size - int(np.count_nonzero(missing))
    ordered = col[order[:k]]
    if k > 1 and not np.all(ordered[1:] >= ordered[:-1]):
        order = np.argsort(col)
        ordered = col[order[:k]]
    return order, ordered


class FaithfulCoder:
    """Codes one view for faithful trees: thresholds from a fresh random row sample per tree.

    NOT differentially private: the thresholds are raw data values (the paper's code).
    What does not depend on the sample is prepared once per view (the codes of Boolean and
    categorical attributes, the candidate layout, and for each numeric attribute its sorted
    distinct values with every row's rank among them); :meth:`code` then needs no sort or
    binary search per row. Read-only after construction, so trials in threads may share one.

    Parameters
    ----------
    view : ViewData
        Private raw values (attributes × rows).
    """

    def __init__(self, view: ViewData):
        n_attr, n_rows = view.values.shape
        self.view = view
        self.count, self.kind, self.nchild = _fixed_candidates(view)
        numeric = np.asarray([at.type == NUMERIC for at in view.attributes], dtype=bool)
        self.codes = np.empty((n_attr, n_rows), dtype=np.uint16)
        self.n_codes = np.asarray([0 if at.type == NUMERIC else 2 if at.type == BOOLEAN
                                   else len(at.categories) for at in view.attributes],
                                  dtype=np.int64)
        other = np.flatnonzero(~numeric)
        for i in range(0, other.size, 64):      # in blocks: temporaries stay in cache
            rows = other[i:i + 64]
            block = view.values[rows]
            missing = np.isnan(block)
            out = np.empty(block.shape, dtype=np.uint16)
            np.copyto(out, block, casting="unsafe", where=~missing)
            out[missing] = MISSING
            self.codes[rows] = out
        # Numeric attributes, row by row (small temporaries stay in cache): each row's rank
        # among its attribute's sorted distinct values, offset so that attributes sit side
        # by side; -1 marks a missing value (slot g of the per-tree table, its last).
        num = np.flatnonzero(numeric)
        index = np.int32 if num.size * n_rows < 2**31 - 1 else np.int64
        gid = np.empty((num.size, n_rows), dtype=index)
        fast, slow, distinct, sizes = [], [], [], []
        g = 0
        bits = max(n_rows - 1, 1).bit_length()
        row_index = np.arange(n_rows, dtype=np.uint64)
        for a in num.tolist():
            order, ordered = _order_and_sorted(view.values[a], row_index, bits)
            k = ordered.size
            first = np.empty(k, dtype=bool)
            first[:1] = True
            np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
            size = int(np.count_nonzero(first))
            # Exact equality with np.unique of a sample needs one bit pattern per distinct
            # value (-0.0 and 0.0 compare equal) and no thinning: else coded per tree.
            if size > MAX_CODES or np.any(np.signbit(ordered[ordered == 0])):
                slow.append(a)
                continue
            row = gid[len(fast)]
            row[order[:k]] = np.cumsum(first) + (g - 1)
            row[order[k:]] = -1
            fast.append(a), distinct.append(ordered[first]), sizes.append(size)
            g += size
        self.fast = np.asarray(fast, dtype=np.int64)
        self.slow = slow
        self.gid = gid[:len(fast)]
        # Distinct values of all fast attributes side by side: attribute i owns
        # [start[i], start[i] + sizes[i]) of these g slots.
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.start = np.cumsum(self.sizes) - self.sizes
        self.n_values = g
        self.distinct = np.concatenate(distinct) if distinct else np.empty(0)
        self.owner = np.repeat(np.arange(len(fast), dtype=np.int64), self.sizes)
        self.constant = not num.size
        if self.constant:
            # No numeric attribute: the coding does not depend on the sample.
            self._fixed = CodedView(view, self.codes, self.n_codes,
                                    [np.empty(0) for _ in view.attributes],
                                    *_candidate_arrays(self.count, self.kind, self.nchild),
                                    fanout=int(self.nchild[self.count > 0].max()))

    def code(self, rng: np.random.Generator, sample_share: float = 0.8) -> CodedView:
        """A fresh faithful coding: thresholds = distinct values of a random row sample.

        Parameters
        ----------
        rng : numpy.random.Generator
            Draws ``rng.random(n_rows)``, one uniform per row, as the per-tree coding always
            has (seeded runs are unchanged).
        sample_share : float
            Probability that a row is in the sample.

        Returns
        -------
        CodedView
            The same codes, thresholds and candidates as sorting the sample's distinct
            values and binary-searching every row: data-derived, NOT differentially
            private. A view without numeric attributes gets the same object every time
            (its coding does not depend on the sample).
        """
        view = self.view
        n_rows = view.values.shape[1]
        take = rng.random(n_rows) < sample_share
        if self.constant:
            return self._fixed
        all_fast = self.fast.size == len(view.attributes)
        codes = None if all_fast else self.codes.copy()
        n_codes = self.n_codes.copy()
        count = self.count.copy()
        thresholds = [np.empty(0) for _ in view.attributes]
        g = self.n_values
        if self.fast.size:
            seen = np.zeros(g + 1, dtype=bool)
            seen[self.gid[:, take]] = True
            seen = seen[:g]
            before = np.zeros(g + 1, dtype=np.int64)     # sampled distinct values before slot
            np.cumsum(seen, out=before[1:])
            n_seen = before[self.start + self.sizes] - before[self.start]
            n_thr = np.where(n_seen > 1, n_seen - 1, n_seen)
            # Code of a value = thresholds below it = sampled values below it, capped at the
            # threshold count (the largest sampled value is no threshold).
            rank = before[:g] - before[self.start][self.owner]
            table = np.empty(g + 1, dtype=np.uint16)
            np.minimum(rank, n_thr[self.owner], out=rank)
            table[:g] = rank
            table[g] = MISSING
            if all_fast:
                codes = np.take(table, self.gid)
            else:
                codes[self.fast] = np.take(table, self.gid)
            n_codes[self.fast] = n_thr + 1
            count[self.fast] = n_thr
            is_thr = seen & (rank < n_thr[self.owner])
            for a, vals in zip(self.fast.tolist(),
                               np.split(self.distinct[is_thr], np.cumsum(n_thr)[:-1])):
                thresholds[a] = vals
        for a in self.slow:
            thr = _sample_thresholds(view.values[a, take])
            thresholds[a] = thr
            codes[a] = _code_numeric(view.values[a], thr)
            count[a], n_codes[a] = len(thr), len(thr) + 1
        cand = _candidate_arrays(count, self.kind, self.nchild)
        return CodedView(view, codes, n_codes, thresholds, *cand, fanout=int(cand[3].max()))


def code_view_faithful(view: ViewData, rng: np.random.Generator,
                       sample_share: float = 0.8) -> CodedView:
    """Code a view with thresholds = distinct values of a random 80 % row sample.

    NOT differentially private: the thresholds are raw data values (paper's code).
    More than ``MAX_CODES`` distinct values are thinned to evenly spaced ranks. To code
    one view for many trees, build a :class:`FaithfulCoder` once and call its ``code``.
    """
    return FaithfulCoder(view).code(rng, sample_share)


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
