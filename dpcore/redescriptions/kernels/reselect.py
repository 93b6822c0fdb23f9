"""extractReds' search (steps 1-3) on one noisy leaf × leaf table, as one numba kernel.

The bootstrap of :mod:`dpcore.redescriptions.intervals` re-runs extractReds on hundreds of
re-noised copies of a released table; the vectorised NumPy search of
:mod:`dpcore.redescriptions.extract` spends ~60 ms per 32 × 16 table in NumPy call
overhead (thousands of tiny ``betainc`` and ``clip`` calls), this kernel well under 1 ms.
It walks the same seeds in the same order, with the same candidate order, ties, clipping
and Γ tests, so on tables of whole numbers (every discrete-noise release; faithful mode
truncates) it keeps the same query pairs with the same statistics
(``tests/dpcore/redescriptions/kernels/test_reselect.py`` compares it with
:func:`~dpcore.redescriptions.extract.released_query_masks` on random tables). The
"marg" p-value comes from :func:`binomial_tail`, a continued fraction for the regularized
incomplete beta, equal to SciPy's to ~1e-12 at thousands of rows and ~1e-9 (relative) at
millions (log-gamma cancellation); a p-value that close to ``max_pvalue`` could be decided
the other way (a simulation only: releases never use this kernel).

Post-processing of released noisy counts only: reads no data, costs 0 ε.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: J must grow by more than this to accept an extension (as extract._J_TOL).
_J_TOL = 1e-12
_TINY = 1e-300


@njit(cache=True, nogil=True)
def _beta_cf(a, b, x):
    """Continued fraction of the incomplete beta (modified Lentz), converging for
    x < (a + 1)/(a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    for m in range(1, 100_000):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


@njit(cache=True, nogil=True)
def _betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b) for a, b ≥ 1, 0 ≤ x ≤ 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b


@njit(cache=True, nogil=True)
def binomial_tail(ql, qr, e11, n):
    """The "marg" p-value P[X ≥ rint(|E11|)], X ~ Bin(rint(Ñ), |qL|·|qR|/Ñ²), as
    :func:`dpcore.redescriptions.extract.marg_pvalues` for one clipped triple."""
    if n < 1.0:
        return 1.0
    prod = ql * qr
    if not prod > 0.0:
        return 1.0
    pr = min(max(prod / (n * n), 0.0), 1.0)
    k, trials = np.rint(e11), np.rint(n)
    if k <= 0.0:
        return 1.0
    if k > trials:
        return 0.0
    p = _betainc(max(k, 1.0), max(trials - k + 1.0, 1.0), pr)
    return min(max(p, 0.0), 1.0)


@njit(cache=True, nogil=True)
def tail_at_most(ql, qr, e11, n, pval):
    """Whether :func:`binomial_tail` ``≤ pval``, decided without the incomplete beta where a
    bound settles it (for 0 < pval < ½).

    At or below the mean (k ≤ ⌊N·p⌋, and the median is at least ⌊N·p⌋) the tail is at least
    ½; above it the Chernoff bound P[X ≥ k] ≤ exp(−N·KL(k/N ‖ p)) holds. Only when neither
    settles it is the tail computed. The bound is trusted only 10⁻⁹ below ``pval``, so
    round-off in it cannot flip a decision.
    """
    if n < 1.0 or not ql * qr > 0.0:
        return 1.0 <= pval
    k, trials = np.rint(e11), np.rint(n)
    if k <= 0.0:
        return 1.0 <= pval
    if k > trials:
        return True
    pr = min(max(ql * qr / (n * n), 0.0), 1.0)
    if 0.0 < pval < 0.5:
        if k <= math.floor(trials * pr):
            return False
        if 0.0 < pr < 1.0:
            a = k / trials
            kl = a * math.log(a / pr)
            if a < 1.0:
                kl += (1.0 - a) * math.log((1.0 - a) / (1.0 - pr))
            if -trials * kl < math.log(pval) - 1e-9:
                return True
    return binomial_tail(ql, qr, e11, n) <= pval


@njit(cache=True, nogil=True)
def _clip(ql, qr, e, n):
    """Clipped ``(ql, qr, e11, J)`` of raw sums, as ``extract._clip_stats``."""
    ql = min(max(ql, 0.0), n)
    qr = min(max(qr, 0.0), n)
    e = min(max(e, 0.0), n)
    e = min(e, min(ql, qr))
    union = ql + qr - e
    j = e / union if union > 0 else 0.0
    return ql, qr, e, j


@njit(cache=True, nogil=True)
def _combo(t, lft, rgt, row, col, tot, lsum, rsum, i, j, combo):
    """Raw ``(ql, qr, e11)`` of sign combination ``combo`` of leaf pair (i, j), in
    extract._seeds' order (A,B), (¬A,B), (A,¬B), (¬A,¬B)."""
    ql = lsum - lft[i] if combo % 2 == 1 else lft[i]
    qr = rsum - rgt[j] if combo >= 2 else rgt[j]
    if combo == 0:
        e = t[i, j]
    elif combo == 1:
        e = col[j] - t[i, j]
    elif combo == 2:
        e = row[i] - t[i, j]
    else:
        e = tot - row[i] - col[j] + t[i, j]
    return ql, qr, e


@njit(cache=True, nogil=True)
def _seed(t, lft, rgt, row, col, tot, lsum, rsum, i, j, n, pval, max_e11):
    """Best sign combination of leaf pair (i, j): ``(combo, ql, qr, e, J)`` raw sums and
    clipped J, combo −1 when none passes (extract._seeds).

    extract._seeds takes the largest J among the combinations that pass, ties to the lower
    index; trying them in that order and stopping at the first that passes gives the same
    one with one p-value instead of four.
    """
    tried = 0  # bit c: combination c is out (fails the support cap or was tried)
    for combo in range(4):
        ql, qr, e = _combo(t, lft, rgt, row, col, tot, lsum, rsum, i, j, combo)
        if _clip(ql, qr, e, n)[2] > max_e11:
            tried |= 1 << combo
    for _ in range(4):
        # np.int64(-1), not -1: numba would type the call below with Literal[int](-1) and
        # compile _combo a second time (same code, cold-start seconds).
        best, best_j = np.int64(-1), -np.inf
        for combo in range(4):
            if not tried & (1 << combo):
                ql, qr, e = _combo(t, lft, rgt, row, col, tot, lsum, rsum, i, j, combo)
                jac = _clip(ql, qr, e, n)[3]
                if jac > best_j:
                    best, best_j = combo, jac
        if best < 0:
            break
        ql, qr, e = _combo(t, lft, rgt, row, col, tot, lsum, rsum, i, j, best)
        qlc, qrc, ec, jac = _clip(ql, qr, e, n)
        if tail_at_most(qlc, qrc, ec, n, pval):
            return best, ql, qr, e, best_j
        tried |= 1 << best
    return -1, 0.0, 0.0, 0.0, 0.0


@njit(cache=True, nogil=True)
def _candidate(x, m, raw, state, v, vtot, marg, msum, o_raw, n, this_is_left):
    """Raw ``(q, e11)`` and clipped ``(ql, qr, e11, J)`` of adding literal ``x`` (leaf x for
    x < m, else the negation of leaf x − m) to one side."""
    c = x % m
    if x < m:
        q, e = raw[0] + marg[c], state[0] + v[c]
    else:
        q, e = msum - marg[c], vtot - v[c]
    if this_is_left:
        ql, qr, ec, jac = _clip(q, o_raw[0], e, n)
    else:
        ql, qr, ec, jac = _clip(o_raw[0], q, e, n)
    return q, e, ql, qr, ec, jac


@njit(cache=True, nogil=True)
def _extend(mask, used, raw, o_mask, o_raw, cross, marg, state, n, pval, max_e11, after,
            this_is_left, v, score):
    """Add to one side the admissible literal with the largest J gain (extract._extend_side
    for one seed). ``state`` = [e11 raw, J], updated in place."""
    m = mask.shape[0]
    count = 0
    for c in range(m):
        if mask[c]:
            count += 1
    if count >= m - 1:
        return
    for c in range(m):
        s = 0.0
        for jj in range(o_mask.shape[0]):
            if o_mask[jj]:
                s += cross[c, jj]
        v[c] = s
    vtot, msum = 0.0, 0.0  # sequential sums, as numba's a.sum() (see reselect)
    for c in range(m):
        vtot += v[c]
    for c in range(marg.shape[0]):
        msum += marg[c]
    for x in range(score.shape[0]):
        score[x] = -np.inf
    for x in range(2 * m):
        c = x % m
        if used[c] or mask[c] or c <= after:
            continue
        q, e, ql, qr, ec, jac = _candidate(x, m, raw, state, v, vtot, marg, msum, o_raw, n,
                                           this_is_left)
        if ec <= max_e11 and jac > state[1] + _J_TOL:
            score[x] = jac
    while True:
        best, best_j = np.int64(-1), -np.inf  # not a literal: one compile of _candidate
        for x in range(2 * m):
            if score[x] > best_j:
                best, best_j = x, score[x]
        if best < 0:
            return
        c = best % m
        q, e, ql, qr, ec, jac = _candidate(best, m, raw, state, v, vtot, marg, msum, o_raw, n,
                                           this_is_left)
        if tail_at_most(ql, qr, ec, n, pval):
            if best < m:
                mask[c] = True
            else:
                mask[:] = True
                mask[c] = False
            used[c] = True
            raw[0] = q
            state[0], state[1] = e, jac
            return
        score[best] = -np.inf


@njit(cache=True, nogil=True)
def _margins(table, left, right):
    """Row and column sums of ``table``, its total and the totals of ``left`` and ``right``.

    Loops, not ``table.sum(axis=…)``, ``table.sum()``, …: numba's axis check formats its
    error message, which compiles string formatting (seconds of cold start, issue 32), and
    each array type's sum is one more compiled function. numba sums sequentially from 0 in
    memory order; so do the loops, so every sum is the same bits."""
    m, k = table.shape
    row, col = np.zeros(m), np.zeros(k)
    tot, lsum, rsum = 0.0, 0.0, 0.0
    for i in range(m):
        for j in range(k):
            row[i] += table[i, j]
            tot += table[i, j]
    for j in range(k):
        for i in range(m):
            col[j] += table[i, j]
    for i in range(left.shape[0]):
        lsum += left[i]
    for j in range(right.shape[0]):
        rsum += right[j]
    return row, col, tot, lsum, rsum


@njit(cache=True, nogil=True)
def reselect(table, left, right, n, max_pvalue, max_support, min_jaccard, min_support,
             max_clauses, faithful):
    """The query pairs extractReds keeps from one noisy table, before de-duplication.

    Parameters
    ----------
    table : ndarray, shape (m, k)
        Noisy leaf × leaf counts (rows).
    left, right : ndarray, shapes (m,) and (k,)
        Noisy leaf sizes (strict: the table's row and column sums; faithful: separately
        noised).
    n : float
        Noisy Ñ clipped at 0 (rows).
    max_pvalue, max_support, min_jaccard, min_support, max_clauses, faithful
        Γ of the run (``max_support`` a share of Ñ, ``min_support`` rows); ``faithful``:
        the paper's code extends a seed with higher-index leaves only.

    Returns
    -------
    left_masks : ndarray of bool, shape (R, m)
    right_masks : ndarray of bool, shape (R, k)
    stats : ndarray, shape (R, 5)
        Clipped ``|qL|, |qR|, |E11|`` (rows), J and p of every kept seed in seed order
        (leaf pairs row-major), duplicates included.
    """
    m, k = table.shape
    if m < 2 or k < 2:
        return np.zeros((0, m), np.bool_), np.zeros((0, k), np.bool_), np.zeros((0, 5))
    row, col, tot, lsum, rsum = _margins(table, left, right)
    max_e11 = max_support * n
    n_lit = max(max_clauses, 1)
    out_l = np.zeros((m * k, m), np.bool_)
    out_r = np.zeros((m * k, k), np.bool_)
    stats = np.zeros((m * k, 5))
    tt = np.ascontiguousarray(table.T)
    kept = 0
    lmask, lused = np.zeros(m, np.bool_), np.zeros(m, np.bool_)
    rmask, rused = np.zeros(k, np.bool_), np.zeros(k, np.bool_)
    lraw, rraw, state = np.zeros(1), np.zeros(1), np.zeros(2)
    v, score = np.zeros(max(m, k)), np.zeros(2 * max(m, k))
    for i in range(m):
        for j in range(k):
            combo, ql, qr, e, jac = _seed(table, left, right, row, col, tot, lsum, rsum,
                                          i, j, n, max_pvalue, max_e11)
            if combo < 0:
                continue
            lmask[:] = False
            lused[:] = False
            rmask[:] = False
            rused[:] = False
            if combo % 2 == 1:
                lmask[:] = True
                lmask[i] = False
            else:
                lmask[i] = True
            if combo >= 2:
                rmask[:] = True
                rmask[j] = False
            else:
                rmask[j] = True
            lused[i], rused[j] = True, True
            lraw[0], rraw[0], state[0], state[1] = ql, qr, e, jac
            after_l, after_r = (i, j) if faithful else (-1, -1)
            for _ in range(n_lit - 1):
                _extend(lmask, lused, lraw, rmask, rraw, table, left, state, n, max_pvalue,
                        max_e11, after_l, np.bool_(True), v[:m], score[:2 * m])
                _extend(rmask, rused, rraw, lmask, lraw, tt, right, state, n, max_pvalue,
                        max_e11, after_r, np.bool_(False), v[:k], score[:2 * k])
            qlc, qrc, ec, jc = _clip(lraw[0], rraw[0], state[0], n)
            lc, rc = 0, 0
            for c in range(m):
                lc += lmask[c]
            for c in range(k):
                rc += rmask[c]
            if (jc >= min_jaccard and ec >= min_support
                    and ec <= max_e11 and qlc < max_e11 and qrc < max_e11
                    and 0 < lc < m and 0 < rc < k
                    and tail_at_most(qlc, qrc, ec, n, max_pvalue)):
                p = binomial_tail(qlc, qrc, ec, n)
                # Loops, not out_l[kept] = lmask: an array stored into a row compiles a
                # shape check whose error message brings in numba's string formatting
                # (about 4 s of cold compile, issue 32).
                for c in range(m):
                    out_l[kept, c] = lmask[c]
                for c in range(k):
                    out_r[kept, c] = rmask[c]
                stats[kept, 0], stats[kept, 1], stats[kept, 2] = qlc, qrc, ec
                stats[kept, 3], stats[kept, 4] = jc, p
                kept += 1
    return out_l[:kept].copy(), out_r[:kept].copy(), stats[:kept].copy()
