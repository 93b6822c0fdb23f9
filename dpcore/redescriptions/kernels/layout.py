"""Tree layout: the heap arrays every tree kernel reads, and how rows are routed through them.

Nothing here is differentially private by itself: these functions read raw (coded) data.
Privacy comes from how ``trees.py`` calls the chains and the exponential-mechanism trees
built on them (ε charged before any draw), and every released count gets noise in
``mining.py``.

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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpcore.redescriptions.kernels.inner import inner_njit

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


# Whole-array copies as plain loops. numba lowers every slice assignment (``a[:] = b``,
# ``a[:, :] = b``) into its own broadcasting copy with a shape check whose error message
# compiles string formatting: ~0.3 s of cold compile per site (issue 32), for copies the
# chains do every step between arrays of equal shape.
@inner_njit
def copy_1d(dst, src):
    """``dst[:] = src`` for two 1-D arrays of equal length."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@inner_njit
def copy_2d(dst, src):
    """``dst[:, :] = src`` for two 2-D arrays of equal shape."""
    for i in range(dst.shape[0]):
        for j in range(dst.shape[1]):
            dst[i, j] = src[i, j]


@inner_njit
def zero_1d(dst):
    """``dst[:] = 0`` for a 1-D array."""
    for i in range(dst.shape[0]):
        dst[i] = 0


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
def internal_nodes(nodes):
    """Heap indices of the nodes that split, as an array."""
    out = np.empty(nodes.shape[1], dtype=np.int64)
    n = 0
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] >= 0:
            out[n] = u
            n += 1
    return out[:n]


@inner_njit
def count_internal(nodes):
    """Number of nodes that split."""
    n = 0
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] >= 0:
            n += 1
    return n


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
