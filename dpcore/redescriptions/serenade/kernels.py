"""Numba kernels that score Serenade's candidates (quality f = J·σ(|E11|)).

Every candidate is a literal (a code range on one attribute,
:mod:`dpcore.redescriptions.serenade.literals`)
so all candidates of one attribute are scored from one pass over the rows: a
histogram of codes, prefix sums, then O(1) counts per code range.

* Initial pairs: for a pair of attributes (a on the left, b on the right), the
  joint code histogram gives |ℓa ∩ ℓb| of every literal pair as a rectangle sum.
* Extensions: for a redescription, each row's cell (E11/E10/E01/E00 as
  2·inL + inR) and a per-cell code histogram give |E11| and the union after
  ``q ∧ ℓ`` or ``q ∨ ℓ`` on either side.

The kernels return exact (private) scores and log-weights; they draw no noise
and charge nothing. :mod:`dpcore.redescriptions.serenade.miner` charges the accountant and
then draws
with :func:`dpcore.privacy.mechanisms.exponential_index`. Serial and ``nogil``: Streamlit
runs mining in threads, and ``parallel=True`` is unsafe there (guides).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dpcore.redescriptions.serenade.quality import quality

MISSING = 65535
#: Candidate blocks of one redescription's extension scores, in this order.
LEFT_AND, LEFT_OR, RIGHT_AND, RIGHT_OR = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def log_sum_exp(scores, factor):
    """log Σ exp(factor·s) over finite scores (−inf entries skipped); −inf if none."""
    top = -np.inf
    for s in scores:
        if s > top:
            top = s
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for s in scores:
        if s != -np.inf:
            total += math.exp(factor * (s - top))
    return factor * top + math.log(total)


@njit(cache=True, nogil=True)
def code_counts(codes, n_codes):
    """Cumulative code counts: ``out[c] = #rows with code < c`` (MISSING excluded)."""
    out = np.zeros(n_codes + 1, dtype=np.int64)
    for r in range(codes.shape[0]):
        c = int(codes[r])
        if c != MISSING:
            out[c + 1] += 1
    for c in range(n_codes):
        out[c + 1] += out[c]
    return out


@njit(cache=True, nogil=True)
def literal_span_rows(codes, lo, hi):
    """Rows whose code lies in [min lo, max hi]: the only rows any of the literals covers.

    For a Boolean attribute (one literal, code 1) these are the rows where it is
    true, so the joint histograms of :func:`_pair_scores_on_rows` touch a fraction
    of the rows.
    """
    first, last = lo.min(), hi.max()
    n = 0
    for r in range(codes.shape[0]):
        c = int(codes[r])
        if c != MISSING and first <= c <= last:
            n += 1
    rows = np.empty(n, dtype=np.int64)
    n = 0
    for r in range(codes.shape[0]):
        c = int(codes[r])
        if c != MISSING and first <= c <= last:
            rows[n] = r
            n += 1
    return rows


@njit(cache=True, nogil=True)
def span_row_index(codes, n_codes, attr_start, lo, hi):
    """Per attribute, the rows its literals can cover, when that is not every row.

    Returns ``(span_start, span_end, span_rows)``: a narrow attribute a (its
    literals miss some codes, e.g. a Boolean's only literal is code 1) has rows
    ``span_rows[span_start[a]:span_end[a]]``; any other has ``span_start[a] = −1``
    ("scan every row"), which keeps the index small.
    """
    n_attr = attr_start.shape[0] - 1
    span_start = np.full(n_attr, -1, dtype=np.int64)
    span_end = np.full(n_attr, -1, dtype=np.int64)
    narrow = np.zeros(n_attr, dtype=np.bool_)
    total = 0
    for a in range(n_attr):
        k0, k1 = attr_start[a], attr_start[a + 1]
        if k1 > k0 and (lo[k0:k1].min() > 0 or hi[k0:k1].max() < n_codes[a] - 1):
            narrow[a] = True
            total += literal_span_rows(codes[a], lo[k0:k1], hi[k0:k1]).shape[0]
    span_rows = np.empty(total, dtype=np.int64)
    at = 0
    for a in range(n_attr):
        if narrow[a]:
            k0, k1 = attr_start[a], attr_start[a + 1]
            rows = literal_span_rows(codes[a], lo[k0:k1], hi[k0:k1])
            for i in range(rows.shape[0]):     # a loop: cheaper to compile than a slice copy
                span_rows[at + i] = rows[i]
            span_start[a], span_end[a] = at, at + rows.shape[0]
            at += rows.shape[0]
    return span_start, span_end, span_rows


@njit(cache=True, nogil=True)
def _pair_scores_on_rows(rows_a, codes_a, n_codes_a, lo_a, hi_a, count_a,
                         codes_b, n_codes_b, lo_b, hi_b, count_b, steepness, x0, out):
    """:func:`pair_scores` given a's span rows and both attributes' cumulative counts."""
    na, nb = n_codes_a, n_codes_b + 1
    hist = np.zeros((na, nb), dtype=np.int64)
    for r in rows_a:
        cb = int(codes_b[r])
        hist[int(codes_a[r]), n_codes_b if cb == MISSING else cb] += 1
    cum = np.zeros((na + 1, nb + 1), dtype=np.int64)   # cum[i, j] = Σ hist[:i, :j]
    for i in range(na):
        for j in range(nb):
            cum[i + 1, j + 1] = hist[i, j] + cum[i, j + 1] + cum[i + 1, j] - cum[i, j]
    len_b = lo_b.shape[0]
    for i in range(lo_a.shape[0]):
        a0, a1 = lo_a[i], hi_a[i] + 1
        size_a = count_a[a1] - count_a[a0]
        for j in range(len_b):
            b0, b1 = lo_b[j], hi_b[j] + 1
            size_b = count_b[b1] - count_b[b0]
            e11 = cum[a1, b1] - cum[a0, b1] - cum[a1, b0] + cum[a0, b0]
            out[i * len_b + j] = quality(e11, size_a + size_b - e11, steepness, x0)


@njit(cache=True, nogil=True)
def pair_scores(codes_a, n_codes_a, lo_a, hi_a, codes_b, n_codes_b, lo_b, hi_b,
                steepness, x0, out):
    """Quality of every literal pair of one attribute pair, into ``out`` (len_a·len_b).

    ``out[i·len_b + j]`` scores (literal i of a, literal j of b). |ℓa ∩ ℓb| comes
    from a joint code histogram over the rows any literal of a covers (a
    rectangle sum per pair); |ℓa| and |ℓb| from each attribute's own counts.
    """
    _pair_scores_on_rows(literal_span_rows(codes_a, lo_a, hi_a), codes_a, n_codes_a, lo_a,
                         hi_a, code_counts(codes_a, n_codes_a), codes_b, n_codes_b, lo_b, hi_b,
                         code_counts(codes_b, n_codes_b), steepness, x0, out)


@njit(cache=True, nogil=True)
def pair_group_log_weights(codes_l, n_codes_l, attr_start_l, lo_l, hi_l,
                           codes_r, n_codes_r, attr_start_r, lo_r, hi_r,
                           steepness, x0, factor):
    """log Σ exp(factor·f) over all literal pairs of each (left a, right b) group.

    Returns an array of shape (n_attr_l·n_attr_r,), group a·n_attr_r + b; −inf
    for a group without literals. Sampling a group ∝ exp(log-weight) and then a
    pair inside it ∝ exp(factor·f) is exactly one exponential-mechanism draw
    over all pairs.
    """
    n_l, n_r = attr_start_l.shape[0] - 1, attr_start_r.shape[0] - 1
    out = np.full(n_l * n_r, -np.inf)
    longest = 0
    for a in range(n_l):
        for b in range(n_r):
            size = (attr_start_l[a + 1] - attr_start_l[a]) * (attr_start_r[b + 1]
                                                             - attr_start_r[b])
            longest = max(longest, size)
    buf = np.empty(longest)
    counts_r = []
    for b in range(n_r):
        counts_r.append(code_counts(codes_r[b], n_codes_r[b]))
    for a in range(n_l):
        la0, la1 = attr_start_l[a], attr_start_l[a + 1]
        if la1 == la0:
            continue
        rows_a = literal_span_rows(codes_l[a], lo_l[la0:la1], hi_l[la0:la1])
        count_a = code_counts(codes_l[a], n_codes_l[a])
        for b in range(n_r):
            lb0, lb1 = attr_start_r[b], attr_start_r[b + 1]
            if lb1 == lb0:
                continue
            size = (la1 - la0) * (lb1 - lb0)
            view = buf[:size]
            _pair_scores_on_rows(rows_a, codes_l[a], n_codes_l[a], lo_l[la0:la1],
                                 hi_l[la0:la1], count_a, codes_r[b], n_codes_r[b],
                                 lo_r[lb0:lb1], hi_r[lb0:lb1], counts_r[b], steepness, x0, view)
            out[a * n_r + b] = log_sum_exp(view, factor)
    return out


@njit(cache=True, nogil=True)
def row_cells(in_left, in_right):
    """Each row's cell 2·inL + inR (3 = E11, 2 = E10, 1 = E01, 0 = E00) and the cell sizes."""
    n = in_left.shape[0]
    cells = np.empty(n, dtype=np.uint8)
    sizes = np.zeros(4, dtype=np.int64)
    for r in range(n):
        c = 2 * int(in_left[r]) + int(in_right[r])
        cells[r] = c
        sizes[c] += 1
    return cells, sizes


@njit(cache=True, nogil=True)
def _side_scores(codes, n_codes, attr_start, lo, hi, span_start, span_end, span_rows, used,
                 allow_and, allow_or, side, cells, sizes, steepness, x0, out, and_offset,
                 or_offset):
    n11, n10, n01 = sizes[3], sizes[2], sizes[1]
    union_now = n11 + n10 + n01
    # Cell indices in the formulas below, for the side being extended (s) and the other (o):
    # AND: |E11'| = Σ E11 in ℓ; union' = |q_o| + Σ (in q_s only) in ℓ.
    # OR:  |E11'| = |E11| + Σ (in q_o only) in ℓ; union' = |E1∪| + Σ E00 in ℓ.
    s_only = 2 if side == 0 else 1
    o_only = 1 if side == 0 else 2
    other_size = n11 + (n01 if side == 0 else n10)
    n_attr = attr_start.shape[0] - 1
    for a in range(n_attr):
        k0, k1 = attr_start[a], attr_start[a + 1]
        if k1 == k0:
            continue
        if used[a] or not (allow_and or allow_or):
            for k in range(k0, k1):
                out[and_offset + k] = -np.inf
                out[or_offset + k] = -np.inf
            continue
        nc = n_codes[a]
        cum = np.zeros((4, nc + 1), dtype=np.int64)
        row = codes[a]
        if span_start[a] >= 0:
            for i in range(span_start[a], span_end[a]):  # only rows a literal can cover
                r = span_rows[i]
                cum[cells[r], int(row[r]) + 1] += 1
        else:
            for r in range(row.shape[0]):
                c = int(row[r])
                if c != MISSING:
                    cum[cells[r], c + 1] += 1
        for cell in range(4):
            for c in range(nc):
                cum[cell, c + 1] += cum[cell, c]
        for k in range(k0, k1):
            l0, l1 = lo[k], hi[k] + 1
            if allow_and:
                e11 = cum[3, l1] - cum[3, l0]
                union = other_size + cum[s_only, l1] - cum[s_only, l0]
                out[and_offset + k] = quality(e11, union, steepness, x0)
            else:
                out[and_offset + k] = -np.inf
            if allow_or:
                e11 = n11 + cum[o_only, l1] - cum[o_only, l0]
                union = union_now + cum[0, l1] - cum[0, l0]
                out[or_offset + k] = quality(e11, union, steepness, x0)
            else:
                out[or_offset + k] = -np.inf


@njit(cache=True, nogil=True)
def extension_scores(codes_l, n_codes_l, attr_start_l, lo_l, hi_l, span_l, used_l,
                     codes_r, n_codes_r, attr_start_r, lo_r, hi_r, span_r, used_r,
                     allow, in_left, in_right, steepness, x0):
    """Quality of every extension of one redescription, plus "no change" last.

    ``span_l`` / ``span_r`` (:func:`span_row_index` of each side) list the rows
    a narrow attribute's literals can cover, so a Boolean attribute's histogram
    reads only the rows where it is true.

    Layout: [left ∧ ℓ (n_l) | left ∨ ℓ (n_l) | right ∧ ℓ (n_r) | right ∨ ℓ (n_r) |
    unchanged]; −inf marks a disallowed extension (attribute already in that
    query, or ``allow[block]`` false: a structural rule of the released query).
    """
    n_l, n_r = lo_l.shape[0], lo_r.shape[0]
    out = np.empty(2 * n_l + 2 * n_r + 1)
    cells, sizes = row_cells(in_left, in_right)
    _side_scores(codes_l, n_codes_l, attr_start_l, lo_l, hi_l, span_l[0], span_l[1], span_l[2],
                 used_l, allow[0], allow[1], np.int64(0), cells, sizes, steepness, x0, out,
                 np.int64(0), n_l)
    _side_scores(codes_r, n_codes_r, attr_start_r, lo_r, hi_r, span_r[0], span_r[1], span_r[2],
                 used_r, allow[2], allow[3], np.int64(1), cells, sizes, steepness, x0, out, 2 * n_l,
                 2 * n_l + n_r)
    out[2 * n_l + 2 * n_r] = quality(sizes[3], sizes[3] + sizes[2] + sizes[1], steepness, x0)
    return out
