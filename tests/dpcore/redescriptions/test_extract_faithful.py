"""Faithful-mode extraction rules that follow the authors' Java code (docs/ALGORITHMS.md §2.7,
"Faithful mode and the authors' code"). Strict mode must keep its own rules."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.redescriptions.extract import _counts, _extend_side, _Side, extract_redescriptions
from dpcore.redescriptions.params import TreeParams, family_type
from dpcore.redescriptions.results import Condition, TreeNode, TreeRecord

# A0, A1 ⊂ B0 (20 rows each); A2, A3 ⊂ B1 (30 rows each); N = 100
TABLE = np.array([[20, 0], [20, 0], [0, 30], [0, 30]], dtype=float)


def _extend_seed(i, j, after):
    c = _counts(TABLE, TABLE.sum(1), TABLE.sum(0), TABLE.sum())
    left, right = _Side(4, 1, 3), _Side(2, 1, 3)
    rows = np.array([0])
    left.add(rows, np.array([i]), np.array([False]), np.array([c.left[i]]))
    right.add(rows, np.array([j]), np.array([False]), np.array([c.right[j]]))
    e = np.array([TABLE[i, j]])
    jac = np.array([TABLE[i, j] / (c.left[i] + c.right[j] - TABLE[i, j])])
    _extend_side(left, right, e, jac, c.left, c.table, c, 0.01, 80.0, True, after)
    lits = [(int(a), bool(b)) for a, b in zip(left.lit_leaf[0, :left.n_lit[0]],
                                              left.lit_neg[0, :left.n_lit[0]])]
    return lits, float(jac[0])


def test_any_unused_leaf_extends_without_the_rule():
    # seed (A1, B0): J = 20/40; adding A0 gives A0 ∨ A1 = B0, J = 1
    lits, j = _extend_seed(1, 0, None)
    assert lits == [(1, False), (0, False)] and j == pytest.approx(1.0)


def test_faithful_extends_only_with_later_leaves():
    # the Java code tries leaves i+1, … only: A0 is out of reach, ¬A2 = {A0, A1, A3} is best
    lits, j = _extend_seed(1, 0, np.array([1]))
    assert lits == [(1, False), (2, True)]
    assert j == pytest.approx(40 / 70)
    # the last leaf has nothing after it: no extension
    lits, j = _extend_seed(3, 1, np.array([3]))
    assert lits == [(3, False)] and j == pytest.approx(0.5)


def _bool_tree(m, prefix, view):
    conds = tuple((Condition(f"{prefix}{i}", "is", True),) for i in range(m))
    root = TreeNode(0, -1, 0, "split", "multiway", None, tuple(range(1, m + 1)), None)
    nodes = (root,) + tuple(TreeNode(i + 1, 0, 1, None, None, None, (), c[0], leaf=i)
                            for i, c in enumerate(conds))
    return TreeRecord(0, view, 0, 0, nodes, conds)


@pytest.mark.parametrize("seed", range(5))
def test_only_faithful_mode_changes(seed):
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 60, size=(6, 5)).astype(float)
    kw = dict(left_tree=_bool_tree(6, "L", 0), right_tree=_bool_tree(5, "R", 1),
              left_tree_index=0, right_tree_index=1, trial=0, step=0, extraction=0)
    strict = extract_redescriptions(table, params=TreeParams(max_clauses=3), **kw)
    assert all(r.jaccard >= 0.1 and r.pvalue <= 0.01 for r in strict)
    marg = dict(noisy_left=table.sum(1), noisy_right=table.sum(0), noisy_n=table.sum())
    faithful = extract_redescriptions(table, params=TreeParams(max_clauses=3,
                                                                 mode="faithful"), **kw, **marg)
    # with the Java rule no extension can use a leaf before the seed's: on each side the
    # seed's literal comes first and every added literal has a later leaf
    assert faithful
    for r in faithful:
        for q in (r.left, r.right):
            leaves = [x.leaf for x in q.literals]
            assert leaves[0] == min(leaves) and len(set(leaves)) == len(leaves)


@pytest.mark.parametrize("algorithm", ["altexpm", "altmcmc", "mcmctreepair"])
def test_faithful_depth_counts_the_root_as_a_level(algorithm):
    # the authors' code: root at level 1, a node at level `depth` is a leaf → depth − 1 splits
    from dpcore.redescriptions.mining import mine, tree_depth
    from dpcore.redescriptions.warmup import tiny_dataset

    data = tiny_dataset(n_rows=400, seed=2)
    longest = {}
    for mode in ("strict", "faithful"):
        params = family_type(algorithm)(algorithm=algorithm, mode=mode, depth=3, mc_iter=300)
        result = mine(data, params, rng=np.random.default_rng(5), seed=5)
        longest[mode] = max(len(c) for t in result.trees for c in t.leaf_conditions)
        assert tree_depth(params) == (3 if mode == "strict" else 2)
    assert longest["faithful"] <= 2 and longest["strict"] == 3
    assert tree_depth(TreeParams(mode="faithful", depth=1)) == 1
