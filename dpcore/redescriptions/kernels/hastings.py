"""Metropolis–Hastings acceptance for the tree chains: the proposal ratio and the test.

An MCMC step replaces the split of one node (``moves``). Its acceptance test is
Metropolis–Hastings: the score difference plus the log proposal ratio
(:func:`log_proposal_ratio`, a function of the two structures and the public candidates
only), so the chains' stationary law is the exponential mechanism. The privacy argument is
in :func:`log_proposal_ratio` and docs/PRIVACY.md §7. Faithful mode's stopping rule on the
accepted scores (:func:`scores_stabilised`) sits here too: it reads the chain's own scores,
nothing else.
"""

from __future__ import annotations

import numpy as np

from dpcore.privacy.mechanisms import mcmc_accept_jit
from dpcore.redescriptions.kernels.inner import inner_njit
from dpcore.redescriptions.kernels.layout import (
    ATTR,
    KIND,
    LEAF,
    NCHILD,
    SPLIT,
    THR,
    THRESHOLD,
    count_internal,
)

# Rows of the per-chain workspace (see hastings_workspace); columns are candidates.
_W_BLK_LO, _W_BLK_HI, _W_CSTAMP, _W_ASTAMP, _W_LO, _W_HI, _W_MAXL, _W_MINR, _W_LIST, \
    _W_META = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
_W_ROWS = 10
_BIG = 1 << 62


@inner_njit
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


@inner_njit
def _new_stamp(work):
    work[_W_META, 0] += 1
    return work[_W_META, 0]


@inner_njit
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


@inner_njit
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


@inner_njit
def _n_thresholds_in(cands, b0, b1, lo, hi):
    """Number of candidates in [b0, b1) with lo ≤ threshold < hi."""
    if lo >= hi:
        return 0
    return _lower_bound(cands, b0, b1, hi) - _lower_bound(cands, b0, b1, lo)


@inner_njit
def _path_constraints(u, nodes, cands, fanout, work, stamp):
    """Walk the ancestors of ``u`` as :func:`used_on_path` and :func:`useful_at` do:
    for each attribute with a threshold split on the path, the interval [lo, hi) of its
    thresholds that are useful at ``u``; each other split on the path is stamped (used).
    Returns (number of attributes listed, number of non-threshold splits on the path)."""
    n_keys = np.int64(0)      # not a literal 0: one compile of _touch_attr
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


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
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


@inner_njit
def metropolis_hastings_accept(delta, epsilon, sensitivity, log_ratio, rng):
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


@inner_njit
def hastings_accept(delta, epsilon, sensitivity, hastings, h, old_nodes, new_nodes,
                    other_nodes, cands, fanout, depth_of, max_depth, strict, work, rng):
    """The decision half of one MCMC step, the same in every chain: accept the move at
    ``h`` (``old_nodes`` → ``new_nodes``, score change ``delta``) with
    min(1, exp(ε·Δ/(2·sensitivity))·q(T′→T)/q(T→T′)).

    ``hastings=False`` drops the proposal ratio (plain Metropolis, NOT the exponential
    mechanism): faithful mode's chains pass it, as the paper and the authors' code
    accept (docs/PRIVACY.md §8); strict mode's chains never do.
    Draws exactly one uniform (:func:`metropolis_hastings_accept`).
    """
    log_q = 0.0
    if hastings:
        log_q = log_proposal_ratio(h, old_nodes, new_nodes, other_nodes, cands, fanout,
                                   depth_of, max_depth, strict, work)
    return metropolis_hastings_accept(delta, epsilon, sensitivity, log_q, rng)


@inner_njit
def scores_stabilised(ring, n_acc, window, sigma):
    """Faithful mode's stopping rule: the sample variance (divisor ``window`` − 1, as the
    authors' code computes it with Weka's ``Utils.variance``) of the last ``window``
    accepted scores (the ring buffer ``ring``, ``n_acc`` accepted so far) is below
    ``sigma``; ``window`` ≥ 2."""
    if n_acc < window:
        return False
    m = ring.mean()
    v = 0.0
    for i in range(window):
        v += (ring[i] - m) ** 2
    return v / (window - 1) < sigma
