"""Strict PFS2's L_f step: a noisy histogram of record lengths, never a search of the records.

What is checked: the histogram against a plain count (records longer than lmax in the last
cell); L_f read from exact counts is never below the exact longest frequent length (an
upper bound); one call of sensitivity 1 paying exactly ε3; neighbouring datasets that release
the same values get the same L_f; and a House_Power-shaped run at θ = 0.02 finishes with the
work stated in the test (no maximal-support search; candidates bounded level by level).
The noise's calibration is in tests/dpcore/sequences/test_sequences_statistical.py (χ², with a
power check).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.errors import ParameterError
from dpcore.privacy.units import epsilon_to_nano
from dpcore.registry import FAITHFUL, PFS2_BASELINE
from dpcore.sequences import miner as miner_module
from dpcore.sequences import samples
from dpcore.sequences.miner import (
    frequent_length_bound,
    length_counts,
    mine_frequent_sequences,
)
from dpcore.sequences.params import (
    MAX_LENGTH,
    SequenceMiningParams,
    mechanism_shares,
    plan_budget,
)
from dpcore.sequences.strategy import TARGET_SCALE, level_budget, release_cap
from tests.support import sequences_reference as ref

SEED = 20241124


def _dataset(records, n_items=4, l1=8) -> SequenceDataset:
    schema = SequenceSchema("t", tuple(f"x{i}" for i in range(n_items)), l1=l1)
    return SequenceDataset.from_lists(schema, records)


def _random_records(rng, n, n_items=4, max_len=9):
    return [rng.integers(0, n_items, size=int(rng.integers(1, max_len + 1))).tolist()
            for _ in range(n)]


@pytest.mark.parametrize("lmax", [1, 3, 8, 12])
def test_length_counts_equal_a_plain_count_with_the_long_records_in_the_last_cell(lmax):
    rng = np.random.default_rng(SEED + lmax)
    records = _random_records(rng, 300, max_len=15)
    got = length_counts(_dataset(records).lengths, lmax)
    want = [sum(min(len(r), lmax) == y for r in records) for y in range(1, lmax + 1)]
    assert got.tolist() == want and got.sum() == len(records)


def test_an_empty_record_is_in_no_cell_and_bad_lmax_is_refused():
    assert length_counts(np.array([0, 2, 5]), 3).tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match="lmax"):
        length_counts(np.array([1]), 0)


@pytest.mark.parametrize("seed", range(6))
def test_exact_counts_give_an_upper_bound_on_the_longest_frequent_length(seed):
    rng = np.random.default_rng(seed)
    records = _random_records(rng, 40, n_items=3, max_len=8)
    lmax = 8
    min_support = int(rng.integers(2, 12))
    exact = ref.frequent_sequences(records, min_support, max_length=lmax)
    longest = max((len(s) for s in exact), default=0)
    l_f, at_least = frequent_length_bound(length_counts(_dataset(records).lengths, lmax),
                                          min_support)
    assert l_f >= max(longest, 1)
    assert at_least.tolist() == [sum(len(r) >= y for r in records) for y in range(1, 9)]
    # and it is the largest such length: the next one has too few long records
    assert l_f == lmax or at_least[l_f] < min_support


def test_no_length_reaching_the_threshold_gives_one():
    assert frequent_length_bound(np.array([-3.0, 2.0, 1.0]), 50.0)[0] == 1
    assert frequent_length_bound(np.array([5.0, 0.0, 10.0]), 10.0)[0] == 3


def test_the_step_is_one_call_of_sensitivity_one_paying_exactly_eps3():
    rng = np.random.default_rng(SEED)
    data = _dataset(_random_records(rng, 500))
    params = SequenceMiningParams(epsilon=2.0, theta=0.1)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(SEED))
    calls = [c for c in res.mechanism_calls if c["label"].startswith("L_f")]
    eps3 = next(s.epsilon_nano for s in plan_budget(params) if s.phase == MAX_LENGTH)
    assert [(c["epsilon_nano"], c["sensitivity"], c["mechanism"]) for c in calls] == \
        [(eps3, 1, "discrete_laplace")]
    assert res.mechanism_calls.index(calls[0]) == 2      # after N̂ and α̂, before any level
    assert sum(c["epsilon_nano"] for c in res.mechanism_calls) + res.unspent_nano == \
        epsilon_to_nano(2.0)
    # L_f is what the released counts and N̂ say (post-processing)
    released = np.array([p["noisy_records_at_least"] for p in res.length_probes])
    cells = released - np.append(released[1:], 0.0)
    assert frequent_length_bound(cells, 0.1 * max(res.noisy_records, 1.0))[0] == \
        res.max_frequent_length


def test_neighbours_releasing_the_same_values_get_the_same_length():
    """D and D′ = D plus one record of length 5: the noise z′ = z − e_5 (probability ratio
    ≤ e^ε3 under discrete Laplace(1/ε3)) makes D′ release D's values, and L_f follows."""
    rng = np.random.default_rng(SEED)
    records = _random_records(rng, 200)
    lmax, threshold = 8, 0.1 * 200
    counts = length_counts(_dataset(records).lengths, lmax)
    counts2 = length_counts(_dataset(records + [[0, 1, 2, 3, 0]]).lengths, lmax)
    assert np.abs(counts2 - counts).sum() == 1                    # sensitivity 1
    z = rng.integers(-20, 21, size=lmax)
    z2 = z - (counts2 - counts)
    assert np.array_equal(counts + z, counts2 + z2)
    assert frequent_length_bound(counts + z, threshold)[0] == \
        frequent_length_bound(counts2 + z2, threshold)[0]


def test_house_power_shape_at_two_percent_finishes_without_any_search(monkeypatch):
    """The step that took 42 s per probe on the full shape: strict mode must not call the
    maximal-support search at all; each level's candidates are bounded as stated."""
    def forbidden(*args, **kwargs):
        raise AssertionError("strict PFS2 searched the records for maximal supports")

    for name in ("max_supports_by_length", "prefix_search", "frequent_length_exists"):
        monkeypatch.setattr(miner_module, name, forbidden)
    data = samples.generate_house_power(1500, 3, name="house_power_test")
    theta = 0.02
    res = mine_frequent_sequences(data, SequenceMiningParams(epsilon=1.0, theta=theta),
                                  rng=np.random.default_rng(SEED))
    assert res.lmax == 30 and 1 <= res.max_frequent_length <= res.lmax
    assert len(res.levels) <= res.max_frequent_length
    # work: level 1 examines the declared alphabet; level k ≥ 2 at most (released at k − 1)²
    # GSP joins, and what a level releases is at most M_k = ⌈C(lmax, k)/θ⌉
    assert res.levels[0].candidates == data.schema.n_items
    for before, level in zip(res.levels, res.levels[1:]):
        assert level.candidates <= before.frequent ** 2
    for level in res.levels:
        assert level.frequent <= release_cap(res.lmax, level.length, theta)
    assert sum(lv.candidates for lv in res.levels) <= data.schema.n_items + sum(
        min(lv.frequent, release_cap(res.lmax, lv.length, theta)) ** 2 for lv in res.levels)
    assert res.patterns and math.isclose(
        sum(c["epsilon_nano"] for c in res.mechanism_calls) + res.unspent_nano,
        epsilon_to_nano(1.0))


# --------------------------------------------------------------------------- level budgets

@pytest.mark.parametrize("seed", range(6))
def test_level_budgets_never_exceed_the_pool_on_any_outcome(seed):
    """Whatever the released candidate counts, the levels' budgets sum to at most the pool
    (exactly the pool when the run reaches L_f) and every level gets between an even share
    of the rest and half of it (all of it at the last level)."""
    rng = np.random.default_rng(SEED + seed)
    pool = int(rng.integers(1_000, 10**9))
    n_levels = int(rng.integers(1, 40))
    threshold = float(rng.uniform(1.0, 1e5))
    remaining, spent = pool, []
    for k in range(1, n_levels + 1):
        left = n_levels - k + 1
        n = int(rng.integers(0, 10**5))
        b = level_budget(remaining, left, n, threshold)
        if left == 1:
            assert b == remaining
        else:
            assert remaining // left <= b <= remaining // 2
        spent.append(b)
        remaining -= b
    assert sum(spent) == pool and remaining == 0


def test_a_level_asks_for_the_target_noise_scale_within_its_bounds():
    # 100 candidates, θ·N̂ = 10_000: scale τ·θ·N̂ = 700 needs 100/700 ε
    need = math.ceil(100 / (TARGET_SCALE * 10_000) * 1e9)
    assert level_budget(10**9, 10, 100, 10_000.0) == need
    assert level_budget(10**9, 10, 1, 10_000.0) == 10**8           # at least R/m
    assert level_budget(10**9, 10, 10**6, 10_000.0) == 5 * 10**8   # at most R/2
    assert level_budget(10**9, 1, 1, 10_000.0) == 10**9            # last level: all
    assert level_budget(10**9, 4, 100, 0.0) == 5 * 10**8           # θ·N̂ ≤ 0: the cap
    with pytest.raises(ParameterError):
        level_budget(10**9, 0, 100, 1.0)


def test_strict_lists_one_level_pool_and_faithful_splits_evenly():
    params = SequenceMiningParams(epsilon=1.0)
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    strict = mechanism_shares(params, 8, 6)
    assert [(s.phase, s.epsilon_nano) for s in strict[3:]] == [("prune", plan["prune"]),
                                                               ("verify", plan["verify"])]
    base = SequenceMiningParams(epsilon=1.0, algorithm=PFS2_BASELINE)
    verify = [s.epsilon_nano for s in mechanism_shares(base, 8, 6) if s.phase == "verify"]
    assert verify == [900_000_000]
    faithful = SequenceMiningParams(epsilon=1.0, mode=FAITHFUL)
    verify = [s.epsilon_nano for s in mechanism_shares(faithful, 8, 6) if s.phase == "verify"]
    assert verify == [75_000_000] * 6
