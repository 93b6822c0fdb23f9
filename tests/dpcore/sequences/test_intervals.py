"""dpcore.sequences.intervals: PFS2's support intervals keep their stated 90 % coverage
among the *released* supports (the selection at θ·N̂ accounted for), the naive interval does
not, and releases that may be noise are flagged in the result (issue 30, points 2 and 4)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.privacy.mechanisms import discrete_laplace_sample
from dpcore.registry import PFS2
from dpcore.sequences.intervals import (
    COVERAGE,
    FLAG_NOISE,
    count_interval,
    discrete_laplace_sf,
    laplace_sf,
    length_cut_warning,
    ranked,
    release_warnings,
    support_interval,
)
from dpcore.sequences.params import SequenceMiningParams
from dpcore.sequences.results import SequenceRunResult, pattern_key

SAMPLES = Path(__file__).resolve().parents[3] / "sample_data"


def test_the_tails_are_the_noise_laws():
    scale = 3.0
    p = math.exp(-1 / scale)
    pmf = {z: (1 - p) / (1 + p) * p ** abs(z) for z in range(-200, 201)}
    for k in (-5, 0, 1, 7):
        assert discrete_laplace_sf(k, scale) == pytest.approx(
            sum(v for z, v in pmf.items() if z >= k), rel=1e-9)
    assert laplace_sf(0.0, 2.0) == pytest.approx(0.5)
    assert laplace_sf(-2.0, 2.0) == pytest.approx(1 - 0.5 * math.exp(-1))


def _coverage(true, threshold, scale, adjusted, n=1200, seed=0):
    rng = np.random.default_rng(seed)
    y = true + discrete_laplace_sample(1, scale, rng, size=20 * n)
    released = y[y >= threshold][:n]
    hits = [lo <= true <= hi for lo, hi in (
        support_interval(v, scale, threshold=threshold if adjusted else None)
        for v in released)]
    return float(np.mean(hits)), len(hits)


@pytest.mark.parametrize("true, threshold, scale", [(100, 90, 10), (50, 90, 20),
                                                    (400, 100, 60)])
def test_coverage_among_released_supports_is_the_stated_one(true, threshold, scale):
    covered, n = _coverage(true, threshold, scale, adjusted=True)
    assert n >= 1000
    assert abs(covered - COVERAGE) <= 0.03, covered


def test_the_naive_interval_breaks_its_promise_under_selection():
    """A support below the threshold is released only on high noise: read without the
    selection, its interval misses it far more often than 10 %."""
    naive, _ = _coverage(50, 90, 20, adjusted=False)
    adjusted, _ = _coverage(50, 90, 20, adjusted=True)
    assert naive < 0.75 < COVERAGE - 0.03 <= adjusted


def test_unconditional_and_continuous_intervals_cover():
    rng = np.random.default_rng(1)
    true, scale = 300.0, 25.0
    noisy = true + rng.laplace(0.0, scale, size=1500)
    hits = [lo <= true <= hi for lo, hi in (count_interval(v, scale, discrete=False)
                                             for v in noisy)]
    assert abs(np.mean(hits) - COVERAGE) <= 0.03
    lo, hi = count_interval(300, 25)
    assert lo < 300 < hi and hi - lo == pytest.approx(2 * 25 * math.log(10), abs=3)


def test_an_interval_far_above_the_threshold_is_the_plain_one_and_bad_input_is_named():
    assert support_interval(5000, 10, threshold=100) == count_interval(5000, 10)
    with pytest.raises(ParameterError, match="noise scale"):
        support_interval(10, 0.0)
    with pytest.raises(ParameterError, match="coverage"):
        support_interval(10, 1.0, coverage=1.0)


@pytest.fixture(scope="module")
def house_power_run():
    from dpcore.data.kinds import load_any_dataset
    from dpcore.sequences.miner import mine_frequent_sequences

    _, data = load_any_dataset(SAMPLES / "house_power")
    return mine_frequent_sequences(data, SequenceMiningParams(algorithm=PFS2, epsilon=1.0,
                                                              theta=0.05),
                                   rng=np.random.default_rng(0))


def test_a_pfs2_run_carries_intervals_flags_and_warnings(house_power_run):
    result = house_power_run
    assert len(result.patterns) > 100
    true = result.diagnostics.true_supports
    hits = [p.support_low <= true[pattern_key(p.items)] <= p.support_high
            for p in result.patterns]
    assert abs(np.mean(hits) - COVERAGE) <= 0.03
    flagged = [p for p in result.patterns if FLAG_NOISE in p.flags]
    assert all(p.support_low == 0 for p in flagged) and flagged
    assert result.warnings == release_warnings(result) and str(len(flagged)) in \
        result.warnings[0]
    top = ranked(result.patterns)
    assert not top[0].flags and top[-1].flags
    back = SequenceRunResult.from_json(result.to_json())
    assert back.patterns == result.patterns and back.warnings == result.warnings
    stored = json.loads(result.to_json())["patterns"][0]
    assert {"support_low", "support_high", "flags"} <= set(stored)


def _abcd_run(l1, n=2_000, epsilon=4.0):
    from dpcore.data.sequences.dataset import SequenceDataset
    from dpcore.data.sequences.schema import SequenceSchema
    from dpcore.sequences.miner import mine_frequent_sequences

    schema = SequenceSchema("abcd", ("a", "b", "c", "d"), l1=l1)
    data = SequenceDataset.from_lists(schema, [[0, 1, 2, 3]] * n + [[0]] * (n // 10))
    return mine_frequent_sequences(data, SequenceMiningParams(epsilon=epsilon, theta=0.5),
                                   rng=np.random.default_rng(0))


def test_a_run_whose_l1_cuts_frequent_lengths_says_which():
    """Every record "a b c d" (the pattern of 4 items is frequent): with l1 = 2 the run
    mines up to 2 items and its warnings name the lengths cut — 3–4 are above l1, known
    only as "more than l1"; with l1 = 3 length 4 is; with l1 = 4 nothing is cut. The
    sentence reads the released N̂ and length histogram only (a result rebuilt without
    its diagnostics gives the same one)."""
    cut2, cut3, whole = _abcd_run(2), _abcd_run(3), _abcd_run(4)
    assert cut2.lmax == 2 and max(p.length for p in cut2.patterns) == 2
    assert "at most lmax = 2 items" in cut2.warnings[-1]
    assert "frequent sequences of more than l1 = 2 items" in cut2.warnings[-1]
    assert "frequent sequences of more than l1 = 3 items" in cut3.warnings[-1]
    assert whole.lmax == 4 and length_cut_warning(whole) is None
    assert not any("Length cut" in w for w in whole.warnings)
    released = SequenceRunResult.from_json(cut2.to_json())
    assert length_cut_warning(released) == cut2.warnings[-1]
    # records of 3–4 items known from α̂ when l1 is long but lmax short (η-quantile):
    # lmax = 2 of l1 = 6 when only a tenth of the records are longer than 2
    from dpcore.data.sequences.dataset import SequenceDataset
    from dpcore.data.sequences.schema import SequenceSchema
    from dpcore.sequences.miner import mine_frequent_sequences

    schema = SequenceSchema("abcd", ("a", "b", "c", "d"), l1=6)
    data = SequenceDataset.from_lists(schema, [[0, 1, 2, 3]] * 300 + [[0, 1]] * 2_700)
    res = mine_frequent_sequences(data, SequenceMiningParams(epsilon=4.0, theta=0.05),
                                  rng=np.random.default_rng(0))
    assert res.lmax == 2
    assert "frequent sequences of 3–4 items may exist" in length_cut_warning(res)
    assert "raise η or l1" in length_cut_warning(res)
