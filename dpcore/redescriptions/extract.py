"""Redescriptions from a pair of released trees and their noisy counts (extractReds, steps 2-7).

This module is the part of extractReds (Algorithm 6, docs/ALGORITHMS.md §2.7) that runs AFTER
the noisy counts have been drawn by the caller:

* strict mode: one noisy leaf×leaf contingency table ``ñ_ij ≈ |A_i ∩ B_j|``;
  the marginals ``|A_i|~ = Σ_j ñ_ij``, ``|B_j|~ = Σ_i ñ_ij`` and ``Ñ = Σ ñ_ij``
  are sums of that table;
* faithful mode: the same table plus separately noised marginals
  ``noisy_left``, ``noisy_right`` and ``noisy_n`` (as in the paper's code).

Everything here is **post-processing of DP noisy counts**: it reads no data,
only the released noisy counts and the released tree structures, so it costs
no privacy budget (post-processing theorem of differential privacy).

Terms
-----
A literal is a leaf ``A_i`` or its negation ``¬A_i``; ``¬A_i`` is counted as
the union of the *other* leaves of the same tree (rows with a missing value in
a split attribute reach no leaf, so this is not the complement of ``A_i`` in
the data). A query is a disjunction of literals, kept internally as a Boolean
mask over the tree's leaves: ``|qL|~ = Σ_{i∈S_L} |A_i|~`` and
``|E11|~ = Σ_{i∈S_L, j∈S_R} ñ_ij``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.redescriptions.results import (
    Condition,
    Literal,
    Redescription,
    TreeQuery,
    TreeRecord,
)
from dpcore.registry import FAITHFUL, STRICT

__all__ = [
    "marg_pvalues",
    "extract_redescriptions",
    "noisy_query_statistics",
    "query_mask",
    "literal_text",
    "query_text",
]

#: J must grow by more than this to accept an extension (guards float round-off).
_J_TOL = 1e-12
#: Candidate cells (seeds × 2·leaves) per vectorised block: bounds memory for big trees.
_BLOCK_CELLS = 1_000_000


# --------------------------------------------------------------------------- statistics

def _clip_stats(ql, qr, e11, n):
    """Clip raw noisy sums and derive the Jaccard index (vectorised).

    Parameters
    ----------
    ql, qr, e11 : array_like
        Raw (unclipped) noisy sums |qL|, |qR|, |E11|; broadcastable.
    n : float
        Noisy row count Ñ, already clipped to ≥ 0.

    Returns
    -------
    ql, qr, e11, jaccard : ndarray
        ``ql, qr, e11`` clipped to [0, Ñ] with ``e11 ≤ min(ql, qr)``;
        ``jaccard = e11 / (ql + qr − e11)`` (0 where the union is ≤ 0).
    """
    ql = np.clip(np.asarray(ql, dtype=np.float64), 0.0, n)
    qr = np.clip(np.asarray(qr, dtype=np.float64), 0.0, n)
    e11 = np.clip(np.asarray(e11, dtype=np.float64), 0.0, n)
    e11 = np.minimum(e11, np.minimum(ql, qr))
    union = ql + qr - e11
    positive = union > 0
    jac = np.where(positive, e11 / np.where(positive, union, 1.0), 0.0)
    return ql, qr, e11, jac


def marg_pvalues(ql, qr, e11, n):
    """Binomial "marg" p-value P[X ≥ |E11|], X ~ Bin(Ñ, |qL|·|qR|/Ñ²) (vectorised).

    Inputs are clipped statistics (see :func:`_clip_stats`). ``|E11|`` and ``Ñ``
    are rounded to the nearest integer (``numpy.rint``, half to even, like
    Python's ``round``). p = 1 where ``|qL|·|qR| = 0`` or ``Ñ < 1``.

    For 1 ≤ k ≤ N, P[X ≥ k] is the regularized incomplete beta I_p(k, N − k + 1)
    (``scipy.special.betainc``, the same Boost routine behind ``scipy.stats.binom.sf``,
    equal to it to the last bit on a grid of N ≤ 200,000). ``scipy.special`` is imported
    here, on first use, because ``scipy.stats`` costs a command-line ``mine`` about half
    a second of start-up.
    """
    from scipy.special import betainc

    ql, qr, e11 = (np.asarray(a, dtype=np.float64) for a in (ql, qr, e11))
    shape = np.broadcast(ql, qr, e11).shape
    if n < 1:
        return np.ones(shape)
    prod = ql * qr
    pr = np.clip(prod / (n * n), 0.0, 1.0)
    k, trials = np.rint(e11), float(np.rint(n))
    tail = betainc(np.maximum(k, 1.0), np.maximum(trials - k + 1.0, 1.0), pr)
    p = np.where(k <= 0, 1.0, np.where(k > trials, 0.0, tail))
    p = np.where(prod > 0, p, 1.0)
    return np.clip(np.broadcast_to(p, shape).astype(np.float64), 0.0, 1.0)


@dataclass(frozen=True)
class _Counts:
    """Noisy counts in the form the search uses (all float64)."""

    table: np.ndarray   # m × k noisy cells
    left: np.ndarray    # m noisy |A_i|
    right: np.ndarray   # k noisy |B_j|
    n: float            # noisy Ñ clipped to ≥ 0


def _counts(table, noisy_left, noisy_right, noisy_n) -> _Counts:
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError(f"noisy_table must be a 2-D array (left leaves × right leaves); "
                         f"got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("noisy_table must hold finite numbers only")
    given = [x is not None for x in (noisy_left, noisy_right, noisy_n)]
    if not any(given):  # strict mode: marginals by summing the table (post-processing)
        return _Counts(t, t.sum(axis=1), t.sum(axis=0), max(float(t.sum()), 0.0))
    if not all(given):
        raise ValueError("faithful mode needs noisy_left, noisy_right and noisy_n together; "
                         "strict mode passes none of them")
    left = np.asarray(noisy_left, dtype=np.float64).reshape(-1)
    right = np.asarray(noisy_right, dtype=np.float64).reshape(-1)
    if left.shape != (t.shape[0],) or right.shape != (t.shape[1],):
        raise ValueError(f"noisy_left/noisy_right must have lengths {t.shape[0]} and "
                         f"{t.shape[1]} (the table's shape); got {left.shape[0]} and "
                         f"{right.shape[0]}")
    n = float(noisy_n)
    if not (np.all(np.isfinite(left)) and np.all(np.isfinite(right)) and np.isfinite(n)):
        raise ValueError("noisy marginals and noisy_n must be finite numbers")
    return _Counts(t, left, right, max(n, 0.0))


def _as_mask(mask, size: int, name: str) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.dtype != np.bool_ or arr.shape != (size,):
        raise ValueError(f"{name} must be a Boolean array of length {size}; "
                         f"got dtype {arr.dtype} and shape {arr.shape}")
    return arr


def noisy_query_statistics(table, left_mask, right_mask, noisy_left=None, noisy_right=None,
                           noisy_n=None) -> tuple[float, float, float, float, float]:
    """Noisy statistics of one redescription given as two leaf masks.

    Pure post-processing of released noisy counts: costs no privacy budget.

    Parameters
    ----------
    table : array_like, shape (m, k)
        Noisy contingency table, ``table[i, j] ≈ |A_i ∩ B_j|``.
    left_mask : array_like of bool, shape (m,)
        Left leaves the left query covers.
    right_mask : array_like of bool, shape (k,)
        Right leaves the right query covers.
    noisy_left, noisy_right : array_like, shape (m,) and (k,), optional
        Faithful mode: separately noised leaf sizes. Default (strict): row and
        column sums of ``table``.
    noisy_n : float, optional
        Faithful mode: separately noised row count. Default: ``table.sum()``.

    Returns
    -------
    support_left, support_right, support_both, jaccard, pvalue : float
        ``|qL|``, ``|qR|``, ``|E11|`` clipped to [0, Ñ] (Ñ clipped to ≥ 0) with
        ``|E11| ≤ min(|qL|, |qR|)``; Jaccard ``|E11| / (|qL| + |qR| − |E11|)``
        (0 when the union is ≤ 0); p-value ``P[X ≥ round(|E11|)]`` for
        ``X ~ Binomial(round(Ñ), |qL|·|qR|/Ñ²)`` (1 when ``|qL|·|qR| = 0`` or
        ``Ñ < 1``).
    """
    c = _counts(table, noisy_left, noisy_right, noisy_n)
    sl = _as_mask(left_mask, c.table.shape[0], "left_mask")
    sr = _as_mask(right_mask, c.table.shape[1], "right_mask")
    ql, qr, e11, jac = _clip_stats(c.left[sl].sum(), c.right[sr].sum(),
                                   c.table[np.ix_(sl, sr)].sum(), c.n)
    p = marg_pvalues(ql, qr, e11, c.n)
    return float(ql), float(qr), float(e11), float(jac), float(p)


# --------------------------------------------------------------------------- queries

def query_mask(n_leaves: int, literals) -> np.ndarray:
    """Boolean mask of the leaves a disjunction of literals covers.

    ``Literal(i)`` covers leaf ``i``; ``Literal(i, negated=True)`` covers every
    other leaf of the same tree.

    Parameters
    ----------
    n_leaves : int
        Number of leaves of the tree.
    literals : iterable of Literal

    Returns
    -------
    ndarray of bool, shape (n_leaves,)
    """
    mask = np.zeros(n_leaves, dtype=bool)
    for lit in literals:
        if not 0 <= lit.leaf < n_leaves:
            raise ValueError(f"literal leaf {lit.leaf} outside 0..{n_leaves - 1}")
        if lit.negated:
            other = np.ones(n_leaves, dtype=bool)
            other[lit.leaf] = False
            mask |= other
        else:
            mask[lit.leaf] = True
    return mask


def _negated_condition_text(c: Condition) -> str:
    if c.op == "is":
        return Condition(c.attribute, "is", not c.value).text()
    if c.op == "<=":
        return Condition(c.attribute, ">", c.value).text()
    if c.op == ">":
        return Condition(c.attribute, "<=", c.value).text()
    if c.op == "=":
        return f"[{c.attribute} ≠ {c.value}]"
    return f"¬{c.text()}"


def literal_text(tree: TreeRecord, literal: Literal, *, in_disjunction: bool = False) -> str:
    """Readable text of one literal.

    A leaf renders as its path conjunction (``[DX_CHF] ∧ [LAB_BNP > 400]``),
    parenthesised when it has several parts and ``in_disjunction`` is true. A
    negated leaf with a single condition renders as that condition negated
    (``[X]`` → ``¬[X]``, ``[A ≤ v]`` → ``[A > v]``, ``[A = c]`` → ``[A ≠ c]``);
    otherwise as ``¬[...]`` (one rendered part) or ``¬(...)``. The text is for
    display only: the literal's meaning is "the union of the other leaves",
    which leaves out rows with a missing value in a split attribute.
    """
    conditions = tree.leaf_conditions[literal.leaf]
    text = tree.leaf_text(literal.leaf)
    several = " ∧ " in text
    if not literal.negated:
        return f"({text})" if several and in_disjunction else text
    if len(conditions) == 1:
        return _negated_condition_text(conditions[0])
    if not conditions:
        return "⊥"
    return f"¬({text})" if several else f"¬{text}"


def query_text(tree: TreeRecord, literals) -> str:
    """Readable disjunction ``lit_1 ∨ lit_2 ∨ ...`` (see :func:`literal_text`)."""
    literals = tuple(literals)
    multi = len(literals) > 1
    return " ∨ ".join(literal_text(tree, lit, in_disjunction=multi) for lit in literals)


def _simplify(literals: list[Literal], n_leaves: int) -> list[Literal]:
    """Drop literals the others already cover (e.g. ``A_i`` next to ``¬A_c``)."""
    lits = list(literals)
    target = query_mask(n_leaves, lits)
    k = 0
    while k < len(lits) and len(lits) > 1:
        rest = lits[:k] + lits[k + 1:]
        if np.array_equal(query_mask(n_leaves, rest), target):
            lits = rest
        else:
            k += 1
    return lits


# --------------------------------------------------------------------------- search

class _Side:
    """State of one side's queries for a block of R seeds (vectorised)."""

    def __init__(self, n_leaves: int, rows: int, max_literals: int):
        self.mask = np.zeros((rows, n_leaves), dtype=bool)
        self.used = np.zeros((rows, n_leaves), dtype=bool)
        self.lit_leaf = np.full((rows, max_literals), -1, dtype=np.int64)
        self.lit_neg = np.zeros((rows, max_literals), dtype=bool)
        self.n_lit = np.zeros(rows, dtype=np.int64)
        self.raw = np.zeros(rows)  # raw (unclipped) noisy |q|

    def add(self, rows: np.ndarray, leaf: np.ndarray, negated: np.ndarray,
            raw: np.ndarray) -> None:
        pos_rows, pos_leaf = rows[~negated], leaf[~negated]
        self.mask[pos_rows, pos_leaf] = True
        neg_rows, neg_leaf = rows[negated], leaf[negated]
        self.mask[neg_rows] = True
        self.mask[neg_rows, neg_leaf] = False
        self.used[rows, leaf] = True
        self.lit_leaf[rows, self.n_lit[rows]] = leaf
        self.lit_neg[rows, self.n_lit[rows]] = negated
        self.n_lit[rows] += 1
        self.raw[rows] = raw


def _extend_side(this: _Side, other: _Side, e11_raw: np.ndarray, jac: np.ndarray,
                 marg: np.ndarray, cross: np.ndarray, c: _Counts, pval: float,
                 max_e11: float, this_is_left: bool, after: np.ndarray | None = None) -> None:
    """Add to ``this`` side, per seed, the admissible literal with the largest J gain.

    ``cross`` is the table oriented this-side × other-side. Updates ``this``,
    ``e11_raw`` and ``jac`` in place for the seeds that were extended.
    ``after`` (faithful mode): per seed, only leaves with a larger index are candidates
    (the paper's code extends the seed of leaf pair (i, j) with leaves i+1, … and j+1, …).
    """
    m = this.mask.shape[1]
    v = other.mask.astype(np.float64) @ cross.T           # R × m: Σ_{j∈other} ñ_cj
    vtot = v.sum(axis=1)
    free = ~this.used & ~this.mask
    if after is not None:
        free &= np.arange(m)[None, :] > after[:, None]
    # Any addition must change the mask without covering every leaf (tautology);
    # both fail once the mask already covers m − 1 leaves.
    free &= (this.mask.sum(axis=1) < m - 1)[:, None]
    q_pos = this.raw[:, None] + marg[None, :]
    e_pos = e11_raw[:, None] + v
    q_neg = np.broadcast_to(marg.sum() - marg[None, :], free.shape)
    e_neg = vtot[:, None] - v
    q_new = np.concatenate([q_pos, q_neg], axis=1)        # R × 2m: [A_c | ¬A_c]
    e_new = np.concatenate([e_pos, e_neg], axis=1)
    q_oth = np.broadcast_to(other.raw[:, None], q_new.shape)
    if this_is_left:
        ql, qr, e11, j_new = _clip_stats(q_new, q_oth, e_new, c.n)
    else:
        ql, qr, e11, j_new = _clip_stats(q_oth, q_new, e_new, c.n)
    ok = np.concatenate([free, free], axis=1) & (e11 <= max_e11) & (j_new > jac[:, None] + _J_TOL)
    score = np.where(ok, j_new, -np.inf)
    active = np.flatnonzero(ok.any(axis=1))
    while active.size:
        best = np.argmax(score[active], axis=1)
        p = marg_pvalues(ql[active, best], qr[active, best], e11[active, best], c.n)
        good = p <= pval
        rows, cols = active[good], best[good]
        if rows.size:
            leaf, negated = cols % m, cols >= m
            this.add(rows, leaf, negated, q_new[rows, cols])
            e11_raw[rows] = e_new[rows, cols]
            jac[rows] = j_new[rows, cols]
        bad_rows, bad_cols = active[~good], best[~good]
        score[bad_rows, bad_cols] = -np.inf
        active = bad_rows[np.isfinite(score[bad_rows]).any(axis=1)]


def _seeds(c: _Counts, pval: float, max_e11: float):
    """Best sign combination per leaf pair (step 4): arrays over the admissible pairs.

    Returns ``(i, j, neg_left, neg_right, ql_raw, qr_raw, e11_raw, jaccard)``.
    """
    t, lft, r = c.table, c.left, c.right
    row, col, tot = t.sum(axis=1), t.sum(axis=0), t.sum()
    lpos, lneg = lft[:, None], lft.sum() - lft[:, None]
    rpos, rneg = r[None, :], r.sum() - r[None, :]
    # combos in preference order on ties: (A,B), (¬A,B), (A,¬B), (¬A,¬B)
    shape = t.shape
    ql = np.stack([np.broadcast_to(a, shape) for a in (lpos, lneg, lpos, lneg)])
    qr = np.stack([np.broadcast_to(a, shape) for a in (rpos, rpos, rneg, rneg)])
    e = np.stack([t, col[None, :] - t, row[:, None] - t,
                  tot - row[:, None] - col[None, :] + t])
    ql_c, qr_c, e_c, jac = _clip_stats(ql, qr, e, c.n)
    ok = e_c <= max_e11
    p = np.ones_like(jac)
    p[ok] = marg_pvalues(ql_c[ok], qr_c[ok], e_c[ok], c.n)
    ok &= p <= pval
    score = np.where(ok, jac, -np.inf)
    best = np.argmax(score, axis=0)                       # m × k
    ii, jj = np.nonzero(np.take_along_axis(ok, best[None], axis=0)[0])
    combo = best[ii, jj]
    pick = (combo, ii, jj)
    return (ii, jj, combo % 2 == 1, combo >= 2, ql[pick], qr[pick], e[pick], jac[pick])


def _search(c: _Counts, params):
    """Steps 1-3 of :func:`extract_redescriptions` on noisy counts, block by block.

    Yields ``(left, right, (ql, qr, e11, j, p), keep)`` per block of seeds: the two sides'
    :class:`_Side` state, the clipped statistics of every seed's final query pair and the
    Boolean ``keep`` of step 3 (Γ and no tautology). Post-processing only.
    """
    m, k = c.table.shape
    if m < 2 or k < 2:
        return  # one leaf covers every row of its tree: every query is a tautology
    pval = float(params.max_pvalue)
    max_e11 = float(params.max_support) * c.n
    n_lit = max(int(params.max_clauses), 1)
    faithful = getattr(params, "mode", STRICT) == FAITHFUL

    ii, jj, neg_l, neg_r, ql_raw, qr_raw, e11_raw, jac = _seeds(c, pval, max_e11)
    chunk = max(64, _BLOCK_CELLS // (2 * max(m, k)))
    for start in range(0, ii.size, chunk):
        block = slice(start, start + chunk)
        rows = np.arange(ii[block].size)
        left, right = _Side(m, rows.size, n_lit), _Side(k, rows.size, n_lit)
        left.add(rows, ii[block], neg_l[block], ql_raw[block])
        right.add(rows, jj[block], neg_r[block], qr_raw[block])
        e_raw, j_cur = e11_raw[block].copy(), jac[block].copy()
        after_l = ii[block] if faithful else None
        after_r = jj[block] if faithful else None
        for _ in range(n_lit - 1):
            _extend_side(left, right, e_raw, j_cur, c.left, c.table, c, pval, max_e11, True,
                         after_l)
            _extend_side(right, left, e_raw, j_cur, c.right, c.table.T, c, pval, max_e11,
                         False, after_r)
        ql, qr, e11, j = _clip_stats(left.raw, right.raw, e_raw, c.n)
        p = marg_pvalues(ql, qr, e11, c.n)
        cap = max_e11
        keep = ((j >= params.min_jaccard) & (p <= pval) & (e11 >= params.min_support)
                & (e11 <= cap) & (ql < cap) & (qr < cap))
        lcount, rcount = left.mask.sum(axis=1), right.mask.sum(axis=1)
        keep &= (lcount > 0) & (lcount < m) & (rcount > 0) & (rcount < k)
        yield left, right, (ql, qr, e11, j, p), keep


def released_query_masks(noisy_table, *, noisy_left=None, noisy_right=None, noisy_n=None,
                         params) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The leaf masks and statistics :func:`extract_redescriptions` would release (fast).

    The same search, filters and de-duplication by leaf masks, without the literals and
    texts (for simulations that need only which query pairs pass and their noisy values,
    e.g. :mod:`dpcore.redescriptions.intervals`). Post-processing only: 0 ε.

    Returns
    -------
    left_masks : ndarray of bool, shape (R, m)
    right_masks : ndarray of bool, shape (R, k)
    stats : ndarray, shape (R, 5)
        ``support_left, support_right, support_both, jaccard, pvalue`` per released pair,
        in the order :func:`extract_redescriptions` releases them.
    """
    c = _counts(noisy_table, noisy_left, noisy_right, noisy_n)
    m, k = c.table.shape
    lm, rm, st = [], [], []
    for left, right, stats, keep in _search(c, params):
        idx = np.flatnonzero(keep)
        lm.append(left.mask[idx])
        rm.append(right.mask[idx])
        st.append(np.stack([np.asarray(x)[idx] for x in stats], axis=1))
    if not lm:
        return np.zeros((0, m), bool), np.zeros((0, k), bool), np.zeros((0, 5))
    lm_all, rm_all, st_all = np.concatenate(lm), np.concatenate(rm), np.concatenate(st)
    key = np.concatenate([lm_all, rm_all], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    first.sort()
    return lm_all[first], rm_all[first], st_all[first]


def extract_redescriptions(noisy_table, *, noisy_left=None, noisy_right=None, noisy_n=None,
                           params, left_tree: TreeRecord, right_tree: TreeRecord,
                           left_tree_index: int, right_tree_index: int, trial: int, step: int,
                           extraction: int, first_id: int = 0) -> list[Redescription]:
    """Redescriptions from two released trees and their noisy counts (docs/ALGORITHMS.md
    §2.7, steps 2-7).

    Everything here is post-processing of DP noisy counts and costs no privacy
    budget; the caller draws (and pays for) the noise.

    Notes
    -----
    1. For each leaf pair (i, j) take the best of the four sign combinations
       ``(A_i | ¬A_i) × (B_j | ¬B_j)``: the largest noisy Jaccard among those
       with ``p ≤ max_pvalue`` and ``|E11| ≤ max_support·Ñ`` (ties: fewer
       negations first); a pair with no such combination gives nothing.
    2. Up to ``max_clauses − 1`` rounds, extend the left query and then the
       right query by one unused literal (a leaf, or its negation, whose leaf
       is not yet among that query's literals) with the largest J, accepted
       only if J strictly grows and ``p ≤ max_pvalue``,
       ``|E11| ≤ max_support·Ñ`` still hold. Additions that would not change
       the query's leaves or would make it cover every leaf are not tried.
    3. Keep those with ``J ≥ min_jaccard``, ``p ≤ max_pvalue``,
       ``min_support ≤ |E11| ≤ max_support·Ñ``, ``|qL|, |qR| < max_support·Ñ``.
    4. Drop tautologies (a side covering no leaf or every leaf) and duplicates
       (same pair of leaf masks, hence same statistics): the first in leaf-pair
       order keeps its place, written with the fewest negated literals.

    Parameters
    ----------
    noisy_table : array_like, shape (m, k)
        ``ñ_ij ≈ |A_i ∩ B_j|`` for left leaf i and right leaf j, already noised.
    noisy_left, noisy_right, noisy_n : optional
        Faithful mode only: separately noised ``|A_i|`` (length m), ``|B_j|``
        (length k) and ``N``; pass all three or none. Strict mode (none) uses
        the table's row sums, column sums and total.
    params : TreeParams
        Uses ``min_jaccard``, ``max_pvalue``, ``min_support``, ``max_support``
        and ``max_clauses`` (Γ).
    left_tree, right_tree : TreeRecord
        The released trees; their leaf counts must be m and k.
    left_tree_index, right_tree_index : int
        Indices of the trees in ``RunResult.trees`` (stored in each TreeQuery).
    trial, step, extraction : int
        Provenance stored in each Redescription.
    first_id : int
        Id of the first returned redescription; the others follow in order.

    Returns
    -------
    list of Redescription
        In leaf-pair order of their seeds. Supports, Jaccard and p-value are
        the clipped noisy statistics (see :func:`noisy_query_statistics`).
    """
    c = _counts(noisy_table, noisy_left, noisy_right, noisy_n)
    m, k = c.table.shape
    if left_tree.n_leaves != m or right_tree.n_leaves != k:
        raise ValueError(f"noisy_table is {m}×{k} but the trees have {left_tree.n_leaves} "
                         f"and {right_tree.n_leaves} leaves")
    out: list[Redescription] = []
    chosen: dict[bytes, int] = {}
    kept: list[tuple[list[Literal], list[Literal], tuple]] = []
    for left, right, stats, keep in _search(c, params):
        ql, qr, e11, j, p = stats
        for r in np.flatnonzero(keep):
            lits_l = _simplify([Literal(int(a), bool(b)) for a, b in
                                zip(left.lit_leaf[r, :left.n_lit[r]],
                                    left.lit_neg[r, :left.n_lit[r]])], m)
            lits_r = _simplify([Literal(int(a), bool(b)) for a, b in
                                zip(right.lit_leaf[r, :right.n_lit[r]],
                                    right.lit_neg[r, :right.n_lit[r]])], k)
            stats = (float(ql[r]), float(qr[r]), float(e11[r]), float(j[r]), float(p[r]))
            key = left.mask[r].tobytes() + b"|" + right.mask[r].tobytes()
            rank = (sum(x.negated for x in lits_l + lits_r), len(lits_l) + len(lits_r))
            if key in chosen:
                pos = chosen[key]
                old_l, old_r, _ = kept[pos]
                old_rank = (sum(x.negated for x in old_l + old_r), len(old_l) + len(old_r))
                if rank < old_rank:
                    kept[pos] = (lits_l, lits_r, stats)
                continue
            chosen[key] = len(kept)
            kept.append((lits_l, lits_r, stats))

    for lits_l, lits_r, (ql, qr, e11, j, p) in kept:
        lq = TreeQuery(0, left_tree_index, tuple(lits_l),
                       tuple(int(x) for x in np.flatnonzero(query_mask(m, lits_l))),
                       query_text(left_tree, lits_l))
        rq = TreeQuery(1, right_tree_index, tuple(lits_r),
                       tuple(int(x) for x in np.flatnonzero(query_mask(k, lits_r))),
                       query_text(right_tree, lits_r))
        out.append(Redescription(first_id + len(out), lq, rq, ql, qr, e11, j, p,
                                 trial, step, extraction))
    return out
