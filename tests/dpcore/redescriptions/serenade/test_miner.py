"""dpcore.redescriptions.serenade.miner: the exponential-mechanism draw over a union of
groups, and a run that spends exactly its charge and is reproducible under a seed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import BudgetExceededError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions.coding import code_dataset_strict
from dpcore.redescriptions.params import plan_budget
from dpcore.redescriptions.serenade.miner import SerenadeOutput, draw_from_union, mine_serenade
from dpcore.redescriptions.warmup import tiny_dataset, warmup_params
from dpcore.registry import SERENADE_ALGORITHMS, STRICT


def test_draw_from_union_follows_the_exponential_mechanism():
    scores = [np.array([0.0, 1.0]), np.array([0.5]), np.array([-np.inf, 2.0])]
    factor = 1.0
    log_w = np.array([np.log(np.exp(factor * s[np.isfinite(s)]).sum()) for s in scores])
    rng = np.random.default_rng(11)
    draws = [draw_from_union(log_w, scores, factor, rng) for _ in range(6000)]
    cells = [(0, 0), (0, 1), (1, 0), (2, 1)]
    counts = np.array([draws.count(c) for c in cells])
    assert counts.sum() == len(draws)             # the -inf candidate is never drawn
    p = np.exp([0.0, 1.0, 0.5, 2.0])
    assert stats.chisquare(counts, p / p.sum() * len(draws)).pvalue > 1e-4


def _run(algorithm, seed):
    data = tiny_dataset(n_rows=150, seed=1)
    params = warmup_params(algorithm, STRICT)
    cap = sum(s.epsilon_nano for s in plan_budget(params))
    acc = PrivacyAccountant(cap)
    out = mine_serenade(code_dataset_strict(data), params, np.random.default_rng(seed), acc)
    return out, acc, cap


@pytest.mark.parametrize("algorithm", SERENADE_ALGORITHMS)
def test_a_run_spends_its_charge_exactly_and_repeats_under_a_seed(algorithm):
    out, acc, cap = _run(algorithm, 5)
    assert isinstance(out, SerenadeOutput)
    assert acc.spent_nano + out.unspent_nano == cap and out.unspent_nano >= 0
    assert all(c.epsilon_nano > 0 and c.sensitivity > 0 for c in acc.calls)
    again, _, _ = _run(algorithm, 5)
    assert [r.to_dict() for r in again.redescriptions] == \
        [r.to_dict() for r in out.redescriptions]


def test_a_run_over_its_accountant_is_refused():
    data = tiny_dataset(n_rows=120, seed=1)
    params = warmup_params(SERENADE_ALGORITHMS[0], STRICT)
    cap = sum(s.epsilon_nano for s in plan_budget(params))
    with pytest.raises(BudgetExceededError):
        mine_serenade(code_dataset_strict(data), params, np.random.default_rng(0),
                      PrivacyAccountant(cap // 2))
