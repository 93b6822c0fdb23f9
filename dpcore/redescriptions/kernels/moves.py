"""MCMC moves on one tree: which splits a node may take, the proposal, random growth.

A move replaces the split of one internal node ``h`` (:func:`propose_move`,
:func:`propose_pair_move`), keeps the children both splits have, drops the surplus ones
and grows the new ones at random (:func:`apply_move`). Every rule here reads the tree
structure and the public candidate set only, except faithful-mode growth, which stops at
pure or small nodes as the paper's code does (:func:`growth_stops`, not DP; the faithful
bitset chains grow with ``bitset_mcmc.grow_bits``, the same draws in the same order). The chains
correct for the asymmetry of the proposal with ``hastings.log_proposal_ratio``.
"""

from __future__ import annotations

from dpcore.redescriptions.kernels.inner import inner_njit
from dpcore.redescriptions.kernels.layout import (
    ATTR,
    END,
    GROW,
    KIND,
    LEAF,
    NCHILD,
    SPLIT,
    START,
    THR,
    THRESHOLD,
    child_of,
    copy_2d,
    internal_nodes,
    mark_absent,
)


@inner_njit
def used_on_path(u, s, nodes, fanout):
    """True when candidate ``s`` splits an ancestor of ``u`` (no attribute–value reuse)."""
    v = u
    while v > 0:
        v = (v - 1) // fanout
        if nodes[SPLIT, v] == s:
            return True
    return False


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
def kept_stay_useful(h, s, nodes, cands, fanout):
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


@inner_njit
def valid_move(h, s, nodes, cands, fanout):
    """True when internal node ``h`` may move to split ``s``: not used on the path to ``h``
    nor in the subtrees the move keeps, useful at ``h``, and every kept threshold split stays
    useful (the support of :func:`random_split_move`)."""
    return (not used_on_path(h, s, nodes, fanout)
            and not used_in_kept_subtrees(h, s, nodes, cands, fanout)
            and useful_at(h, s, nodes, cands, fanout)
            and kept_stay_useful(h, s, nodes, cands, fanout))


@inner_njit
def random_split_move(h, nodes, cands, fanout, rng):
    """An MCMC proposal for node ``h``: a candidate drawn uniformly among those used
    neither on the path to ``h`` nor in the subtrees the move keeps below it, and
    leaving every threshold split useful (−1 if none). So no root-to-leaf path
    repeats a split or contradicts itself; the rule reads only the public grid."""
    n_cand = cands.shape[1]
    for _ in range(64):
        s = rng.integers(0, n_cand)
        if valid_move(h, s, nodes, cands, fanout):
            return s
    n_ok = 0
    for s in range(n_cand):
        if valid_move(h, s, nodes, cands, fanout):
            n_ok += 1
    if n_ok == 0:
        return -1
    k = rng.integers(0, n_ok)
    for s in range(n_cand):
        if valid_move(h, s, nodes, cands, fanout):
            if k == 0:
                return s
            k -= 1
    return -1


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
def growth_stops(h, u, nodes, perm, codes, cands, fanout, y, min_rows):
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


@inner_njit
def grow_structure(h, nodes, depth_of, max_depth, fanout, cands, rng, faithful, perm, codes,
                   y, min_rows):
    """Give every ``GROW`` node below ``h`` a uniformly random valid split, down to
    ``max_depth``. Strict: regardless of the data. Faithful: a node stops as a leaf
    when it is pure or has fewer than ``min_rows`` rows (paper's code).

    The strict chains pass ``perm=None``: numba then drops the faithful stop when it
    compiles them (a ``None`` argument's branch is pruned; a False flag's is not), so a
    strict run does not compile :func:`growth_stops` (issue 32)."""
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        if nodes[SPLIT, u] == GROW:
            if depth_of[u] >= max_depth:
                nodes[SPLIT, u] = LEAF
            elif (faithful and perm is not None
                  and growth_stops(h, u, nodes, perm, codes, cands, fanout, y, min_rows)):
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


@inner_njit
def apply_move(h, s_new, nodes, saved_nodes, cands, fanout, depth_of, max_depth, rng,
               faithful, perm, codes, y, min_rows):
    """The structural half of one MCMC step, the same in every chain (rows or bitsets,
    single tree or pair): copy ``nodes`` into ``saved_nodes``, give ``h`` the split
    ``s_new`` (:func:`replace_split`) and grow the new children (:func:`grow_structure`).

    The caller then re-counts what changed below ``h`` and either keeps the tree or
    copies ``saved_nodes`` back. ``perm``, ``codes``, ``y`` and ``min_rows`` are read
    only by faithful growth (strict callers pass ``perm=None`` and placeholders, see
    :func:`grow_structure`).
    """
    copy_2d(saved_nodes, nodes)
    replace_split(h, s_new, nodes, cands, fanout)
    grow_structure(h, nodes, depth_of, max_depth, fanout, cands, rng, faithful, perm, codes,
                   y, min_rows)
