"""numba kernels for flat-array trees: partition rows, count, score, MCMC steps.

Nothing here is differentially private by itself: these functions read raw
(coded) data. Privacy comes from how ``trees.py`` calls them — every score they
compute feeds an exponential mechanism or an MCMC acceptance test whose ε was
charged beforehand, and every released count gets noise in ``mining.py``.

Tree layout
-----------
A tree of depth ≤ ``d`` with arity ``K`` lives in a heap: node ``h`` has children
``K·h + 1 + i``. ``nodes`` is an int64 array of shape (4, capacity):

* ``nodes[SPLIT, h]``: candidate index, ``LEAF`` (−1), ``ABSENT`` (−2) or ``GROW``
  (−3, a new node whose subtree is still to be grown randomly);
* ``nodes[START, h]``, ``nodes[END, h]``: the rows reaching ``h`` are
  ``perm[START:END]``; ``nodes[KEPT, h]``: rows ``perm[START:KEPT]`` are
  partitioned among the children, ``perm[KEPT:END]`` have a missing value in the
  split attribute and reach no child.

Candidates are an int64 array ``cands`` of shape (4, n_candidates) with rows
ATTR, KIND, THR, NCHILD (see ``coding.py``). ``leaf_of_row[r]`` is the heap index
of the leaf row ``r`` reaches, or −1.

An MCMC step replaces the split of one node and re-partitions only that node's
subtree, so it costs O(rows reaching the node), not O(rows). Its acceptance test is
Metropolis–Hastings: the score difference plus the log proposal ratio
(:func:`log_proposal_ratio`, a function of the two structures and the public candidates
only), so the chains' stationary law is the exponential mechanism.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpcore.privacy.mechanisms import gumbel_max_index, mcmc_accept_jit

SPLIT, START, END, KEPT = 0, 1, 2, 3
ATTR, KIND, THR, NCHILD = 0, 1, 2, 3
LEAF, ABSENT, GROW = -1, -2, -3
THRESHOLD, MULTIWAY, EQUALS = 0, 1, 2
MISSING = 65535


def tree_capacity(fanout: int, depth: int) -> int:
    """Number of heap slots of a complete ``fanout``-ary tree of depth ``depth``."""
    return sum(fanout ** t for t in range(depth + 1))


def node_depths(fanout: int, depth: int) -> np.ndarray:
    """Depth of each heap slot (root 0)."""
    out = np.empty(tree_capacity(fanout, depth), dtype=np.int64)
    pos = 0
    for t in range(depth + 1):
        out[pos:pos + fanout ** t] = t
        pos += fanout ** t
    return out


@njit(cache=True, nogil=True)
def child_of(codes, cands, s, row):
    """Child index of ``row`` under candidate ``s``, or −1 when the value is missing."""
    x = np.int64(codes[cands[ATTR, s], row])
    if x == MISSING:
        return -1
    kind = cands[KIND, s]
    if kind == THRESHOLD:
        return 0 if x <= cands[THR, s] else 1
    if kind == MULTIWAY:
        return x
    return 1 if x == cands[THR, s] else 0


@njit(cache=True, nogil=True)
def partition_node(u, nodes, perm, codes, cands, fanout, pos_buf, child_buf):
    """Stable counting sort of ``perm[START:END]`` of node ``u`` into its children."""
    s = nodes[SPLIT, u]
    nc = cands[NCHILD, s]
    lo, hi = nodes[START, u], nodes[END, u]
    counts = np.zeros(nc + 1, dtype=np.int64)
    for i in range(lo, hi):
        c = child_of(codes, cands, s, perm[i])
        if c < 0:
            c = nc
        child_buf[i] = c
        counts[c] += 1
    offset = np.empty(nc + 1, dtype=np.int64)
    pos = lo
    for c in range(nc + 1):
        offset[c] = pos
        pos += counts[c]
    for c in range(nc):
        ch = fanout * u + 1 + c
        nodes[START, ch] = offset[c]
        nodes[END, ch] = offset[c] + counts[c]
    nodes[KEPT, u] = offset[nc]
    for i in range(lo, hi):
        c = child_buf[i]
        pos_buf[offset[c]] = perm[i]
        offset[c] += 1
    for i in range(lo, hi):
        perm[i] = pos_buf[i]


@njit(cache=True, nogil=True)
def mark_absent(u, nodes, fanout):
    """Mark node ``u`` and every heap descendant absent."""
    cap = nodes.shape[1]
    stack = [u]
    while len(stack) > 0:
        v = stack.pop()
        if v >= cap:
            continue
        nodes[SPLIT, v] = ABSENT
        for i in range(fanout):
            ch = fanout * v + 1 + i
            if ch < cap and nodes[SPLIT, ch] != ABSENT:
                stack.append(ch)


@njit(cache=True, nogil=True)
def used_on_path(u, s, nodes, fanout):
    """True when candidate ``s`` splits an ancestor of ``u`` (no attribute–value reuse)."""
    v = u
    while v > 0:
        v = (v - 1) // fanout
        if nodes[SPLIT, v] == s:
            return True
    return False


@njit(cache=True, nogil=True)
def useful_at(u, s, nodes, cands, fanout):
    """False when a threshold split ``s`` at ``u`` would leave a child empty by logic alone:
    the path's tests on the same attribute already confine its codes to one side
    (e.g. ``A > 5`` above ``A ≤ 3``). Depends only on the public grid and the tree."""
    if cands[KIND, s] != THRESHOLD:
        return True
    a = cands[ATTR, s]
    lo = 0
    hi = 1 << 62
    v = u
    while v > 0:
        p = (v - 1) // fanout
        sp = nodes[SPLIT, p]
        if sp >= 0 and cands[ATTR, sp] == a and cands[KIND, sp] == THRESHOLD:
            if (v - 1) % fanout == 0:
                hi = min(hi, cands[THR, sp])
            else:
                lo = max(lo, cands[THR, sp] + 1)
        v = p
    return lo <= cands[THR, s] < hi


@njit(cache=True, nogil=True)
def random_split(u, nodes, cands, fanout, rng):
    """A candidate drawn uniformly among the useful ones not used on the path to ``u``
    (−1 if none)."""
    n_cand = cands.shape[1]
    for _ in range(64):
        s = rng.integers(0, n_cand)
        if not used_on_path(u, s, nodes, fanout) and useful_at(u, s, nodes, cands, fanout):
            return s
    n_ok = 0
    for s in range(n_cand):
        if not used_on_path(u, s, nodes, fanout) and useful_at(u, s, nodes, cands, fanout):
            n_ok += 1
    if n_ok == 0:
        return -1
    k = rng.integers(0, n_ok)
    for s in range(n_cand):
        if not used_on_path(u, s, nodes, fanout) and useful_at(u, s, nodes, cands, fanout):
            if k == 0:
                return s
            k -= 1
    return -1


@njit(cache=True, nogil=True)
def used_in_kept_subtrees(h, s, nodes, cands, fanout):
    """True when candidate ``s`` splits a node in a subtree that a move of ``h`` to
    ``s`` would keep (children ``i < min(children now, children of s)``).

    Walks the heap level by level: the descendants of the kept children at each
    level are one contiguous index range, so no stack is allocated (hot path).
    """
    cap = nodes.shape[1]
    kept = min(cands[NCHILD, nodes[SPLIT, h]], cands[NCHILD, s])
    first, count = fanout * h + 1, kept
    while first < cap:
        for u in range(first, min(first + count, cap)):
            if nodes[SPLIT, u] == s:
                return True
        first, count = first * fanout + 1, count * fanout
    return False


@njit(cache=True, nogil=True)
def _kept_stay_useful(h, s, nodes, cands, fanout):
    """With ``s`` at ``h``, every threshold split in the kept subtrees is still useful."""
    cap = nodes.shape[1]
    old = nodes[SPLIT, h]
    nodes[SPLIT, h] = s
    ok = True
    first, count = fanout * h + 1, min(cands[NCHILD, old], cands[NCHILD, s])
    while ok and first < cap:
        for u in range(first, min(first + count, cap)):
            split = nodes[SPLIT, u]
            if split >= 0 and not useful_at(u, split, nodes, cands, fanout):
                ok = False
                break
        first, count = first * fanout + 1, count * fanout
    nodes[SPLIT, h] = old
    return ok


@njit(cache=True, nogil=True)
def _valid_move(h, s, nodes, cands, fanout):
    return (not used_on_path(h, s, nodes, fanout)
            and not used_in_kept_subtrees(h, s, nodes, cands, fanout)
            and useful_at(h, s, nodes, cands, fanout)
            and _kept_stay_useful(h, s, nodes, cands, fanout))


@njit(cache=True, nogil=True)
def random_split_move(h, nodes, cands, fanout, rng):
    """An MCMC proposal for node ``h``: a candidate drawn uniformly among those used
    neither on the path to ``h`` nor in the subtrees the move keeps below it, and
    leaving every threshold split useful (−1 if none). So no root-to-leaf path
    repeats a split or contradicts itself; the rule reads only the public grid."""
    n_cand = cands.shape[1]
    for _ in range(64):
        s = rng.integers(0, n_cand)
        if _valid_move(h, s, nodes, cands, fanout):
            return s
    n_ok = 0
    for s in range(n_cand):
        if _valid_move(h, s, nodes, cands, fanout):
            n_ok += 1
    if n_ok == 0:
        return -1
    k = rng.integers(0, n_ok)
    for s in range(n_cand):
        if _valid_move(h, s, nodes, cands, fanout):
            if k == 0:
                return s
            k -= 1
    return -1


@njit(cache=True, nogil=True)
def propose_move(nodes, cands, fanout, rng):
    """One MCMC proposal on one tree: an internal node uniformly, then a valid split for it.

    Returns ``(h, s)``, or ``(-1, -1)`` when the tree has no internal node or the
    chosen node no valid split (the iteration then keeps the tree). Not symmetric when
    ``s`` has another number of children than the current split (new children are grown,
    surplus ones dropped): the chains correct for it with :func:`log_proposal_ratio`.
    """
    internal = internal_nodes(nodes)
    if len(internal) == 0:
        return -1, -1
    h = internal[rng.integers(0, len(internal))]
    s = random_split_move(h, nodes, cands, fanout, rng)
    return (h, s) if s >= 0 else (-1, -1)


@njit(cache=True, nogil=True)
def propose_pair_move(nodes_l, cands_l, fanout_l, nodes_r, cands_r, fanout_r, rng):
    """One MCMC proposal on a tree pair: an internal node uniformly from both trees.

    Returns ``(on_left, h, s)``; ``h = -1`` when there is nothing to propose. The node
    draw counts the internal nodes of both trees, so :func:`log_proposal_ratio` gets the
    other tree too.
    """
    internal_l = internal_nodes(nodes_l)
    internal_r = internal_nodes(nodes_r)
    n_int = len(internal_l) + len(internal_r)
    if n_int == 0:
        return True, -1, -1
    k = rng.integers(0, n_int)
    if k < len(internal_l):
        h = internal_l[k]
        s = random_split_move(h, nodes_l, cands_l, fanout_l, rng)
        return True, (h if s >= 0 else -1), s
    h = internal_r[k - len(internal_l)]
    s = random_split_move(h, nodes_r, cands_r, fanout_r, rng)
    return False, (h if s >= 0 else -1), s


@njit(cache=True, nogil=True)
def stop_node(h, r, nodes, codes, cands, fanout):
    """Walk row ``r`` down from ``h``: the leaf it reaches, or the internal node where
    its value is missing (it then reaches no leaf)."""
    u = h
    while True:
        s = nodes[SPLIT, u]
        if s < 0:
            return u
        c = child_of(codes, cands, s, r)
        if c < 0:
            return u
        u = fanout * u + 1 + c


@njit(cache=True, nogil=True)
def _stops(h, u, nodes, perm, codes, cands, fanout, y, min_rows):
    """Faithful-mode growth stop at ``u`` (below ``h``): fewer than ``min_rows`` rows
    reach it, or they all have one class."""
    n = 0
    first = -1
    pure = True
    for i in range(nodes[START, h], nodes[END, h]):
        r = perm[i]
        v = h
        reached = v == u
        while not reached:
            s = nodes[SPLIT, v]
            if s < 0:
                break
            c = child_of(codes, cands, s, r)
            if c < 0:
                break
            v = fanout * v + 1 + c
            reached = v == u
        if reached:
            n += 1
            if first < 0:
                first = y[r]
            elif y[r] != first:
                pure = False
    return n < min_rows or pure


@njit(cache=True, nogil=True)
def grow_structure(h, nodes, depth_of, max_depth, fanout, cands, rng, faithful, perm, codes,
                   y, min_rows):
    """Give every ``GROW`` node below ``h`` a uniformly random valid split, down to
    ``max_depth``. Strict: regardless of the data. Faithful: a node stops as a leaf
    when it is pure or has fewer than ``min_rows`` rows (paper's code)."""
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        if nodes[SPLIT, u] == GROW:
            if depth_of[u] >= max_depth:
                nodes[SPLIT, u] = LEAF
            elif faithful and _stops(h, u, nodes, perm, codes, cands, fanout, y, min_rows):
                nodes[SPLIT, u] = LEAF
            else:
                s = random_split(u, nodes, cands, fanout, rng)
                if s < 0:
                    nodes[SPLIT, u] = LEAF
                else:
                    nodes[SPLIT, u] = s
                    for i in range(cands[NCHILD, s]):
                        ch = fanout * u + 1 + i
                        mark_absent(ch, nodes, fanout)
                        nodes[SPLIT, ch] = GROW
        s = nodes[SPLIT, u]
        if s >= 0:
            for i in range(cands[NCHILD, s]):
                stack.append(fanout * u + 1 + i)


@njit(cache=True, nogil=True)
def relayout(h, nodes, perm, codes, cands, fanout, leaf_of_row, stop_buf, pos_buf, offset,
             y, hist, do_hist, other_leaf, table, sumsq, table_role, other_dropped):
    """Re-route the rows of ``h`` through its (new) subtree in one pass, then lay them
    out by a single counting sort: every node's rows stay contiguous in ``perm``
    (children in order, then the rows dropped at the node for a missing value).

    In the same pass: ``leaf_of_row`` is updated; with ``do_hist`` the class
    histogram ``hist[leaf, y]`` of each leaf below ``h`` is rebuilt; with
    ``table_role`` 1 (this tree gives the rows of the leaf×leaf ``table``) or 2
    (its columns) the table and its per-row Σ² move each row from its old leaf to
    its new one. Cost: O(rows reaching h × depth below h).
    """
    lo, hi = nodes[START, h], nodes[END, h]
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        offset[u] = 0
        s = nodes[SPLIT, u]
        if s == LEAF:
            if do_hist:
                hist[u, :] = 0
        elif s >= 0:
            for i in range(cands[NCHILD, s]):
                stack.append(fanout * u + 1 + i)
    for i in range(lo, hi):
        r = perm[i]
        u = stop_node(h, r, nodes, codes, cands, fanout)
        stop_buf[i] = u
        offset[u] += 1
        new = u if nodes[SPLIT, u] == LEAF else -1
        if do_hist and new >= 0:
            hist[new, y[r]] += 1
        old = leaf_of_row[r]
        if table_role != 0 and old != new:
            o = other_leaf[r]
            if table_role == 1:
                c = o if o >= 0 else other_dropped
                if old >= 0:
                    sumsq[old] -= 2 * table[old, c] - 1
                    table[old, c] -= 1
                if new >= 0:
                    sumsq[new] += 2 * table[new, c] + 1
                    table[new, c] += 1
            elif o >= 0:
                co = old if old >= 0 else other_dropped
                cn = new if new >= 0 else other_dropped
                sumsq[o] -= 2 * table[o, co] - 1
                table[o, co] -= 1
                sumsq[o] += 2 * table[o, cn] + 1
                table[o, cn] += 1
        leaf_of_row[r] = new
    cursor = lo
    stack_n = [h]
    stack_exit = [False]
    while len(stack_n) > 0:
        u = stack_n.pop()
        leaving = stack_exit.pop()
        s = nodes[SPLIT, u]
        if not leaving:
            nodes[START, u] = cursor
            if s < 0:
                count = offset[u]
                offset[u] = cursor
                cursor += count
                nodes[KEPT, u] = cursor
                nodes[END, u] = cursor
            else:
                stack_n.append(u)
                stack_exit.append(True)
                for i in range(cands[NCHILD, s] - 1, -1, -1):
                    stack_n.append(fanout * u + 1 + i)
                    stack_exit.append(False)
        else:
            nodes[KEPT, u] = cursor
            count = offset[u]
            offset[u] = cursor
            cursor += count
            nodes[END, u] = cursor
    for i in range(lo, hi):
        u = stop_buf[i]
        pos_buf[offset[u]] = perm[i]
        offset[u] += 1
    for i in range(lo, hi):
        perm[i] = pos_buf[i]


@njit(cache=True, nogil=True)
def replace_split(h, s_new, nodes, cands, fanout):
    """Structural part of an MCMC move: node ``h`` gets split ``s_new``.

    Children that exist under both splits keep their subtrees; extra children
    are marked ``GROW``; surplus subtrees are dropped.
    """
    old_nc = cands[NCHILD, nodes[SPLIT, h]]
    new_nc = cands[NCHILD, s_new]
    nodes[SPLIT, h] = s_new
    for i in range(new_nc, old_nc):
        mark_absent(fanout * h + 1 + i, nodes, fanout)
    for i in range(old_nc, new_nc):
        ch = fanout * h + 1 + i
        mark_absent(ch, nodes, fanout)
        nodes[SPLIT, ch] = GROW


@njit(cache=True, nogil=True)
def subtree_leaves(h, nodes, fanout):
    """Heap indices of the existing leaves below (and including) ``h``, as an array.

    Level by level over contiguous heap ranges (no list allocation: hot path).
    """
    cap = nodes.shape[1]
    out = np.empty(cap, dtype=np.int64)
    n = 0
    first, count = h, 1
    while first < cap:
        for u in range(first, min(first + count, cap)):
            if nodes[SPLIT, u] == LEAF:
                out[n] = u
                n += 1
        first, count = first * fanout + 1, count * fanout
    return out[:n]


@njit(cache=True, nogil=True)
def internal_nodes(nodes):
    """Heap indices of the nodes that split, as an array."""
    out = np.empty(nodes.shape[1], dtype=np.int64)
    n = 0
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] >= 0:
            out[n] = u
            n += 1
    return out[:n]


@njit(cache=True, nogil=True)
def gini_contribution(counts):
    """−|leaf|·gini(leaf) = −(n − Σ_c n_c²/n); 0 for an empty leaf."""
    n = counts.sum()
    if n == 0:
        return 0.0
    sq = 0.0
    for c in range(counts.size):
        sq += counts[c] * counts[c]
    return -(n - sq / n)


@njit(cache=True, nogil=True)
def purity_contribution(counts, n_rows):
    """(|leaf|/N)·Σ_c (n_c/|leaf|)² = Σ_c n_c² / (|leaf|·N); 0 for an empty leaf."""
    n = counts.sum()
    if n == 0:
        return 0.0
    sq = 0.0
    for c in range(counts.size):
        sq += counts[c] * counts[c]
    return sq / (n * n_rows)


@njit(cache=True, nogil=True)
def init_tree(nodes, perm, leaf_of_row, n_rows):
    """Reset a tree to a single GROW root holding every row."""
    nodes[SPLIT, :] = ABSENT
    nodes[SPLIT, 0] = GROW
    nodes[START, 0] = 0
    nodes[END, 0] = n_rows
    nodes[KEPT, 0] = n_rows
    for i in range(n_rows):
        perm[i] = i
        leaf_of_row[i] = -1


@njit(cache=True, nogil=True)
def _accept(delta, epsilon, sensitivity, log_ratio, rng):
    """Metropolis–Hastings test: accept with min(1, exp(ε·Δ/(2·sensitivity)) · r), where
    ``log_ratio`` = log r = log q(T′→T)/q(T→T′) is the proposal ratio of
    :func:`log_proposal_ratio` (0 when the move is symmetric; −inf when the reverse move is
    impossible).

    The ratio enters :func:`~dpcore.privacy.mechanisms.mcmc_accept_jit` as a shift of the score
    difference by (2·sensitivity/ε)·log r, so that exp(ε·(Δ + shift)/(2·sensitivity)) =
    exp(ε·Δ/(2·sensitivity))·r; ε > 0 always (the accountant refuses ε = 0). With
    ``log_ratio`` 0 the decision is bit for bit the plain Metropolis one. Always draws
    one uniform, so every chain consumes its random stream the same way whatever the
    scores and ratios."""
    u = rng.random()
    if log_ratio != 0.0:
        delta = delta + log_ratio * (2.0 * sensitivity / epsilon)
    return mcmc_accept_jit(delta, epsilon, sensitivity, u)


@njit(cache=True, nogil=True)
def _stabilised(ring, n_acc, window, sigma):
    if n_acc < window:
        return False
    m = ring.mean()
    v = 0.0
    for i in range(window):
        v += (ring[i] - m) ** 2
    return v / window < sigma


# ---------------------------------------------------------------------------
# Hastings correction: the proposal ratio q(T′→T)/q(T→T′), from the structure only
# ---------------------------------------------------------------------------

# Rows of the per-chain workspace (see hastings_workspace); columns are candidates.
_W_BLK_LO, _W_BLK_HI, _W_CSTAMP, _W_ASTAMP, _W_LO, _W_HI, _W_MAXL, _W_MINR, _W_LIST, \
    _W_META = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
_W_ROWS = 10
_BIG = 1 << 62


@njit(cache=True, nogil=True)
def hastings_workspace(cands):
    """Scratch memory for :func:`log_proposal_ratio`, allocated once per chain.

    int64 array (10, max(n_candidates, 3)). Per candidate ``s``: the first and one-past-
    last candidate of its attribute (candidates are grouped by attribute; a threshold
    attribute's thresholds increase, see ``coding``). Per attribute (keyed by its first
    candidate): the interval of thresholds still allowed, with a stamp so that nothing
    has to be cleared between calls. Row ``_W_META``: [stamp, number of threshold
    candidates, number of other candidates]. Reads only the public candidate set.
    """
    n = cands.shape[1]
    work = np.zeros((_W_ROWS, max(n, 3)), dtype=np.int64)
    n_thr = 0
    first = 0
    while first < n:
        a = cands[ATTR, first]
        last = first
        while last < n and cands[ATTR, last] == a:
            last += 1
        kind = cands[KIND, first]
        for s in range(first, last):
            if (cands[KIND, s] == THRESHOLD) != (kind == THRESHOLD):
                raise ValueError("an attribute mixes threshold and other candidates")
            if kind == THRESHOLD and s > first and cands[THR, s] <= cands[THR, s - 1]:
                raise ValueError("an attribute's thresholds are not increasing")
            work[_W_BLK_LO, s] = first
            work[_W_BLK_HI, s] = last
        if kind == THRESHOLD:
            n_thr += last - first
        first = last
    work[_W_META, 1] = n_thr
    work[_W_META, 2] = n - n_thr
    return work


@njit(cache=True, nogil=True)
def _new_stamp(work):
    work[_W_META, 0] += 1
    return work[_W_META, 0]


@njit(cache=True, nogil=True)
def _touch_attr(work, key, stamp, n_keys):
    """Start the attribute ``key``'s interval for this stamp (if new); the new key count."""
    if work[_W_ASTAMP, key] == stamp:
        return n_keys
    work[_W_ASTAMP, key] = stamp
    work[_W_LO, key] = 0
    work[_W_HI, key] = _BIG
    work[_W_MAXL, key] = -1
    work[_W_MINR, key] = _BIG
    work[_W_LIST, n_keys] = key
    return n_keys + 1


@njit(cache=True, nogil=True)
def _lower_bound(cands, b0, b1, x):
    """First candidate in [b0, b1) whose threshold is ≥ x (thresholds increase)."""
    lo, hi = b0, b1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cands[THR, mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _n_thresholds_in(cands, b0, b1, lo, hi):
    """Number of candidates in [b0, b1) with lo ≤ threshold < hi."""
    if lo >= hi:
        return 0
    return _lower_bound(cands, b0, b1, hi) - _lower_bound(cands, b0, b1, lo)


@njit(cache=True, nogil=True)
def _path_constraints(u, nodes, cands, fanout, work, stamp):
    """Walk the ancestors of ``u`` as :func:`used_on_path` and :func:`useful_at` do:
    for each attribute with a threshold split on the path, the interval [lo, hi) of its
    thresholds that are useful at ``u``; each other split on the path is stamped (used).
    Returns (number of attributes listed, number of non-threshold splits on the path)."""
    n_keys = 0
    n_used = 0
    v = u
    while v > 0:
        p = (v - 1) // fanout
        sp = nodes[SPLIT, p]
        if sp >= 0:
            if cands[KIND, sp] == THRESHOLD:
                key = work[_W_BLK_LO, sp]
                n_keys = _touch_attr(work, key, stamp, n_keys)
                if (v - 1) % fanout == 0:
                    work[_W_HI, key] = min(work[_W_HI, key], cands[THR, sp])
                else:
                    work[_W_LO, key] = max(work[_W_LO, key], cands[THR, sp] + 1)
            elif work[_W_CSTAMP, sp] != stamp:
                work[_W_CSTAMP, sp] = stamp
                n_used += 1
        v = p
    return n_keys, n_used


@njit(cache=True, nogil=True)
def growth_options(u, nodes, cands, fanout, work):
    """Number of splits :func:`random_split` draws from at ``u`` (not used on the path,
    useful there), counted in O(depth·log(thresholds)) instead of by a scan."""
    stamp = _new_stamp(work)
    n_keys, n_used = _path_constraints(u, nodes, cands, fanout, work, stamp)
    total = work[_W_META, 1] + work[_W_META, 2] - n_used
    for j in range(n_keys):
        key = work[_W_LIST, j]
        b1 = work[_W_BLK_HI, key]
        total -= (b1 - key) - _n_thresholds_in(cands, key, b1, work[_W_LO, key],
                                                work[_W_HI, key])
    return total


@njit(cache=True, nogil=True)
def move_options(h, nodes, cands, fanout, work):
    """Number of splits :func:`random_split_move` draws from at internal node ``h`` (the
    current split included), without testing every candidate.

    * A non-threshold candidate s is allowed unless it splits an ancestor of ``h`` or a
      node in a subtree the move would keep (child i < min(children now, children of s)).
    * A threshold candidate s = (a, t) keeps children 0 and 1. It is allowed iff t is in
      the path's interval [lo, hi) for a (:func:`useful_at`) and every threshold split
      (a, t′) kept below stays useful: t′ < t under child 0, t′ > t under child 1. Other
      constraints of the kept nodes held with the old split at ``h`` and only relax.
      This also excludes s itself below (t′ = t).
    """
    stamp = _new_stamp(work)
    n_keys, excluded = _path_constraints(h, nodes, cands, fanout, work, stamp)
    cap = nodes.shape[1]
    nc_now = cands[NCHILD, nodes[SPLIT, h]]
    for i in range(nc_now):
        first, count = fanout * h + 1 + i, 1
        while first < cap:
            for u in range(first, min(first + count, cap)):
                s = nodes[SPLIT, u]
                if s < 0:
                    continue
                if cands[KIND, s] == THRESHOLD:
                    if i < 2:
                        key = work[_W_BLK_LO, s]
                        n_keys = _touch_attr(work, key, stamp, n_keys)
                        if i == 0:
                            work[_W_MAXL, key] = max(work[_W_MAXL, key], cands[THR, s])
                        else:
                            work[_W_MINR, key] = min(work[_W_MINR, key], cands[THR, s])
                elif i < min(nc_now, cands[NCHILD, s]) and work[_W_CSTAMP, s] != stamp:
                    work[_W_CSTAMP, s] = stamp
                    excluded += 1
            first, count = first * fanout + 1, count * fanout
    total = work[_W_META, 1] + work[_W_META, 2] - excluded
    for j in range(n_keys):
        key = work[_W_LIST, j]
        b1 = work[_W_BLK_HI, key]
        lo = max(work[_W_LO, key], work[_W_MAXL, key] + 1)
        hi = min(work[_W_HI, key], work[_W_MINR, key])
        total -= (b1 - key) - _n_thresholds_in(cands, key, b1, lo, hi)
    return total


@njit(cache=True, nogil=True)
def count_internal(nodes):
    """Number of nodes that split."""
    n = 0
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] >= 0:
            n += 1
    return n


@njit(cache=True, nogil=True)
def log_growth_probability(h, first_child, last_child, nodes, cands, fanout, depth_of,
                           max_depth, strict, work):
    """log P(:func:`grow_structure` grows exactly the subtrees of children
    ``first_child`` … ``last_child − 1`` of ``h`` as they are in ``nodes``).

    Each split node u was drawn uniformly among :func:`growth_options` (u) splits: factor
    1/options. A leaf at depth ``max_depth`` has factor 1; a leaf above it has factor 1
    when no split is allowed there and, in strict mode, 0 otherwise (strict growth always
    splits such a node: −inf is returned). Faithful growth also stops at pure or small
    nodes, a data-dependent event not modelled here: its leaves count as factor 1.
    """
    cap = nodes.shape[1]
    lp = 0.0
    for i in range(first_child, last_child):
        first, count = fanout * h + 1 + i, 1
        while first < cap:
            for u in range(first, min(first + count, cap)):
                s = nodes[SPLIT, u]
                if s >= 0:
                    lp -= np.log(growth_options(u, nodes, cands, fanout, work))
                elif s == LEAF and strict and depth_of[u] < max_depth:
                    if growth_options(u, nodes, cands, fanout, work) > 0:
                        return -np.inf
            first, count = first * fanout + 1, count * fanout
    return lp


@njit(cache=True, nogil=True)
def log_proposal_ratio(h, old_nodes, new_nodes, other_nodes, cands, fanout, depth_of,
                       max_depth, strict, work):
    """log q(T′→T) − log q(T→T′) for the move at ``h`` that turned ``old_nodes`` (T) into
    ``new_nodes`` (T′); ``other_nodes`` is the other tree of a pair (its internal nodes
    count in the node draw) or an array with no split node for a single tree.

    The proposal (``propose_move`` / ``propose_pair_move``, then ``replace_split`` and
    ``grow_structure``) picks an internal node uniformly among the I internal nodes (of
    both trees for a pair), a split uniformly among the M allowed there
    (:func:`move_options`, the current one included), keeps the children both splits
    have and grows the new ones (:func:`log_growth_probability`). With a old and b new
    children, k = min(a, b), the only path from T to T′ ≠ T is this (h, s′, growth), so

    * relabel, a = b (threshold/Boolean/one-vs-rest ↔ each other, or two multiway splits
      with as many categories): nothing grown or dropped, I and M are the same in T and
      T′ (M depends only on the path, the kept subtrees and the current child count):
      ratio 1, returned without any counting (every binary-only chain);
    * widen, a < b: q(T→T′) = 1/I(T) · 1/M(T, h) · P(grow children a…b−1 of T′),
      q(T′→T) = 1/I(T′) · 1/M(T′, h) (the reverse narrows and drops them);
    * narrow, a > b: the mirror image: q(T′→T) has P(grow children b…a−1 of T), which is
      0 in strict mode when those subtrees hold a leaf above depth d where a split was
      allowed (−inf: the move is always rejected, as detailed balance requires).

    Privacy: I, M and the growth probabilities are functions of the two tree structures,
    the heap depths and the public candidate set only (number of candidates per node,
    categories per attribute, which splits the path and the kept subtrees exclude); no
    count, class or row is read. In strict mode the candidates come from the schema's
    public grid, so the ratio is the same on neighbouring datasets and the acceptance
    min(1, exp(ε·(u(T′) − u(T))/(2Δ))·r) reads the data only through u, as the plain
    Metropolis test did; the privacy argument is unchanged. What changes is the target:
    detailed balance now holds for π_D(T) ∝ exp(ε·u_D(T)/(2Δ)), the exponential mechanism
    (ε-DP), on the trees the moves connect. The chain is aperiodic (re-proposing the
    current split is always possible), so its law converges to π_D: a chain is ε-DP in
    the limit only, not after finitely many iterations. Should the moves split Ω into
    classes (a leaf above depth d, say, that no move can reach), the limit is π_D
    restricted to the start's class, mixed by the law of the random start; classes and
    start law depend on no data in strict mode, so the limit is a data-independent
    mixture of exponential mechanisms, still ε-DP. In faithful mode growth also stops on
    data (pure or small nodes); those stops are not in the ratio (see
    :func:`log_growth_probability`), and faithful mode is not DP anyway
    (docs/PRIVACY.md §8).

    Costs O(tree size + nodes grown or dropped × depth × log thresholds) on a move that
    changes the child count and nothing otherwise; allocates nothing (``work`` from
    :func:`hastings_workspace`).
    """
    a = cands[NCHILD, old_nodes[SPLIT, h]]
    b = cands[NCHILD, new_nodes[SPLIT, h]]
    if a == b:
        return 0.0
    k = min(a, b)
    n_other = count_internal(other_nodes)
    lr = np.log(count_internal(old_nodes) + n_other) - np.log(count_internal(new_nodes)
                                                             + n_other)
    lr += np.log(move_options(h, old_nodes, cands, fanout, work))
    lr -= np.log(move_options(h, new_nodes, cands, fanout, work))
    lr += log_growth_probability(h, k, a, old_nodes, cands, fanout, depth_of, max_depth,
                                 strict, work)
    lr -= log_growth_probability(h, k, b, new_nodes, cands, fanout, depth_of, max_depth,
                                 strict, work)
    return lr


@njit(cache=True, nogil=True)
def random_tree(h_rows, nodes, perm, leaf_of_row, codes, cands, fanout, depth_of, max_depth,
                faithful, y, min_rows, rng, stop_buf, pos_buf, offset, hist, do_hist):
    """A random tree over all rows (createDT* start): grow from a GROW root, then lay out."""
    init_tree(nodes, perm, leaf_of_row, h_rows)
    grow_structure(0, nodes, depth_of, max_depth, fanout, cands, rng, faithful, perm, codes,
                   y, min_rows)
    dummy_i = np.zeros(1, dtype=np.int64)
    dummy_t = np.zeros((1, 1), dtype=np.int64)
    relayout(0, nodes, perm, codes, cands, fanout, leaf_of_row, stop_buf, pos_buf, offset, y,
             hist, do_hist, dummy_i, dummy_t, dummy_i, 0, 0)


@njit(cache=True, nogil=True)
def mcmc_single_tree(codes, cands, y, n_classes, fanout, depth_of, max_depth, nodes, perm,
                     leaf_of_row, epsilon, mc_iter, faithful, sigma, window, min_rows, rng,
                     trace, stats=None, hastings=True):
    """createDTMCMC (Alg. 3): Metropolis–Hastings over trees, score −Σ_leaves |leaf|·gini,
    Δ = 2, acceptance min(1, exp(ε·ΔS/4)·q(T′→T)/q(T→T′)) (:func:`log_proposal_ratio`).

    Starts from a random tree of depth ``max_depth``. Strict: exactly ``mc_iter``
    iterations. Faithful: stops early when the variance of the last ``window``
    accepted scores is below ``sigma``. Returns the number of iterations run;
    ``trace[i]`` is the score after iteration ``i`` (not private). ``hastings=False``
    drops the proposal ratio (plain Metropolis, NOT the exponential mechanism): for the
    tests that show the difference only; the miners never pass it.
    """
    n_rows = codes.shape[1]
    cap = nodes.shape[1]
    stop_buf = np.empty(n_rows, dtype=np.int64)
    pos_buf = np.empty(n_rows, dtype=np.int64)
    offset = np.zeros(cap, dtype=np.int64)
    hist = np.zeros((cap, n_classes), dtype=np.int64)
    no_i = np.zeros(1, dtype=np.int64)
    no_t = np.zeros((1, 1), dtype=np.int64)
    random_tree(n_rows, nodes, perm, leaf_of_row, codes, cands, fanout, depth_of, max_depth,
                faithful, y, min_rows, rng, stop_buf, pos_buf, offset, hist, True)
    contrib = np.zeros(cap, dtype=np.float64)
    score = 0.0
    for u in range(cap):
        if nodes[SPLIT, u] == LEAF:
            contrib[u] = gini_contribution(hist[u])
            score += contrib[u]
    saved_nodes = nodes.copy()
    saved_contrib = contrib.copy()
    work = hastings_workspace(cands)
    no_tree = np.full((4, 1), ABSENT, dtype=np.int64)
    ring = np.zeros(window, dtype=np.float64)
    n_acc = 0
    done = 0
    for it in range(mc_iter):
        done = it + 1
        h, s_new = propose_move(nodes, cands, fanout, rng)
        if h < 0:
            trace[it] = score
            continue
        if stats is not None:
            stats[0] += nodes[END, h] - nodes[START, h]
        saved_nodes[:, :] = nodes
        saved_contrib[:] = contrib
        old_part = 0.0
        for u in subtree_leaves(h, nodes, fanout):
            old_part += contrib[u]
            contrib[u] = 0.0
        replace_split(h, s_new, nodes, cands, fanout)
        grow_structure(h, nodes, depth_of, max_depth, fanout, cands, rng, faithful, perm,
                       codes, y, min_rows)
        relayout(h, nodes, perm, codes, cands, fanout, leaf_of_row, stop_buf, pos_buf,
                 offset, y, hist, True, no_i, no_t, no_i, 0, 0)
        new_part = 0.0
        for u in subtree_leaves(h, nodes, fanout):
            contrib[u] = gini_contribution(hist[u])
            new_part += contrib[u]
        new_score = score - old_part + new_part
        log_q = 0.0
        if hastings:
            log_q = log_proposal_ratio(h, saved_nodes, nodes, no_tree, cands, fanout,
                                       depth_of, max_depth, not faithful, work)
        if _accept(new_score - score, epsilon, 2.0, log_q, rng):
            score = new_score
            ring[n_acc % window] = score
            n_acc += 1
        else:
            nodes[:, :] = saved_nodes
            contrib[:] = saved_contrib
            relayout(h, nodes, perm, codes, cands, fanout, leaf_of_row, stop_buf, pos_buf,
                     offset, y, hist, False, no_i, no_t, no_i, 0, 0)
        trace[it] = score
        if faithful and _stabilised(ring, n_acc, window, sigma):
            break
    return done


@njit(cache=True, nogil=True)
def pair_table(nodes_r, leaf_r, leaf_l, cap_l, n_rows):
    """Leaf×leaf table (R-leaf rows, L-leaf columns + a 'no L-leaf' column) and Σ² per row."""
    table = np.zeros((nodes_r.shape[1], cap_l + 1), dtype=np.int64)
    for r in range(n_rows):
        j = leaf_r[r]
        if j >= 0:
            c = leaf_l[r]
            table[j, c if c >= 0 else cap_l] += 1
    sumsq = np.zeros(nodes_r.shape[1], dtype=np.int64)
    for j in range(nodes_r.shape[1]):
        for c in range(cap_l + 1):
            sumsq[j] += table[j, c] * table[j, c]
    return table, sumsq


@njit(cache=True, nogil=True)
def purity_from_table(nodes_r, sumsq, n_rows):
    """g(T_R) with T_L's leaves as classes, from the incremental Σ² per R-leaf."""
    g = 0.0
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] == LEAF:
            n = nodes_r[END, j] - nodes_r[START, j]
            if n > 0:
                g += sumsq[j] / (n * n_rows)
    return g


@njit(cache=True, nogil=True)
def mcmc_tree_pair(codes_l, cands_l, fanout_l, depth_l, nodes_l, perm_l, leaf_l,
                   codes_r, cands_r, fanout_r, depth_r, nodes_r, perm_r, leaf_r,
                   y, n_classes, max_depth, epsilon, mc_iter, faithful, sigma, window,
                   min_rows, rng, trace, stats=None, hastings=True):
    """sampleTreePair (Alg. 5): joint Metropolis–Hastings over (T_L, T_R), score
    g(T_L)(1+g(T_R))/2, Δ = 1, acceptance min(1, exp(ε·ΔS/2)·q(T′→T)/q(T→T′)).

    ``T_L`` (codes_l) has the initial target ``y`` as class; ``T_R`` (codes_r) has
    T_L's leaves as classes. Each iteration picks an internal node uniformly from
    both trees and proposes a uniformly random valid split there; the proposal ratio
    (:func:`log_proposal_ratio`) counts the internal nodes of both trees. Returns the
    number of iterations run; ``trace`` gets the score after each (not private).
    ``hastings=False``: plain Metropolis, for tests only (see :func:`mcmc_single_tree`).
    """
    n_rows = codes_l.shape[1]
    cap_l = nodes_l.shape[1]
    cap_r = nodes_r.shape[1]
    stop_buf = np.empty(n_rows, dtype=np.int64)
    pos_buf = np.empty(n_rows, dtype=np.int64)
    offset = np.zeros(max(cap_l, cap_r), dtype=np.int64)
    hist = np.zeros((cap_l, n_classes), dtype=np.int64)
    no_hist = np.zeros((1, 1), dtype=np.int64)
    random_tree(n_rows, nodes_l, perm_l, leaf_l, codes_l, cands_l, fanout_l, depth_l,
                max_depth, faithful, y, min_rows, rng, stop_buf, pos_buf, offset, hist, True)
    # T_R's classes (for faithful growth): T_L's leaves, rows in no leaf as one more class.
    y_r = np.empty(n_rows, dtype=np.int64)
    for r in range(n_rows):
        y_r[r] = leaf_l[r] if leaf_l[r] >= 0 else cap_l
    random_tree(n_rows, nodes_r, perm_r, leaf_r, codes_r, cands_r, fanout_r, depth_r,
                max_depth, faithful, y_r, min_rows, rng, stop_buf, pos_buf, offset, no_hist,
                False)
    contrib_l = np.zeros(cap_l, dtype=np.float64)
    g_l = 0.0
    for u in range(cap_l):
        if nodes_l[SPLIT, u] == LEAF:
            contrib_l[u] = purity_contribution(hist[u], n_rows)
            g_l += contrib_l[u]
    table, sumsq = pair_table(nodes_r, leaf_r, leaf_l, cap_l, n_rows)
    g_r = purity_from_table(nodes_r, sumsq, n_rows)
    score = g_l * (1.0 + g_r) / 2.0
    saved_l = nodes_l.copy()
    saved_r = nodes_r.copy()
    saved_contrib = contrib_l.copy()
    work_l = hastings_workspace(cands_l)
    work_r = hastings_workspace(cands_r)
    ring = np.zeros(window, dtype=np.float64)
    n_acc = 0
    done = 0
    for it in range(mc_iter):
        done = it + 1
        on_left, h, s_new = propose_pair_move(nodes_l, cands_l, fanout_l, nodes_r, cands_r,
                                              fanout_r, rng)
        if h < 0:
            trace[it] = score
            continue
        if on_left:
            if stats is not None:
                stats[0] += nodes_l[END, h] - nodes_l[START, h]
            saved_l[:, :] = nodes_l
            saved_contrib[:] = contrib_l
            old_part = 0.0
            for u in subtree_leaves(h, nodes_l, fanout_l):
                old_part += contrib_l[u]
                contrib_l[u] = 0.0
            replace_split(h, s_new, nodes_l, cands_l, fanout_l)
            grow_structure(h, nodes_l, depth_l, max_depth, fanout_l, cands_l, rng, faithful,
                           perm_l, codes_l, y, min_rows)
            relayout(h, nodes_l, perm_l, codes_l, cands_l, fanout_l, leaf_l, stop_buf,
                     pos_buf, offset, y, hist, True, leaf_r, table, sumsq, 2, cap_l)
            new_part = 0.0
            for u in subtree_leaves(h, nodes_l, fanout_l):
                contrib_l[u] = purity_contribution(hist[u], n_rows)
                new_part += contrib_l[u]
            new_g_l = g_l - old_part + new_part
            new_g_r = purity_from_table(nodes_r, sumsq, n_rows)
            new_score = new_g_l * (1.0 + new_g_r) / 2.0
            log_q = 0.0
            if hastings:
                log_q = log_proposal_ratio(h, saved_l, nodes_l, nodes_r, cands_l, fanout_l,
                                           depth_l, max_depth, not faithful, work_l)
            if _accept(new_score - score, epsilon, 1.0, log_q, rng):
                score, g_l, g_r = new_score, new_g_l, new_g_r
                ring[n_acc % window] = score
                n_acc += 1
            else:
                nodes_l[:, :] = saved_l
                contrib_l[:] = saved_contrib
                relayout(h, nodes_l, perm_l, codes_l, cands_l, fanout_l, leaf_l, stop_buf,
                         pos_buf, offset, y, hist, False, leaf_r, table, sumsq, 2, cap_l)
        else:
            if stats is not None:
                stats[0] += nodes_r[END, h] - nodes_r[START, h]
            saved_r[:, :] = nodes_r
            if faithful:
                for r in range(n_rows):
                    y_r[r] = leaf_l[r] if leaf_l[r] >= 0 else cap_l
            replace_split(h, s_new, nodes_r, cands_r, fanout_r)
            grow_structure(h, nodes_r, depth_r, max_depth, fanout_r, cands_r, rng, faithful,
                           perm_r, codes_r, y_r, min_rows)
            relayout(h, nodes_r, perm_r, codes_r, cands_r, fanout_r, leaf_r, stop_buf,
                     pos_buf, offset, y_r, no_hist, False, leaf_l, table, sumsq, 1, cap_l)
            new_g_r = purity_from_table(nodes_r, sumsq, n_rows)
            new_score = g_l * (1.0 + new_g_r) / 2.0
            log_q = 0.0
            if hastings:
                log_q = log_proposal_ratio(h, saved_r, nodes_r, nodes_l, cands_r, fanout_r,
                                           depth_r, max_depth, not faithful, work_r)
            if _accept(new_score - score, epsilon, 1.0, log_q, rng):
                score, g_r = new_score, new_g_r
                ring[n_acc % window] = score
                n_acc += 1
            else:
                nodes_r[:, :] = saved_r
                relayout(h, nodes_r, perm_r, codes_r, cands_r, fanout_r, leaf_r, stop_buf,
                         pos_buf, offset, y_r, no_hist, False, leaf_l, table, sumsq, 1, cap_l)
        trace[it] = score
        if faithful and _stabilised(ring, n_acc, window, sigma):
            break
    return done


@njit(cache=True, nogil=True)
def split_utilities(u, nodes, perm, codes, cands, attr_first, attr_last, n_codes, y,
                    n_classes, fanout):
    """Utility of every candidate at node ``u``: −Σ_children |child|·gini(child) (Δ = 2).

    Candidates used on the path to ``u``, or not useful there (see :func:`useful_at`),
    get −inf. One histogram pass per
    attribute over the node's rows, so O(rows · attributes + candidates · classes).
    """
    n_cand = cands.shape[1]
    util = np.full(n_cand, -np.inf)
    lo, hi = nodes[START, u], nodes[END, u]
    left = np.zeros(n_classes, dtype=np.int64)
    total = np.zeros(n_classes, dtype=np.int64)
    for a in range(codes.shape[0]):
        if attr_first[a] >= attr_last[a]:
            continue
        nc = n_codes[a]
        hist = np.zeros((nc, n_classes), dtype=np.int64)
        for i in range(lo, hi):
            r = perm[i]
            x = np.int64(codes[a, r])
            if x != MISSING:
                hist[x, y[r]] += 1
        total[:] = 0
        for x in range(nc):
            for c in range(n_classes):
                total[c] += hist[x, c]
        left[:] = 0
        next_code = 0
        for s in range(attr_first[a], attr_last[a]):
            if used_on_path(u, s, nodes, fanout) or not useful_at(u, s, nodes, cands, fanout):
                continue
            kind = cands[KIND, s]
            thr = cands[THR, s]
            q = 0.0
            if kind == THRESHOLD:
                while next_code <= thr:
                    for c in range(n_classes):
                        left[c] += hist[next_code, c]
                    next_code += 1
                q = gini_contribution(left) + gini_contribution(total - left)
            elif kind == MULTIWAY:
                for x in range(nc):
                    q += gini_contribution(hist[x])
            else:
                q = gini_contribution(hist[thr]) + gini_contribution(total - hist[thr])
            util[s] = q
    return util


@njit(cache=True, nogil=True)
def expmech_tree(codes, cands, attr_first, attr_last, n_codes, y, n_classes, fanout,
                 depth_of, max_depth, nodes, perm, leaf_of_row, level_epsilons, rng):
    """createDTExpMech (Alg. 2): level by level, every node picks its split by the
    exponential mechanism with the level's ε (disjoint rows: parallel composition).

    Grows every node to ``max_depth`` (no purity or size stopping). Returns the
    number of nodes that drew a split at each level.
    """
    n_rows = codes.shape[1]
    pos_buf = np.empty(n_rows, dtype=np.int64)
    child_buf = np.empty(n_rows, dtype=np.int64)
    init_tree(nodes, perm, leaf_of_row, n_rows)
    nodes[SPLIT, 0] = LEAF
    per_level = np.zeros(max_depth, dtype=np.int64)
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] != LEAF or depth_of[u] >= max_depth:
            continue
        level = depth_of[u]
        util = split_utilities(u, nodes, perm, codes, cands, attr_first, attr_last,
                               n_codes, y, n_classes, fanout)
        s = gumbel_max_index(util, level_epsilons[level] / (2.0 * 2.0), rng)
        per_level[level] += 1
        if s < 0:
            continue
        nodes[SPLIT, u] = s
        partition_node(u, nodes, perm, codes, cands, fanout, pos_buf, child_buf)
        for i in range(cands[NCHILD, s]):
            nodes[SPLIT, fanout * u + 1 + i] = LEAF
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] == LEAF:
            for i in range(nodes[START, u], nodes[END, u]):
                leaf_of_row[perm[i]] = u
        elif nodes[SPLIT, u] >= 0:
            for i in range(nodes[KEPT, u], nodes[END, u]):
                leaf_of_row[perm[i]] = -1
    return per_level


@njit(cache=True, nogil=True)
def leaf_rows_for_codes(codes, cands, fanout, nodes, n_rows):
    """Route every row down a fixed tree; return the heap index of its leaf or −1."""
    out = np.empty(n_rows, dtype=np.int64)
    for r in range(n_rows):
        u = 0
        while True:
            s = nodes[SPLIT, u]
            if s < 0:
                out[r] = u if s == LEAF else -1
                break
            c = child_of(codes, cands, s, r)
            if c < 0:
                out[r] = -1
                break
            u = fanout * u + 1 + c
    return out


@njit(cache=True, nogil=True)
def contingency(leaf_l, leaf_r, compact_l, compact_r, m, k):
    """True m×k table |A_i ∩ B_j| over rows reaching a leaf of both trees (private)."""
    table = np.zeros((m, k), dtype=np.int64)
    for r in range(leaf_l.size):
        a, b = leaf_l[r], leaf_r[r]
        if a >= 0 and b >= 0:
            table[compact_l[a], compact_r[b]] += 1
    return table
