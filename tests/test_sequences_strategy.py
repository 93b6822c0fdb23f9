"""Strict PFS2's per-level strategy (dpcore.sequences.strategy): the prune-or-not rule, the
pruning threshold on all records, the cap M_k = ⌈C(lmax, k)/θ⌉ binding on a constructed
case with exact accounting, the stop when the noise drowns θ·N̂, and that every choice is
a function of public or released values only (neighbouring datasets included)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.units import epsilon_to_nano, nano_to_epsilon
from dpcore.sequences import miner as miner_module
from dpcore.sequences.dataset import SequenceDataset
from dpcore.sequences.miner import mine_frequent_sequences
from dpcore.sequences.params import SequenceMiningParams, level_shares, run_cost_nano
from dpcore.sequences.relaxation import laplace_pruning_threshold
from dpcore.sequences.schema import SequenceSchema
from dpcore.sequences.strategy import (
    NOISY_STOP,
    floods,
    keep_largest,
    plan_level,
    release_cap,
    too_noisy,
)

SEED = 20241126
EPS = 10**8  # 0.1 ε in nano-ε


# --------------------------------------------------------------------------- the rule

def test_small_alphabets_do_not_prune_large_ones_do():
    # MSNBC-like: 17 items, lmax 8, 8 levels; ε = 1 gives 0.05625 ε per part
    part = 56_250_000
    assert not plan_level(17, 1, 8, part, part, 19_796.0, 0.3).prune   # Δ = 8 of 17
    # level 2 at ε = 1: verifying all 225 has scale 2,000 ≈ 0.1·θ·N, it floods nothing
    assert not plan_level(225, 2, 8, part, part, 19_796.0, 0.3).prune
    # ... at ε = 0.1 it would (scale 20,000): pruning with Δ = 28 pays
    two = plan_level(225, 2, 8, part // 10, part // 10, 19_796.0, 0.3)
    assert two.prune and two.sensitivity == 28 and two.prune_nano == part // 10
    assert two.verify_nano == part // 10
    assert two.threshold == pytest.approx(19_796.0 + 28 / 0.005625 * math.log(0.6))
    # BIBLE-like level 1: 13,905 items, Δ = lmax = 32
    assert plan_level(13_905, 1, 32, part, part, 3_637.0, 0.3).prune
    # House_Power-like level 3: Δ = min(C(30, 3), |C_3|) = |C_3|: pruning cannot pay
    no = plan_level(500, 3, 30, part, part, 13_935.0, 0.3)
    assert not no.prune and no.sensitivity == 500
    assert no.prune_nano == 0 and no.verify_nano == 2 * part   # the level budget verifies


def test_floods_counts_the_expected_false_releases_of_empty_candidates():
    # m·½·exp(−T/s) ≥ 1  ⟺  s·ln(m/2) ≥ T
    assert floods(100.0, 2 * math.ceil(math.exp(10.0)), 1000.0)
    assert not floods(100.0, 2 * math.floor(math.exp(10.0)) - 2, 1000.0)
    assert not floods(1e9, 2, 1.0)                      # two candidates never flood
    rng = np.random.default_rng(SEED)
    m, scale, t = 400, 250.0, 250.0 * math.log(200.0)
    false = np.mean([(rng.laplace(0, scale, m) >= t).sum() for _ in range(2000)])
    assert false == pytest.approx(1.0, abs=0.1)


def test_a_non_positive_pruning_threshold_never_prunes():
    # Δ = 10 among 10,000 candidates but a tiny θ·N̂: θ′ < 0 would keep everything
    lp = plan_level(10_000, 1, 10, EPS, EPS, 5.0, 0.3)
    assert lp.threshold <= 0 and not lp.prune


def test_plan_level_refuses_empty_inputs():
    with pytest.raises(ParameterError):
        plan_level(0, 1, 8, EPS, EPS, 100.0, 0.3)


def test_the_pruning_threshold_prunes_a_support_of_exactly_theta_with_chance_zeta():
    rng = np.random.default_rng(SEED)
    threshold, phi = 1000.0, 40.0
    noisy = threshold + rng.laplace(0.0, phi, 400_000)
    for zeta in (0.1, 0.3, 0.5, 0.7):
        t = laplace_pruning_threshold(threshold, phi, zeta)
        assert np.mean(noisy < t) == pytest.approx(zeta, abs=0.005)
    assert laplace_pruning_threshold(threshold, phi, 0.5) == threshold
    with pytest.raises(ParameterError):
        laplace_pruning_threshold(threshold, 0.0, 0.3)


def test_cap_keep_largest_and_the_other_helpers():
    assert release_cap(8, 2, 0.02) == 1400 and release_cap(1, 1, 0.9) == 2
    noisy = np.array([5.0, 9.0, 9.0, 1.0, 7.0])
    assert keep_largest(np.array([0, 1, 2, 4]), noisy, 2).tolist() == [1, 2]
    assert keep_largest(np.array([0, 2, 4]), noisy, 2).tolist() == [2, 4]
    assert keep_largest(np.array([0, 3]), noisy, 5).tolist() == [0, 3]   # below the cap
    assert keep_largest(np.array([1, 2, 4]), np.array([0, 3.0, 3.0, 0, 3.0]), 2).tolist() \
        == [1, 2]                                                        # ties: index order
    # scale ≥ θ·N̂ and m·½·exp(−θ·N̂/scale) ≥ M_k
    assert too_noisy(100.0, 100, 100.0, 18) and not too_noisy(100.0, 100, 100.0, 19)
    assert not too_noisy(99.0, 10**6, 100.0, 1)        # below θ·N̂: never


# --------------------------------------------------------------------------- in the miner

def three_item_records(n=300, n_items=3):
    """Records "a b c" with l1 = 1: lmax = L_f = 1, and every item has support N."""
    schema = SequenceSchema("abc", tuple(f"i{j}" for j in range(n_items)), l1=1)
    return SequenceDataset.from_lists(schema, [[0, 1, 2]] * n)


def test_the_cap_binds_and_the_run_finishes_with_exact_accounting():
    # θ = 0.9, lmax = 1: M_1 = ⌈1/0.9⌉ = 2, but all three items reach θ·N̂
    params = SequenceMiningParams(epsilon=20.0, theta=0.9)
    acc = PrivacyAccountant(run_cost_nano(params))
    res = mine_frequent_sequences(three_item_records(), params,
                                  rng=np.random.default_rng(SEED), accountant=acc)
    (level,) = res.levels
    assert level.prune_sensitivity == 0 and level.verify_sensitivity == 3   # 3 < 4·Δ
    assert level.frequent == 2 and level.capped == 1 and len(res.patterns) == 2
    released = {p.items: p.noisy_support for p in res.patterns}
    calls = res.mechanism_calls
    assert calls[-1]["sensitivity"] == 3
    assert calls[-1]["epsilon_nano"] == sum(level_shares(params, 1)[0])
    assert sum(c["epsilon_nano"] for c in calls) == res.spent_nano == acc.spent_nano \
        == epsilon_to_nano(20.0) and res.unspent_nano == 0
    assert len(released) == 2


def test_a_pruned_level_verifies_its_survivors_with_exact_accounting():
    # 40 declared items, records "a b c", ε = 0.1: verifying all 40 would flood and Δ_1 = 1,
    # so the level prunes (ε4,1), then verifies its one survivor (ε5,1)
    params = SequenceMiningParams(epsilon=0.1, theta=0.3)
    res = mine_frequent_sequences(three_item_records(n=2000, n_items=40), params,
                                  rng=np.random.default_rng(SEED))
    (level,) = res.levels
    p, v = level_shares(params, 1)[0]
    assert level.prune_sensitivity == 1 and level.kept_after_pruning == 1
    assert level.verify_sensitivity == 1 and level.verify_epsilon_nano == v
    assert [p.items for p in res.patterns] == [(0,)]
    assert res.diagnostics.true_supports == {"0": 2000}
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[-2:]] == \
        [(p, 1), (v, 1)]
    assert res.spent_nano == epsilon_to_nano(0.1) and res.unspent_nano == 0


def test_the_run_stops_where_the_noise_drowns_the_threshold():
    # 40 items at ε = 0.05 over 300 records, l1 = 1: verifying all 40 has scale ≈ 890 ≥
    # θ·N̂ ≈ 150 and 40·½·exp(−150/890) ≈ 17 expected false releases ≥ M_1 = 2
    schema = SequenceSchema("many", tuple(f"i{j}" for j in range(40)), l1=1)
    data = SequenceDataset.from_lists(schema, [[j % 40] for j in range(300)])
    params = SequenceMiningParams(epsilon=0.05, theta=0.5)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(SEED))
    (level,) = res.levels
    assert level.note == NOISY_STOP and level.frequent == 0 and res.patterns == []
    assert res.unspent_nano == sum(level_shares(params, 1)[0])
    assert res.spent_nano + res.unspent_nano == epsilon_to_nano(0.05)


def _spy_choices(monkeypatch, data, params, seed):
    seen = []
    real = miner_module.plan_level

    def spy(*args):
        out = real(*args)
        seen.append((args, out))
        return out

    monkeypatch.setattr(miner_module, "plan_level", spy)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(seed))
    monkeypatch.setattr(miner_module, "plan_level", real)
    return res, seen


def _neighbours():
    schema = SequenceSchema("nb", tuple(f"x{i}" for i in range(12)), l1=4)
    rng = np.random.default_rng(SEED)
    records = [list(rng.integers(0, 12, size=rng.integers(1, 7))) for _ in range(600)]
    records += [[0, 1, 2, 3]] * 300
    d = SequenceDataset.from_lists(schema, records)
    d2 = SequenceDataset.from_lists(schema, records + [[4, 5, 6, 7, 8, 9, 10, 11]])
    return d, d2


def test_every_choice_is_a_function_of_released_values(monkeypatch):
    """The plan's inputs are rebuilt from the released result alone; the plan is a pure
    function of them. So neighbouring datasets that release the same values (N̂, lmax,
    L_f and the frequent sequences, hence |C_k|) make the same choices."""
    params = SequenceMiningParams(epsilon=3.0, theta=0.2)
    for data in _neighbours():
        res, seen = _spy_choices(monkeypatch, data, params, SEED)
        assert seen
        per_level = level_shares(params, res.max_frequent_length)
        for (args, out), lv in zip(seen, res.levels, strict=False):
            public = (lv.candidates, lv.length, res.lmax, *per_level[lv.length - 1],
                      params.theta * max(res.noisy_records, 1.0), params.zeta)
            assert args == public
            assert plan_level(*public) == out                 # pure: same inputs, same plan
            assert (lv.prune_sensitivity > 0) == out.prune
            if out.prune:
                assert lv.relaxed_threshold == out.threshold
                assert lv.prune_scale == pytest.approx(
                    out.sensitivity / nano_to_epsilon(per_level[lv.length - 1][0]))


def test_neighbours_with_equal_released_values_choose_alike(monkeypatch):
    """D and D′ (one record more): find a run of D′ whose released N̂, lmax, L_f and level-1
    candidates equal those of D's run (other seeds), and check that the two runs plan
    their first level alike, and every later level whose released inputs agree."""
    params = SequenceMiningParams(epsilon=3.0, theta=0.2)
    d, d2 = _neighbours()
    res_a, a = _spy_choices(monkeypatch, d, params, SEED)
    key = (res_a.noisy_records, res_a.lmax, res_a.max_frequent_length)
    for seed in range(400):
        res_b, b = _spy_choices(monkeypatch, d2, params, seed)
        if (res_b.noisy_records, res_b.lmax, res_b.max_frequent_length) == key:
            break
    else:
        pytest.fail("no run of D′ released the same N̂, lmax and L_f")
    assert a[0][0] == b[0][0] and a[0][1] == b[0][1]
    for (args_a, out_a), (args_b, out_b) in zip(a, b, strict=False):
        if args_a == args_b:
            assert out_a == out_b
