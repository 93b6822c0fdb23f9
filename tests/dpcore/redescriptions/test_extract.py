"""Tests of dpcore.redescriptions.extract: post-processing of noisy counts into redescriptions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from dpcore.redescriptions.extract import (
    extract_redescriptions,
    literal_text,
    noisy_query_statistics,
    query_mask,
    query_text,
)
from dpcore.redescriptions.params import TreeParams
from dpcore.redescriptions.results import Condition, Literal, TreeNode, TreeRecord

# --------------------------------------------------------------------------- helpers

def make_tree(leaf_conditions, *, view: int = 0, tree_id: int = 0) -> TreeRecord:
    """A released tree with the given leaves: a root with one child per leaf."""
    leaf_conditions = tuple(tuple(c) for c in leaf_conditions)
    m = len(leaf_conditions)
    if m == 1:
        nodes = (TreeNode(0, -1, 0, None, None, None, (), None, leaf=0),)
    else:
        root = TreeNode(0, -1, 0, "split", "multiway", None, tuple(range(1, m + 1)), None)
        nodes = (root,) + tuple(
            TreeNode(i + 1, 0, 1, None, None, None, (), conds[0] if conds else None, leaf=i)
            for i, conds in enumerate(leaf_conditions))
    return TreeRecord(tree_id, view, 0, 0, nodes, leaf_conditions)


def bool_tree(m: int, prefix: str = "L", view: int = 0) -> TreeRecord:
    return make_tree([(Condition(f"{prefix}{i}", "is", True),) for i in range(m)], view=view)


def run(table, params=None, *, left=None, right=None, **kw):
    table = np.asarray(table, dtype=float)
    m, k = table.shape
    return extract_redescriptions(
        table, params=params or TreeParams(),
        left_tree=left or bool_tree(m, "L"), right_tree=right or bool_tree(k, "R", 1),
        left_tree_index=kw.pop("left_tree_index", 3),
        right_tree_index=kw.pop("right_tree_index", 4),
        trial=kw.pop("trial", 1), step=kw.pop("step", 2), extraction=kw.pop("extraction", 5),
        **kw)


def exact_sf(e11: int, n: int, pr: Fraction) -> float:
    """P[X ≥ e11], X ~ Binomial(n, pr), summed exactly."""
    return float(sum(math.comb(n, x) * pr**x * (1 - pr)**(n - x) for x in range(e11, n + 1)))


def masks(r):
    return r.left.leaves, r.right.leaves


def brute_stats(table, lmask, rmask, left=None, right=None, n=None):
    """Statistics recomputed from scratch by loops (the test's own reference)."""
    t = np.asarray(table, dtype=float)
    m, k = t.shape
    left = t.sum(axis=1) if left is None else np.asarray(left, float)
    right = t.sum(axis=0) if right is None else np.asarray(right, float)
    n = max(t.sum() if n is None else float(n), 0.0)
    ql = sum(left[i] for i in range(m) if lmask[i])
    qr = sum(right[j] for j in range(k) if rmask[j])
    e = sum(t[i, j] for i in range(m) for j in range(k) if lmask[i] and rmask[j])
    ql, qr, e = (min(max(x, 0.0), n) for x in (ql, qr, e))
    e = min(e, ql, qr)
    union = ql + qr - e
    jac = e / union if union > 0 else 0.0
    if ql * qr == 0 or n < 1:
        p = 1.0
    else:
        p = float(binom.sf(round(e) - 1, round(n), min(max(ql * qr / n**2, 0.0), 1.0)))
    return ql, qr, e, jac, p


def gamma_ok(r, params, n):
    cap = params.max_support * n
    return (r.jaccard >= params.min_jaccard and r.pvalue <= params.max_pvalue
            and params.min_support <= r.support_both <= cap
            and r.support_left < cap and r.support_right < cap)


# --------------------------------------------------------------------------- statistics

def test_statistics_2x2_hand_computed():
    table = [[40, 10], [10, 40]]
    ql, qr, e, jac, p = noisy_query_statistics(table, [True, False], [True, False])
    assert (ql, qr, e) == (50, 50, 40)
    assert jac == pytest.approx(40 / 60)
    assert p == pytest.approx(exact_sf(40, 100, Fraction(1, 4)), rel=1e-9)
    # disjunction of both leaves on the left: the whole tree
    ql, qr, e, jac, p = noisy_query_statistics(table, [True, True], [True, False])
    assert (ql, qr, e) == (100, 50, 50)
    assert jac == pytest.approx(0.5)
    assert p == pytest.approx(exact_sf(50, 100, Fraction(1, 2)), rel=1e-9)  # ≈ 0.54


def test_pvalue_is_p_x_at_least_e11_not_greater():
    table = [[3, 1], [1, 5]]
    _, _, e, _, p = noisy_query_statistics(table, [True, False], [True, False])
    assert e == 3
    pr = Fraction(4 * 4, 10 * 10)
    assert p == pytest.approx(exact_sf(3, 10, pr), rel=1e-12)
    assert p > exact_sf(4, 10, pr)  # the Java quirk P[X > E11] would give this smaller value


def test_pvalue_rounds_fractional_noisy_counts():
    table = [[39.6, 10.2], [9.9, 40.3]]
    ql, qr, e, jac, p = noisy_query_statistics(table, [True, False], [True, False])
    n = 39.6 + 10.2 + 9.9 + 40.3
    assert ql == pytest.approx(49.8) and qr == pytest.approx(49.5) and e == pytest.approx(39.6)
    assert jac == pytest.approx(39.6 / (49.8 + 49.5 - 39.6))
    assert p == pytest.approx(binom.sf(40 - 1, 100, 49.8 * 49.5 / n**2), rel=1e-12)


def test_negation_is_union_of_other_leaves():
    assert query_mask(4, [Literal(1, True)]).tolist() == [True, False, True, True]
    assert query_mask(4, [Literal(1, True), Literal(2)]).tolist() == [True, False, True, True]
    assert query_mask(4, [Literal(0), Literal(3)]).tolist() == [True, False, False, True]
    assert query_mask(1, [Literal(0, True)]).tolist() == [False]
    # faithful marginals: |¬A_0| is the sum of the OTHER noisy leaf sizes, not Ñ − |A_0|
    table = np.array([[10.0, 5.0], [5.0, 20.0], [0.0, 10.0]])
    stats = noisy_query_statistics(table, query_mask(3, [Literal(0, True)]), [False, True],
                                   noisy_left=[14.0, 27.0, 9.0], noisy_right=[20.0, 33.0],
                                   noisy_n=60.0)
    assert stats[0] == 27.0 + 9.0
    assert stats[1] == 33.0
    assert stats[2] == 20.0 + 10.0


def test_strict_vs_faithful_marginals():
    table = [[40, 10], [10, 40]]
    strict = noisy_query_statistics(table, [True, False], [True, False])
    faithful = noisy_query_statistics(table, [True, False], [True, False],
                                      noisy_left=[60, 40], noisy_right=[50, 50], noisy_n=90)
    assert strict[:3] == (50, 50, 40)
    assert faithful[:3] == (60, 50, 40)
    assert faithful[3] == pytest.approx(40 / 70)
    assert faithful[4] == pytest.approx(binom.sf(39, 90, 60 * 50 / 90**2), rel=1e-12)
    with pytest.raises(ValueError, match="together"):
        noisy_query_statistics(table, [True, False], [True, False], noisy_left=[60, 40])


def test_clipping_of_negative_and_oversized_noisy_counts():
    # negative cell: |E11| clipped to 0 → J = 0
    table = [[-5.0, 20.0], [20.0, 30.0]]
    ql, qr, e, jac, p = noisy_query_statistics(table, [True, False], [True, False])
    assert (ql, qr, e, jac) == (15.0, 15.0, 0.0, 0.0)
    assert p == pytest.approx(1.0)
    # negative marginal: |qL| clipped to 0 → p = 1
    ql, qr, e, jac, p = noisy_query_statistics(
        [[3.0, 1.0], [1.0, 3.0]], [True, False], [True, False],
        noisy_left=[-2.0, 5.0], noisy_right=[4.0, 4.0], noisy_n=8.0)
    assert (ql, e, jac, p) == (0.0, 0.0, 0.0, 1.0)
    # |E11| larger than a marginal: E11 ≤ min(|qL|, |qR|); everything ≤ Ñ
    ql, qr, e, jac, p = noisy_query_statistics(
        [[20.0, 1.0], [1.0, 30.0]], [True, False], [True, False],
        noisy_left=[10.0, 40.0], noisy_right=[70.0, 20.0], noisy_n=50.0)
    assert (ql, qr, e) == (10.0, 50.0, 10.0)
    assert jac == pytest.approx(10 / 50)
    # negative total: Ñ clipped to 0, every count clipped to 0, p = 1
    assert noisy_query_statistics([[-3.0, 1.0], [1.0, -2.0]], [True, False],
                                  [False, True]) == (0.0, 0.0, 0.0, 0.0, 1.0)


def test_statistics_reject_bad_shapes():
    with pytest.raises(ValueError):
        noisy_query_statistics([1.0, 2.0], [True], [True])
    with pytest.raises(ValueError):
        noisy_query_statistics([[1.0, 2.0]], [True, False], [True, False])
    with pytest.raises(ValueError):
        noisy_query_statistics([[np.nan, 2.0]], [True], [True, False])


# --------------------------------------------------------------------------- simple reds

def test_simple_2x2_dedup_and_fields():
    params = TreeParams(max_clauses=1)
    reds = run([[40, 10], [10, 40]], params, first_id=7)
    # seeds (0,0)=(A0,B0) and (1,1)=(A1,B1); (0,1) picks ¬A0 ≡ A1, (1,0) picks ¬A1 ≡ A0:
    # duplicates of the first two, which are kept in their positive form.
    assert [masks(r) for r in reds] == [((0,), (0,)), ((1,), (1,))]
    assert [r.id for r in reds] == [7, 8]
    r = reds[1]
    assert r.left.literals == (Literal(1),) and r.right.literals == (Literal(1),)
    assert (r.left.side, r.left.tree, r.right.side, r.right.tree) == (0, 3, 1, 4)
    assert (r.trial, r.step, r.extraction) == (1, 2, 5)
    assert (r.support_left, r.support_right, r.support_both) == (50.0, 50.0, 40.0)
    assert r.jaccard == pytest.approx(2 / 3)
    assert r.pvalue == pytest.approx(exact_sf(40, 100, Fraction(1, 4)), rel=1e-9)
    assert r.text == "[L1]  ⇔  [R1]"


# A 3×3 table where the best sign combination of leaf pair (0, 0) is (¬A0, B0):
#        B0  B1  B2
TABLE_NEG = [[2, 40, 8],    # A0
             [30, 2, 3],    # A1
             [25, 3, 2]]    # A2
# N = 115; |A| = (50, 35, 30); |B| = (57, 45, 13)


def test_best_sign_combination_hand_computed():
    params = TreeParams(max_clauses=1, min_support=0)
    reds = run(TABLE_NEG, params)
    first = reds[0]
    # pair (0,0): (A0,B0) J = 2/105, (¬A0,B0) J = 55/67, (A0,¬B0) J = 48/60, (¬A0,¬B0) J = 10/113
    assert first.left.literals == (Literal(0, True),)
    assert first.right.literals == (Literal(0),)
    assert masks(first) == ((1, 2), (0,))
    assert (first.support_left, first.support_right, first.support_both) == (65, 57, 55)
    assert first.jaccard == pytest.approx(55 / 67)
    assert first.pvalue == pytest.approx(exact_sf(55, 115, Fraction(65 * 57, 115**2)),
                                         rel=1e-9)
    assert first.left.text == "¬[L0]"
    # pair (0,1): (A0,B1) J = 40/55 loses to (¬A0,¬B1): |qL| = 65, |qR| = 70, |E11| = 60
    second = reds[1]
    assert second.left.literals == (Literal(0, True),)
    assert second.right.literals == (Literal(1, True),)
    assert masks(second) == ((1, 2), (0, 2))
    assert second.jaccard == pytest.approx(60 / 75)
    assert second.right.text == "¬[R1]"


def test_pvalue_constraint_changes_the_chosen_combination():
    #        B0  B1  B2
    table = [[30, 0, 0],     # A0
             [0, 5, 25],     # A1
             [0, 25, 15]]    # A2      N = 100, |A| = |B| = (30, 30, 40)
    base = dict(max_clauses=1, min_support=0, min_jaccard=0.0, max_support=1.0)
    # pair (1,1): (A1,B1) J = 5/55; (¬A1,B1) = ({0,2},{1}) J = 25/75, p = P[Bin(100,.21) ≥ 25];
    # (A1,¬B1) J = 25/75 too; (¬A1,¬B1) = ({0,2},{0,2}) J = 45/95, p = P[Bin(100,.49) ≥ 45]
    p_nb = exact_sf(25, 100, Fraction(21, 100))
    p_nn = exact_sf(45, 100, Fraction(49, 100))
    assert 0.1 < p_nb < 0.3 < 0.5 < p_nn
    assert noisy_query_statistics(table, [True, False, True], [True, False, True])[3] == \
        pytest.approx(45 / 95)
    reds = run(table, TreeParams(**base, max_pvalue=0.5))
    from_11 = [r for r in reds if masks(r) == ((0, 2), (1,))]
    assert len(from_11) == 1
    assert from_11[0].left.literals == (Literal(1, True),)
    assert from_11[0].jaccard == pytest.approx(1 / 3)
    assert from_11[0].pvalue == pytest.approx(p_nb, rel=1e-9)
    assert ((0, 2), (0, 2)) not in [masks(r) for r in reds]
    # at Γ.pval = 0.01 nothing from pair (1,1) is significant
    reds = run(table, TreeParams(**base, max_pvalue=0.01))
    assert ((0, 2), (1,)) not in [masks(r) for r in reds]
    assert ((1,), (0, 2)) not in [masks(r) for r in reds]
    assert masks(reds[0]) == ((0,), (0,)) and reds[0].jaccard == 1.0


# --------------------------------------------------------------------------- extension

TABLE_EXT = [[20, 0, 0],
             [20, 0, 0],
             [0, 30, 30]]


def test_extension_grows_jaccard():
    params = TreeParams(max_support=0.5, max_clauses=1)
    simple = run(TABLE_EXT, params)
    assert masks(simple[0]) == ((0,), (0,))
    assert simple[0].jaccard == pytest.approx(0.5)
    params2 = TreeParams(max_support=0.5, max_clauses=2)
    ext = run(TABLE_EXT, params2)
    assert masks(ext[0]) == ((0, 1), (0,))
    assert ext[0].left.literals == (Literal(0), Literal(1))
    assert ext[0].jaccard == 1.0
    assert (ext[0].support_left, ext[0].support_right, ext[0].support_both) == (40, 40, 40)
    assert ext[0].left.text == "[L0] ∨ [L1]"
    # seed (1,0) grows into the same redescription: kept once
    assert [masks(r) for r in ext].count(((0, 1), (0,))) == 1


def test_extension_respects_max_clauses_and_alternates():
    # B0 = A0 ∪ A1 ∪ A2 side by side with A0 = B0 ∪ B1 ∪ B2; two big diagonal blocks
    table = np.zeros((5, 5))
    table[0, 0], table[1, 0], table[2, 0] = 20, 20, 20
    table[0, 1], table[0, 2] = 20, 20
    table[3, 3], table[4, 4] = 150, 150          # N = 400; cap = 0.5·N = 200
    expected_first = {1: (((0,), (0,)), 20 / 100),           # 20 / (60 + 60 − 20)
                      2: (((0, 1), (0, 1)), 60 / 100),       # + A1 (J 40/100), then + B1
                      3: (((0, 1, 2), (0, 1, 2)), 1.0),      # + A2 (J 80/100), then + B2
                      4: (((0, 1, 2), (0, 1, 2)), 1.0)}      # nothing improves any more
    for clauses, (first_masks, first_j) in expected_first.items():
        params = TreeParams(max_clauses=clauses, min_support=0, min_jaccard=0.0,
                              max_support=0.5)
        reds = run(table, params)
        for r in reds:
            assert len(r.left.literals) <= clauses and len(r.right.literals) <= clauses
        assert masks(reds[0]) == first_masks
        assert reds[0].jaccard == pytest.approx(first_j)
        assert reds[0].left.literals == tuple(Literal(i) for i in first_masks[0])
        assert ((3,), (3,)) in [masks(r) for r in reds]


def test_extension_never_makes_a_tautology():
    # adding A1 to A0 would cover the whole 2-leaf tree
    table = [[30, 5], [25, 40]]
    reds = run(table, TreeParams(max_clauses=3, min_support=0, min_jaccard=0.0,
                                   max_support=1.0, max_pvalue=1.0))
    for r in reds:
        assert 0 < len(r.left.leaves) < 2 and 0 < len(r.right.leaves) < 2


# --------------------------------------------------------------------------- Γ filter

def test_gamma_filter_each_violation():
    table = [[40, 10], [10, 40]]
    base = dict(max_clauses=1)
    assert len(run(table, TreeParams(**base))) == 2
    # min_jaccard (J = 2/3)
    assert len(run(table, TreeParams(**base, min_jaccard=0.66))) == 2
    assert run(table, TreeParams(**base, min_jaccard=0.67)) == []
    # min_support (|E11| = 40)
    assert len(run(table, TreeParams(**base, min_support=40))) == 2
    assert run(table, TreeParams(**base, min_support=40.5)) == []
    # |qL|, |qR| < max_support·Ñ (|q| = 50, Ñ = 100)
    assert len(run(table, TreeParams(**base, max_support=0.51))) == 2
    assert run(table, TreeParams(**base, max_support=0.5)) == []
    # |E11| ≤ max_support·Ñ
    assert run(table, TreeParams(**base, max_support=0.39)) == []
    # p-value: N = 10, p = P[Bin(10, 1/4) ≥ 4] ≈ 0.224
    small = [[4, 1], [1, 4]]
    assert run(small, TreeParams(**base, min_support=0)) == []
    reds = run(small, TreeParams(**base, min_support=0, max_pvalue=0.3))
    assert len(reds) == 2
    assert reds[0].pvalue == pytest.approx(exact_sf(4, 10, Fraction(1, 4)), rel=1e-9)
    assert run(small, TreeParams(**base, min_support=0, max_pvalue=0.2)) == []


def test_all_negative_noise_gives_nothing():
    assert run([[-3.0, -1.0], [-2.0, -4.0]], TreeParams(max_pvalue=1.0, min_support=0,
                                                         min_jaccard=0.0)) == []


def test_clipping_with_negative_cells_in_extraction():
    table = np.array([[40.0, -6.0, 2.0], [-3.0, 35.0, 1.0], [1.0, -2.0, 30.0]])
    reds = run(table, TreeParams(min_support=0))
    assert reds
    for r in reds:
        lm = np.isin(np.arange(3), r.left.leaves)
        rm = np.isin(np.arange(3), r.right.leaves)
        expect = brute_stats(table, lm, rm)
        got = (r.support_left, r.support_right, r.support_both, r.jaccard, r.pvalue)
        assert got == pytest.approx(expect, rel=1e-9, abs=1e-12)
        assert all(0 <= x <= table.sum() for x in got[:3])


def test_faithful_marginals_are_used():
    table = [[40, 10], [10, 40]]
    params = TreeParams(max_clauses=1, max_support=0.9)
    # strict: |A| = |B| = (50, 50) → both diagonal pairs with J = 40/60
    strict = run(table, params)
    assert [masks(r) for r in strict] == [((0,), (0,)), ((1,), (1,))]
    assert [r.jaccard for r in strict] == pytest.approx([2 / 3, 2 / 3])
    # faithful: |A|~ = (60, 40) → (A0,B0) J = 40/70 but (A1,B1) J = 40/50 wins every pair
    reds = run(table, params, noisy_left=[60, 40], noisy_right=[50, 50], noisy_n=100)
    assert [masks(r) for r in reds] == [((1,), (1,))]
    r = reds[0]
    assert (r.support_left, r.support_right, r.support_both) == (40, 50, 40)
    assert r.jaccard == pytest.approx(40 / 50)
    assert r.left.literals == (Literal(1),)
    with pytest.raises(ValueError):
        run(table, params, noisy_left=[60, 40], noisy_right=[50, 50])


# --------------------------------------------------------------------------- tautologies etc.

def test_single_leaf_trees_give_nothing():
    assert run([[50.0, 50.0]], TreeParams(max_pvalue=1.0, min_support=0,
                                            min_jaccard=0.0)) == []
    assert run([[50.0], [50.0]], TreeParams(max_pvalue=1.0, min_support=0,
                                              min_jaccard=0.0)) == []
    assert run([[100.0]], TreeParams()) == []


def test_duplicates_removed_and_ids_consecutive():
    rng = np.random.default_rng(3)
    table = rng.integers(0, 60, size=(6, 5)).astype(float)
    table[np.arange(5), np.arange(5)] += 200
    reds = run(table, TreeParams(min_support=0), first_id=100)
    keys = [masks(r) for r in reds]
    assert len(keys) == len(set(keys))
    assert [r.id for r in reds] == list(range(100, 100 + len(reds)))


def test_tree_size_mismatch_is_an_error():
    with pytest.raises(ValueError, match="leaves"):
        run([[1.0, 2.0], [3.0, 4.0]], left=bool_tree(3))


# --------------------------------------------------------------------------- text

def test_literal_and_query_text():
    tree = make_tree([
        (Condition("DX_CHF", "is", True), Condition("LAB_BNP", ">", 400.0)),
        (Condition("DX_CHF", "is", True), Condition("LAB_BNP", "<=", 400.0)),
        (Condition("DX_CHF", "is", False),),
        (Condition("AGE", "<=", 50.5),),
        (Condition("SEX", "=", "F"),),
        (Condition("AGE", ">", 20.0), Condition("AGE", "<=", 50.0)),
    ])
    assert literal_text(tree, Literal(0)) == "[DX_CHF] ∧ [LAB_BNP > 400]"
    assert literal_text(tree, Literal(0), in_disjunction=True) == "([DX_CHF] ∧ [LAB_BNP > 400])"
    assert literal_text(tree, Literal(0, True)) == "¬([DX_CHF] ∧ [LAB_BNP > 400])"
    assert literal_text(tree, Literal(2, True)) == "[DX_CHF]"
    assert literal_text(tree, Literal(3, True)) == "[AGE > 50.5]"
    assert literal_text(tree, Literal(4, True)) == "[SEX ≠ F]"
    assert literal_text(tree, Literal(5)) == "[20 < AGE ≤ 50]"
    assert literal_text(tree, Literal(5, True)) == "¬[20 < AGE ≤ 50]"
    assert query_text(tree, [Literal(0), Literal(2, True)]) == \
        "([DX_CHF] ∧ [LAB_BNP > 400]) ∨ [DX_CHF]"
    assert query_text(tree, [Literal(3), Literal(5)]) == "[AGE ≤ 50.5] ∨ [20 < AGE ≤ 50]"
    assert query_text(tree, [Literal(1)]) == "[DX_CHF] ∧ [LAB_BNP ≤ 400]"


def test_released_text_uses_tree_leaves():
    left = make_tree([(Condition("A", "is", True), Condition("B", ">", 1.0)),
                      (Condition("A", "is", True), Condition("B", "<=", 1.0)),
                      (Condition("A", "is", False),)])
    right = make_tree([(Condition("X", "=", "u"),), (Condition("X", "=", "v"),),
                       (Condition("X", "=", "w"),)], view=1)
    reds = run(TABLE_EXT, TreeParams(max_support=0.5, max_clauses=2), left=left,
               right=right)
    assert reds[0].left.text == "([A] ∧ [B > 1]) ∨ ([A] ∧ [B ≤ 1])"
    assert reds[0].right.text == "[X = u]"


# --------------------------------------------------------------------------- properties

def reference_extract(table, params):
    """Plain-loop re-implementation of the search (slow; for small tables only)."""
    t = np.asarray(table, dtype=float)
    m, k = t.shape
    if m < 2 or k < 2:
        return []
    n = max(t.sum(), 0.0)
    cap = params.max_support * n

    def mask(lits, size):
        return tuple(bool(x) for x in query_mask(size, [Literal(a, b) for a, b in lits]))

    def stats(ll, rl):
        return brute_stats(t, mask(ll, m), mask(rl, k))

    def admissible(s):
        return s[4] <= params.max_pvalue and s[2] <= cap

    found = []
    for i in range(m):
        for j in range(k):
            best = None
            for nl, nr in [(False, False), (True, False), (False, True), (True, True)]:
                s = stats([(i, nl)], [(j, nr)])
                if admissible(s) and (best is None or s[3] > best[2][3]):
                    best = ([(i, nl)], [(j, nr)], s)
            if best is None:
                continue
            ll, rl, s = best
            for _ in range(params.max_clauses - 1):
                for side in (0, 1):
                    lits, size = (ll, m) if side == 0 else (rl, k)
                    cur = mask(lits, size)
                    if sum(cur) >= size - 1:
                        continue
                    used = {a for a, _ in lits}
                    choice = None
                    for neg in (False, True):
                        for c in range(size):
                            if c in used or cur[c]:
                                continue
                            new = lits + [(c, neg)]
                            s2 = stats(new, rl) if side == 0 else stats(ll, new)
                            if (admissible(s2) and s2[3] > s[3] + 1e-12
                                    and (choice is None or s2[3] > choice[1][3])):
                                choice = (new, s2)
                    if choice is not None:
                        if side == 0:
                            ll = choice[0]
                        else:
                            rl = choice[0]
                        s = choice[1]
            lm, rm = mask(ll, m), mask(rl, k)
            ok = (s[3] >= params.min_jaccard and s[4] <= params.max_pvalue
                  and params.min_support <= s[2] <= cap and s[0] < cap and s[1] < cap
                  and 0 < sum(lm) < m and 0 < sum(rm) < k)
            key = (tuple(np.flatnonzero(lm)), tuple(np.flatnonzero(rm)))
            if ok and key not in [f[0] for f in found]:
                found.append((key, s))
    return found


tables = st.integers(1, 5).flatmap(lambda m: st.integers(1, 5).flatmap(
    lambda k: st.lists(st.lists(st.integers(0, 40), min_size=k, max_size=k),
                       min_size=m, max_size=m)))
param_sets = st.builds(
    TreeParams,
    min_jaccard=st.sampled_from([0.0, 0.1, 0.4]),
    max_pvalue=st.sampled_from([0.01, 0.2, 1.0]),
    min_support=st.sampled_from([0.0, 5.0, 20.0]),
    max_support=st.sampled_from([0.5, 0.8, 1.0]),
    max_clauses=st.integers(1, 3),
)


@settings(max_examples=150, deadline=None)
@given(tables, param_sets)
def test_property_statistics_match_brute_force_and_gamma(table, params):
    t = np.asarray(table, dtype=float)
    m, k = t.shape
    reds = run(t, params)
    n = t.sum()
    seen = set()
    for r in reds:
        lm = query_mask(m, r.left.literals)
        rm = query_mask(k, r.right.literals)
        assert tuple(np.flatnonzero(lm)) == r.left.leaves
        assert tuple(np.flatnonzero(rm)) == r.right.leaves
        assert 0 < lm.sum() < m and 0 < rm.sum() < k
        assert len(r.left.literals) <= params.max_clauses
        assert len(r.right.literals) <= params.max_clauses
        ql, qr, e, jac, p = brute_stats(t, lm, rm)
        assert r.jaccard == pytest.approx(jac, abs=1e-12)
        assert (r.support_left, r.support_right, r.support_both) == (ql, qr, e)
        assert r.pvalue == pytest.approx(p, rel=1e-9, abs=1e-300)
        assert gamma_ok(r, params, n)
        assert masks(r) not in seen
        seen.add(masks(r))


@settings(max_examples=120, deadline=None)
@given(tables, param_sets)
def test_property_matches_plain_loop_reference(table, params):
    reds = run(table, params)
    expected = reference_extract(table, params)
    assert [masks(r) for r in reds] == [key for key, _ in expected]
    for r, (_, s) in zip(reds, expected):
        assert r.jaccard == pytest.approx(s[3], abs=1e-12)



# --------------------------------------------------------------------------- p-value

def test_marg_pvalues_equal_scipy_stats_binomial_tail_on_a_grid():
    """``marg_pvalues`` uses ``scipy.special.betainc`` (so a ``mine`` need not import
    ``scipy.stats``); it must equal ``binom.sf(|E11| − 1, Ñ, |qL|·|qR|/Ñ²)`` for Ñ up to
    200,000, in both tails, at the edges (|E11| = 0, 1, Ñ; p near 0 and 1) and in between."""
    from dpcore.redescriptions.extract import marg_pvalues

    rng = np.random.default_rng(19)
    ns = np.unique(np.r_[1, 2, 3, 10, 100, 1000, 3000, 7200, 50_000, 200_000,
                         rng.integers(1, 200_001, 30)])
    checked = 0
    for n in ns.astype(float):
        for p in np.r_[1e-6, 1e-3, 0.01, 0.1, 0.5, 0.9, 0.999, 1.0, rng.random(3)]:
            sd = math.sqrt(max(n * p * (1 - p), 1.0))
            e11 = np.unique(np.clip(np.r_[0, 1, 2, n - 1, n, rng.integers(0, n + 1, 10),
                                          np.rint(n * p + sd * np.linspace(-9, 9, 19))],
                                    0, n))
            side = math.sqrt(p) * n          # |qL| = |qR| = √p·Ñ, so |qL|·|qR|/Ñ² = p
            got = marg_pvalues(side, side, e11, n)
            want = binom.sf(e11 - 1, n, min(side * side / n**2, 1.0))
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
            checked += e11.size
    assert checked > 10_000
    # the p = 1 conventions: an empty side, or Ñ < 1
    assert marg_pvalues(0.0, 50.0, 0.0, 100.0) == 1.0
    assert np.all(marg_pvalues(np.zeros(3), np.ones(3), np.zeros(3), 0.5) == 1.0)
