"""Strict PFS2's per-level strategy (dpcore.sequences.strategy): the prune-or-not rule, the
pruning threshold on all records, the cap M_k = ⌈C(lmax, k)/θ⌉ binding on a constructed
case with exact accounting, the stop when the noise drowns θ·N̂, and that every choice is
a function of public or released values only (neighbouring datasets included)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.units import epsilon_to_nano, nano_to_epsilon
from dpcore.sequences import miner as miner_module
from dpcore.sequences import strategy as strategy_module
from dpcore.sequences.kernels import relevant_length_histogram
from dpcore.sequences.miner import mine_frequent_sequences
from dpcore.sequences.params import SequenceMiningParams, plan_budget, run_cost_nano
from dpcore.sequences.relaxation import laplace_pruning_threshold
from dpcore.sequences.results import pattern_key
from dpcore.sequences.samples import generate_house_power, generate_word_stream
from dpcore.sequences.strategy import (
    CONCENTRATE_SCALE,
    CONCENTRATED,
    NOISY_STOP,
    concentrate_bound,
    floods,
    keep_largest,
    level_budget,
    noise_bound,
    plan_level,
    plausible_length,
    pruning_length,
    release_cap,
    split_level_budget,
    too_noisy,
    verify_budget,
    wants_length_histogram,
)
from tests.support.sequences_reference import replay_level_calls

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
    # 100 candidates at scale 2·θ·N̂ (≈ 30 expected false releases): not beyond the cap,
    # but ≥ 10× the 3 sequences the level before released (and not ≥ 10× 4)
    false = 100 * 0.5 * math.exp(-0.5)
    assert 10 * 3 <= false < 10 * 4
    assert too_noisy(200.0, 100, 100.0, 10**6, previous=3)
    assert not too_noisy(200.0, 100, 100.0, 10**6, previous=4)
    assert not too_noisy(200.0, 100, 100.0, 10**6)                  # level 1: no previous
    assert not too_noisy(99.0, 100, 100.0, 10**6, previous=0)       # below θ·N̂: never


# --------------------------------------------------------------------------- in the miner

def three_item_records(n=300, n_items=3):
    """Records "a b c" with l1 = 1: lmax = L_f = 1, and every item has support N."""
    schema = SequenceSchema("abc", tuple(f"i{j}" for j in range(n_items)), l1=1)
    return SequenceDataset.from_lists(schema, [[0, 1, 2]] * n)


def _pool(params) -> int:
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    return plan["prune"] + plan["verify"]


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
    assert calls[-1]["epsilon_nano"] == _pool(params)   # L_f = 1: the level gets it all
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
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    p, v = plan["prune"], plan["verify"]          # L_f = 1: the whole pool, in the plan's ratio
    assert level.prune_sensitivity == 1 and level.kept_after_pruning == 1
    assert level.prune_length == 1 and level.length_epsilon_nano == 0
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
    assert res.unspent_nano == _pool(params)
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
        calls, _, parts = replay_level_calls(res, params)   # rebuilt from released values
        assert [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[3:]] \
            == calls
        threshold = params.theta * max(res.noisy_records, 1.0)
        for (args, out), lv, (_, prune, verify, bound) in zip(seen, res.levels, parts,
                                                              strict=False):
            public = (lv.candidates, lv.length, bound,
                      prune - lv.length_epsilon_nano, verify, threshold, params.zeta)
            assert args == public
            assert plan_level(*public) == out                 # pure: same inputs, same plan
            assert (lv.prune_sensitivity > 0) == out.prune
            if out.prune:
                assert lv.relaxed_threshold == out.threshold
                assert lv.prune_scale == pytest.approx(
                    out.sensitivity / nano_to_epsilon(lv.prune_epsilon_nano))


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


# --------------------------------------------------------------------------- level budgets

def _wide_records(n=20_000, seed=5):
    """1,000 declared items; records of 20 rare items, each of the 20 common items
    w0..w19 with chance 0.35, and half of them framed by w0 … w1: level 2 has 400
    candidates whose verification would flood, but a record holds only ~8 of their items."""
    rng = np.random.default_rng(seed)
    records = []
    for _ in range(n):
        r = [int(x) for x in rng.integers(20, 1000, size=20)]
        for x in np.flatnonzero(rng.random(20) < 0.35):
            r.insert(int(rng.integers(0, len(r) + 1)), int(x))
        records.append([0] + r + [1] if rng.random() < 0.5 else r)
    schema = SequenceSchema("wide", tuple(f"w{i}" for i in range(1000)), l1=32)
    return SequenceDataset.from_lists(schema, records), records


def test_relevant_length_histogram_equals_a_plain_count():
    rng = np.random.default_rng(SEED)
    records = [rng.integers(0, 9, size=int(rng.integers(0, 14))).tolist() for _ in range(300)]
    data = SequenceDataset.from_lists(
        SequenceSchema("r", tuple(f"x{i}" for i in range(9)), l1=16), records)
    relevant = np.zeros(9, dtype=np.bool_)
    relevant[[1, 4, 5]] = True
    got = relevant_length_histogram(data.indptr, data.items, relevant, 6)
    held = [sum(x in (1, 4, 5) for x in r) for r in records]
    assert got.tolist() == [sum(min(h, 6) == i for h in held if h) for i in range(1, 7)]


def test_pruning_length_reads_the_eta_quantile_of_relevant_lengths():
    # 100 records: 10 hold no relevant item, then 30/30/20/10 hold 1/2/3/4
    hist = np.array([30.0, 30.0, 20.0, 10.0])
    assert pruning_length(hist, 100.0, 0.85) == 3     # > 3 items: 10 ≤ 15
    assert pruning_length(hist, 100.0, 0.95) == 4     # > 3 items: 10 > 5
    assert pruning_length(hist, 100.0, 0.5) == 2      # > 2 items: 30 ≤ 50
    assert pruning_length(np.array([500.0, -3.0]), 10.0, 0.85) == 1   # noisy tail ≤ 1.5
    assert pruning_length(np.array([0.0, 500.0]), 10.0, 0.85) == 2    # never more than the cap


def test_a_flooding_level_prunes_on_a_bound_read_from_noisy_relevant_lengths(monkeypatch):
    data, records = _wide_records()
    params = SequenceMiningParams(epsilon=1.0, theta=0.2)
    from dpcore.sequences import counting

    bounds = []
    real = counting.shrink_records     # strict runs shrink where they count

    def spy(indptr, items, n_items, trie, lmax, *, truncate=True):
        out = real(indptr, items, n_items, trie, lmax, truncate=truncate)
        bounds.append((trie.k, lmax, int(np.diff(out[0]).max())))
        return out

    monkeypatch.setattr(counting, "shrink_records", spy)
    acc = PrivacyAccountant(run_cost_nano(params))
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(1), accountant=acc)
    level, first = res.levels[1], res.levels[0]
    # the bound is read at level 1, for the records' items among its 20 survivors (since
    # issue 35), and level 2 prunes on it, free, instead of buying a histogram of its own
    assert first.verify_length_epsilon_nano > 0 and level.length_epsilon_nano == 0
    assert first.verify_sensitivity == min(first.verify_length, first.kept_after_pruning)
    assert level.candidates == 400 and level.prune_length == first.verify_length
    assert 2 <= level.prune_length < res.lmax
    assert level.prune_sensitivity == min(math.comb(level.prune_length, 2), 400)
    assert (2, level.prune_length, level.prune_length) in bounds or all(
        b[2] <= b[1] for b in bounds)
    assert bounds and all(longest <= bound for _, bound, longest in bounds)
    calls = [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[3:]]
    replayed, unspent, _ = replay_level_calls(res, params)
    assert calls == replayed and (first.verify_length_epsilon_nano, 1) in calls
    assert res.unspent_nano == unspent
    assert res.spent_nano + res.unspent_nano == acc.spent_nano + res.unspent_nano \
        == epsilon_to_nano(1.0)
    # the bound is the η-quantile of the relevant lengths, up to the histogram's noise
    common = {int(x) for x in np.unique(np.concatenate(
        [np.array(p.items) for p in res.patterns if p.length == 1]))}
    held = np.array([sum(x in common for x in r) for r in records])
    exact = int(np.quantile(held, params.eta, method="higher"))
    assert abs(level.prune_length - exact) <= 1


def test_plausible_length_scales_the_reference_bound_by_the_support_share():
    assert plausible_length(30, 5.0, 9.0, 5) == 16        # ⌊30·5/9⌋
    assert plausible_length(32, 5.0, 1393.0, 2) == 2      # a tiny share: the level k
    assert plausible_length(12, 9.0, 9.0, 3) == 12        # the same items: the same bound
    assert plausible_length(12, 20.0, 9.0, 3) == 12       # never above the reference
    with pytest.raises(ParameterError):
        plausible_length(30, 1.0, 0.0, 2)


def test_a_level_skips_a_histogram_that_could_not_make_pruning_pay():
    """House_Power's shape (readings repeat: a window holds ~40 occurrences of 9 frequent
    levels): with the old rule (the histogram could give the bound k) level 5 bought a
    relevant-length histogram, read a bound near lmax and could not prune, so its
    verification had less ε than the baseline's. The new rule expects at least
    ⌊lmax·w_5/w_ref⌋ items (≈ 17), at which pruning cannot pay, buys nothing, and the run
    is the baseline's run; every decision is rebuilt from the released result."""
    data = generate_house_power(10_000, 3, name="hp")
    params = SequenceMiningParams(epsilon=4.0, theta=0.3, l1=30)
    base = SequenceMiningParams(algorithm="pfs2_straightforward", epsilon=4.0, theta=0.3,
                                l1=30)
    new = mine_frequent_sequences(data, params, rng=np.random.default_rng(0))
    baseline = mine_frequent_sequences(data, base, rng=np.random.default_rng(0))
    real = miner_module.plausible_length
    try:
        miner_module.plausible_length = lambda length, weight, reference, k: k
        old = mine_frequent_sequences(data, params, rng=np.random.default_rng(0))
    finally:
        miner_module.plausible_length = real
    wasted = [lv for lv in old.levels if lv.length_epsilon_nano and not lv.prune_sensitivity]
    assert wasted and wasted[0].relevant_length > wasted[0].length
    assert not any(lv.length_epsilon_nano or lv.prune_sensitivity for lv in new.levels)
    assert new.supports() == baseline.supports() != old.supports()
    calls, unspent, _ = replay_level_calls(new, params)
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in new.mechanism_calls[3:]] == calls
    assert new.unspent_nano == unspent


def test_a_later_level_reuses_an_earlier_bound_free(monkeypatch):
    """A bound read at level j bounds level k > j's relevant lengths too (C_k's items are
    items of FS_{k−1} ⊆ C_j's items, and the shrinking truncates hard): a level where it
    makes pruning pay prunes with it and buys no histogram; replayed from the result."""
    data, _ = _wide_records()
    params = SequenceMiningParams(epsilon=1.0, theta=0.2)
    seen = []
    real = miner_module.plan_level

    def spy(*args):
        seen.append(args)
        return real(*args)

    monkeypatch.setattr(miner_module, "plan_level", spy)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(1))
    # since issue 35 the bound is read at level 1, for its survivors' items
    first = res.levels[0]
    assert first.verify_length_epsilon_nano and not any(
        lv.length_epsilon_nano or lv.verify_length_epsilon_nano for lv in res.levels[1:])
    for lv, args in zip(res.levels, seen, strict=False):
        if lv.length > 1:      # every later level plans with level 1's bound, unpaid
            assert args[2] == max(lv.length, first.verify_length)
    calls, unspent, parts = replay_level_calls(res, params)
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[3:]] == calls
    assert [p[3] for p in parts] == [a[2] for a in seen]


def test_a_carried_bound_shorter_than_the_level_is_raised_to_k(monkeypatch):
    """A bound read at level 2 can be below a later level k; every record holding a
    k-candidate holds ≥ k relevant items, so level k plans with k (Δ_k ≥ 1), never with
    C(l_j, k) = 0 (which made φ_k = 0 and stopped a MSNBC run with an error). Forced
    here: level 2 reads the bound 2 and verifies instead of pruning, so level 3 runs
    (level 1 reads no bound for its survivors here)."""
    data, _ = _wide_records()
    params = SequenceMiningParams(epsilon=1.0, theta=0.2)
    seen = []
    real = miner_module.plan_level

    def plan(n, k, bound, *rest):
        seen.append((k, bound))
        out = real(n, k, bound, *rest)
        if k == 2:
            return dataclasses.replace(out, prune=False, prune_nano=0,
                                       verify_nano=out.prune_nano + out.verify_nano)
        return out

    monkeypatch.setattr(miner_module, "pruning_length", lambda *args: 1)
    monkeypatch.setattr(miner_module, "plan_level", plan)
    monkeypatch.setattr(miner_module, "wants_verify_histogram", lambda *args: False)
    # and verifies on the records as they are (shrunk to 2 items, nothing would pass)
    for module in (miner_module, strategy_module):   # the replay reads the strategy's
        monkeypatch.setattr(module, "verify_sensitivity", lambda n, k, length: (n, 0))
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(1))
    assert res.levels[1].relevant_length == 2 and len(res.levels) >= 3
    assert seen[1:] == [(lv.length, lv.length) for lv in res.levels[1:]]
    _, _, parts = replay_level_calls(res, params)
    assert [p[3] for p in parts][1:] == [lv.length for lv in res.levels[1:]]


def test_level_budget_rules_use_public_inputs_only():
    # the same public inputs give the same budgets, whatever data produced them
    assert level_budget(10**9, 5, 300, 4000.0) == level_budget(10**9, 5, 300, 4000.0)
    assert split_level_budget(10, 45, 45) == (5, 5)
    assert split_level_budget(2, 1, 10**6) == (1, 1)
    with pytest.raises(ParameterError):
        split_level_budget(1, 1, 1)
    assert verify_budget(10**9, 10, 1000.0, 3) == math.ceil(10 / 70.0 * 1e9)
    assert verify_budget(10**9, 10, 1000.0, 1) == 10**9     # last level: all of it
    assert verify_budget(10, 10**6, 1000.0, 3) == 10
    # the histogram is bought only where the lmax bound cannot prune but a short one could
    part = 150_000_000
    assert not wants_length_histogram(400, 1, 32, part, part, 3600.0, 0.3, part // 10,
                                      36_000.0, 0.85)            # level 1: never
    assert wants_length_histogram(400, 2, 32, part, part, 3600.0, 0.3, part // 10,
                                  36_000.0, 0.85)
    assert not wants_length_histogram(400, 2, 32, part, part, 3600.0, 0.3, part // 10,
                                      360.0, 0.85)               # noise too large for N̂
    assert not wants_length_histogram(20, 2, 32, part, part, 3600.0, 0.3, part // 10,
                                      36_000.0, 0.85)            # 20 candidates: no flood


def test_a_large_vocabulary_at_small_epsilon_releases_supports_not_noise():
    """Issue 35: on a BIBLE-like Zipf vocabulary level 1 kept its cap of noisy survivors and
    verified them with Δ = |C′_1| (320 on the BIBLE shape: noise 4 times θ·N̂), so the
    released supports were noise. Verifying on records shrunk to the bound read for the
    survivors keeps the released level-1 supports within 20 % (median) of the truth."""
    data = generate_word_stream(n_records=8_000, n_items=3_000, seed=11)
    params = SequenceMiningParams(epsilon=0.5, theta=0.1, l1=32)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(3))
    first = res.levels[0]
    assert first.prune_sensitivity > 0 and first.kept_after_pruning > 0
    assert 0 < first.verify_sensitivity < first.kept_after_pruning
    released = [p for p in res.patterns if p.length == 1]
    assert released
    true = res.diagnostics.true_supports
    errors = [abs(p.noisy_support - true[pattern_key(p.items)]) / true[pattern_key(p.items)]
              for p in released]
    assert float(np.median(errors)) < 0.2


def test_concentrate_bound_takes_the_rest_only_where_shrinking_pays():
    """BIBLE's level 2 at ε = 0.1 (361 candidates, carried bound 12, R_2 = 0.045 ε,
    θ·N̂ ≈ 3,618): the pool rule's half gives scale 66/0.0225 ≈ 2,933 > ρ·θ·N̂, so the
    level takes all of R_2 on records shrunk to 8 items (28/0.045 ≈ 622 ≤ 724 < 36/0.045)."""
    threshold = 3618.0
    bound = concentrate_bound(361, 2, 12, 22_500_000, 45_000_000, threshold)
    assert bound == 8
    limit = CONCENTRATE_SCALE * threshold
    assert math.comb(8, 2) / 0.045 <= limit < math.comb(9, 2) / 0.045
    # quiet enough at its share: the pool rule (ε = 1's level 2)
    assert concentrate_bound(361, 2, 12, 450_000_000, 900_000_000, threshold) is None
    assert concentrate_bound(19, 1, 12, 22_500_000, 45_000_000, threshold) is None   # k = 1
    assert concentrate_bound(361, 2, 12, 45_000_000, 45_000_000, threshold) is None  # all
    # House_Power's level 2: Δ = |C_2| = 121 at every bound, shrinking cannot lower it
    assert concentrate_bound(121, 2, 30, 32_744_196, 65_488_393, 12_239.1) is None
    # a bound below half the carried one would cut too much: 8 < 20/2
    assert concentrate_bound(361, 2, 20, 22_500_000, 45_000_000, threshold) is None


def test_noise_bound_shortens_a_noisy_pool_level_only_where_it_pays():
    """BIBLE's level 2 at θ = 0.18, ε = 0.1 (121 candidates, carried bound 11, Δ = 55 on
    0.0225 ε, θ·N̂ ≈ 6,546): scale 2,444 > ρ·θ·N̂ ≈ 1,309, and the rest of the pool
    (0.045 ε) reaches ρ·θ·N̂ at bound 11 already, so concentrate_bound declines; the level
    verifies on records shrunk to 8 items instead (28/0.0225 ≈ 1,244 ≤ 1,309 < 36/0.0225)."""
    threshold = 6546.0
    assert concentrate_bound(121, 2, 11, 22_500_000, 45_000_000, threshold) is None
    assert noise_bound(121, 2, 11, 55, 22_500_000, threshold) == 8
    limit = CONCENTRATE_SCALE * threshold
    assert math.comb(8, 2) / 0.0225 <= limit < math.comb(9, 2) / 0.0225
    # 64 candidates on records as they are (Δ = 64, C(11, 2) = 55 does not halve it)
    assert noise_bound(64, 2, 11, 64, 22_500_000, threshold) == 8
    # quiet enough already (ε = 1): keep Δ
    assert noise_bound(121, 2, 11, 55, 225_000_000, threshold) is None
    # level 1 and a bound no longer than k: never
    assert noise_bound(11, 1, 11, 11, 22_500_000, threshold) is None
    assert noise_bound(121, 2, 2, 1, 22_500_000, threshold) is None
    # the bound reaching ρ·θ·N̂ would be below half the carried one (8 < 20/2): keep Δ
    assert noise_bound(361, 2, 20, 190, 22_500_000, threshold) is None
    # House_Power's level 2 (Δ = |C_2| = 121 down to bound 16; 105 at 15 is still too
    # noisy on its budget): keep Δ
    assert noise_bound(121, 2, 30, 121, 32_744_196, 12_239.1) is None


def test_a_noisy_pool_level_verifies_on_the_bound_its_noise_gives(monkeypatch):
    """A word stream whose level 2 (144 candidates, carried bound 13: Δ = 144, since
    C(13, 2) = 78 does not halve it) would verify at a scale above ρ·θ·N̂ on its pool-rule
    budget, while the rest of the pool reaches ρ·θ·N̂ without shrinking (so it does not
    concentrate): it verifies on records shrunk to the bound noise_bound gives, the later
    levels still run, every call is rebuilt from the released result, and it releases
    fewer 2-sequences of true support below θ·N than with the carried bound."""
    data = generate_word_stream(12_000, 2_000, 7)
    params = SequenceMiningParams(epsilon=0.4, theta=0.2, l1=32)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(0))
    first, second = res.levels[0], res.levels[1]
    threshold = params.theta * res.noisy_records
    assert second.length == 2 and second.note != CONCENTRATED and len(res.levels) > 2
    assert 2 <= second.verify_length < first.verify_length
    assert second.verify_sensitivity == math.comb(second.verify_length, 2) < second.candidates
    assert (second.verify_sensitivity / nano_to_epsilon(second.verify_epsilon_nano)
            <= CONCENTRATE_SCALE * threshold)
    calls, unspent, _ = replay_level_calls(res, params)
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[3:]] == calls
    assert unspent == res.unspent_nano
    monkeypatch.setattr(miner_module, "noise_bound", lambda *args: None)
    carried = mine_frequent_sequences(data, params, rng=np.random.default_rng(0))
    assert carried.levels[1].verify_sensitivity == second.candidates

    def false_pairs(r):
        true = r.diagnostics.true_supports
        return sum(1 for p in r.patterns if p.length == 2
                   and true[pattern_key(p.items)] < params.theta * data.n_records)
    assert false_pairs(res) < false_pairs(carried)


def test_a_noisy_level_takes_the_rest_of_the_pool_and_is_the_last(monkeypatch):
    """A word stream whose level 2 would verify 529 candidates at a scale above ρ·θ·N̂:
    the level takes the whole rest of the pool, verifies every candidate on records
    shrunk to the bound concentrate_bound gives (Δ = C(b, 2)), the run ends there with
    nothing unspent, every call is rebuilt from the released result, and it releases
    fewer 2-sequences of true support below θ·N than the pool rule's run does."""
    data = generate_word_stream(12_000, 2_000, 7)
    params = SequenceMiningParams(epsilon=0.4, theta=0.1, l1=32)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(0))
    last = res.levels[-1]
    assert last.length == 2 and last.note == CONCENTRATED and res.unspent_nano == 0
    assert last.verify_sensitivity == math.comb(last.verify_length, 2) < last.candidates
    threshold = params.theta * res.noisy_records
    assert (last.verify_sensitivity / nano_to_epsilon(last.verify_epsilon_nano)
            <= CONCENTRATE_SCALE * threshold)
    calls, unspent, _ = replay_level_calls(res, params)
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[3:]] == calls
    assert unspent == 0
    monkeypatch.setattr(miner_module, "concentrate_bound", lambda *args: None)
    pooled = mine_frequent_sequences(data, params, rng=np.random.default_rng(0))

    def false_pairs(r):
        true = r.diagnostics.true_supports
        return sum(1 for p in r.patterns if p.length == 2
                   and true[pattern_key(p.items)] < params.theta * data.n_records)
    assert len(pooled.levels) > 2
    assert false_pairs(res) < false_pairs(pooled)
