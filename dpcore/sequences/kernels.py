"""Numba kernels on the CSR sequence layout: containment, support counting, shrinking and
prefix-projected search.

Nothing here is differentially private by itself: every kernel reads raw (coded) records
and returns exact counts or transformed records. Privacy comes from how
:mod:`dpcore.sequences.miner` uses them (a noisy release, charged first, of every count a
kernel returns). All kernels are serial, ``nogil`` and allocate their scratch space once
per call, never inside the per-record loop.

Layout
------
* Records: ``indptr`` (int64, n_records + 1) and ``items`` (int32 item codes); record ``r``
  is ``items[indptr[r]:indptr[r + 1]]``.
* Candidates of one length k: ``cands`` (int32, n_cand × k) and their trie (the paper's
  CS-tree) as flat arrays, built by :func:`dpcore.sequences.candidates.build_candidate_trie`:
  node 0 is the root; the children of node v are the nodes
  ``child_start[v]:child_end[v]``, sorted by ``node_item``; ``node_parent`` and
  ``leaf_cand`` (the candidate of a depth-k node, −1 elsewhere); ``cand_leaf`` is the
  inverse of ``leaf_cand``.

Containment uses greedy leftmost matching: S ⊆ T (gaps allowed) iff matching each item of
S at its first occurrence after the previous match succeeds. Per record, an index of each
item's positions answers "the next occurrence of item x after position q" by binary
search, and a walk down the candidate trie visits each trie node at most once per record.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "is_subsequence", "record_contains", "count_supports", "count_supports_runs",
    "contained_candidates",
    "compress_consecutive", "reconstruct_record", "shrink_records_kernel",
    "build_occurrence_runs", "prefix_search", "max_supports_by_length", "length_histogram",
    "relevant_length_histogram",
]


# --------------------------------------------------------------------------- containment

@njit(cache=True, nogil=True)
def is_subsequence(record, seq):
    """True if ``seq`` is a subsequence of ``record`` (gaps allowed; both int arrays)."""
    m = seq.shape[0]
    if m == 0:
        return True
    j = 0
    for p in range(record.shape[0]):
        if record[p] == seq[j]:
            j += 1
            if j == m:
                return True
    return False


@njit(cache=True, nogil=True)
def record_contains(indptr, items, r, seq):
    """True if record ``r`` of the CSR layout contains ``seq`` as a subsequence."""
    return is_subsequence(items[indptr[r]:indptr[r + 1]], seq)


@njit(cache=True, nogil=True)
def length_histogram(indptr, n_bins):
    """``out[i]`` = number of records of length i, for i < n_bins (longer ones not counted)."""
    out = np.zeros(n_bins, dtype=np.int64)
    for r in range(indptr.shape[0] - 1):
        n = indptr[r + 1] - indptr[r]
        if n < n_bins:
            out[n] += 1
    return out


@njit(cache=True, nogil=True)
def relevant_length_histogram(indptr, items, relevant, cap):
    """``out[i − 1]`` = records holding i items of the mask ``relevant``, i = 1..cap.

    Records holding more than ``cap`` relevant items are counted in cell ``cap``; records
    holding none in no cell. One record is in at most one cell.
    """
    out = np.zeros(cap, dtype=np.int64)
    for r in range(indptr.shape[0] - 1):
        n = 0
        for j in range(indptr[r], indptr[r + 1]):
            if relevant[items[j]]:
                n += 1
        if n > 0:
            out[min(n, cap) - 1] += 1
    return out


# --------------------------------------------------------------------------- per-record index

@njit(cache=True, nogil=True)
def _index_record(buf, s, e, cnt, first, pos, distinct):
    """Index ``buf[s:e]``: the positions (relative to s) of item x are
    ``pos[first[x]:first[x] + cnt[x]]``, ascending. Returns the number of distinct items,
    listed in ``distinct``; clear with :func:`_clear_index`."""
    nd = 0
    for p in range(s, e):
        it = buf[p]
        if cnt[it] == 0:
            distinct[nd] = it
            nd += 1
        cnt[it] += 1
    off = 0
    for j in range(nd):
        it = distinct[j]
        first[it] = off
        off += cnt[it]
    for p in range(s, e):
        it = buf[p]
        pos[first[it]] = p - s
        first[it] += 1
    for j in range(nd):
        it = distinct[j]
        first[it] -= cnt[it]
    return nd


@njit(cache=True, nogil=True)
def _clear_index(cnt, distinct, nd):
    for j in range(nd):
        cnt[distinct[j]] = 0


@njit(cache=True, nogil=True)
def _next_after(cnt, first, pos, item, q):
    """Position of the first occurrence of ``item`` after position q (−1 if none)."""
    c = cnt[item]
    if c == 0:
        return -1
    lo = first[item]
    end = lo + c
    hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        if pos[mid] <= q:
            lo = mid + 1
        else:
            hi = mid
    if lo == end:
        return -1
    return pos[lo]


@njit(cache=True, nogil=True)
def _child_with_item(node_item, lo, hi, x):
    """The child in [lo, hi) labelled x (children sorted by item), or −1."""
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if node_item[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo == end or node_item[lo] != x:
        return -1
    return lo


@njit(cache=True, nogil=True)
def _contained(node_item, child_start, child_end, leaf_cand, k, cnt, first, pos, distinct,
               nd, out, stk_node, stk_pos, stk_it):
    """Candidates (ids written to ``out``) contained in the indexed record; returns how many.

    Depth-first walk of the trie: a node is entered with the greedy (earliest) end position
    of its path in the record, so each node is visited at most once. At a node with more
    children than the record has distinct items (``distinct[:nd]``), the walk tries those
    items instead of every child (large alphabets).
    """
    n_out = 0
    depth = 0
    stk_node[0] = 0
    stk_pos[0] = -1
    stk_it[0] = 0 if child_end[0] - child_start[0] > nd else child_start[0]
    while depth >= 0:
        node = stk_node[depth]
        it = stk_it[depth]
        by_items = child_end[node] - child_start[node] > nd
        if by_items:
            if it >= nd:
                depth -= 1
                continue
            stk_it[depth] = it + 1
            ci = _child_with_item(node_item, child_start[node], child_end[node], distinct[it])
            if ci < 0:
                continue
        else:
            if it >= child_end[node]:
                depth -= 1
                continue
            stk_it[depth] = it + 1
            ci = it
        p = _next_after(cnt, first, pos, node_item[ci], stk_pos[depth])
        if p < 0:
            continue
        if depth + 1 == k:
            out[n_out] = leaf_cand[ci]
            n_out += 1
        else:
            depth += 1
            stk_node[depth] = ci
            stk_pos[depth] = p
            stk_it[depth] = 0 if child_end[ci] - child_start[ci] > nd else child_start[ci]
    return n_out


@njit(cache=True, nogil=True)
def _max_length(indptr):
    top = 0
    for r in range(indptr.shape[0] - 1):
        n = indptr[r + 1] - indptr[r]
        if n > top:
            top = n
    return top


@njit(cache=True, nogil=True)
def count_supports(indptr, items, n_items, node_item, child_start, child_end, leaf_cand, k,
                   n_cand):
    """Support of every candidate k-sequence: the number of records containing it.

    Parameters
    ----------
    indptr, items : CSR records (private).
    n_items : int
        Alphabet size (item codes are < n_items).
    node_item, child_start, child_end, leaf_cand : the candidate trie.
    k : int
        Candidate length (≥ 1).
    n_cand : int
        Number of candidates.

    Returns
    -------
    numpy.ndarray of int64, shape (n_cand,)
        Exact supports in records (each record counts once per candidate).
    """
    counts = np.zeros(n_cand, dtype=np.int64)
    maxlen = max(_max_length(indptr), 1)
    cnt = np.zeros(n_items, dtype=np.int64)
    first = np.zeros(n_items, dtype=np.int64)
    pos = np.empty(maxlen, dtype=np.int64)
    distinct = np.empty(min(maxlen, n_items), dtype=np.int32)
    out = np.empty(max(n_cand, 1), dtype=np.int64)
    stk_node = np.empty(k + 1, dtype=np.int64)
    stk_pos = np.empty(k + 1, dtype=np.int64)
    stk_it = np.empty(k + 1, dtype=np.int64)
    for r in range(indptr.shape[0] - 1):
        s, e = indptr[r], indptr[r + 1]
        if e - s < k:
            continue
        nd = _index_record(items, s, e, cnt, first, pos, distinct)
        m = _contained(node_item, child_start, child_end, leaf_cand, k, cnt, first, pos,
                       distinct, nd, out, stk_node, stk_pos, stk_it)
        for j in range(m):
            counts[out[j]] += 1
        _clear_index(cnt, distinct, nd)
    return counts


@njit(cache=True, nogil=True)
def contained_candidates(record, n_items, node_item, child_start, child_end, leaf_cand, k):
    """Ids of the candidates contained in one record (ascending); for tests and teaching."""
    n = record.shape[0]
    cnt = np.zeros(n_items, dtype=np.int64)
    first = np.zeros(n_items, dtype=np.int64)
    pos = np.empty(max(n, 1), dtype=np.int64)
    distinct = np.empty(max(min(n, n_items), 1), dtype=np.int32)
    out = np.empty(max(leaf_cand.shape[0], 1), dtype=np.int64)
    stk_node = np.empty(k + 1, dtype=np.int64)
    stk_pos = np.empty(k + 1, dtype=np.int64)
    stk_it = np.empty(k + 1, dtype=np.int64)
    if n < k:
        return np.empty(0, dtype=np.int64)
    nd = _index_record(record, np.int64(0), n, cnt, first, pos, distinct)
    m = _contained(node_item, child_start, child_end, leaf_cand, k, cnt, first, pos, distinct,
                   nd, out, stk_node, stk_pos, stk_it)
    return np.sort(out[:m])


# --------------------------------------------------------------------------- shrinking

@njit(cache=True, nogil=True)
def _compress(src, n, period, k, dst):
    """Consecutive-pattern compression of ``src[:n]`` for one pattern length.

    Scans left to right; a run p^j of a pattern p of ``period`` items repeated j > k times
    is replaced by p^k (lossless for candidate k-sequences: the k items of a k-sequence
    fall into at most k of the copies). Returns the new length (written to ``dst``).
    """
    i = 0
    m = 0
    while i < n:
        if i + 2 * period <= n:
            j = 1
            while i + (j + 1) * period <= n:
                same = True
                for t in range(period):
                    if src[i + j * period + t] != src[i + t]:
                        same = False
                        break
                if not same:
                    break
                j += 1
            if j > k:
                for _ in range(k):
                    for t in range(period):
                        dst[m] = src[i + t]
                        m += 1
                i += j * period
                continue
        dst[m] = src[i]
        m += 1
        i += 1
    return m


@njit(cache=True, nogil=True)
def compress_consecutive(record, period, k):
    """:func:`_compress` on one record (a new array); for tests and teaching."""
    dst = np.empty(record.shape[0], dtype=record.dtype)
    m = _compress(record, record.shape[0], period, k, dst)
    return dst[:m].copy()


@njit(cache=True, nogil=True)
def _n_distinct(cands, c, k):
    n = 0
    for t in range(k):
        seen = False
        for u in range(t):
            if cands[c, u] == cands[c, t]:
                seen = True
                break
        if not seen:
            n += 1
    return n


@njit(cache=True, nogil=True)
def _cscore(cands, c, k, node_item, child_start, child_end, gcount):
    """c-score of candidate c: Σ, over the distinct one-deletion subsequences of c that are
    g-nodes of the sub-trie, of their remaining children (``gcount``)."""
    score = 0
    for t in range(k):
        if t > 0 and cands[c, t] == cands[c, t - 1]:
            continue  # deleting t or t − 1 gives the same subsequence
        node = 0
        ok = True
        for j in range(k):
            if j == t:
                continue
            x = cands[c, j]
            lo = child_start[node]
            hi = child_end[node]
            end = hi
            while lo < hi:
                mid = (lo + hi) >> 1
                if node_item[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == end or node_item[lo] != x:
                ok = False
                break
            node = lo
        if ok:
            score += gcount[node]
    return score


@njit(cache=True, nogil=True)
def _better(cands, k, a, score_a, b, score_b):
    """Is candidate a (c-score score_a) preferred to b: higher c-score, then more distinct
    items, then lexicographically smaller."""
    if score_a != score_b:
        return score_a > score_b
    da, db = _n_distinct(cands, a, k), _n_distinct(cands, b, k)
    if da != db:
        return da > db
    for t in range(k):
        if cands[a, t] != cands[b, t]:
            return cands[a, t] < cands[b, t]
    return False


@njit(cache=True, nogil=True)
def _select(cands, k, ctilde, m, rem, node_item, child_start, child_end, gcount):
    best = -1
    best_score = -1
    for i in range(m):
        c = ctilde[i]
        if not rem[c]:
            continue
        sc = _cscore(cands, c, k, node_item, child_start, child_end, gcount)
        if best < 0 or _better(cands, k, c, sc, best, best_score):
            best = c
            best_score = sc
    return best


@njit(cache=True, nogil=True)
def _append(x, out, n_out, glist, ng, gmatch, grep, cands, k):
    """Append item x to Ŝ and advance every g-node's greedy match."""
    out[n_out] = x
    for i in range(ng):
        g = glist[i]
        mt = gmatch[g]
        if mt < k - 1 and cands[grep[g], mt] == x:
            gmatch[g] = mt + 1
    return n_out + 1


@njit(cache=True, nogil=True)
def _reconstruct(buf, n, k, lmax, cands, node_item, child_start, child_end, node_parent,  # noqa: C901, PLR0912
                 leaf_cand, cand_leaf, n_items, cnt, first, pos, distinct, stk_node, stk_pos,
                 stk_it, ctilde, rem, gcount, gmatch, grep, glist, icount, itouched, out):
    """Sequence reconstruction (Xu et al. 2015, Algorithm 2) of ``buf[:n]`` into ``out``.

    Builds Ŝ from the candidates C̃ the record contains: first the candidate of highest
    c-score; then, while |Ŝ| < lmax, the item that completes the most remaining candidates
    whose generating (k−1)-sequence Ŝ already contains (ties: the smaller item code), or,
    if there is none, a whole remaining candidate of highest c-score. Returns |Ŝ|, which
    can exceed lmax by up to k − 1 (the caller truncates in strict mode).
    """
    nd = _index_record(buf, np.int64(0), n, cnt, first, pos, distinct)
    m = _contained(node_item, child_start, child_end, leaf_cand, k, cnt, first, pos, distinct,
                   nd, ctilde, stk_node, stk_pos, stk_it)
    _clear_index(cnt, distinct, nd)
    if m == 0:
        return 0
    ng = 0
    for i in range(m):
        c = ctilde[i]
        rem[c] = True
        g = node_parent[cand_leaf[c]]
        if gcount[g] == 0:
            glist[ng] = g
            grep[g] = c
            ng += 1
        gcount[g] += 1
    n_out = 0
    best = _select(cands, k, ctilde, m, rem, node_item, child_start, child_end, gcount)
    for t in range(k):
        n_out = _append(cands[best, t], out, n_out, glist, ng, gmatch, grep, cands, k)
    rem[best] = False
    gcount[node_parent[cand_leaf[best]]] -= 1
    while n_out < lmax:
        total = 0
        for i in range(ng):
            g = glist[i]
            if gmatch[g] == k - 1:
                total += gcount[g]
        if total > 0:
            nt = 0
            for i in range(m):
                c = ctilde[i]
                if rem[c] and gmatch[node_parent[cand_leaf[c]]] == k - 1:
                    x = cands[c, k - 1]
                    if icount[x] == 0:
                        itouched[nt] = x
                        nt += 1
                    icount[x] += 1
            bx = -1
            bcount = 0
            for j in range(nt):
                x = itouched[j]
                if icount[x] > bcount or (icount[x] == bcount and x < bx):
                    bx = x
                    bcount = icount[x]
            for j in range(nt):
                icount[itouched[j]] = 0
            for i in range(m):
                c = ctilde[i]
                if rem[c] and cands[c, k - 1] == bx:
                    g = node_parent[cand_leaf[c]]
                    if gmatch[g] == k - 1:
                        rem[c] = False
                        gcount[g] -= 1
            n_out = _append(bx, out, n_out, glist, ng, gmatch, grep, cands, k)
        else:
            best = _select(cands, k, ctilde, m, rem, node_item, child_start, child_end, gcount)
            if best < 0:
                break
            for t in range(k):
                n_out = _append(cands[best, t], out, n_out, glist, ng, gmatch, grep, cands, k)
            rem[best] = False
            gcount[node_parent[cand_leaf[best]]] -= 1
    for i in range(m):
        rem[ctilde[i]] = False
    for i in range(ng):
        g = glist[i]
        gcount[g] = 0
        gmatch[g] = 0
    return n_out


@njit(cache=True, nogil=True)
def reconstruct_record(record, k, lmax, cands, node_item, child_start, child_end, node_parent,
                       leaf_cand, cand_leaf, n_items):
    """Algorithm 2 on one record, untruncated (a new array); for tests and teaching."""
    n = record.shape[0]
    n_cand = cands.shape[0]
    n_nodes = node_item.shape[0]
    cnt = np.zeros(n_items, dtype=np.int64)
    first = np.zeros(n_items, dtype=np.int64)
    pos = np.empty(max(n, 1), dtype=np.int64)
    distinct = np.empty(max(min(n, n_items), 1), dtype=np.int32)
    stk_node = np.empty(k + 1, dtype=np.int64)
    stk_pos = np.empty(k + 1, dtype=np.int64)
    stk_it = np.empty(k + 1, dtype=np.int64)
    ctilde = np.empty(max(n_cand, 1), dtype=np.int64)
    rem = np.zeros(max(n_cand, 1), dtype=np.bool_)
    gcount = np.zeros(n_nodes, dtype=np.int64)
    gmatch = np.zeros(n_nodes, dtype=np.int64)
    grep = np.zeros(n_nodes, dtype=np.int64)
    glist = np.empty(max(n_cand, 1), dtype=np.int64)
    icount = np.zeros(n_items, dtype=np.int64)
    itouched = np.empty(n_items, dtype=np.int32)
    out = np.empty(lmax + k, dtype=np.int32)
    m = _reconstruct(record, n, k, lmax, cands, node_item, child_start, child_end,
                     node_parent, leaf_cand, cand_leaf, n_items, cnt, first, pos, distinct,
                     stk_node, stk_pos, stk_it, ctilde, rem, gcount, gmatch, grep, glist,
                     icount, itouched, out)
    return out[:m].copy()


@njit(cache=True, nogil=True)
def shrink_records_kernel(indptr, items, n_items, relevant, k, lmax, truncate, cands,
                          node_item, child_start, child_end, node_parent, leaf_cand,
                          cand_leaf):
    """Sequence shrinking (Xu et al. 2015, §V-A) of every record longer than lmax.

    For each record longer than ``lmax``: (1) delete the items in no candidate
    (``relevant[x]`` False); (2) while still longer than lmax, compress consecutive
    patterns of 1, 2, then 3 items repeated more than k times to k copies; (3) if still
    longer, rebuild it by Algorithm 2 and, when ``truncate``, cut it to lmax items.
    Steps 1–2 are lossless (every candidate a record contains, it still contains).
    Records of length ≤ lmax are kept as they are.

    Returns
    -------
    (indptr, items, stats)
        The shrunk records (same number, same order) and int64 stats: records longer than
        lmax, records rebuilt by Algorithm 2, rebuilt records longer than lmax before
        truncation, items removed in all.
    """
    n_rec = indptr.shape[0] - 1
    maxlen = max(_max_length(indptr), 1)
    n_cand = cands.shape[0]
    n_nodes = node_item.shape[0]
    new_indptr = np.zeros(n_rec + 1, dtype=np.int64)
    # Untruncated (faithful), Algorithm 2 may rebuild a record longer than lmax into up to
    # lmax + k − 1 items, k − 1 more than it had: room for that, or the writes below would
    # run past the array (numba does not check bounds).
    n_long = 0
    if not truncate:
        for r in range(n_rec):
            if indptr[r + 1] - indptr[r] > lmax:
                n_long += 1
    new_items = np.empty(items.shape[0] + n_long * max(k - 1, 0), dtype=np.int32)
    buf = np.empty(maxlen, dtype=np.int32)
    tmp = np.empty(maxlen, dtype=np.int32)
    cnt = np.zeros(n_items, dtype=np.int64)
    first = np.zeros(n_items, dtype=np.int64)
    pos = np.empty(maxlen, dtype=np.int64)
    distinct = np.empty(max(min(maxlen, n_items), 1), dtype=np.int32)
    stk_node = np.empty(k + 1, dtype=np.int64)
    stk_pos = np.empty(k + 1, dtype=np.int64)
    stk_it = np.empty(k + 1, dtype=np.int64)
    ctilde = np.empty(max(n_cand, 1), dtype=np.int64)
    rem = np.zeros(max(n_cand, 1), dtype=np.bool_)
    gcount = np.zeros(n_nodes, dtype=np.int64)
    gmatch = np.zeros(n_nodes, dtype=np.int64)
    grep = np.zeros(n_nodes, dtype=np.int64)
    glist = np.empty(max(n_cand, 1), dtype=np.int64)
    icount = np.zeros(n_items, dtype=np.int64)
    itouched = np.empty(n_items, dtype=np.int32)
    out = np.empty(lmax + k, dtype=np.int32)
    stats = np.zeros(4, dtype=np.int64)
    top = 0
    for r in range(n_rec):
        s, e = indptr[r], indptr[r + 1]
        if e - s <= lmax:
            for p in range(s, e):
                new_items[top] = items[p]
                top += 1
            new_indptr[r + 1] = top
            continue
        stats[0] += 1
        n = 0
        for p in range(s, e):
            if relevant[items[p]]:
                buf[n] = items[p]
                n += 1
        for period in range(1, 4):
            if n <= lmax:
                break
            n = _compress(buf, n, period, k, tmp)
            # A loop, not buf[:n] = tmp[:n]: numba compiles a slice assignment's shape
            # check with string formatting (seconds of cold start, issue 32).
            for i in range(n):
                buf[i] = tmp[i]
        if n > lmax:
            stats[1] += 1
            n = _reconstruct(buf, n, k, lmax, cands, node_item, child_start, child_end,
                             node_parent, leaf_cand, cand_leaf, n_items, cnt, first, pos,
                             distinct, stk_node, stk_pos, stk_it, ctilde, rem, gcount,
                             gmatch, grep, glist, icount, itouched, out)
            if n > lmax:
                stats[2] += 1
                if truncate:
                    n = lmax
            for p in range(n):
                new_items[top] = out[p]
                top += 1
        else:
            for p in range(n):
                new_items[top] = buf[p]
                top += 1
        stats[3] += (e - s) - n
        new_indptr[r + 1] = top
    return new_indptr, new_items[:top].copy(), stats


# --------------------------------------------------------------------------- prefix projection

@njit(cache=True, nogil=True)
def build_occurrence_runs(indptr, items, n_items):
    """Per record, one run per distinct item (ascending item code) with its positions.

    Returns ``(run_ptr, run_item, run_bound, run_pos)``: the runs of record r are
    ``run_ptr[r]:run_ptr[r + 1]``; run j is item ``run_item[j]`` at the record positions
    ``run_pos[run_bound[j]:run_bound[j + 1]]`` (ascending, relative to the record start).
    """
    n_rec = indptr.shape[0] - 1
    maxlen = max(_max_length(indptr), 1)
    cnt = np.zeros(n_items, dtype=np.int64)
    cursor = np.zeros(n_items, dtype=np.int64)
    distinct = np.empty(max(min(maxlen, n_items), 1), dtype=np.int32)
    run_ptr = np.zeros(n_rec + 1, dtype=np.int64)
    for r in range(n_rec):
        nd = 0
        for p in range(indptr[r], indptr[r + 1]):
            it = items[p]
            if cnt[it] == 0:
                distinct[nd] = it
                nd += 1
            cnt[it] += 1
        for j in range(nd):
            cnt[distinct[j]] = 0
        run_ptr[r + 1] = run_ptr[r] + nd
    n_runs = run_ptr[n_rec]
    run_item = np.empty(n_runs, dtype=np.int32)
    run_bound = np.zeros(n_runs + 1, dtype=np.int64)
    run_pos = np.empty(items.shape[0], dtype=np.int32)
    for r in range(n_rec):
        s, e = indptr[r], indptr[r + 1]
        nd = 0
        for p in range(s, e):
            it = items[p]
            if cnt[it] == 0:
                distinct[nd] = it
                nd += 1
            cnt[it] += 1
        if nd <= 64:
            for a in range(1, nd):  # insertion sort of the few distinct items
                x = distinct[a]
                b = a - 1
                while b >= 0 and distinct[b] > x:
                    distinct[b + 1] = distinct[b]
                    b -= 1
                distinct[b + 1] = x
        else:
            ordered = np.sort(distinct[:nd])
            for a in range(nd):                 # a loop: see the note in the trimming above
                distinct[a] = ordered[a]
        off = s
        j0 = run_ptr[r]
        for j in range(nd):
            it = distinct[j]
            run_item[j0 + j] = it
            run_bound[j0 + j] = off
            cursor[it] = off
            off += cnt[it]
        for p in range(s, e):
            it = items[p]
            run_pos[cursor[it]] = p - s
            cursor[it] += 1
        for j in range(nd):
            cnt[distinct[j]] = 0
    run_bound[n_runs] = items.shape[0]
    return run_ptr, run_item, run_bound, run_pos


@njit(cache=True, nogil=True)
def _run_next(run_ptr, run_item, run_start, run_end, run_pos, r, x, q):
    """First position of item x after position q in record r (−1 if none)."""
    lo = run_ptr[r]
    hi = run_ptr[r + 1]
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_item[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo == end or run_item[lo] != x:
        return -1
    a = run_start[lo]
    b = run_end[lo]
    stop = b
    while a < b:
        mid = (a + b) >> 1
        if run_pos[mid] <= q:
            a = mid + 1
        else:
            b = mid
    if a == stop:
        return -1
    return run_pos[a]


@njit(cache=True, nogil=True)
def _lower_bound(arr, lo, hi, x):
    """First index in [lo, hi) with arr[index] ≥ x (hi if none); arr ascending there."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def count_supports_runs(indptr, run_ptr, run_item, run_bound, run_pos, node_item, child_start,
                        child_end, leaf_cand, k, n_cand):
    """:func:`count_supports` on records indexed once by :func:`build_occurrence_runs`.

    At each trie node the node's children and the record's distinct items (both sorted by
    item) are merged, skipping ahead by binary search, so neither a large alphabet nor a
    long record is scanned item by item. Same result as :func:`count_supports`.
    """
    counts = np.zeros(n_cand, dtype=np.int64)
    stk_node = np.empty(k + 1, dtype=np.int64)
    stk_pos = np.empty(k + 1, dtype=np.int64)
    stk_c = np.empty(k + 1, dtype=np.int64)
    stk_j = np.empty(k + 1, dtype=np.int64)
    for r in range(indptr.shape[0] - 1):
        if indptr[r + 1] - indptr[r] < k:
            continue
        rs, re = run_ptr[r], run_ptr[r + 1]
        depth = 0
        stk_node[0] = 0
        stk_pos[0] = -1
        stk_c[0] = child_start[0]
        stk_j[0] = rs
        while depth >= 0:
            ce = child_end[stk_node[depth]]
            c, j = stk_c[depth], stk_j[depth]
            matched = False
            while c < ce and j < re:
                a, b = node_item[c], run_item[j]
                if a < b:
                    c = _lower_bound(node_item, c + 1, ce, np.int64(b))
                elif a > b:
                    j = _lower_bound(run_item, j + 1, re, np.int64(a))
                else:
                    matched = True
                    break
            if not matched:
                depth -= 1
                continue
            stk_c[depth], stk_j[depth] = c + 1, j + 1
            q = stk_pos[depth]
            hi = run_bound[j + 1]
            if run_pos[hi - 1] <= q:
                continue
            p = run_pos[_lower_bound(run_pos, run_bound[j], hi, q + 1)]
            if depth + 1 == k:
                counts[leaf_cand[c]] += 1
            else:
                depth += 1
                stk_node[depth] = c
                stk_pos[depth] = p
                stk_c[depth] = child_start[c]
                stk_j[depth] = rs
    return counts


@njit(cache=True, nogil=True)
def _extension_counts(run_ptr, run_item, run_start, run_end, run_pos, proj_rec, proj_pos, a, b,
                      cnt, touched):
    """For the projected records [a, b): cnt[x] = how many have item x after their position."""
    nt = 0
    for e in range(a, b):
        r = proj_rec[e]
        q = proj_pos[e]
        for j in range(run_ptr[r], run_ptr[r + 1]):
            if run_pos[run_end[j] - 1] > q:
                x = run_item[j]
                if cnt[x] == 0:
                    touched[nt] = x
                    nt += 1
                cnt[x] += 1
    return nt


@njit(cache=True, nogil=True)
def _runs_of_items(run_ptr, run_item, run_bound, keep):
    """The runs of the items with ``keep[item]``: (ptr, item, start, end) per record."""
    n_rec = run_ptr.shape[0] - 1
    ptr = np.zeros(n_rec + 1, dtype=np.int64)
    for r in range(n_rec):
        c = 0
        for j in range(run_ptr[r], run_ptr[r + 1]):
            if keep[run_item[j]]:
                c += 1
        ptr[r + 1] = ptr[r] + c
    item = np.empty(ptr[n_rec], dtype=np.int32)
    start = np.empty(ptr[n_rec], dtype=np.int64)
    end = np.empty(ptr[n_rec], dtype=np.int64)
    t = 0
    for j in range(run_ptr[n_rec]):
        if keep[run_item[j]]:
            item[t] = run_item[j]
            start[t] = run_bound[j]
            end[t] = run_bound[j + 1]
            t += 1
    return ptr, item, start, end


@njit(cache=True, nogil=True)
def _grow_i64(arr, need):
    if need <= arr.shape[0]:
        return arr
    new = np.empty(max(need, 2 * arr.shape[0]), dtype=arr.dtype)
    for i in range(arr.shape[0]):      # a loop: cheaper to compile than a slice copy
        new[i] = arr[i]
    return new


@njit(cache=True, nogil=True)
def _grow_i32(arr, need):
    if need <= arr.shape[0]:
        return arr
    new = np.empty(max(need, 2 * arr.shape[0]), dtype=arr.dtype)
    for i in range(arr.shape[0]):      # a loop: cheaper to compile than a slice copy
        new[i] = arr[i]
    return new


# The two searches below walk the same tree of prefix projections: a node is a prefix, its
# projection the (record, position of the prefix's greedy match) pairs of the records
# containing it, kept on one stack (``proj_rec``/``proj_pos``); a node's frequent children
# are kept on a second stack (``ch_items``/``ch_cnt``). The helpers are that shared walk;
# each search keeps only its own decision per child (emit or stop; bound or prune).

@njit(cache=True, nogil=True)
def _root_projection(indptr, min_length):
    """The root's projection: every record of at least ``min_length`` items, matched before
    its first position. Returns ``(proj_rec, proj_pos, n_root)`` (the stacks, with room)."""
    n_rec = indptr.shape[0] - 1
    cap = max(16, 2 * n_rec)
    proj_rec = np.empty(cap, dtype=np.int64)
    proj_pos = np.empty(cap, dtype=np.int64)
    top = 0
    for r in range(n_rec):
        if indptr[r + 1] - indptr[r] >= min_length:
            proj_rec[top] = r
            proj_pos[top] = -1
            top += 1
    return proj_rec, proj_pos, top


@njit(cache=True, nogil=True)
def _frequent_item_runs(run_ptr, run_item, run_bound, run_pos, proj_rec, proj_pos, n_root,
                        n_items, min_support):
    """The runs (:func:`_runs_of_items`) of the items whose support in the root's projection
    ``[0, n_root)`` is ≥ min_support: every item of a frequent sequence is frequent."""
    all_items = np.ones(n_items, dtype=np.bool_)
    f_ptr, f_item, f_start, f_end = _runs_of_items(run_ptr, run_item, run_bound, all_items)
    cnt = np.zeros(n_items, dtype=np.int64)
    touched = np.empty(n_items, dtype=np.int32)
    nt = _extension_counts(f_ptr, f_item, f_start, f_end, run_pos, proj_rec, proj_pos,
                           np.int64(0), n_root, cnt, touched)
    keep = np.zeros(n_items, dtype=np.bool_)
    for t in range(nt):
        if cnt[touched[t]] >= min_support:
            keep[touched[t]] = True
    return _runs_of_items(run_ptr, run_item, run_bound, keep)


@njit(cache=True, nogil=True)
def _push_children(f_ptr, f_item, f_start, f_end, run_pos, proj_rec, proj_pos, a, b, cnt,
                   touched, min_support, ch_items, ch_cnt, ch_top, by_support):
    """Push the frequent children of the node whose projection is [a, b) onto the child
    stack, in decreasing support (``by_support``) or increasing item code (stable).

    ``cnt`` must be zero on entry and is zero on return. Returns ``(ch_items, ch_cnt,
    ch_top)`` (the stacks may have grown); the children are ``[old ch_top, ch_top)``.
    """
    nt = _extension_counts(f_ptr, f_item, f_start, f_end, run_pos, proj_rec, proj_pos,
                           a, b, cnt, touched)
    ch_items = _grow_i32(ch_items, ch_top + nt)
    ch_cnt = _grow_i64(ch_cnt, ch_top + nt)
    start = ch_top
    for t in range(nt):
        x = touched[t]
        if cnt[x] >= min_support:
            ch_items[ch_top] = x
            ch_cnt[ch_top] = cnt[x]
            ch_top += 1
        cnt[x] = 0
    nch = ch_top - start
    if nch > 1:
        if by_support:
            order = np.argsort(-ch_cnt[start:ch_top], kind="mergesort")
        else:
            order = np.argsort(ch_items[start:ch_top], kind="mergesort")
        its = ch_items[start:ch_top].copy()
        cns = ch_cnt[start:ch_top].copy()
        for t in range(nch):
            ch_items[start + t] = its[order[t]]
            ch_cnt[start + t] = cns[order[t]]
    return ch_items, ch_cnt, ch_top


@njit(cache=True, nogil=True)
def _project(indptr, f_ptr, f_item, f_start, f_end, run_pos, proj_rec, proj_pos, a, b, top,
             x, s, needed):
    """Push the projection on item x of the node whose projection is [a, b) (x's support
    there is s) onto the projection stack from ``top``: each record holding x after its
    position, matched at x's first occurrence there, if at least ``needed`` items follow
    that occurrence (0: every such record). Returns ``(proj_rec, proj_pos, new top)``."""
    need = top + s
    if need > proj_rec.shape[0]:
        proj_rec = _grow_i64(proj_rec, need)
        proj_pos = _grow_i64(proj_pos, need)
    for e in range(a, b):
        r = proj_rec[e]
        q = _run_next(f_ptr, f_item, f_start, f_end, run_pos, r, x, proj_pos[e])
        if q >= 0 and indptr[r + 1] - indptr[r] - 1 - q >= needed:
            proj_rec[top] = r
            proj_pos[top] = q
            top += 1
    return proj_rec, proj_pos, top


@njit(cache=True, nogil=True)
def _append_pattern(out_ptr, out_items, out_sup, n_pat, prefix, length, s):
    """Write pattern ``prefix[:length]`` (support s) as pattern n_pat; returns the (maybe
    grown) ``(out_ptr, out_items, out_sup)``."""
    out_ptr = _grow_i64(out_ptr, n_pat + 2)
    out_sup = _grow_i64(out_sup, n_pat + 1)
    out_items = _grow_i32(out_items, out_ptr[n_pat] + length)
    for t in range(length):
        out_items[out_ptr[n_pat] + t] = prefix[t]
    out_sup[n_pat] = s
    out_ptr[n_pat + 1] = out_ptr[n_pat] + length
    return out_ptr, out_items, out_sup


@njit(cache=True, nogil=True)
def prefix_search(indptr, run_ptr, run_item, run_bound, run_pos, n_items, min_support,
                  max_length, stop_length):
    """Depth-first search of the sequences with support ≥ min_support (PrefixSpan style,
    pseudo-projection).

    Parameters
    ----------
    indptr : the CSR record boundaries; run_* : :func:`build_occurrence_runs`.
    min_support : int
        In records, ≥ 1.
    max_length : int
        Longest sequence searched (items, ≥ 1).
    stop_length : int
        If > 0: existence mode — stop at the first sequence of this length with support ≥
        min_support (children are tried in decreasing support, so a long frequent sequence
        is found quickly) and emit nothing. Records too short to complete a sequence of
        this length from where they match are dropped from the projections (exact: they
        cannot contain it). If 0: enumerate every frequent sequence up to
        max_length.

    Returns
    -------
    (found, pattern_ptr, pattern_items, supports)
        ``found``: existence mode's answer (enumeration: whether any sequence was found);
        the patterns ``pattern_items[pattern_ptr[i]:pattern_ptr[i + 1]]`` with their exact
        supports (enumeration mode; empty in existence mode).
    """
    depth_cap = max_length + 1
    # existence mode: a record shorter than stop_length cannot hold the sequence
    proj_rec, proj_pos, n_root = _root_projection(indptr, stop_length)
    f_ptr, f_item, f_start, f_end = _frequent_item_runs(run_ptr, run_item, run_bound, run_pos,
                                                        proj_rec, proj_pos, n_root, n_items,
                                                        min_support)
    seg_a = np.zeros(depth_cap, dtype=np.int64)
    seg_b = np.zeros(depth_cap, dtype=np.int64)
    ch_a = np.zeros(depth_cap, dtype=np.int64)
    ch_b = np.zeros(depth_cap, dtype=np.int64)
    ch_i = np.zeros(depth_cap, dtype=np.int64)
    prefix = np.zeros(depth_cap, dtype=np.int32)
    ch_items = np.empty(max(16, n_items), dtype=np.int32)
    ch_cnt = np.empty(max(16, n_items), dtype=np.int64)
    cnt = np.zeros(n_items, dtype=np.int64)
    touched = np.empty(n_items, dtype=np.int32)
    out_ptr = np.zeros(1024, dtype=np.int64)
    out_items = np.empty(1024, dtype=np.int32)
    out_sup = np.empty(1024, dtype=np.int64)
    n_pat, found, ch_top, top = 0, False, 0, n_root
    seg_a[0], seg_b[0] = 0, n_root
    depth = 0
    while depth >= 0:
        # expand the node at `depth`: its frequent children
        start = ch_top
        ch_items, ch_cnt, ch_top = _push_children(
            f_ptr, f_item, f_start, f_end, run_pos, proj_rec, proj_pos, seg_a[depth],
            seg_b[depth], cnt, touched, min_support, ch_items, ch_cnt, ch_top, stop_length > 0)
        ch_a[depth], ch_b[depth], ch_i[depth] = start, ch_top, start
        # advance to the next child to expand, popping exhausted nodes
        while depth >= 0:
            if ch_i[depth] == ch_b[depth]:
                ch_top = ch_a[depth]
                top = seg_a[depth] if depth > 0 else n_root
                depth -= 1
                continue
            c = ch_i[depth]
            ch_i[depth] = c + 1
            x, s, length = ch_items[c], ch_cnt[c], depth + 1
            prefix[depth] = x
            if stop_length > 0:
                if length == stop_length:
                    return True, out_ptr[:1].copy(), out_items[:0].copy(), out_sup[:0].copy()
            else:
                found = True
                out_ptr, out_items, out_sup = _append_pattern(out_ptr, out_items, out_sup,
                                                              n_pat, prefix, length, s)
                n_pat += 1
            if length >= max_length:
                continue
            needed = stop_length - length if stop_length > 0 else 0  # items still to match
            na = top
            proj_rec, proj_pos, top = _project(indptr, f_ptr, f_item, f_start, f_end, run_pos,
                                               proj_rec, proj_pos, seg_a[depth], seg_b[depth],
                                               top, x, s, needed)
            depth += 1
            seg_a[depth], seg_b[depth] = na, top
            break
    return found, out_ptr[:n_pat + 1].copy(), out_items[:out_ptr[n_pat]].copy(), \
        out_sup[:n_pat].copy()


@njit(cache=True, nogil=True)
def _subtree_bound(best, floor, length, s, max_length):
    """The smallest best support of a length beyond ``length`` (or ``floor`` where that is
    higher) that a subtree of root support s could raise; s itself if none is lower."""
    bound = s
    for y in range(length + 1, max_length + 1):
        if max(best[y], floor) < bound:
            bound = max(best[y], floor)
    return bound


@njit(cache=True, nogil=True)
def max_supports_by_length(indptr, run_ptr, run_item, run_bound, run_pos, n_items, min_support,
                           max_length):
    """β_y = the largest support of any y-sequence, for y = 1..max_length, where ≥ min_support.

    Branch and bound over prefix projections: children are tried in decreasing support, a
    child updates the best support of its length, and a subtree is entered only if its
    root's support exceeds the best (or min_support − 1) of some longer length — supports
    only decrease along a path, so nothing skipped could change a β.

    Returns
    -------
    numpy.ndarray of int64, shape (max_length + 1,)
        ``out[y]`` = β_y if β_y ≥ min_support, else 0 (``out[0]`` unused).
    """
    depth_cap = max_length + 1
    best = np.zeros(depth_cap, dtype=np.int64)
    floor = min_support - 1
    proj_rec, proj_pos, n_root = _root_projection(indptr, np.int64(0))
    f_ptr, f_item, f_start, f_end = _frequent_item_runs(run_ptr, run_item, run_bound, run_pos,
                                                        proj_rec, proj_pos, n_root, n_items,
                                                        min_support)
    seg_a = np.zeros(depth_cap, dtype=np.int64)
    seg_b = np.zeros(depth_cap, dtype=np.int64)
    ch_a = np.zeros(depth_cap, dtype=np.int64)
    ch_b = np.zeros(depth_cap, dtype=np.int64)
    ch_i = np.zeros(depth_cap, dtype=np.int64)
    ch_items = np.empty(max(16, n_items), dtype=np.int32)
    ch_cnt = np.empty(max(16, n_items), dtype=np.int64)
    cnt = np.zeros(n_items, dtype=np.int64)
    touched = np.empty(n_items, dtype=np.int32)
    ch_top, top = 0, n_root
    seg_a[0], seg_b[0] = 0, n_root
    depth = 0
    while depth >= 0:
        start = ch_top
        ch_items, ch_cnt, ch_top = _push_children(
            f_ptr, f_item, f_start, f_end, run_pos, proj_rec, proj_pos, seg_a[depth],
            seg_b[depth], cnt, touched, min_support, ch_items, ch_cnt, ch_top, np.bool_(True))
        ch_a[depth], ch_b[depth], ch_i[depth] = start, ch_top, start
        while depth >= 0:
            if ch_i[depth] == ch_b[depth]:
                ch_top = ch_a[depth]
                top = seg_a[depth] if depth > 0 else n_root
                depth -= 1
                continue
            c = ch_i[depth]
            x, s, length = ch_items[c], ch_cnt[c], depth + 1
            if s > best[length]:
                best[length] = s
            if length >= max_length or s <= _subtree_bound(best, floor, length, s, max_length):
                # siblings come in decreasing support: none of them can do better
                ch_i[depth] = ch_b[depth]
                continue
            ch_i[depth] = c + 1
            na = top
            proj_rec, proj_pos, top = _project(indptr, f_ptr, f_item, f_start, f_end, run_pos,
                                               proj_rec, proj_pos, seg_a[depth], seg_b[depth],
                                               top, x, s, np.int64(0))
            depth += 1
            seg_a[depth], seg_b[depth] = na, top
            break
    return best
