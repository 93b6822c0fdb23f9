"""Candidate k-sequences: generation from the frequent (k−1)-sequences, and their trie.

Generation is post-processing of earlier DP outputs (the released frequent sequences) and
of the public alphabet: it reads no data.

* k = 1: every item of the alphabet (strict mode: the declared alphabet).
* k ≥ 2: the GSP join (Srikant & Agrawal 1996) of FS_{k−1} with itself — s1 and s2 join
  when s1 without its first item equals s2 without its last, giving s1 followed by the last
  item of s2 (self-joins included) — then every candidate with a one-deletion
  (k−1)-subsequence outside FS_{k−1} is dropped (downward closure). For k = 2 this is all
  |F1|² ordered pairs.

The trie (the paper's CS-tree) stores the candidates as flat arrays for the kernels of
:mod:`dpcore.sequences.kernels`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from dpcore.errors import ParameterError

__all__ = ["CandidateTrie", "build_candidate_trie", "generate_candidates",
           "candidates_as_array", "one_item_candidates"]


@dataclass(frozen=True, eq=False)
class CandidateTrie:
    """The candidate k-sequences and their trie as flat arrays.

    Attributes
    ----------
    cands : int32 array (n_cand, k)
        The candidates, in lexicographic order (candidate id = row).
    node_item : int32 array (n_nodes,)
        Item labelling each node (−1 at the root, node 0).
    child_start, child_end : int64 arrays (n_nodes,)
        Children of node v are the nodes ``child_start[v]:child_end[v]``, sorted by item.
    node_parent : int64 array (n_nodes,)
        Parent of each node (−1 at the root).
    leaf_cand : int64 array (n_nodes,)
        Candidate id of a depth-k node (a c-node), −1 elsewhere.
    cand_leaf : int64 array (n_cand,)
        The c-node of each candidate.
    """

    cands: np.ndarray
    node_item: np.ndarray
    child_start: np.ndarray
    child_end: np.ndarray
    node_parent: np.ndarray
    leaf_cand: np.ndarray
    cand_leaf: np.ndarray

    @property
    def k(self) -> int:
        return int(self.cands.shape[1])

    @property
    def n_cand(self) -> int:
        return int(self.cands.shape[0])

    def patterns(self) -> list[tuple[int, ...]]:
        """The candidates as tuples of item codes."""
        return [tuple(int(x) for x in row) for row in self.cands]


def candidates_as_array(candidates, k: int) -> np.ndarray:
    """Sequences of length k (tuples or an array) as a C-contiguous int32 (n, k) array."""
    arr = np.asarray(list(candidates) if not isinstance(candidates, np.ndarray) else candidates,
                     dtype=np.int64)
    if arr.size == 0:
        return np.zeros((0, k), dtype=np.int32)
    if arr.ndim != 2 or arr.shape[1] != k:
        raise ParameterError(f"candidates must all have length {k}; got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int32)


def build_candidate_trie(candidates, k: int) -> CandidateTrie:
    """The trie of distinct candidate k-sequences (sorted lexicographically).

    Parameters
    ----------
    candidates : iterable of tuples or int array (n, k)
        Candidate k-sequences of item codes; duplicates are dropped.
    k : int
        Their length (≥ 1).
    """
    if k < 1:
        raise ParameterError(f"candidate length must be ≥ 1; got {k}")
    cands = candidates_as_array(candidates, k)
    if cands.shape[0]:
        cands = np.unique(cands, axis=0)  # lexicographic order, duplicates dropped
    n = cands.shape[0]
    node_item = [np.array([-1], dtype=np.int32)]
    node_parent = [np.array([-1], dtype=np.int64)]
    offsets = [0, 1]
    parents_by_depth = []
    prev_ids = np.zeros(n, dtype=np.int64)
    ids = prev_ids
    for d in range(1, k + 1):
        new = np.ones(n, dtype=bool)
        if n > 1:
            new[1:] = np.any(cands[1:, :d] != cands[:-1, :d], axis=1)
        ids = offsets[-1] + np.cumsum(new) - 1
        node_item.append(cands[new, d - 1].astype(np.int32))
        parents = prev_ids[new]
        node_parent.append(parents)
        parents_by_depth.append(parents)
        offsets.append(offsets[-1] + int(new.sum()))
        prev_ids = ids
    n_nodes = offsets[-1]
    child_start = np.zeros(n_nodes, dtype=np.int64)
    child_end = np.zeros(n_nodes, dtype=np.int64)
    for d in range(k):  # children of the depth-d nodes are the depth-(d+1) nodes
        lo, hi = offsets[d], offsets[d + 1]
        parents = parents_by_depth[d]
        nodes = np.arange(lo, hi)
        child_start[lo:hi] = offsets[d + 1] + np.searchsorted(parents, nodes, side="left")
        child_end[lo:hi] = offsets[d + 1] + np.searchsorted(parents, nodes, side="right")
    leaves = np.arange(offsets[k], offsets[k + 1])
    child_start[leaves] = child_end[leaves] = n_nodes
    leaf_cand = np.full(n_nodes, -1, dtype=np.int64)
    cand_leaf = np.asarray(ids, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    leaf_cand[cand_leaf] = np.arange(n)
    return CandidateTrie(cands=np.ascontiguousarray(cands),
                         node_item=np.ascontiguousarray(np.concatenate(node_item)),
                         child_start=child_start, child_end=child_end,
                         node_parent=np.ascontiguousarray(np.concatenate(node_parent)),
                         leaf_cand=leaf_cand, cand_leaf=np.ascontiguousarray(cand_leaf))


def one_item_candidates(item_codes) -> np.ndarray:
    """Level-1 candidates: one per item code (sorted, distinct), as an (n, 1) int32 array."""
    codes = np.unique(np.asarray(list(item_codes), dtype=np.int64))
    return np.ascontiguousarray(codes.reshape(-1, 1), dtype=np.int32)


def generate_candidates(frequent, k: int) -> np.ndarray:
    """Candidate k-sequences from the frequent (k−1)-sequences (k ≥ 2): GSP join + pruning.

    Parameters
    ----------
    frequent : iterable of tuples of item codes
        FS_{k−1}: the sequences of length k − 1 judged frequent (a DP output).
    k : int
        Candidate length, ≥ 2.

    Returns
    -------
    int32 array (n_cand, k)
        The candidates in lexicographic order (possibly empty).
    """
    if k < 2:
        raise ParameterError("generate_candidates builds candidates of length ≥ 2; level 1 "
                             "is the alphabet (one_item_candidates)")
    prev = sorted({tuple(int(x) for x in s) for s in frequent})
    if any(len(s) != k - 1 for s in prev):
        raise ParameterError(f"every frequent sequence must have length {k - 1}")
    if not prev:
        return np.zeros((0, k), dtype=np.int32)
    if k == 2:
        items = np.array([s[0] for s in prev], dtype=np.int32)
        a, b = np.meshgrid(items, items, indexing="ij")
        return np.ascontiguousarray(np.stack([a.ravel(), b.ravel()], axis=1))
    by_prefix: dict[tuple, list[int]] = defaultdict(list)
    for s in prev:
        by_prefix[s[:-1]].append(s[-1])
    known = set(prev)
    out = []
    for s1 in prev:
        for last in by_prefix.get(s1[1:], ()):
            cand = s1 + (last,)
            if all(cand[:t] + cand[t + 1:] in known for t in range(k)):
                out.append(cand)
    if not out:
        return np.zeros((0, k), dtype=np.int32)
    return np.ascontiguousarray(np.array(sorted(set(out)), dtype=np.int32))
