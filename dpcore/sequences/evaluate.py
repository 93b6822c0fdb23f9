"""Evaluation of frequent-sequence releases against the truth — owner/teaching, NOT private.

Everything here reads the true data and returns exact statistics: show it to owners, or to
everyone on public demo data only, and never spend ε on it.

* :func:`exact_frequent_sequences`: every sequence with support ≥ a threshold (PrefixSpan
  by pseudo-projection, :func:`dpcore.sequences.kernels.prefix_search`);
* :func:`true_supports`: exact supports of given sequences;
* :func:`f_score`: precision, recall and F-score of a released set against the exact one
  (Xu et al. 2015 use F-score = 2PR/(P + R));
* :func:`median_relative_error`: median of |noisy − true| / true over the released
  sequences (the median as in PrivBasis, Li et al. 2012).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.errors import ParameterError
from dpcore.sequences.candidates import build_candidate_trie
from dpcore.sequences.kernels import build_occurrence_runs, prefix_search
from dpcore.sequences.shrinking import candidate_supports

__all__ = ["exact_frequent_sequences", "true_supports", "f_score", "FScore",
           "median_relative_error", "support_threshold"]


def support_threshold(theta: float, n_records: int) -> int:
    """The smallest integer support s with s ≥ θ·|D| (records)."""
    if not 0.0 < theta < 1.0:
        raise ParameterError(f"θ must lie in (0, 1); got {theta!r}")
    return max(1, math.ceil(theta * n_records - 1e-9))


def exact_frequent_sequences(data: SequenceDataset, *, theta: float | None = None,
                             min_support: int | None = None, max_length: int | None = None
                             ) -> dict[tuple[int, ...], int]:
    """Every sequence with support ≥ the threshold, with its exact support (NOT private).

    Parameters
    ----------
    data : SequenceDataset
    theta : float, optional
        Relative threshold; the support threshold is ⌈θ·|D|⌉ (true |D|).
    min_support : int, optional
        Absolute threshold in records (≥ 1); give exactly one of ``theta``/``min_support``.
    max_length : int, optional
        Longest sequence reported (items); default: no limit but the longest record.

    Returns
    -------
    dict of tuple of int → int
        Sequence (item codes) → support (records).
    """
    if (theta is None) == (min_support is None):
        raise ParameterError("give exactly one of theta and min_support")
    threshold = support_threshold(theta, data.n_records) if theta is not None \
        else int(min_support)
    if threshold < 1:
        raise ParameterError(f"min_support must be ≥ 1; got {min_support!r}")
    longest = int(data.lengths.max()) if data.n_records else 0
    limit = longest if max_length is None else min(int(max_length), longest)
    if limit < 1:
        return {}
    runs = build_occurrence_runs(data.indptr, data.items, data.schema.n_items)
    _, ptr, items, sup = prefix_search(data.indptr, *runs, data.schema.n_items, threshold,
                                       limit, 0)
    return {tuple(int(x) for x in items[ptr[i]:ptr[i + 1]]): int(sup[i])
            for i in range(sup.size)}


def true_supports(data: SequenceDataset, patterns) -> dict[tuple[int, ...], int]:
    """Exact support (records) of each given sequence of item codes (NOT private)."""
    by_length: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for p in patterns:
        p = tuple(int(x) for x in p)
        if not p:
            raise ParameterError("an empty sequence has no support to measure")
        by_length[len(p)].append(p)
    out: dict[tuple[int, ...], int] = {}
    for k, group in by_length.items():
        trie = build_candidate_trie(group, k)
        counts = candidate_supports(data.indptr, data.items, data.schema.n_items, trie)
        for row, c in zip(trie.cands, counts):
            out[tuple(int(x) for x in row)] = int(c)
    return out


@dataclass(frozen=True)
class FScore:
    """Precision, recall and F-score of a released set (NaN where undefined)."""

    precision: float
    recall: float
    f_score: float
    released: int
    true: int
    correct: int


def f_score(released, truth, *, max_length: int | None = None) -> FScore:
    """Precision, recall and F-score = 2PR/(P + R) of ``released`` against ``truth``.

    Parameters
    ----------
    released, truth : iterables (or dicts) of tuples of item codes
    max_length : int, optional
        Compare only sequences of at most this length (the paper leaves open whether the
        truth is capped at L_f; the default compares everything).
    """
    rel = {tuple(p) for p in released}
    tru = {tuple(p) for p in truth}
    if max_length is not None:
        rel = {p for p in rel if len(p) <= max_length}
        tru = {p for p in tru if len(p) <= max_length}
    correct = len(rel & tru)
    precision = correct / len(rel) if rel else math.nan
    recall = correct / len(tru) if tru else math.nan
    if rel and tru:
        f = 2 * precision * recall / (precision + recall) if correct else 0.0
    else:
        f = 1.0 if not rel and not tru else 0.0
    return FScore(precision, recall, f, len(rel), len(tru), correct)


def median_relative_error(noisy_supports: dict, data: SequenceDataset | None = None, *,
                          supports: dict | None = None) -> float:
    """Median over released sequences of |noisy − true| / true (NaN if none has true > 0).

    Parameters
    ----------
    noisy_supports : dict of tuple → float
        The release (e.g. ``SequenceRunResult.supports()``).
    data : SequenceDataset, optional
        Used to compute the true supports when ``supports`` is not given.
    supports : dict of tuple → int, optional
        True supports; sequences missing from it are measured on ``data``.

    Released sequences whose true support is 0 (possible after noise) are left out: their
    relative error is undefined.
    """
    if not noisy_supports:
        return math.nan
    known = dict(supports or {})
    missing = [p for p in noisy_supports if tuple(p) not in known]
    if missing:
        if data is None:
            raise ParameterError("true supports are missing for some released sequences "
                                 "and no data was given to measure them")
        known.update(true_supports(data, missing))
    errors = [abs(float(v) - known[tuple(p)]) / known[tuple(p)]
              for p, v in noisy_supports.items() if known[tuple(p)] > 0]
    return float(np.median(errors)) if errors else math.nan
