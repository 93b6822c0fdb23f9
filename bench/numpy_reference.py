"""A plain-NumPy MCMCTreePair chain: the speed reference for the numba kernels.

Same chain as ``dpcore.redescriptions.bitset_mcmc.mcmc_tree_pair_bits`` (strict mode): the
same coded views and split candidates (``dpcore.redescriptions.mining.strict_coding``), the
same proposal (an internal node drawn uniformly from both trees, a split drawn uniformly
among the candidates used neither on the path to it nor in the subtrees kept below it and
leaving every threshold test on a path useful, new children grown at random to depth
``d``), the same score g(T1)·(1 + g(T2))/2 with sensitivity 1 and the same
Metropolis–Hastings test min(1, exp(ε·ΔS/2)·q(T′→T)/q(T→T′)), with the proposal ratio
counted as ``kernels.hastings.log_proposal_ratio`` defines it (docs/PRIVACY.md §7). What
differs is the implementation, on purpose the naive one:

* no numba, no bitsets, no incremental bookkeeping;
* every step re-partitions ALL rows through the changed tree (vectorised NumPy gathers, one
  level at a time) and recomputes both purities from scratch with ``np.bincount``;
* a split is drawn by trying random candidates against the rules (as the kernels
  do), and the proposal ratio is found by testing every candidate.

It reads private (coded) data and releases nothing; it exists only to time a step. It does
not draw the same random numbers as the numba chain, so the chains are not identical; the
score function is checked against the numba chain's own score on the numba chain's final
trees (:func:`pair_score`), and the proposal ratio against the kernel's by a test.
"""

from __future__ import annotations

import time

import numpy as np

# Tree layout and candidate kinds as documented in dpcore.redescriptions.kernels.layout and
# dpcore.redescriptions.coding (restated, not imported: importing the kernels would pull
# numba into this module).
LEAF, ABSENT, GROW = -1, -2, -3
THRESHOLD, MULTIWAY, EQUALS = 0, 1, 2
MISSING = 65535


class CodedArrays:
    """The parts of a :class:`dpcore.redescriptions.coding.CodedView` the chain needs (NumPy)."""

    def __init__(self, coded, depth: int):
        self.codes = coded.codes
        self.attr = np.asarray(coded.cand_attr, dtype=np.int64)
        self.kind = np.asarray(coded.cand_kind, dtype=np.int64)
        self.thr = np.asarray(coded.cand_thr, dtype=np.int64)
        self.nchild = np.asarray(coded.cand_nchild, dtype=np.int64)
        self.fanout = int(coded.fanout)
        self.n_cand = int(self.attr.size)
        self.n_rows = int(self.codes.shape[1])
        self.depth = int(depth)
        self.cap = sum(self.fanout ** t for t in range(depth + 1))
        self.depth_of = np.concatenate([np.full(self.fanout ** t, t, dtype=np.int64)
                                        for t in range(depth + 1)])


def route(c: CodedArrays, split: np.ndarray) -> np.ndarray:
    """Heap index of the leaf each row reaches, −1 if a missing value stops it (all rows)."""
    n = c.n_rows
    rows = np.arange(n)
    node = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    for _ in range(c.depth):
        s = split[node]
        idx = rows[alive & (s >= 0)]
        if idx.size == 0:
            break
        si = s[idx]
        x = c.codes[c.attr[si], idx].astype(np.int64)
        kind, thr = c.kind[si], c.thr[si]
        child = np.where(kind == THRESHOLD, x > thr,
                         np.where(kind == MULTIWAY, x, x == thr)).astype(np.int64)
        missing = x == MISSING   # stops at this node, reaches no leaf
        node[idx] = np.where(missing, node[idx], c.fanout * node[idx] + 1 + child)
        alive[idx[missing]] = False
    return np.where(alive & (split[node] == LEAF), node, -1)


def purity_first(leaf: np.ndarray, y: np.ndarray, n_classes: int, cap: int) -> float:
    """g(T1): Σ_leaves Σ_c n_c² / (|leaf|·N) with the initial target's classes."""
    inside = leaf >= 0
    counts = np.bincount(leaf[inside] * n_classes + y[inside],
                         minlength=cap * n_classes).reshape(cap, n_classes)
    size = counts.sum(axis=1)
    ok = size > 0
    return float(((counts[ok] ** 2).sum(axis=1) / size[ok]).sum() / leaf.size)


def purity_second(leaf2: np.ndarray, leaf1: np.ndarray, cap1: int, cap2: int) -> float:
    """g(T2) with T1's leaves (plus 'no T1 leaf') as classes."""
    inside = leaf2 >= 0
    cls = np.where(leaf1 >= 0, leaf1, cap1)
    table = np.bincount(leaf2[inside] * (cap1 + 1) + cls[inside],
                        minlength=cap2 * (cap1 + 1)).reshape(cap2, cap1 + 1)
    size = table.sum(axis=1)
    ok = size > 0
    return float(((table[ok] ** 2).sum(axis=1) / size[ok]).sum() / leaf2.size)


def pair_score(c1: CodedArrays, split1, c2: CodedArrays, split2, y, n_classes) -> float:
    """g(T1)·(1 + g(T2))/2 of two fixed trees, from a full partition of all rows."""
    l1, l2 = route(c1, np.asarray(split1)), route(c2, np.asarray(split2))
    g1 = purity_first(l1, y, n_classes, c1.cap)
    return g1 * (1.0 + purity_second(l2, l1, c1.cap, c2.cap)) / 2.0


# ---------------------------------------------------------------------------
# Tree structure (pure Python on the heap layout)
# ---------------------------------------------------------------------------

def _children(c: CodedArrays, split, u):
    s = split[u]
    return [c.fanout * u + 1 + i for i in range(c.nchild[s])] if s >= 0 else []


def _mark_absent(c: CodedArrays, split, u):
    stack = [u]
    while stack:
        v = stack.pop()
        if v >= c.cap:
            continue
        split[v] = ABSENT
        for i in range(c.fanout):
            ch = c.fanout * v + 1 + i
            if ch < c.cap and split[ch] != ABSENT:
                stack.append(ch)


def _path_splits(c: CodedArrays, split, u) -> set:
    out = set()
    while u > 0:
        u = (u - 1) // c.fanout
        out.add(int(split[u]))
    return out


def _useful(c: CodedArrays, split, u, s) -> bool:
    """A threshold split s at u leaves no child empty by the path's tests on its attribute."""
    if c.kind[s] != THRESHOLD:
        return True
    lo, hi = 0, 1 << 62
    v = u
    while v > 0:
        p = (v - 1) // c.fanout
        sp = split[p]
        if sp >= 0 and c.attr[sp] == c.attr[s] and c.kind[sp] == THRESHOLD:
            if (v - 1) % c.fanout == 0:
                hi = min(hi, c.thr[sp])
            else:
                lo = max(lo, c.thr[sp] + 1)
        v = p
    return lo <= c.thr[s] < hi


def _subtree_nodes(c: CodedArrays, split, root) -> list:
    out, stack = [], [root]
    while stack:
        u = stack.pop()
        if u < c.cap and split[u] != ABSENT:
            out.append(u)
            stack.extend(_children(c, split, u))
    return out


def _growth_ok(c: CodedArrays, split, u, s, path) -> bool:
    return s not in path and _useful(c, split, u, s)


def _growth_options(c: CodedArrays, split, u) -> list:
    """Splits random growth may give u: unused on its path and useful there."""
    path = _path_splits(c, split, u)
    return [s for s in range(c.n_cand) if _growth_ok(c, split, u, s, path)]


def _move_ok(c: CodedArrays, split, h, s, path, below) -> bool:
    """s is a valid move at h (``below[i]``: the nodes under child i of h)."""
    if s in path or not _useful(c, split, h, s):
        return False
    old = split[h]
    kept = [u for i in range(min(c.nchild[old], c.nchild[s])) for u in below[i]]
    if any(split[u] == s for u in kept):
        return False
    split[h] = s
    ok = all(split[u] < 0 or _useful(c, split, u, split[u]) for u in kept)
    split[h] = old
    return ok


def _move_context(c: CodedArrays, split, h):
    return (_path_splits(c, split, h),
            [_subtree_nodes(c, split, c.fanout * h + 1 + i) for i in range(c.nchild[split[h]])])


def _move_options(c: CodedArrays, split, h) -> list:
    """Splits a move may give internal node h (its current one included)."""
    path, below = _move_context(c, split, h)
    return [s for s in range(c.n_cand) if _move_ok(c, split, h, s, path, below)]


def _draw(c: CodedArrays, ok, rng) -> int:
    """A candidate uniform among those ``ok`` accepts, −1 if none: up to 64 uniform tries,
    then an exact count (as the kernels draw)."""
    for _ in range(64):
        s = int(rng.integers(0, c.n_cand))
        if ok(s):
            return s
    allowed = [s for s in range(c.n_cand) if ok(s)]
    return allowed[int(rng.integers(0, len(allowed)))] if allowed else -1


def _grow(c: CodedArrays, split, h, rng):
    """Every GROW node below h gets a uniformly random growth option, to depth d."""
    stack = [h]
    while stack:
        u = stack.pop()
        if split[u] == GROW:
            s = -1
            if c.depth_of[u] < c.depth:
                path = _path_splits(c, split, u)
                s = _draw(c, lambda s, u=u, path=path: _growth_ok(c, split, u, s, path), rng)
            if s < 0:
                split[u] = LEAF
            else:
                split[u] = s
                for i in range(c.nchild[s]):
                    ch = c.fanout * u + 1 + i
                    _mark_absent(c, split, ch)
                    split[ch] = GROW
        stack.extend(_children(c, split, u))


def random_tree(c: CodedArrays, rng) -> np.ndarray:
    split = np.full(c.cap, ABSENT, dtype=np.int64)
    split[0] = GROW
    _grow(c, split, 0, rng)
    return split


def propose(c: CodedArrays, split, h, rng) -> bool:
    """Replace the split of internal node h in place (kept children keep their subtrees)."""
    path, below = _move_context(c, split, h)
    s_new = _draw(c, lambda s: _move_ok(c, split, h, s, path, below), rng)
    if s_new < 0:
        return False
    old_nc, new_nc = c.nchild[split[h]], c.nchild[s_new]
    split[h] = s_new
    for i in range(new_nc, old_nc):
        _mark_absent(c, split, c.fanout * h + 1 + i)
    for i in range(old_nc, new_nc):
        ch = c.fanout * h + 1 + i
        _mark_absent(c, split, ch)
        split[ch] = GROW
    _grow(c, split, h, rng)
    return True


def _log_growth(c: CodedArrays, split, h, first_child, last_child) -> float:
    """log P(random growth grows children first_child … last_child − 1 of h as they are)."""
    lp = 0.0
    for i in range(first_child, last_child):
        for u in _subtree_nodes(c, split, c.fanout * h + 1 + i):
            if split[u] >= 0:
                lp -= np.log(len(_growth_options(c, split, u)))
            elif c.depth_of[u] < c.depth and _growth_options(c, split, u):
                return -np.inf    # strict growth would have split this leaf
    return lp


def log_proposal_ratio(c: CodedArrays, old, new, h, n_internal_other: int) -> float:
    """log q(T′→T) − log q(T→T′) for the move at h that turned ``old`` into ``new``
    (strict growth), by counting every option; ``n_internal_other``: the other tree's
    internal nodes (they count in the node draw)."""
    a, b = c.nchild[old[h]], c.nchild[new[h]]
    if a == b:
        return 0.0
    k = min(a, b)
    lr = (np.log(np.count_nonzero(old >= 0) + n_internal_other)
          - np.log(np.count_nonzero(new >= 0) + n_internal_other))
    lr += np.log(len(_move_options(c, old, h))) - np.log(len(_move_options(c, new, h)))
    return lr + _log_growth(c, old, h, k, a) - _log_growth(c, new, h, k, b)


def run_chain(coded_first, coded_second, y: np.ndarray, n_classes: int, depth: int,
              epsilon: float, n_iter: int, rng: np.random.Generator,
              time_budget: float | None = None) -> dict:
    """Run the NumPy chain; return iterations done, seconds (excluding setup), final score.

    ``time_budget`` (seconds) stops the chain early; the per-iteration time stays valid.
    """
    c1, c2 = CodedArrays(coded_first, depth), CodedArrays(coded_second, depth)
    y = np.asarray(y, dtype=np.int64)
    split1, split2 = random_tree(c1, rng), random_tree(c2, rng)
    leaf1, leaf2 = route(c1, split1), route(c2, split2)
    g1 = purity_first(leaf1, y, n_classes, c1.cap)
    g2 = purity_second(leaf2, leaf1, c1.cap, c2.cap)
    score = g1 * (1.0 + g2) / 2.0
    accepted = 0
    start = time.perf_counter()
    done = 0
    for it in range(n_iter):
        done = it + 1
        int1 = np.flatnonzero(split1 >= 0)
        int2 = np.flatnonzero(split2 >= 0)
        n_int = int1.size + int2.size
        if n_int == 0:
            continue
        k = int(rng.integers(0, n_int))
        first = k < int1.size
        c, split = (c1, split1) if first else (c2, split2)
        h = int(int1[k]) if first else int(int2[k - int1.size])
        saved = split.copy()
        if not propose(c, split, h, rng):
            continue
        # full re-partition of all rows through the changed tree, full rescoring
        if first:
            new_leaf1, new_leaf2 = route(c1, split1), leaf2
            new_g1 = purity_first(new_leaf1, y, n_classes, c1.cap)
        else:
            new_leaf1, new_leaf2 = leaf1, route(c2, split2)
            new_g1 = g1
        new_g2 = purity_second(new_leaf2, new_leaf1, c1.cap, c2.cap)
        new_score = new_g1 * (1.0 + new_g2) / 2.0
        other = split2 if first else split1
        x = epsilon * (new_score - score) / 2.0 + log_proposal_ratio(
            c, saved, split, h, int(np.count_nonzero(other >= 0)))
        u = rng.random()
        if x >= 0.0 or u < np.exp(x):
            score, g1, g2, leaf1, leaf2 = new_score, new_g1, new_g2, new_leaf1, new_leaf2
            accepted += 1
        else:
            split[:] = saved
        if time_budget is not None and time.perf_counter() - start > time_budget:
            break
    seconds = time.perf_counter() - start
    return {"iterations": done, "seconds": seconds, "seconds_per_iteration": seconds / done,
            "accepted": accepted, "final_score": score,
            "check_score": pair_score(c1, split1, c2, split2, y, n_classes)}
