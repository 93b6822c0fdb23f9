"""Sequence shrinking of a sample database (Xu et al. 2015, §V-A), and support counting.

Shrinking caps every record of a sample database at lmax items so that one record holds at
most C(lmax, k) distinct candidate k-sequences, the sensitivity of the noisy local supports.
It is a *local transformation*: each record is rewritten from itself, the candidates C_k and
lmax only (C_k and lmax are DP outputs), so one record added or removed changes the shrunk
database by one record. The functions here compute exact (private) results; the miner adds
the noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.sequences.candidates import CandidateTrie
from dpcore.sequences.kernels import (
    build_occurrence_runs,
    count_supports_runs,
    shrink_records_kernel,
)

__all__ = ["ShrinkStats", "shrink_records", "relevant_items", "candidate_supports"]


@dataclass(frozen=True)
class ShrinkStats:
    """What shrinking did to one database (private: owner diagnostics only).

    Attributes
    ----------
    long_records : int
        Records longer than lmax (the only ones rewritten).
    rebuilt_records : int
        Records still longer than lmax after the lossless steps, rebuilt by Algorithm 2.
    overshooting_records : int
        Rebuilt records longer than lmax before truncation (Algorithm 2 can overshoot by up
        to k − 1 items; strict mode truncates them).
    items_removed : int
        Items removed in all.
    """

    long_records: int
    rebuilt_records: int
    overshooting_records: int
    items_removed: int


def relevant_items(trie: CandidateTrie, n_items: int) -> np.ndarray:
    """Boolean mask over the alphabet: the items that occur in some candidate."""
    mask = np.zeros(n_items, dtype=np.bool_)
    if trie.n_cand:
        mask[np.unique(trie.cands)] = True
    return mask


def shrink_records(indptr: np.ndarray, items: np.ndarray, n_items: int, trie: CandidateTrie,
                   lmax: int, *, truncate: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, ShrinkStats]:
    """Shrink every record longer than ``lmax`` (items) for the candidates of ``trie``.

    Steps, each only while the record is still longer than lmax: irrelevant-item deletion
    and consecutive-pattern compression (both lossless for the candidates), then sequence
    reconstruction (Algorithm 2) and, when ``truncate`` (strict mode), a hard cut to lmax
    items.

    Parameters
    ----------
    indptr, items : CSR records (private).
    n_items : int
        Alphabet size.
    trie : CandidateTrie
        The candidates C_k.
    lmax : int
        Length bound in items (≥ 1).
    truncate : bool
        Cut rebuilt records to lmax (strict). ``False`` reproduces the paper, whose
        Algorithm 2 can leave up to lmax + k − 1 items — NOT DP (the sensitivity C(lmax, k)
        then fails).

    Returns
    -------
    (indptr, items, ShrinkStats)
        The shrunk records (same count and order) and what was done.
    """
    new_indptr, new_items, stats = shrink_records_kernel(
        indptr, items, n_items, relevant_items(trie, n_items), trie.k, int(lmax),
        bool(truncate), trie.cands, trie.node_item, trie.child_start, trie.child_end,
        trie.node_parent, trie.leaf_cand, trie.cand_leaf)
    return new_indptr, new_items, ShrinkStats(*(int(x) for x in stats))


def candidate_supports(indptr: np.ndarray, items: np.ndarray, n_items: int,
                       trie: CandidateTrie, runs=None) -> np.ndarray:
    """Exact support (records) of every candidate of ``trie``; int64, in candidate order.

    ``runs``: :func:`~dpcore.sequences.kernels.build_occurrence_runs` of the same records,
    if already built (it is built here otherwise).
    """
    if trie.n_cand == 0:
        return np.zeros(0, dtype=np.int64)
    if runs is None:
        runs = build_occurrence_runs(indptr, items, n_items)
    return count_supports_runs(indptr, *runs, trie.node_item, trie.child_start,
                               trie.child_end, trie.leaf_cand, trie.k, trie.n_cand)
