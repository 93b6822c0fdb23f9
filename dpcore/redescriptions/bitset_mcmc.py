"""Bitset MCMC kernels, the chains both modes run: a step costs O(words × affected leaves).

A tree node's rows are a row bitset (one uint64 word per 64 rows): the AND of its
parent's bitset and the bitset of its child under the parent's split. Every count the
MCMC scores need — a leaf's class counts, the leaf×leaf table of a tree pair, the size
and purity that stop faithful growth — is a popcount of two ANDed bitsets. A move at
node ``h`` recomputes only the bitsets below ``h`` and the counts of the leaves there,
so it costs O(N/64 × leaves under h) word operations with no per-row gathers. The pair
chain counts only the first children of each split below ``h`` and gets the last one by
subtraction from its parent when the split's attribute has no missing value (the rows of
``h`` do not change with its split: its counts are the old leaves' sum), about one
popcount pass in four fewer on the paper's CMS shape; the counts are the same integers.

* Strict mode (:func:`mcmc_single_tree_bits`, :func:`mcmc_tree_pair_bits`): the split
  candidates are fixed for the whole run (the public grid), so each candidate's children
  are precomputed once (``candidate_child_bits``).
* Faithful mode (:func:`mcmc_single_tree_faithful_bits`,
  :func:`mcmc_tree_pair_faithful_bits`): the candidates are data-derived per tree (every
  distinct value of a sample: tens of thousands on the paper's CMS shape), too many to
  precompute; a split's children over all rows are built when a node takes it, in one
  branch-free pass over the attribute's uint16 codes (:func:`split_bits`), and cached per
  heap node, so memory stays (heap slots + internal slots × fanout) × N/64 words. Growth
  stops on pure or small nodes from popcounts (:func:`grow_bits`), the chain stops on the
  σ rule (``kernels.hastings.scores_stabilised``) and accepts without the proposal ratio, as the
  paper and the authors' code do.

Same chains as the test suite's row-based reference chains
(``tests/support/row_chains_reference.py``), which they are tested against
(tests/dpcore/redescriptions/test_bitset_mcmc.py): the same moves and step
(``kernels.moves``, then ``kernels.hastings.hastings_accept``), scores and sensitivities,
drawing the same random numbers in the same order; faithful chains also keep the row
chains' integer counts and float arithmetic, so they return the same trees, traces and
iteration counts. Only the counting differs.
Nothing here is private by itself; see ``trees.py`` for how ε is charged.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic, overload

from dpcore.redescriptions.kernels.hastings import (
    hastings_accept,
    hastings_workspace,
    scores_stabilised,
)
from dpcore.redescriptions.kernels.inner import inner_njit
from dpcore.redescriptions.kernels.layout import (
    ABSENT,
    ATTR,
    GROW,
    KIND,
    LEAF,
    MISSING,
    MULTIWAY,
    NCHILD,
    SPLIT,
    THR,
    THRESHOLD,
    copy_1d,
    copy_2d,
    init_tree,
    mark_absent,
    subtree_leaves,
    zero_1d,
)
from dpcore.redescriptions.kernels.moves import (
    apply_move,
    grow_structure,
    propose_move,
    propose_pair_move,
    random_split,
    replace_split,
)
from dpcore.redescriptions.kernels.scores import (
    PAIR_SENSITIVITY_COUNT,
    PAIR_SENSITIVITY_PAPER,
    gini_contribution,
    pair_score,
    purity_contribution,
)


def popcount(x):
    """Number of set bits of a uint64.

    Plain Python here (so ``NUMBA_DISABLE_JIT=1`` runs work); compiled code gets
    the overload below, which is LLVM's ``ctpop`` — one ``popcnt`` instruction on
    CPUs that have it. (A SWAR bit trick measured 2.9× slower in the chains.)
    """
    return np.uint64(int(x).bit_count())


@intrinsic
def _ctpop_u64(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


@overload(popcount, jit_options={"cache": True})
def _popcount_jit(x):
    def impl(x):
        return _ctpop_u64(np.uint64(x))
    return impl


@inner_njit
def and_count(a, b):
    """|a ∧ b| for two bitsets of equal length."""
    total = np.uint64(0)
    for w in range(a.size):
        total += popcount(a[w] & b[w])
    return np.int64(total)


@inner_njit
def count_bits(a):
    total = np.uint64(0)
    for w in range(a.size):
        total += popcount(a[w])
    return np.int64(total)


@njit(cache=True, nogil=True)
def candidate_child_bits(codes, cands, n_codes):
    """Bitsets of every candidate's children: rows (bit r) that go to child i of s.

    Returns ``(child_bits, offset)``: child ``i`` of candidate ``s`` is row
    ``offset[s] + i`` of ``child_bits`` (shape: Σ children × words, uint64).
    Rows with a missing value are in no child. Private (raw-data derived).

    One pass over the rows per attribute builds a bitset per code; a threshold
    split's children are then prefix / suffix ORs of those (candidates of an
    attribute are grouped and in increasing threshold order, see ``coding``).
    """
    n_cand = cands.shape[1]
    n_rows = codes.shape[1]
    words = (n_rows + 63) // 64
    offset = np.zeros(n_cand + 1, dtype=np.int64)
    for s in range(n_cand):
        offset[s + 1] = offset[s] + cands[NCHILD, s]
    bits = np.zeros((offset[n_cand], words), dtype=np.uint64)
    first = 0
    while first < n_cand:
        a = cands[ATTR, first]
        last = first
        while last < n_cand and cands[ATTR, last] == a:
            last += 1
        eq = np.zeros((n_codes[a], words), dtype=np.uint64)
        for r in range(n_rows):
            x = np.int64(codes[a, r])
            if x != MISSING:
                eq[x, r >> 6] |= np.uint64(1) << np.uint64(r & 63)
        # Word loops rather than array expressions: same bits, far less to compile.
        present = np.zeros(words, dtype=np.uint64)
        for x in range(n_codes[a]):
            for w in range(words):
                present[w] |= eq[x, w]
        prefix = np.zeros(words, dtype=np.uint64)
        next_code = 0
        for s in range(first, last):
            kind, thr, off = cands[KIND, s], cands[THR, s], offset[s]
            if kind == THRESHOLD:
                while next_code <= thr:
                    for w in range(words):
                        prefix[w] |= eq[next_code, w]
                    next_code += 1
                for w in range(words):
                    bits[off, w] = prefix[w]
                    bits[off + 1, w] = present[w] & ~prefix[w]
            elif kind == MULTIWAY:
                for c in range(cands[NCHILD, s]):
                    copy_1d(bits[off + c], eq[c])
            else:
                for w in range(words):
                    bits[off + 1, w] = eq[thr, w]
                    bits[off, w] = present[w] & ~eq[thr, w]
        first = last
    return bits, offset


@inner_njit
def class_bits(y, n_classes, n_rows):
    """One bitset per class of ``y`` (private)."""
    words = (n_rows + 63) // 64
    bits = np.zeros((n_classes, words), dtype=np.uint64)
    for r in range(n_rows):
        bits[y[r], r >> 6] |= np.uint64(1) << np.uint64(r & 63)
    return bits


@inner_njit
def all_rows(n_rows):
    words = (n_rows + 63) // 64
    out = np.zeros(words, dtype=np.uint64)
    for r in range(n_rows):
        out[r >> 6] |= np.uint64(1) << np.uint64(r & 63)
    return out


@inner_njit
def fill_node_bits(h, nodes, cands, fanout, child_bits, child_offset, node_bits):
    """node_bits[child] = node_bits[parent] ∧ child bitset, for every node below ``h``."""
    words = node_bits.shape[1]
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        s = nodes[SPLIT, u]
        if s < 0:
            continue
        for i in range(cands[NCHILD, s]):
            ch = fanout * u + 1 + i
            src = child_offset[s] + i
            for w in range(words):
                node_bits[ch, w] = node_bits[u, w] & child_bits[src, w]
            stack.append(ch)


@inner_njit
def _leaf_hist(u, node_bits, cls_bits, hist):
    for c in range(cls_bits.shape[0]):
        hist[u, c] = and_count(node_bits[u], cls_bits[c])


@inner_njit
def _score_leaves(nodes, node_bits, cls_bits, hist, contrib):
    """Class counts and −|leaf|·gini of every leaf (into ``hist``, ``contrib``); their sum:
    a single-tree chain's starting score."""
    score = 0.0
    for u in range(nodes.shape[1]):
        if nodes[SPLIT, u] == LEAF:
            _leaf_hist(u, node_bits, cls_bits, hist)
            contrib[u] = gini_contribution(hist[u])
            score += contrib[u]
    return score


@inner_njit
def _drop_subtree(h, nodes, fanout, contrib):
    """Zero the contributions of the leaves under ``h`` (before a move there); their sum."""
    part = 0.0
    for u in subtree_leaves(h, nodes, fanout):
        part += contrib[u]
        contrib[u] = 0.0
    return part


@inner_njit
def _rescore_subtree(h, nodes, fanout, node_bits, cls_bits, hist, contrib):
    """Class counts and contributions of the leaves under ``h`` (after a move there); their
    sum."""
    part = 0.0
    for u in subtree_leaves(h, nodes, fanout):
        _leaf_hist(u, node_bits, cls_bits, hist)
        contrib[u] = gini_contribution(hist[u])
        part += contrib[u]
    return part


@inner_njit
def _random_tree(nodes, depth_of, max_depth, fanout, cands, rng, n_rows, node_bits, root,
                 child_bits, child_offset):
    perm = np.empty(1, dtype=np.int64)
    leaf = np.empty(1, dtype=np.int64)
    init_tree(nodes, perm, leaf, np.int64(1))
    dummy_codes = np.zeros((1, 1), dtype=np.uint16)
    dummy_y = np.zeros(1, dtype=np.int64)
    # np.int64(0), not 0: a literal argument would compile a second specialisation of
    # each callee next to the one the chain's steps use (same code, seconds of cold start).
    root_node = np.int64(0)
    grow_structure(root_node, nodes, depth_of, max_depth, fanout, cands, rng, np.bool_(False),
                   None, dummy_codes, dummy_y, np.int64(0))
    copy_1d(node_bits[0], root)
    fill_node_bits(root_node, nodes, cands, fanout, child_bits, child_offset, node_bits)


@njit(cache=True, nogil=True)
def mcmc_single_tree_bits(cands, child_bits, child_offset, y, n_classes, n_rows, fanout,
                          depth_of, max_depth, nodes, epsilon, mc_iter, rng, trace,
                          stats=None, hastings=True):
    """createDTMCMC (Alg. 3) on bitsets, strict mode: score −Σ_leaves |leaf|·gini, Δ = 2,
    acceptance min(1, exp(ε·ΔS/4)·q(T′→T)/q(T→T′)), exactly ``mc_iter`` iterations.
    Returns the iterations run (= mc_iter). ``stats[0]`` (optional) accumulates the rows
    reaching each changed node. ``hastings=False`` (tests only) drops the proposal ratio."""
    cap = nodes.shape[1]
    words = child_bits.shape[1]
    root = all_rows(n_rows)
    node_bits = np.zeros((cap, words), dtype=np.uint64)
    cls = class_bits(y, n_classes, n_rows)
    _random_tree(nodes, depth_of, max_depth, fanout, cands, rng, n_rows, node_bits, root,
                 child_bits, child_offset)
    hist = np.zeros((cap, n_classes), dtype=np.int64)
    contrib = np.zeros(cap, dtype=np.float64)
    score = _score_leaves(nodes, node_bits, cls, hist, contrib)
    saved_nodes = nodes.copy()
    saved_contrib = contrib.copy()
    work = hastings_workspace(cands)
    no_tree = np.full((4, 1), ABSENT, dtype=np.int64)
    no_codes = np.zeros((1, 1), dtype=np.uint16)
    for it in range(mc_iter):
        h, s_new = propose_move(nodes, cands, fanout, rng)
        if h < 0:
            trace[it] = score
            continue
        if stats is not None:
            stats[0] += count_bits(node_bits[h])
        copy_1d(saved_contrib, contrib)
        old_part = _drop_subtree(h, nodes, fanout, contrib)
        apply_move(h, s_new, nodes, saved_nodes, cands, fanout, depth_of, max_depth, rng,
                   np.bool_(False), None, no_codes, y, np.int64(0))
        fill_node_bits(h, nodes, cands, fanout, child_bits, child_offset, node_bits)
        new_part = _rescore_subtree(h, nodes, fanout, node_bits, cls, hist, contrib)
        new_score = score - old_part + new_part
        if hastings_accept(new_score - score, epsilon, 2.0, hastings, h, saved_nodes, nodes,
                           no_tree, cands, fanout, depth_of, max_depth, np.bool_(True), work,
                           rng):
            score = new_score
        else:
            copy_2d(nodes, saved_nodes)
            copy_1d(contrib, saved_contrib)
            fill_node_bits(h, nodes, cands, fanout, child_bits, child_offset, node_bits)
        trace[it] = score
    return mc_iter


@inner_njit
def _pair_column(u, nodes_r, bits_r, bits_l, table):
    """Column ``u`` (an L leaf) of the table: |B_j ∧ A_u| for every R leaf j."""
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] == LEAF:
            table[j, u] = and_count(bits_r[j], bits_l[u])


@inner_njit
def _pair_row(j, nodes_l, bits_r, bits_l, table):
    """Row ``j`` (an R leaf) of the table: |B_j ∧ A_u| for every L leaf u."""
    for u in range(nodes_l.shape[1]):
        if nodes_l[SPLIT, u] == LEAF:
            table[j, u] = and_count(bits_r[j], bits_l[u])


@inner_njit
def _purity_l(nodes_l, hist, n_rows):
    g = 0.0
    for u in range(nodes_l.shape[1]):
        if nodes_l[SPLIT, u] == LEAF:
            n = hist[u].sum()
            if n > 0:
                sq = 0.0
                for c in range(hist.shape[1]):
                    sq += hist[u, c] * hist[u, c]
                g += sq / (n * n_rows)
    return g


@inner_njit
def _fill_pair_leaves(nodes_l, bits_l, nodes_r, bits_r, cls, hist, table, size_r):
    """Class histograms of every T_L leaf, sizes and table rows of every T_R leaf."""
    for u in range(nodes_l.shape[1]):
        if nodes_l[SPLIT, u] == LEAF:
            _leaf_hist(u, bits_l, cls, hist)
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] == LEAF:
            size_r[j] = count_bits(bits_r[j])
            _pair_row(j, nodes_l, bits_r, bits_l, table)


@inner_njit
def _pair_g_r(nodes_r, nodes_l, table, size_r, hist, divisor, n_rows, count_scale):
    """g(T_R) of the strict chain (see :func:`mcmc_tree_pair_bits`): T_R's purity with
    T_L's leaves (+ 'no leaf') as classes, from the table, Σ_leaves Σ_c n_c²/(n_leaf ·
    ``divisor``) (``divisor`` = 1: the count-scale purity, in rows); on the count scale less
    Q(root of T_R) = (Σ_u |A_u|² + |no leaf|²)/N, the purity of the one-leaf tree over all
    rows, in rows. One kernel, not three: numba's cost per compiled function dominates a
    cold start (issue 32)."""
    g = 0.0
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] != LEAF or size_r[j] == 0:
            continue
        sq = 0.0
        inside = 0
        for u in range(nodes_l.shape[1]):
            if nodes_l[SPLIT, u] == LEAF:
                sq += table[j, u] * table[j, u]
                inside += table[j, u]
        rest = size_r[j] - inside
        sq += rest * rest
        g += sq / (size_r[j] * divisor)
    if count_scale:
        sq = 0.0
        inside = 0
        for u in range(nodes_l.shape[1]):
            if nodes_l[SPLIT, u] == LEAF:
                n = hist[u].sum()
                sq += n * n
                inside += n
        rest = n_rows - inside
        sq += rest * rest
        g -= sq / n_rows if n_rows > 0 else 0.0
    return g


@inner_njit
def _clear_moved_leaves(h, on_left, nodes_l, fanout_l, nodes_r, fanout_r, hist, table, size_r):
    """Zero the counts of the leaves below the moved node ``h``: their histograms and table
    columns (a T_L move) or their table rows and sizes (a T_R move)."""
    if on_left:
        for u in subtree_leaves(h, nodes_l, fanout_l):
            zero_1d(hist[u])
            for j in range(table.shape[0]):  # a column: zero_1d would compile for layout A
                table[j, u] = 0
    else:
        for j in subtree_leaves(h, nodes_r, fanout_r):
            zero_1d(table[j])
            size_r[j] = 0


@inner_njit
def _whole(s, cands, child_bits, child_offset, root, memo):
    """True when candidate ``s``'s children cover every row, i.e. its attribute has no
    missing value, so a node split by ``s`` has its rows partitioned among the children.
    Checked once per attribute (``memo[attribute]``: −1 not yet, 0 no, 1 yes): every
    candidate of an attribute covers the rows where it is present."""
    a = cands[ATTR, s]
    if memo[a] < 0:
        memo[a] = 1
        off, nc = child_offset[s], cands[NCHILD, s]
        for w in range(root.size):
            got = np.uint64(0)
            for i in range(nc):
                got |= child_bits[off + i, w]
            if got != root[w]:
                memo[a] = 0
                break
    return memo[a] == 1


@inner_njit
def _attribute_memo(cands):
    """:func:`_whole`'s memo: −1 (not checked yet) per attribute index up to the largest
    of ``cands``. A loop, not ``cands[ATTR].max()``: numba's array max compiles two more
    functions (its own and ``take``), about 1 s of a cold start (issue 32)."""
    n_attr = 0
    for s in range(cands.shape[1]):
        n_attr = max(n_attr, cands[ATTR, s] + 1)
    return np.full(n_attr, -1, dtype=np.int8)


@inner_njit
def _fill_pair_bits(h, nodes, cands, fanout, child_bits, child_offset, node_bits, root, memo):
    """:func:`fill_node_bits` for the pair chain: the second child of a two-way split whose
    children partition the rows (:func:`_whole`) is its parent less the first child, so
    only the first child's bitset is read from the (large) candidate table."""
    words = node_bits.shape[1]
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        s = nodes[SPLIT, u]
        if s < 0:
            continue
        nc, off, first = cands[NCHILD, s], child_offset[s], fanout * u + 1
        if nc == 2 and _whole(s, cands, child_bits, child_offset, root, memo):
            for w in range(words):
                c0 = child_bits[off, w]
                node_bits[first, w] = node_bits[u, w] & c0
                node_bits[first + 1, w] = node_bits[u, w] & ~c0
        else:
            for i in range(nc):
                for w in range(words):
                    node_bits[first + i, w] = node_bits[u, w] & child_bits[off + i, w]
        for i in range(nc):
            stack.append(first + i)


@inner_njit
def _node_lanes(a, bits_o, others, extra, out):
    """out = |a ∧ B| for the other tree's leaves B (``others``), then each row of
    ``extra`` (the class bitsets, or all rows for a size)."""
    n_o = others.size
    for m in range(n_o):
        out[m] = and_count(a, bits_o[others[m]])
    for e in range(extra.shape[0]):
        out[n_o + e] = and_count(a, extra[e])


@inner_njit
def _recount_moved(h, on_left, nodes, fanout, cands, child_bits, child_offset, root, memo, bits,
                   bits_o, others, extra, col, have_h, table, hist, size_r):
    """The new counts of the leaves below the moved node ``h``, top-down: ``col[u]`` holds
    node ``u``'s counts (:func:`_old_counts` order); a split node's last child gets its parent's
    counts less its siblings' when the children partition the parent's rows, the others are
    popcounts. ``col[h]`` (the rows of ``h`` do not change with its split) is already set
    when ``have_h``. Integer counts, equal to recounting every leaf from its bitset."""
    n_lanes = others.size + extra.shape[0]
    if not have_h:
        _node_lanes(bits[h], bits_o, others, extra, col[h])
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        s = nodes[SPLIT, u]
        if s < 0:
            for m in range(n_lanes):
                if m < others.size:
                    if on_left:
                        table[others[m], u] = col[u, m]
                    else:
                        table[u, others[m]] = col[u, m]
                elif on_left:
                    hist[u, m - others.size] = col[u, m]
                else:
                    size_r[u] = col[u, m]
            continue
        nc, first = cands[NCHILD, s], fanout * u + 1
        for i in range(nc):
            ch = first + i
            if i == nc - 1 and _whole(s, cands, child_bits, child_offset, root, memo):
                for m in range(n_lanes):
                    col[ch, m] = col[u, m]
                    for k in range(first, ch):
                        col[ch, m] -= col[k, m]
            else:
                _node_lanes(bits[ch], bits_o, others, extra, col[ch])
            stack.append(ch)


@inner_njit
def _old_counts(h, on_left, nodes, fanout, cands, child_bits, child_offset, root, memo, others,
                extra, col, table, hist, size_r):
    """Before a move at ``h``: ``col[h]`` = the sum of the counts of the leaves below it
    (in :func:`_recount_moved`'s order: cells with the other tree's leaves ``others``, then
    class counts of a T_L leaf or the size of a T_R leaf), when they hold exactly the rows
    of ``h``, i.e. every split node below (and at) ``h`` has children partitioning its rows
    (:func:`_whole`); returns whether it did. One kernel where there were three (numba's
    cost per compiled function, issue 32)."""
    cap = nodes.shape[1]
    first, count = h, 1
    while first < cap:
        for u in range(first, min(first + count, cap)):
            s = nodes[SPLIT, u]
            if s >= 0 and not _whole(s, cands, child_bits, child_offset, root, memo):
                return False
        first, count = first * fanout + 1, count * fanout
    n_o = others.size
    n_lanes = n_o + extra.shape[0]
    for m in range(n_lanes):
        col[h, m] = 0
    for u in subtree_leaves(h, nodes, fanout):
        for m in range(n_o):
            col[h, m] += table[others[m], u] if on_left else table[u, others[m]]
        for m in range(n_o, n_lanes):
            col[h, m] += hist[u, m - n_o] if on_left else size_r[u]
    return True


@njit(cache=True, nogil=True)
def mcmc_tree_pair_bits(cands_l, child_bits_l, offset_l, fanout_l, depth_l, nodes_l,
                        cands_r, child_bits_r, offset_r, fanout_r, depth_r, nodes_r,
                        y, n_classes, n_rows, max_depth, epsilon, mc_iter, rng, trace,
                        stats=None, hastings=True, count_scale=False):
    """sampleTreePair (Alg. 5) on bitsets, strict mode, exactly ``mc_iter`` iterations.

    Paper score (``count_scale=False``): g(T_L)(1+g(T_R))/2 ∈ [0, 1], Δ = 1, acceptance
    min(1, exp(ε·ΔS/2)·q(T′→T)/q(T→T′)). Count-scale score (``count_scale=True``):
    Q(T_L) + [Q(T_R) − Q(root)] in rows, Q(T) = Σ_leaves Σ_c n_c²/n_leaf (the paper's
    purity without the division by N) and Q(root) the purity of T_R's root for the same
    classes (T_L's leaves), so a T_L that puts every row in one leaf gains nothing on T_R;
    Δ = 3, acceptance min(1, exp(ε·ΔS/6)·q(T′→T)/q(T→T′)); no N normalises it
    (``kernels.scores.pair_score``; docs/PRIVACY.md S2c). The same random numbers are drawn
    in the same order with either score.
    Returns the iterations run (= mc_iter). ``stats[0]`` (optional) accumulates the rows
    reaching each changed node. ``hastings=False`` (tests only) drops the proposal ratio."""
    # Count scale: the purities are not divided by N (divisor 1); same arithmetic otherwise.
    divisor = np.int64(1) if count_scale else np.int64(n_rows)
    sensitivity = PAIR_SENSITIVITY_COUNT if count_scale else PAIR_SENSITIVITY_PAPER
    cap_l = nodes_l.shape[1]
    cap_r = nodes_r.shape[1]
    words = child_bits_l.shape[1]
    root = all_rows(n_rows)
    bits_l = np.zeros((cap_l, words), dtype=np.uint64)
    bits_r = np.zeros((cap_r, words), dtype=np.uint64)
    cls = class_bits(y, n_classes, n_rows)
    _random_tree(nodes_l, depth_l, max_depth, fanout_l, cands_l, rng, n_rows, bits_l, root,
                 child_bits_l, offset_l)
    _random_tree(nodes_r, depth_r, max_depth, fanout_r, cands_r, rng, n_rows, bits_r, root,
                 child_bits_r, offset_r)
    memo_l = _attribute_memo(cands_l)
    memo_r = _attribute_memo(cands_r)
    col_l = np.zeros((cap_l, cap_r + n_classes), dtype=np.int64)  # see _recount_moved
    col_r = np.zeros((cap_r, cap_l + 1), dtype=np.int64)
    all_2d = root.reshape((1, words))
    hist = np.zeros((cap_l, n_classes), dtype=np.int64)
    table = np.zeros((cap_r, cap_l), dtype=np.int64)
    size_r = np.zeros(cap_r, dtype=np.int64)
    _fill_pair_leaves(nodes_l, bits_l, nodes_r, bits_r, cls, hist, table, size_r)
    g_l = _purity_l(nodes_l, hist, divisor)
    g_r = _pair_g_r(nodes_r, nodes_l, table, size_r, hist, divisor, n_rows, count_scale)
    score = pair_score(g_l, g_r, count_scale)
    saved_l = nodes_l.copy()
    saved_r = nodes_r.copy()
    saved_hist = hist.copy()
    saved_table = table.copy()
    saved_size = size_r.copy()
    no_codes = np.zeros((1, 1), dtype=np.uint16)
    work_l = hastings_workspace(cands_l)
    work_r = hastings_workspace(cands_r)
    for it in range(mc_iter):
        on_left, h, s_new = propose_pair_move(nodes_l, cands_l, fanout_l, nodes_r, cands_r,
                                              fanout_r, rng)
        if h < 0:
            trace[it] = score
            continue
        # The moved tree's arrays (the other tree is not touched by this step).
        if on_left:
            cands, child_bits, offset, fanout, depth_of = (cands_l, child_bits_l, offset_l,
                                                           fanout_l, depth_l)
            nodes, saved, bits, other_nodes, work = nodes_l, saved_l, bits_l, nodes_r, work_l
            bits_o, memo, col, extra = bits_r, memo_l, col_l, cls
            others = subtree_leaves(np.int64(0), nodes_r, fanout_r)
        else:
            cands, child_bits, offset, fanout, depth_of = (cands_r, child_bits_r, offset_r,
                                                           fanout_r, depth_r)
            nodes, saved, bits, other_nodes, work = nodes_r, saved_r, bits_r, nodes_l, work_r
            bits_o, memo, col, extra = bits_l, memo_r, col_r, all_2d
            others = subtree_leaves(np.int64(0), nodes_l, fanout_l)
        if stats is not None:
            stats[0] += count_bits(bits[h])
        copy_2d(saved_hist, hist)
        copy_2d(saved_table, table)
        copy_1d(saved_size, size_r)
        have_h = _old_counts(h, on_left, nodes, fanout, cands, child_bits, offset, root, memo,
                             others, extra, col, table, hist, size_r)
        _clear_moved_leaves(h, on_left, nodes_l, fanout_l, nodes_r, fanout_r, hist, table,
                            size_r)
        apply_move(h, s_new, nodes, saved, cands, fanout, depth_of, max_depth, rng,
                   np.bool_(False), None, no_codes, y, np.int64(0))
        _fill_pair_bits(h, nodes, cands, fanout, child_bits, offset, bits, root, memo)
        _recount_moved(h, on_left, nodes, fanout, cands, child_bits, offset, root, memo, bits,
                       bits_o, others, extra, col, have_h, table, hist, size_r)
        new_g_l = _purity_l(nodes_l, hist, divisor) if on_left else g_l
        new_g_r = _pair_g_r(nodes_r, nodes_l, table, size_r, hist, divisor, n_rows,
                            count_scale)
        new_score = pair_score(new_g_l, new_g_r, count_scale)
        if hastings_accept(new_score - score, epsilon, sensitivity, hastings, h, saved, nodes,
                           other_nodes, cands, fanout, depth_of, max_depth, np.bool_(True), work,
                           rng):
            score, g_l, g_r = new_score, new_g_l, new_g_r
        else:
            copy_2d(nodes, saved)
            copy_2d(hist, saved_hist)
            copy_2d(table, saved_table)
            copy_1d(size_r, saved_size)
            _fill_pair_bits(h, nodes, cands, fanout, child_bits, offset, bits, root, memo)
        trace[it] = score
    return mc_iter


# ---------------------------------------------------------------------------------------
# Faithful mode: per-tree data-derived candidates, child bitsets built on demand.
# ---------------------------------------------------------------------------------------


@inner_njit
def _two_way_bits(row, thr, equals, out):
    """``out[0]``/``out[1]`` for a two-child split of one attribute's codes ``row``:
    threshold (``code ≤ thr`` / ``thr < code``) or, with ``equals``, one-vs-rest
    (``code ≠ thr`` / ``code = thr``); a missing code goes to neither. Branch-free per row
    on uint16 codes (4× faster than a branch per row, measured)."""
    n_rows = row.size
    t = np.uint16(thr)
    miss = np.uint16(MISSING)
    full = n_rows >> 6
    for w in range(full + (1 if n_rows & 63 else 0)):
        base = w << 6
        stop = min(64, n_rows - base)
        zero = np.uint64(0)
        one = np.uint64(0)
        for b in range(stop):
            x = row[base + b]
            present = x != miss
            if equals:
                zero |= np.uint64(present & (x != t)) << np.uint64(b)
                one |= np.uint64(x == t) << np.uint64(b)
            else:
                zero |= np.uint64(x <= t) << np.uint64(b)
                one |= np.uint64(present & (x > t)) << np.uint64(b)
        out[0, w] = zero
        out[1, w] = one


@inner_njit
def split_bits(codes, cands, s, out):
    """The children of candidate ``s`` over all rows: ``out[i]`` = rows (bit r) that go to
    child ``i``, in one pass over the attribute's codes (rows with a missing value are in
    no child; ``out`` has at least ``cands[NCHILD, s]`` rows of ``words`` uint64).
    Private (raw-data derived)."""
    a = cands[ATTR, s]
    kind = cands[KIND, s]
    if kind == MULTIWAY:
        n_rows = codes.shape[1]
        one = np.uint64(1)
        miss = np.int64(MISSING)
        for i in range(cands[NCHILD, s]):
            zero_1d(out[i])
        for r in range(n_rows):
            x = np.int64(codes[a, r])
            if x != miss:
                out[x, r >> 6] |= one << np.uint64(r & 63)
    else:
        _two_way_bits(codes[a], cands[THR, s], kind != THRESHOLD, out)


@inner_njit
def _node_split_bits(u, nodes, codes, cands, split_of, gbits):
    """Make ``gbits[u]`` the children of node ``u``'s split over all rows (a cache keyed by
    the candidate in ``split_of[u]``: a split's children depend on the candidate only)."""
    s = nodes[SPLIT, u]
    if split_of[u] != s:
        split_bits(codes, cands, s, gbits[u])
        split_of[u] = s


@inner_njit
def _first_row(a):
    """Index of the first set bit of bitset ``a`` (−1 when empty)."""
    for w in range(a.size):
        x = a[w]
        if x != 0:
            b = 0
            while (x >> np.uint64(b)) & np.uint64(1) == 0:
                b += 1
            return (w << 6) + b
    return -1


@inner_njit
def _inside(a, b):
    """a ⊆ b."""
    for w in range(a.size):
        if a[w] & ~b[w] != 0:
            return False
    return True


@inner_njit
def _stops_on_classes(node, y, min_rows, cls):
    """Faithful growth stop (as ``moves.growth_stops``) for a tree whose classes are ``y``
    with class bitsets ``cls``: fewer than ``min_rows`` rows in ``node``, or all one class."""
    if count_bits(node) < min_rows:
        return True
    r = _first_row(node)
    if r < 0:
        return True
    return _inside(node, cls[y[r]])


@inner_njit
def _stops_on_leaves(node, min_rows, nodes_o, bits_o):
    """Faithful growth stop for T_R of a pair, whose classes are T_L's leaves (``nodes_o``,
    their row bitsets ``bits_o``) and 'no leaf': fewer than ``min_rows`` rows, or every row
    in one T_L leaf, or every row in none."""
    if count_bits(node) < min_rows:
        return True
    r = _first_row(node)
    if r < 0:
        return True
    w, b = r >> 6, np.uint64(r & 63)
    for v in range(nodes_o.shape[1]):
        if nodes_o[SPLIT, v] == LEAF and (bits_o[v, w] >> b) & np.uint64(1):
            return _inside(node, bits_o[v])
    for v in range(nodes_o.shape[1]):
        if nodes_o[SPLIT, v] == LEAF:
            for k in range(node.size):
                if node[k] & bits_o[v, k] != 0:
                    return False
    return True


@inner_njit
def grow_bits(h, nodes, depth_of, max_depth, fanout, cands, rng, codes, split_of, gbits,
              node_bits, min_rows, y, cls, nodes_o, bits_o, by_leaves):
    """``moves.grow_structure`` in faithful mode on bitsets, with the same random draws in
    the same order: every ``GROW`` node below ``h`` stops as a leaf at ``max_depth``, when
    it is small or pure (``by_leaves``: T_L's leaves are the classes, else ``y`` with class
    bitsets ``cls``), or when no split is allowed; otherwise it gets a uniformly random
    valid split (``moves.random_split``). Walking the subtree it also sets ``node_bits`` of
    every node below ``h`` (``node_bits[h]`` must be current)."""
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        if nodes[SPLIT, u] == GROW:
            if depth_of[u] >= max_depth:
                nodes[SPLIT, u] = LEAF
            elif (_stops_on_leaves(node_bits[u], min_rows, nodes_o, bits_o) if by_leaves
                  else _stops_on_classes(node_bits[u], y, min_rows, cls)):
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
            _node_split_bits(u, nodes, codes, cands, split_of, gbits)
            for i in range(cands[NCHILD, s]):
                ch = fanout * u + 1 + i
                for w in range(node_bits.shape[1]):
                    node_bits[ch, w] = node_bits[u, w] & gbits[u, i, w]
                stack.append(ch)


@inner_njit
def refill_bits(h, nodes, codes, cands, fanout, split_of, gbits, node_bits):
    """node_bits of every node below ``h`` from its parent's and the parent split's
    children (computed on demand, see :func:`_node_split_bits`)."""
    words = node_bits.shape[1]
    stack = [h]
    while len(stack) > 0:
        u = stack.pop()
        s = nodes[SPLIT, u]
        if s < 0:
            continue
        _node_split_bits(u, nodes, codes, cands, split_of, gbits)
        for i in range(cands[NCHILD, s]):
            ch = fanout * u + 1 + i
            for w in range(words):
                node_bits[ch, w] = node_bits[u, w] & gbits[u, i, w]
            stack.append(ch)


@inner_njit
def _split_cache(nodes, fanout, depth_of, max_depth, words):
    """Per-node cache of a split's children over all rows: only nodes above ``max_depth``
    split, and they are the first heap slots."""
    n_int = 0
    while n_int < depth_of.size and depth_of[n_int] < max_depth:
        n_int += 1
    n_int = max(n_int, 1)
    split_of = np.full(nodes.shape[1], -1, dtype=np.int64)
    return split_of, np.zeros((n_int, fanout, words), dtype=np.uint64)


@njit(cache=True, nogil=True)
def mcmc_single_tree_faithful_bits(codes, cands, y, n_classes, fanout, depth_of, max_depth,
                                   nodes, epsilon, mc_iter, sigma, window, min_rows, rng,
                                   trace, stats=None, hastings=False):
    """createDTMCMC (Alg. 3) in faithful mode on bitsets: the chain of
    ``row_chains_reference.mcmc_single_tree(..., faithful=True, ...)``, with the same random
    numbers in the same order, the same integer counts and the same float arithmetic, so
    it returns the same tree, trace and iteration count.

    Faithful candidates are data-derived per tree (every distinct value of a sample), too
    many to precompute their children as strict mode does: a split's children over all
    rows are built when a node takes it (:func:`split_bits`, one pass over the attribute's
    codes) and cached per node; a node's rows are its parent's ANDed with them. Growth
    stops on pure or small nodes (popcounts); the chain stops when the variance of the last
    ``window`` accepted scores is below ``sigma``; acceptance min(1, exp(ε·ΔS/4)) without
    the proposal ratio (``hastings=False``, as the paper). Returns the iterations run.
    ``stats[0]`` (optional) accumulates the rows reaching each changed node. Memory:
    (heap slots + internal slots × fanout) × ⌈rows/64⌉ words.
    """
    n_rows = codes.shape[1]
    cap = nodes.shape[1]
    words = (n_rows + 63) // 64
    node_bits = np.zeros((cap, words), dtype=np.uint64)
    cls = class_bits(y, n_classes, n_rows)
    split_of, gbits = _split_cache(nodes, fanout, depth_of, max_depth, words)
    no_tree = np.full((4, 1), ABSENT, dtype=np.int64)
    no_bits = np.zeros((1, 1), dtype=np.uint64)
    perm = np.empty(1, dtype=np.int64)
    leaf = np.empty(1, dtype=np.int64)
    init_tree(nodes, perm, leaf, np.int64(1))
    copy_1d(node_bits[0], all_rows(n_rows))
    grow_bits(np.int64(0), nodes, depth_of, max_depth, fanout, cands, rng, codes, split_of,
              gbits, node_bits, min_rows, y, cls, no_tree, no_bits, np.bool_(False))
    hist = np.zeros((cap, n_classes), dtype=np.int64)
    contrib = np.zeros(cap, dtype=np.float64)
    score = _score_leaves(nodes, node_bits, cls, hist, contrib)
    saved_nodes = nodes.copy()
    saved_contrib = contrib.copy()
    saved_g = np.zeros((fanout, words), dtype=np.uint64)
    work = hastings_workspace(cands)
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
            stats[0] += count_bits(node_bits[h])
        copy_1d(saved_contrib, contrib)
        copy_2d(saved_g, gbits[h])
        saved_split = split_of[h]
        old_part = _drop_subtree(h, nodes, fanout, contrib)
        copy_2d(saved_nodes, nodes)
        replace_split(h, s_new, nodes, cands, fanout)
        grow_bits(h, nodes, depth_of, max_depth, fanout, cands, rng, codes, split_of, gbits,
                  node_bits, min_rows, y, cls, no_tree, no_bits, np.bool_(False))
        new_part = _rescore_subtree(h, nodes, fanout, node_bits, cls, hist, contrib)
        new_score = score - old_part + new_part
        if hastings_accept(new_score - score, epsilon, 2.0, hastings, h, saved_nodes, nodes,
                           no_tree, cands, fanout, depth_of, max_depth, np.bool_(False), work,
                           rng):
            score = new_score
            ring[n_acc % window] = score
            n_acc += 1
        else:
            copy_2d(nodes, saved_nodes)
            copy_1d(contrib, saved_contrib)
            copy_2d(gbits[h], saved_g)
            split_of[h] = saved_split
            refill_bits(h, nodes, codes, cands, fanout, split_of, gbits, node_bits)
            for u in subtree_leaves(h, nodes, fanout):
                _leaf_hist(u, node_bits, cls, hist)
        trace[it] = score
        if scores_stabilised(ring, n_acc, window, sigma):
            break
    return done


@inner_njit
def _table_sumsq(j, nodes_l, table, size_r):
    """Σ_c n_c² of R leaf ``j`` over T_L's leaves and 'no leaf' (integer, as the row
    chain's incremental Σ²)."""
    sq = 0
    inside = 0
    for u in range(nodes_l.shape[1]):
        if nodes_l[SPLIT, u] == LEAF:
            sq += table[j, u] * table[j, u]
            inside += table[j, u]
    rest = size_r[j] - inside
    return sq + rest * rest


@inner_njit
def _purity_from_sumsq(nodes_r, sumsq, size_r, n_rows):
    """``scores.purity_from_table`` with the R leaves' sizes from popcounts."""
    g = 0.0
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] == LEAF:
            n = size_r[j]
            if n > 0:
                g += sumsq[j] / (n * n_rows)
    return g


@inner_njit
def _grow_pair_side(on_left, h, nodes, depth_of, max_depth, fanout, cands, rng, codes,
                    split_of, gbits, bits, min_rows, y, cls, no_y, no_cls, nodes_l, bits_l,
                    nodes_r, bits_r):
    """:func:`grow_bits` below ``h`` in one tree of the faithful pair: T_L stops on pure
    nodes of the classes ``y``, T_R on pure nodes with T_L's leaves as classes."""
    if on_left:
        grow_bits(h, nodes, depth_of, max_depth, fanout, cands, rng, codes, split_of, gbits,
                  bits, min_rows, y, cls, nodes_r, bits_r, np.bool_(False))
    else:
        grow_bits(h, nodes, depth_of, max_depth, fanout, cands, rng, codes, split_of, gbits,
                  bits, min_rows, no_y, no_cls, nodes_l, bits_l, np.bool_(True))


@inner_njit
def _save_node_split(h, split_of, gbits, saved_g):
    """Copy node ``h``'s cached split children into ``saved_g``; returns its cached split."""
    copy_2d(saved_g[:gbits.shape[1]], gbits[h])
    return split_of[h]


@inner_njit
def _undo_tree_move(h, nodes, saved, codes, cands, fanout, split_of, gbits, bits, saved_g,
                    saved_split):
    """Put a faithful tree back as before a rejected move at ``h``: its nodes, ``h``'s
    cached split and the bitsets below ``h``."""
    copy_2d(nodes, saved)
    copy_2d(gbits[h], saved_g[:gbits.shape[1]])
    split_of[h] = saved_split
    refill_bits(h, nodes, codes, cands, fanout, split_of, gbits, bits)


@inner_njit
def _plant_pair_tree(on_left, nodes, depth_of, max_depth, fanout, cands, rng, codes, split_of,
                     gbits, bits, min_rows, y, cls, no_y, no_cls, nodes_l, bits_l, nodes_r,
                     bits_r):
    """A faithful pair's initial tree: the root over all rows, grown as
    :func:`_grow_pair_side`."""
    perm = np.empty(1, dtype=np.int64)
    leaf = np.empty(1, dtype=np.int64)
    init_tree(nodes, perm, leaf, np.int64(1))
    copy_1d(bits[0], all_rows(codes.shape[1]))
    _grow_pair_side(on_left, np.int64(0), nodes, depth_of, max_depth, fanout, cands, rng, codes,
                    split_of, gbits, bits, min_rows, y, cls, no_y, no_cls, nodes_l, bits_l,
                    nodes_r, bits_r)


@inner_njit
def _count_faithful_pair(nodes_l, bits_l, nodes_r, bits_r, cls, hist, contrib_l, table, size_r,
                         sumsq, n_rows):
    """Histograms and purity contributions of every T_L leaf, sizes, table rows and Σ² of
    every T_R leaf; returns g(T_L) (summed in leaf order, as the row chain)."""
    g_l = 0.0
    for u in range(nodes_l.shape[1]):
        if nodes_l[SPLIT, u] == LEAF:
            _leaf_hist(u, bits_l, cls, hist)
            contrib_l[u] = purity_contribution(hist[u], n_rows)
            g_l += contrib_l[u]
    for j in range(nodes_r.shape[1]):
        if nodes_r[SPLIT, j] == LEAF:
            size_r[j] = count_bits(bits_r[j])
            _pair_row(j, nodes_l, bits_r, bits_l, table)
            sumsq[j] = _table_sumsq(j, nodes_l, table, size_r)
    return g_l


@inner_njit
def _drop_faithful_leaves(on_left, leaves, contrib_l, saved_contrib, hist, saved_hist, table,
                          saved_table, size_r, saved_size, sumsq, saved_sumsq):
    """Save, then zero, the counts of the moved tree's ``leaves`` (histograms, contributions
    and table columns of T_L; table rows and sizes of T_R); save every Σ². Returns the T_L
    contributions dropped (0 for a T_R move)."""
    old_part = 0.0
    if on_left:
        copy_1d(saved_contrib, contrib_l)
        for u in leaves:
            old_part += contrib_l[u]
            contrib_l[u] = 0.0
            copy_1d(saved_hist[u], hist[u])
            copy_1d(saved_table[:, u], table[:, u])
            zero_1d(hist[u])
            zero_1d(table[:, u])
    else:
        for j in leaves:
            copy_1d(saved_table[j], table[j])
            saved_size[j] = size_r[j]
            zero_1d(table[j])
            size_r[j] = 0
    copy_1d(saved_sumsq, sumsq)
    return old_part


@inner_njit
def _add_faithful_leaves(on_left, leaves, g_l, old_part, nodes_l, bits_l, nodes_r, bits_r, cls,
                         hist, contrib_l, table, size_r, sumsq, n_rows):
    """Count the moved tree's new ``leaves`` from their bitsets and update Σ² (of every T_R
    leaf after a T_L move: each gained new columns). Returns the new g(T_L)."""
    if on_left:
        new_part = 0.0
        for u in leaves:
            _leaf_hist(u, bits_l, cls, hist)
            _pair_column(u, nodes_r, bits_r, bits_l, table)
            contrib_l[u] = purity_contribution(hist[u], n_rows)
            new_part += contrib_l[u]
        for j in range(nodes_r.shape[1]):
            if nodes_r[SPLIT, j] == LEAF:
                sumsq[j] = _table_sumsq(j, nodes_l, table, size_r)
        return g_l - old_part + new_part
    for j in leaves:
        size_r[j] = count_bits(bits_r[j])
        _pair_row(j, nodes_l, bits_r, bits_l, table)
        sumsq[j] = _table_sumsq(j, nodes_l, table, size_r)
    return g_l


@inner_njit
def _restore_faithful_leaves(on_left, old_leaves, new_leaves, contrib_l, saved_contrib, hist,
                             saved_hist, table, saved_table, size_r, saved_size, sumsq,
                             saved_sumsq):
    """Undo a rejected move's counts: zero the new leaves', restore the old leaves' and
    every Σ²."""
    if on_left:
        copy_1d(contrib_l, saved_contrib)
        for u in new_leaves:
            zero_1d(hist[u])
            zero_1d(table[:, u])
        for u in old_leaves:
            copy_1d(hist[u], saved_hist[u])
            copy_1d(table[:, u], saved_table[:, u])
    else:
        for j in new_leaves:
            zero_1d(table[j])
            size_r[j] = 0
        for j in old_leaves:
            copy_1d(table[j], saved_table[j])
            size_r[j] = saved_size[j]
    copy_1d(sumsq, saved_sumsq)


@njit(cache=True, nogil=True)
def mcmc_tree_pair_faithful_bits(codes_l, cands_l, fanout_l, depth_l, nodes_l,
                                 codes_r, cands_r, fanout_r, depth_r, nodes_r,
                                 y, n_classes, max_depth, epsilon, mc_iter, sigma, window,
                                 min_rows, rng, trace, stats=None, hastings=False):
    """sampleTreePair (Alg. 5) in faithful mode on bitsets: the chain of
    ``row_chains_reference.mcmc_tree_pair(..., faithful=True, ...)`` (paper's score
    g(T_L)(1+g(T_R))/2, Δ = 1, acceptance min(1, exp(ε·ΔS/2)) without the proposal ratio,
    σ stopping rule), with the same random numbers in the same order, the same integer
    counts and the same float arithmetic: same trees, trace and iteration count.

    Children of a split are built on demand and cached per node as in
    :func:`mcmc_single_tree_faithful_bits`; T_R's growth stops on pure nodes with T_L's
    leaves as classes, read from T_L's leaf bitsets (no per-row class array). The leaf×leaf
    table is kept per changed leaf by popcounts; only the columns (a T_L move) or rows (a
    T_R move) of the leaves below the moved node are saved and restored on a rejection.
    Returns the iterations run; ``stats[0]`` (optional) accumulates the rows reaching each
    changed node.
    """
    n_rows = codes_l.shape[1]
    cap_l, cap_r = nodes_l.shape[1], nodes_r.shape[1]
    words = (n_rows + 63) // 64
    bits_l = np.zeros((cap_l, words), dtype=np.uint64)
    bits_r = np.zeros((cap_r, words), dtype=np.uint64)
    cls = class_bits(y, n_classes, n_rows)
    split_l, g_bits_l = _split_cache(nodes_l, fanout_l, depth_l, max_depth, words)
    split_r, g_bits_r = _split_cache(nodes_r, fanout_r, depth_r, max_depth, words)
    no_cls = np.zeros((1, 1), dtype=np.uint64)
    no_y = np.zeros(1, dtype=np.int64)
    _plant_pair_tree(np.bool_(True), nodes_l, depth_l, max_depth, fanout_l, cands_l, rng,
                     codes_l, split_l, g_bits_l, bits_l, min_rows, y, cls, no_y, no_cls, nodes_l,
                     bits_l, nodes_r, bits_r)
    _plant_pair_tree(np.bool_(False), nodes_r, depth_r, max_depth, fanout_r, cands_r, rng,
                     codes_r, split_r, g_bits_r, bits_r, min_rows, y, cls, no_y, no_cls, nodes_l,
                     bits_l, nodes_r, bits_r)
    hist = np.zeros((cap_l, n_classes), dtype=np.int64)
    contrib_l = np.zeros(cap_l, dtype=np.float64)
    table = np.zeros((cap_r, cap_l), dtype=np.int64)
    size_r = np.zeros(cap_r, dtype=np.int64)
    sumsq = np.zeros(cap_r, dtype=np.int64)
    g_l = _count_faithful_pair(nodes_l, bits_l, nodes_r, bits_r, cls, hist, contrib_l, table,
                               size_r, sumsq, n_rows)
    g_r = _purity_from_sumsq(nodes_r, sumsq, size_r, n_rows)
    score = g_l * (1.0 + g_r) / 2.0
    saved_l, saved_r, saved_contrib = nodes_l.copy(), nodes_r.copy(), contrib_l.copy()
    saved_hist, saved_table = hist.copy(), table.copy()
    saved_size, saved_sumsq = size_r.copy(), sumsq.copy()
    saved_g = np.zeros((max(fanout_l, fanout_r), words), dtype=np.uint64)
    work_l = hastings_workspace(cands_l)
    work_r = hastings_workspace(cands_r)
    ring = np.zeros(window, dtype=np.float64)
    n_acc, done = 0, 0
    for it in range(mc_iter):
        done = it + 1
        on_left, h, s_new = propose_pair_move(nodes_l, cands_l, fanout_l, nodes_r, cands_r,
                                              fanout_r, rng)
        if h < 0:
            trace[it] = score
            continue
        if on_left:
            codes, cands, fanout, depth_of, nodes, saved = (codes_l, cands_l, fanout_l,
                                                            depth_l, nodes_l, saved_l)
            bits, split_of, gbits, other_nodes, work = bits_l, split_l, g_bits_l, nodes_r, work_l
        else:
            codes, cands, fanout, depth_of, nodes, saved = (codes_r, cands_r, fanout_r,
                                                            depth_r, nodes_r, saved_r)
            bits, split_of, gbits, other_nodes, work = bits_r, split_r, g_bits_r, nodes_l, work_r
        if stats is not None:
            stats[0] += count_bits(bits[h])
        saved_split = _save_node_split(h, split_of, gbits, saved_g)
        old_leaves = subtree_leaves(h, nodes, fanout)
        old_part = _drop_faithful_leaves(on_left, old_leaves, contrib_l, saved_contrib, hist,
                                         saved_hist, table, saved_table, size_r, saved_size,
                                         sumsq, saved_sumsq)
        copy_2d(saved, nodes)
        replace_split(h, s_new, nodes, cands, fanout)
        _grow_pair_side(on_left, h, nodes, depth_of, max_depth, fanout, cands, rng, codes,
                        split_of, gbits, bits, min_rows, y, cls, no_y, no_cls, nodes_l, bits_l,
                        nodes_r, bits_r)
        new_leaves = subtree_leaves(h, nodes, fanout)
        new_g_l = _add_faithful_leaves(on_left, new_leaves, g_l, old_part, nodes_l, bits_l,
                                       nodes_r, bits_r, cls, hist, contrib_l, table, size_r,
                                       sumsq, n_rows)
        new_g_r = _purity_from_sumsq(nodes_r, sumsq, size_r, n_rows)
        new_score = new_g_l * (1.0 + new_g_r) / 2.0
        if hastings_accept(new_score - score, epsilon, 1.0, hastings, h, saved, nodes,
                           other_nodes, cands, fanout, depth_of, max_depth, np.bool_(False), work,
                           rng):
            score, g_l, g_r = new_score, new_g_l, new_g_r
            ring[n_acc % window] = score
            n_acc += 1
        else:
            _undo_tree_move(h, nodes, saved, codes, cands, fanout, split_of, gbits, bits, saved_g,
                            saved_split)
            _restore_faithful_leaves(on_left, old_leaves, new_leaves, contrib_l, saved_contrib,
                                     hist, saved_hist, table, saved_table, size_r, saved_size,
                                     sumsq, saved_sumsq)
        trace[it] = score
        if scores_stabilised(ring, n_acc, window, sigma):
            break
    return done
