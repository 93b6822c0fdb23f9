"""PFS2: parameters and the budget plan, the relaxed threshold (the published values), exact
accounting, strict mode's data-independence (declared alphabet, N̂ everywhere, hard truncation;
the per-level choices are in tests/dpcore/sequences/test_strategy.py), faithful mode's labels
and partition, the baseline, the result's JSON round trip, progress, and recovery of the true
frequent sequences at large ε."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.loading import load_sequence_dataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.errors import BudgetExceededError, DataError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.units import epsilon_to_nano, nano_to_epsilon
from dpcore.registry import FAITHFUL, STRICT
from dpcore.sequences import miner as miner_module
from dpcore.sequences import samples
from dpcore.sequences.evaluate import (
    exact_frequent_sequences,
    f_score,
    median_relative_error,
    support_threshold,
)
from dpcore.sequences.miner import (
    check_runnable,
    estimate_lmax,
    mine_frequent_sequences,
    partition_records,
)
from dpcore.sequences.params import (
    HELP,
    MAX_LENGTH,
    PFS2,
    PFS2_BASELINE,
    PRUNE,
    VERIFY,
    SequenceMiningParams,
    mechanism_shares,
    plan_budget,
    probe_count,
    run_cost_nano,
)
from dpcore.sequences.relaxation import (
    laplace_pruning_threshold,
    noisy_support_cdf,
    relaxed_threshold,
)
from dpcore.sequences.results import SequenceRunResult
from tests.support.sequences_reference import replay_level_calls

SEED = 20241124
SAMPLE_DATA = Path(__file__).resolve().parents[3] / "sample_data"


def ladder_dataset(n_records=2000, n_items=10) -> SequenceDataset:
    """Every record is 0 1 2 … 7: every sequence of increasing items is frequent, up to
    length 8; the alphabet declares 10 items, of which 8 occur."""
    schema = SequenceSchema("ladder", tuple(f"x{i}" for i in range(n_items)), l1=8)
    return SequenceDataset.from_lists(schema, [list(range(8))] * n_records)


# --------------------------------------------------------------------------- parameters

def test_every_parameter_has_a_help_text():
    fields = set(SequenceMiningParams.__dataclass_fields__)
    assert fields == set(HELP)
    assert all(isinstance(t, str) and t for t in HELP.values())


@pytest.mark.parametrize("change, name", [
    ({"epsilon": 0}, "epsilon"), ({"theta": 1.0}, "theta"), ({"zeta": 0.0}, "zeta"),
    ({"eta": 1.5}, "eta"), ({"l1": 0}, "l1"), ({"l1": 2.5}, "l1"), ({"mode": "lenient"}, "mode"),
    ({"algorithm": "gsp"}, "algorithm"), ({"budget_prune": 0.9}, "budget share"),
    ({"budget_records": 0.0}, "budget share"), ({"theta": True}, "theta"),
])
def test_bad_parameters_are_refused_naming_them(change, name):
    with pytest.raises(ParameterError, match=name):
        SequenceMiningParams(**change).validate()


@pytest.mark.parametrize("epsilon", [1.0, 0.3, 1 / 3, 7.77, 0.001])
def test_the_plan_sums_exactly_to_epsilon(epsilon):
    params = SequenceMiningParams(epsilon=epsilon)
    plan = plan_budget(params)
    assert sum(s.epsilon_nano for s in plan) == epsilon_to_nano(epsilon) == run_cost_nano(params)
    assert [s.phase for s in plan] == ["records", "lengths", "max_length", "prune", "verify"]
    for lmax in (1, 5, 8, 30):
        for n_levels in {1, max(1, lmax // 2), lmax}:
            shares = mechanism_shares(params, lmax, n_levels)
            assert sum(s.epsilon_nano for s in shares) == epsilon_to_nano(epsilon)
            assert sum(s.phase == MAX_LENGTH for s in shares) == 1   # one length histogram
            # strict: the levels' pool (ε4 + ε5), drawn level by level at run time
            assert [s.phase for s in shares if s.phase in (PRUNE, VERIFY)] == [PRUNE, VERIFY]
            assert all(s.parallel == 1 for s in shares)
            faithful = mechanism_shares(SequenceMiningParams(epsilon=epsilon, mode=FAITHFUL),
                                        lmax, n_levels)
            assert sum(s.epsilon_nano for s in faithful) == epsilon_to_nano(epsilon)
            assert [s.parallel for s in faithful if s.phase == PRUNE] == [n_levels]


def test_paper_split_and_baseline_plan():
    plan = {s.phase: s.epsilon_nano for s in plan_budget(SequenceMiningParams())}
    assert plan == {"records": 25_000_000, "lengths": 25_000_000, "max_length": 50_000_000,
                    "prune": 450_000_000, "verify": 450_000_000}
    base = {s.phase: s.epsilon_nano for s in plan_budget(
        SequenceMiningParams(algorithm=PFS2_BASELINE))}
    assert base == {"records": 25_000_000, "lengths": 25_000_000, "max_length": 50_000_000,
                    "verify": 900_000_000}
    with pytest.raises(ParameterError, match="too small"):
        plan_budget(SequenceMiningParams(epsilon=1e-7))


def test_probe_count():
    assert [probe_count(n) for n in (1, 2, 3, 4, 5, 8, 9, 30, 32)] == [1, 1, 2, 2, 3, 3, 4, 5, 5]


# --------------------------------------------------------------------------- relaxation

@pytest.mark.parametrize("n, lf, lmax, theta, k, expected, tol", [
    (989_818, 8, 8, 0.02, 1, 2445.9, 0.1),   # MSNBC
    (989_818, 8, 8, 0.02, 2, 2429.5, 0.1),
    (989_818, 8, 8, 0.02, 4, 2387.6, 0.1),
    (36_369, 5, 32, 0.1, 1, 686.7, 0.1),     # BIBLE
    (36_369, 5, 32, 0.1, 2, 164.0, 0.5),
    (36_369, 5, 32, 0.1, 3, -4903.0, 1.0),
    (40_986, 10, 30, 0.3, 2, 735.0, 0.5),    # House_Power
])
def test_relaxed_threshold_reproduces_the_published_values(n, lf, lmax, theta, k, expected,
                                                           tol):
    phi = math.comb(lmax, k) / 0.45
    assert relaxed_threshold(theta, n / lf, phi, 0.3) == pytest.approx(expected, abs=tol)


def test_relaxed_threshold_properties():
    assert relaxed_threshold(0.3, 4098.6, math.comb(30, 3) / 0.45, 0.3) < 0  # no pruning
    assert relaxed_threshold(0.02, 123_727, 5.0, 0.5) == pytest.approx(0.02 * 123_727)
    values = [relaxed_threshold(0.1, 5000, 20.0, z) for z in (0.1, 0.3, 0.5, 0.7)]
    assert values == sorted(values)
    with pytest.raises(ParameterError):
        relaxed_threshold(0.1, 0.0, 1.0, 0.3)


def test_the_cdf_matches_monte_carlo():
    rng = np.random.default_rng(SEED)
    mu, sigma, phi = 100.0, 7.0, 30.0
    z = rng.normal(mu, sigma, 200_000) + rng.laplace(0.0, phi, 200_000)
    pvalue = stats.kstest(z, lambda x: noisy_support_cdf(x, mu, sigma, phi)).pvalue
    assert pvalue > 1e-6
    # extreme ratios stay finite (log-space evaluation)
    assert np.isfinite(noisy_support_cdf(np.array([-1e6, 0.0, 1e6]), 0.0, 1e4, 1e-3)).all()


def test_estimate_lmax_takes_the_first_length_reaching_eta():
    hist = np.array([50, 30, 5, 5, 10])  # cumulative 0.5, 0.8, 0.85, 0.9, 1.0
    assert estimate_lmax(hist, 100, 0.85, 5) == (3, 3)
    assert estimate_lmax(hist, 100, 0.85, 2) == (3, 2)
    assert estimate_lmax(hist, 1000, 0.85, 5) == (5, 5)   # never reached: l1
    assert estimate_lmax(hist, -5, 0.85, 5) == (1, 1)     # N̂ is taken as at least 1


# --------------------------------------------------------------------------- accounting

def expected_level_calls(res, params):
    """(ε nano, sensitivity) of every level call, rebuilt from the released level records."""
    return replay_level_calls(res, params)[0]


def test_exact_accounting_every_call_recorded_and_summing_to_epsilon():
    data = ladder_dataset()
    params = SequenceMiningParams(epsilon=50.0, theta=0.5)
    acc = PrivacyAccountant(run_cost_nano(params))
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(SEED), accountant=acc)
    assert (res.lmax, res.max_frequent_length) == (8, 8)
    assert [lv.frequent for lv in res.levels] == [math.comb(8, k) for k in range(1, 9)]
    assert sum(c["epsilon_nano"] for c in res.mechanism_calls) == epsilon_to_nano(50.0)
    assert res.spent_nano == acc.spent_nano == res.epsilon_nano and res.unspent_nano == 0
    sens = [c["sensitivity"] for c in res.mechanism_calls]
    assert sens[:3] == [1, 1, 1]                # N̂, length histogram, L_f histogram
    shares = mechanism_shares(params, 8, 8)
    head = [s.epsilon_nano for s in shares if s.phase not in (PRUNE, VERIFY)]
    assert [c["epsilon_nano"] for c in res.mechanism_calls[:3]] == head
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in res.mechanism_calls[3:]] == \
        expected_level_calls(res, params)
    assert all(c["parallel"] == 1 for c in res.mechanism_calls) and res.part_calls == []
    assert all(c["mechanism"] == "discrete_laplace" for c in res.mechanism_calls)


def test_an_early_stop_leaves_the_rest_unspent_and_reported():
    data = load_sequence_dataset(SAMPLE_DATA / "clickstream")
    params = SequenceMiningParams(epsilon=1.0, theta=0.05)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(SEED))
    assert sum(c["epsilon_nano"] for c in res.mechanism_calls) == res.spent_nano
    assert res.spent_nano + res.unspent_nano == epsilon_to_nano(1.0)
    level_calls = expected_level_calls(res, params)
    assert [(c["epsilon_nano"], c["sensitivity"]) for c in
            res.mechanism_calls[-len(level_calls):]] == level_calls
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    assert res.unspent_nano == replay_level_calls(res, params)[1] == \
        plan[PRUNE] + plan[VERIFY] - sum(e for e, _ in level_calls)
    assert sum(c["label"].startswith("L_f") for c in res.mechanism_calls) == 1
    assert len(res.length_probes) == res.lmax


def test_a_too_small_accountant_refuses_before_drawing():
    params = SequenceMiningParams(epsilon=1.0)
    acc = PrivacyAccountant(epsilon_to_nano(0.06))   # pays N̂ and the histogram only
    with pytest.raises(BudgetExceededError):
        mine_frequent_sequences(ladder_dataset(200), params, rng=np.random.default_rng(1),
                                accountant=acc)
    assert acc.spent_nano == 50_000_000
    assert [c.label[:2] for c in acc.calls] == ["N̂", "α̂"]


# --------------------------------------------------------------------------- strict mode

def test_strict_takes_the_alphabet_from_the_schema_never_from_the_data():
    data = ladder_dataset(400)   # 10 declared items, 8 occur
    strict = mine_frequent_sequences(data, SequenceMiningParams(epsilon=20.0, theta=0.5),
                                     rng=np.random.default_rng(SEED))
    faithful = mine_frequent_sequences(data, SequenceMiningParams(
        epsilon=20.0, theta=0.5, mode=FAITHFUL), rng=np.random.default_rng(SEED))
    assert strict.levels[0].candidates == 10
    assert faithful.levels[0].candidates == 8


def test_strict_thresholds_derive_from_released_values_only():
    data = load_sequence_dataset(SAMPLE_DATA / "clickstream")
    params = SequenceMiningParams(epsilon=1.0, theta=0.03)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(SEED))
    n_hat = max(res.noisy_records, 1.0)
    assert any(lv.prune_sensitivity for lv in res.levels)     # level 2 prunes here
    for i, lv in enumerate(res.levels):
        assert lv.verify_threshold == pytest.approx(params.theta * n_hat)
        if lv.prune_sensitivity:
            bound = lv.prune_length
            assert lv.length <= bound <= res.lmax
            # a bound below lmax was read from a histogram at this level or an earlier one
            assert (bound < res.lmax) <= any(e.length_epsilon_nano for e in res.levels[:i + 1])
            assert lv.prune_sensitivity == min(math.comb(bound, lv.length), lv.candidates)
            phi = lv.prune_sensitivity / nano_to_epsilon(lv.prune_epsilon_nano)
            assert lv.relaxed_threshold == pytest.approx(laplace_pruning_threshold(
                params.theta * n_hat, phi, params.zeta))
    assert (res.l2, res.lmax) == estimate_lmax(np.array(res.noisy_length_histogram),
                                               res.noisy_records, params.eta, res.l1)
    assert res.not_dp == [] and res.mode == STRICT


def test_strict_thresholds_never_read_the_true_record_count(monkeypatch):
    """Every threshold handed to the level plan is θ·N̂, whatever the true count is."""
    seen = []
    real = miner_module.plan_level

    def spy(n_candidates, k, lmax, prune_nano, verify_nano, support_threshold, zeta):
        seen.append(support_threshold)
        return real(n_candidates, k, lmax, prune_nano, verify_nano, support_threshold, zeta)

    monkeypatch.setattr(miner_module, "plan_level", spy)
    res = mine_frequent_sequences(ladder_dataset(1000), SequenceMiningParams(
        epsilon=5.0, theta=0.5), rng=np.random.default_rng(SEED))
    assert seen and all(v == 0.5 * max(res.noisy_records, 1.0) for v in seen)


def test_length_decisions_equal_the_direct_search_before_and_after_the_table():
    from dpcore.sequences.kernels import build_occurrence_runs
    from dpcore.sequences.miner import LengthDecider, frequent_length_exists

    data = load_sequence_dataset(SAMPLE_DATA / "house_power")
    runs = build_occurrence_runs(data.indptr, data.items, data.schema.n_items)
    rng = np.random.default_rng(SEED)
    thresholds = 0.3 * data.n_records + rng.normal(0, 60, size=12)
    decide = LengthDecider(data, runs, 12, float(thresholds.min()))
    for threshold in thresholds:
        for y in (1, 4, 8, 9, 10, 12):
            assert decide(y, threshold) == frequent_length_exists(data, runs, y, threshold)
    assert decide.beta is not None                  # a "no" built the table
    low = LengthDecider(data, runs, 12, 0.5)
    assert low(12, -1.0) and low(3, 0.5) and low.beta is None   # cheap: searched directly


def test_the_per_record_partition_and_the_faithful_one_cutting_blocks():
    rng = np.random.default_rng(SEED)
    sizes = [np.bincount(partition_records(1000, 4, rng), minlength=4) for _ in range(20)]
    assert any(len(set(s.tolist())) > 1 for s in sizes)            # sizes vary
    pooled = np.sum(sizes, axis=0)
    assert stats.chisquare(pooled).pvalue > 1e-6                    # uniform over parts
    blocks = np.bincount(partition_records(1001, 4, rng, strict=False), minlength=4)
    assert blocks.max() - blocks.min() <= 1
    # one record added changes one record's part only (strict): same draws for the others
    a = partition_records(50, 3, np.random.default_rng(7))
    b = partition_records(51, 3, np.random.default_rng(7))
    assert np.array_equal(a, b[:50])


def test_strict_samples_are_truncated_to_lmax(monkeypatch):
    from dpcore.sequences import counting

    lengths = []
    real = counting.shrink_records     # strict runs shrink where they count

    def spy(indptr, items, n_items, trie, lmax, *, truncate=True):
        out = real(indptr, items, n_items, trie, lmax, truncate=truncate)
        lengths.append((int(np.diff(out[0]).max()), lmax, truncate))
        return out

    monkeypatch.setattr(counting, "shrink_records", spy)
    res = mine_frequent_sequences(load_sequence_dataset(SAMPLE_DATA / "house_power"),
                                  SequenceMiningParams(epsilon=0.1, theta=0.3, l1=2,
                                                       budget_records=0.1,
                                                       budget_lengths=0.1),
                                  rng=np.random.default_rng(SEED))
    # 21 items, Δ_1 = lmax = 2 and verifying all 21 at ε = 0.1 would flood: level 1 prunes
    assert res.levels[0].prune_sensitivity == 2
    assert lengths and all(n <= lmax and truncate for n, lmax, truncate in lengths)


# --------------------------------------------------------------------------- faithful, baseline

def test_faithful_mode_is_labelled_not_dp():
    res = mine_frequent_sequences(ladder_dataset(500), SequenceMiningParams(
        epsilon=10.0, theta=0.5, mode=FAITHFUL), rng=np.random.default_rng(SEED))
    assert res.mode == FAITHFUL and len(res.not_dp) == 6
    assert all(lv.verify_threshold is None for lv in res.levels)
    assert len(res.length_probes) == res.lmax                  # every β̂_y drawn
    kinds = {c["mechanism"] for c in res.mechanism_calls[3:] + res.part_calls}
    assert kinds == {"laplace"}
    assert res.spent_nano + res.unspent_nano == epsilon_to_nano(10.0)


def test_the_straightforward_baseline_verifies_every_candidate():
    res = mine_frequent_sequences(ladder_dataset(500), SequenceMiningParams(
        algorithm=PFS2_BASELINE, epsilon=20.0, theta=0.5), rng=np.random.default_rng(SEED))
    assert res.part_calls == [] and not any("disjoint" in c["label"]
                                            for c in res.mechanism_calls)
    for lv in res.levels:
        assert lv.prune_sensitivity == 0 and lv.relaxed_threshold is None
        assert lv.kept_after_pruning == lv.candidates == lv.verify_sensitivity
    assert res.levels[0].candidates == 10
    assert res.spent_nano + res.unspent_nano == epsilon_to_nano(20.0)


# --------------------------------------------------------------------------- result, progress

def test_result_json_round_trip_keeps_diagnostics_apart():
    data = load_sequence_dataset(SAMPLE_DATA / "house_power")
    res = mine_frequent_sequences(data, SequenceMiningParams(epsilon=5.0, theta=0.3, l1=8),
                                  rng=np.random.default_rng(SEED), seed=SEED, run_id="r1")
    public = res.to_json()
    assert "diagnostics" not in public and "true_supports" not in public
    back = SequenceRunResult.from_json(res.to_json(include_diagnostics=True))
    assert back.to_dict(include_diagnostics=True) == res.to_dict(include_diagnostics=True)
    assert back.patterns and back.patterns[0].names == tuple(
        data.schema.alphabet[i] for i in back.patterns[0].items)
    assert res.seed == SEED and res.run_id == "r1"
    assert set(res.diagnostics.true_supports) == {" ".join(map(str, p.items))
                                                  for p in res.patterns}
    assert res.diagnostics.sample_sizes == []       # strict prunes on all records


def test_progress_is_reported_between_levels():
    calls = []
    res = mine_frequent_sequences(ladder_dataset(300), SequenceMiningParams(
        epsilon=20.0, theta=0.5), rng=np.random.default_rng(SEED),
        progress=lambda f, m: calls.append((f, m)))
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    # one message per level begun (the last one may find no candidates and stop)
    assert sum(m.startswith("level") for _, m in calls) in (len(res.levels),
                                                             len(res.levels) + 1)


def test_check_runnable_refuses_before_any_charge():
    empty = SequenceDataset.from_lists(SequenceSchema("e", ("a",)), [])
    with pytest.raises(DataError, match="no records"):
        check_runnable(empty, SequenceMiningParams())
    with pytest.raises(DataError, match="sequence datasets"):
        check_runnable(object(), SequenceMiningParams())
    with pytest.raises(ParameterError):
        check_runnable(ladder_dataset(10), SequenceMiningParams(theta=2.0))


# --------------------------------------------------------------------------- utility

def test_large_epsilon_recovers_the_true_frequent_sequences():
    data = load_sequence_dataset(SAMPLE_DATA / "clickstream")
    params = SequenceMiningParams(epsilon=50.0, theta=0.03)
    res = mine_frequent_sequences(data, params, rng=np.random.default_rng(SEED))
    truth = exact_frequent_sequences(data, theta=0.03)
    score = f_score(res.supports(), truth)
    assert score.f_score >= 0.9, score
    assert median_relative_error(res.supports(), data) < 0.05


def test_f_score_and_relative_error_helpers():
    s = f_score({(1,), (2,), (3,)}, {(1,), (2,), (4,), (5,)})
    assert (s.precision, s.recall) == (2 / 3, 0.5)
    assert s.f_score == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert f_score([], []).f_score == 1.0 and f_score([(1,)], []).f_score == 0.0
    assert f_score({(1,), (1, 2)}, {(1,)}, max_length=1).f_score == 1.0
    assert median_relative_error({(1,): 110.0, (2,): 45.0, (3,): 5.0},
                                 supports={(1,): 100, (2,): 50, (3,): 0}) == pytest.approx(0.1)
    assert support_threshold(0.02, 989_818) == 19_797


@pytest.mark.parametrize("epsilon", [1.0, 0.1])
def test_strict_pfs2_verifies_as_the_baseline_on_household_power_runs(epsilon):
    # Issue 35 saw PFS2 below the baseline on household power data. On the shape with
    # long constant runs (21 levels, windows of 50) no level of strict PFS2 floods, prunes,
    # buys a histogram or concentrates, so it must make the baseline's calls and, on the
    # same seed, release exactly what the baseline releases (docs/results.md, issue 35).
    data = samples.generate_power_runs(2_000, 11)
    runs = [mine_frequent_sequences(
        data, SequenceMiningParams(algorithm=algorithm, epsilon=epsilon, theta=0.3),
        rng=np.random.default_rng([1, 0])) for algorithm in (PFS2, PFS2_BASELINE)]
    calls = [[(c["epsilon_nano"], c["sensitivity"]) for c in r.mechanism_calls] for r in runs]
    assert len(runs[0].levels) >= 3 and calls[0] == calls[1]
    assert runs[0].supports() == runs[1].supports() and runs[0].supports()
