"""dpcore.redescriptions.evaluate (NOT DP, owner/teaching): true supports, Jaccards and
p-values of released redescriptions, recomputed from the raw rows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions.evaluate import (
    condition_mask,
    evaluate,
    leaf_masks,
    marg_pvalue,
)
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import plan_budget
from dpcore.redescriptions.results import Condition
from dpcore.redescriptions.warmup import tiny_dataset, warmup_params
from dpcore.registry import ALTMCMC, SERENADE_ES, STRICT


@pytest.fixture(scope="module")
def data():
    data = tiny_dataset(n_rows=200, seed=4)
    data.views[1].values[0, :5] = np.nan  # a few missing b2 values
    return data


def test_condition_masks_and_missing_values(data):
    x1 = data.views[0].values[2]
    assert np.array_equal(condition_mask(data, 0, Condition("x1", "<=", 5.0)), x1 <= 5.0)
    assert np.array_equal(condition_mask(data, 0, Condition("x1", ">", 5.0)), x1 > 5.0)
    c1 = data.views[0].values[1]
    assert np.array_equal(condition_mask(data, 0, Condition("c1", "=", "b")), c1 == 1)
    assert np.array_equal(condition_mask(data, 0, Condition("c1", "!=", "b")), c1 != 1)
    is_true = condition_mask(data, 1, Condition("b2", "is", True))
    is_false = condition_mask(data, 1, Condition("b2", "is", False))
    assert not (is_true | is_false)[:5].any() and (is_true | is_false)[5:].all()


@pytest.mark.parametrize("both, left, right, n", [(30, 60, 50, 200), (0, 10, 10, 100),
                                                  (40, 40, 40, 40)])
def test_marg_pvalue_is_the_binomial_tail(both, left, right, n):
    expected = stats.binom.sf(both - 1, n, left * right / n**2)
    assert marg_pvalue(left, right, both, n) == pytest.approx(expected, rel=1e-6, abs=1e-12)


def test_marg_pvalue_is_one_for_an_empty_query():
    assert marg_pvalue(0, 50, 0, 100) == 1.0


@pytest.mark.parametrize("algorithm", [ALTMCMC, SERENADE_ES])
def test_true_statistics_of_a_mined_run(data, algorithm):
    params = warmup_params(algorithm, STRICT)
    result = mine(data, params, rng=np.random.default_rng(3),
                  accountant=PrivacyAccountant(sum(s.epsilon_nano for s in plan_budget(params))))
    stats_ = evaluate(result, data)
    assert [s.id for s in stats_] == [r.id for r in result.redescriptions]
    for s in stats_:
        assert 0 <= s.support_both <= min(s.support_left, s.support_right)
        union = s.support_left + s.support_right - s.support_both
        assert s.jaccard == (s.support_both / union if union else 0.0)
        assert 0.0 <= s.pvalue <= 1.0
    for tree in result.trees:
        masks = leaf_masks(data, tree)
        assert masks.shape == (tree.n_leaves, data.n_rows)
        assert (masks.sum(axis=0) <= 1).all()  # a row reaches at most one leaf


def test_as_released_counts_the_rows_that_reach_a_leaf_of_both_trees():
    data = tiny_dataset(n_rows=400, seed=4)
    rng = np.random.default_rng(5)
    for view in data.views:                      # ~10 % missing in every attribute
        view.values[rng.random(view.values.shape) < 0.1] = np.nan
    # ε large enough that the tiny data releases redescriptions
    params = replace(warmup_params(ALTMCMC, STRICT), epsilon=100.0)
    result = mine(data, params, rng=np.random.default_rng(3),
                  accountant=PrivacyAccountant(sum(s.epsilon_nano for s in plan_budget(params))))
    assert result.redescriptions
    every, released = evaluate(result, data), evaluate(result, data, as_released=True)
    masks = {t.id: leaf_masks(data, t) for t in result.trees}
    smaller = 0
    for red, a, b in zip(result.redescriptions, every, released):
        lm, rm = masks[red.left.tree], masks[red.right.tree]
        population = lm.any(axis=0) & rm.any(axis=0)
        left = lm[list(red.left.leaves)].any(axis=0)
        right = rm[list(red.right.leaves)].any(axis=0)
        assert b.support_left == int((left & population).sum()) <= a.support_left
        assert b.support_right == int((right & population).sum()) <= a.support_right
        assert b.support_both == a.support_both   # a row in both queries is in a cell
        assert b.pvalue == marg_pvalue(b.support_left, b.support_right, b.support_both,
                                       int(population.sum()))
        smaller += b.support_left < a.support_left or b.support_right < a.support_right
    assert smaller > 0                            # the missing values did open the gap


def test_as_released_changes_nothing_for_serenade(data):
    params = warmup_params(SERENADE_ES, STRICT)
    result = mine(data, params, rng=np.random.default_rng(3),
                  accountant=PrivacyAccountant(sum(s.epsilon_nano for s in plan_budget(params))))
    assert evaluate(result, data, as_released=True) == evaluate(result, data)
