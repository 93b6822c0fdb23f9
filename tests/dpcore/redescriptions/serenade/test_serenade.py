"""SerenadeES / SerenadeCS: sensitivity, kernels against brute force, the exponential
mechanism's distribution, exact accounting, no data-derived thresholds in strict mode,
and recovery of a planted rule at high ε."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcore.data.samples import clinic_planted_rules
from dpcore.errors import BudgetExceededError, ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.coding import code_dataset_strict, code_view_segments
from dpcore.redescriptions.evaluate import evaluate
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import SerenadeParams, family_type, plan_budget
from dpcore.redescriptions.results import AttributeTest, RunResult, formula_text
from dpcore.redescriptions.serenade.kernels import (
    extension_scores,
    log_sum_exp,
    pair_scores,
    span_row_index,
)
from dpcore.redescriptions.serenade.literals import literal_mask, literal_set
from dpcore.redescriptions.serenade.miner import _Miner, _Red, draw_from_union
from dpcore.redescriptions.serenade.quality import (
    brute_force_sensitivity,
    quality,
    quality_sensitivity,
)
from dpcore.runs import charge_and_mine, load_result
from tests.dpcore.redescriptions.test_mining import SEED, _release, _with_new_maximum, toy_dataset

TINY = dict(init_pairs=4, es_rounds=6, cs_rounds=2)
LOOSE = dict(min_support=0.0, min_jaccard=0.0, max_pvalue=1.0, max_support=1.0)


# --------------------------------------------------------------------------- Δf

def test_sensitivity_reproduces_the_published_values():
    assert quality_sensitivity(2575, 0.02) == pytest.approx(0.00588, abs=5e-6)
    assert quality_sensitivity(1_000_000, 0.01) == pytest.approx(0.0025, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 400), s=st.floats(0.005, 0.5))
def test_sensitivity_equals_brute_force_enumeration(n, s):
    assert quality_sensitivity(n, s, max_union=n) == pytest.approx(
        brute_force_sensitivity(n, s), rel=1e-9, abs=1e-15)


def test_sensitivity_does_not_grow_past_the_searched_range():
    """Searching unions far beyond N changes nothing: Δf is valid for any true N ≥ N̂."""
    for n, s in ((2575, 0.02), (5000, 0.03), (300, 0.01)):
        assert quality_sensitivity(n, s) == quality_sensitivity(n, s, max_union=50 * n)


def test_sensitivity_bounds_the_change_of_f_for_random_neighbours():
    """Adding one row to a random (i, u) never moves f by more than Δf."""
    rng = np.random.default_rng(SEED)
    n, s = 1000, 0.02
    delta, x0 = quality_sensitivity(n, s), 0.1 * n
    for _ in range(5000):
        u = int(rng.integers(0, n))
        i = int(rng.integers(0, u + 1))
        f = quality(i, u, s, x0)
        assert abs(quality(i, u + 1, s, x0) - f) <= delta + 1e-15
        assert abs(quality(i + 1, u + 1, s, x0) - f) <= delta + 1e-15


# --------------------------------------------------------------------------- kernels

def _coded_toy(n_rows=300, seed=SEED):
    ds = toy_dataset(n_rows=n_rows, seed=seed)
    return ds, code_dataset_strict(ds)


def _brute_quality(left, right, s, x0):
    e11 = int(np.count_nonzero(left & right))
    return quality(e11, int(np.count_nonzero(left | right)), s, x0)


def test_pair_scores_match_brute_force():
    ds, coded = _coded_toy()
    lits = [literal_set(c) for c in coded]
    s, x0 = 0.03, 30.0
    for a in range(len(ds.views[0].attributes)):
        for b in (0, 2):  # attribute 2 of the right view has missing values
            la = range(lits[0].start[a], lits[0].start[a + 1])
            lb = range(lits[1].start[b], lits[1].start[b + 1])
            out = np.empty(len(la) * len(lb))
            pair_scores(coded[0].codes[a], coded[0].n_codes[a], lits[0].lo[la.start:la.stop],
                        lits[0].hi[la.start:la.stop], coded[1].codes[b], coded[1].n_codes[b],
                        lits[1].lo[lb.start:lb.stop], lits[1].hi[lb.start:lb.stop], s, x0, out)
            for i, ka in enumerate(la):
                ma = literal_mask(coded[0], lits[0], ka)
                for j, kb in enumerate(lb):
                    mb = literal_mask(coded[1], lits[1], kb)
                    assert out[i * len(lb) + j] == pytest.approx(_brute_quality(ma, mb, s, x0))


@pytest.mark.parametrize("left_ops,right_ops", [([], []), (["or"], []), ([], ["and"])])
def test_extension_scores_match_brute_force(left_ops, right_ops):
    ds, coded = _coded_toy()
    lits = [literal_set(c) for c in coded]
    red_lits = ([0] + [int(lits[0].start[2])] * len(left_ops),
                [int(lits[1].start[1]) + 5] + [int(lits[1].start[3]) + 7] * len(right_ops))
    masks = []
    for side, ops in ((0, left_ops), (1, right_ops)):
        m = literal_mask(coded[side], lits[side], red_lits[side][0])
        for k, op in zip(red_lits[side][1:], ops):
            mk = literal_mask(coded[side], lits[side], k)
            m = m & mk if op == "and" else m | mk
        masks.append(m)
    red = _Red(0, red_lits, (left_ops, right_ops), tuple(masks))
    allow = red.allow(4)
    used = [np.isin(np.arange(len(ds.views[v].attributes)), lits[v].attr[red_lits[v]])
            for v in (0, 1)]
    s, x0 = 0.02, 30.0
    spans = [span_row_index(coded[v].codes, coded[v].n_codes, lits[v].start, lits[v].lo,
                            lits[v].hi) for v in (0, 1)]
    assert (spans[0][0] >= 0).sum() == 5  # the five Boolean attributes read only true rows
    out = extension_scores(coded[0].codes, coded[0].n_codes, lits[0].start, lits[0].lo,
                           lits[0].hi, spans[0], used[0], coded[1].codes, coded[1].n_codes,
                           lits[1].start, lits[1].lo, lits[1].hi, spans[1], used[1], allow,
                           masks[0], masks[1], s, x0)
    n_l, n_r = lits[0].size, lits[1].size
    assert out.size == 2 * n_l + 2 * n_r + 1
    assert out[-1] == pytest.approx(_brute_quality(masks[0], masks[1], s, x0))
    blocks = [(0, "and", 0), (0, "or", n_l), (1, "and", 2 * n_l), (1, "or", 2 * n_l + n_r)]
    for b, (side, op, start) in enumerate(blocks):
        for k in range(lits[side].size):
            got = out[start + k]
            if not allow[b] or used[side][lits[side].attr[k]]:
                assert got == -np.inf
                continue
            mk = literal_mask(coded[side], lits[side], k)
            new = masks[side] & mk if op == "and" else masks[side] | mk
            pair = (new, masks[1]) if side == 0 else (masks[0], new)
            assert got == pytest.approx(_brute_quality(*pair, s, x0)), (side, op, k)
    # ∨ on one side only: the right side may not take ∨ once the left has one.
    assert (not allow[3]) == ("or" in left_ops)


def test_log_sum_exp_is_stable_for_huge_factors():
    scores = np.array([0.5, -np.inf, 0.25, 0.5])
    assert log_sum_exp(scores, 1e6) == pytest.approx(0.5e6 + math.log(2.0))
    assert log_sum_exp(np.array([-np.inf]), 3.0) == -np.inf


# --------------------------------------------------------------------------- EM distribution

def _coarse_toy(n_rows=200):
    """The toy data on a 3-threshold grid: few enough literals for a χ² test."""
    import dataclasses

    from dpcore.data.dataset import TwoViewDataset

    ds = toy_dataset(n_rows=n_rows)
    schema = dataclasses.replace(ds.schema, grid_bins=3)
    return TwoViewDataset.from_arrays(schema, ds.views[0].values, ds.views[1].values)


def _miner(ds, params, seed=SEED, budget=10**15):
    coded = code_dataset_strict(ds)
    miner = _Miner(coded, params, np.random.default_rng(seed), PrivacyAccountant(budget), None)
    miner.fix_quality_scale()
    return miner


def _chi_square_pvalue(observed: Counter, probs: np.ndarray, draws: int) -> float:
    keep = probs * draws >= 5  # pool rare cells so the χ² approximation holds
    obs = np.array([observed.get(i, 0) for i in range(probs.size)], dtype=float)
    f_obs = np.append(obs[keep], obs[~keep].sum())
    f_exp = np.append(probs[keep] * draws, probs[~keep].sum() * draws)
    if f_exp[-1] < 5:
        f_obs, f_exp = f_obs[:-1], f_exp[:-1]
        f_exp *= f_obs.sum() / f_exp.sum()
    return float(stats.chisquare(f_obs, f_exp).pvalue)


@pytest.mark.slow
def test_initial_pairs_follow_the_exponential_mechanism():
    """Two-stage draws (attribute pair, then literal pair) = one EM draw over all pairs."""
    ds = _coarse_toy()
    per_call, calls, steep = 1000, 6, 0.05
    # ε per draw chosen so that ε'/(2Δf) ≈ 6: clearly non-uniform, yet many likely pairs.
    eps_draw = 12 * quality_sensitivity(200, steep)
    params = SerenadeParams(algorithm="serenade_es", epsilon=eps_draw * per_call / 0.45,
                          init_pairs=per_call, steepness=steep)
    miner = _miner(ds, params)
    reds = [r for _ in range(calls) for r in miner.initial_pairs()]
    lits = miner.lits
    fac = miner.factor(miner.min_epsilon("init"))
    scores = np.array([[_brute_quality(literal_mask(miner.coded[0], lits[0], i),
                                       literal_mask(miner.coded[1], lits[1], j),
                                       params.steepness, miner.x0)
                        for j in range(lits[1].size)] for i in range(lits[0].size)]).ravel()
    w = np.exp(fac * (scores - scores.max()))
    probs = w / w.sum()
    observed = Counter(r.lits[0][0] * lits[1].size + r.lits[1][0] for r in reds)
    assert probs.max() > 10 * probs.min(), "the test needs a non-uniform distribution"
    assert _chi_square_pvalue(observed, probs, len(reds)) > 1e-3


@pytest.mark.slow
def test_a_draw_over_the_union_of_extensions_follows_the_exponential_mechanism():
    ds = _coarse_toy()
    params = SerenadeParams(algorithm="serenade_es", epsilon=50.0, init_pairs=3, es_rounds=1,
                          steepness=0.05)
    miner = _miner(ds, params)
    reds = miner.initial_pairs()
    scores = [miner.extension_scores(r) for r in reds]
    flat = np.concatenate(scores)
    finite_scores = flat[np.isfinite(flat)]
    fac = 6.0 / (finite_scores.max() - np.median(finite_scores))  # clearly non-uniform
    log_w = np.array([log_sum_exp(s, fac) for s in scores])
    offsets = np.cumsum([0] + [s.size for s in scores])
    finite = np.isfinite(flat)
    w = np.where(finite, np.exp(fac * (np.where(finite, flat, 0) - flat[finite].max())), 0.0)
    probs = w / w.sum()
    rng = np.random.default_rng(SEED)
    draws = 20000
    observed = Counter()
    for _ in range(draws):
        g, c = draw_from_union(log_w, scores, fac, rng)
        observed[int(offsets[g] + c)] += 1
    assert probs.max() > 5 * np.median(probs[probs > 0])
    assert _chi_square_pvalue(observed, probs, draws) > 1e-3


# --------------------------------------------------------------------------- accounting

def _spent_by_slot(result):
    return sum(c["epsilon_nano"] for c in result.mechanism_calls)


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 7.0])
def test_serenade_es_spends_exactly_its_plan(mode, epsilon):
    params = SerenadeParams(algorithm="serenade_es", epsilon=epsilon, mode=mode, **TINY)
    result = mine(toy_dataset(), params, rng=np.random.default_rng(SEED))
    plan = plan_budget(params)
    assert sum(s.epsilon_nano for s in plan) == epsilon_to_nano(epsilon)
    assert _spent_by_slot(result) == result.epsilon_nano == epsilon_to_nano(epsilon)
    roles = Counter(s.role for s in plan)
    assert roles == Counter({"init": 4, "extend": 6, "quality": 4,
                             **({"rows": 1} if mode == "strict" else {})})
    init = sum(s.epsilon_nano for s in plan if s.role == "init")
    ext = sum(s.epsilon_nano for s in plan if s.role == "extend")
    assert init == pytest.approx(0.45 * epsilon_to_nano(epsilon), abs=1)
    assert ext == pytest.approx(0.45 * epsilon_to_nano(epsilon), abs=1)
    draws = [c for c in result.mechanism_calls if c["mechanism"] == "exponential"]
    assert len(draws) == 4 + 6
    assert len({c["sensitivity"] for c in draws}) == 1  # one Δf for the whole run


@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_serenade_cs_spends_its_plan_except_for_stopped_redescriptions(mode):
    params = SerenadeParams(algorithm="serenade_cs", epsilon=2.0, mode=mode, init_pairs=5,
                          cs_rounds=3, min_acc=0.2)
    ds = toy_dataset()
    from dpcore.redescriptions.serenade.miner import mine_serenade

    coded = (code_dataset_strict(ds) if mode == "strict"
             else tuple(code_view_segments(v) for v in ds.views))
    acc = PrivacyAccountant(epsilon_to_nano(2.0))
    out = mine_serenade(coded, params, np.random.default_rng(SEED), acc)
    assert acc.spent_nano + out.unspent_nano == epsilon_to_nano(2.0)
    per_red = Counter()
    for c in acc.calls:
        if c.label.startswith("CS redescription"):
            per_red[int(c.label.split()[2])] += 1
    assert all(n <= 3 for n in per_red.values())


def test_a_run_that_would_overspend_is_refused_before_any_draw():
    params = SerenadeParams(algorithm="serenade_es", epsilon=1.0, **TINY)
    acc = PrivacyAccountant(epsilon_to_nano(0.5))
    with pytest.raises(BudgetExceededError):
        mine(toy_dataset(), params, rng=np.random.default_rng(SEED), accountant=acc)
    assert acc.spent_nano <= epsilon_to_nano(0.5)


@pytest.mark.parametrize("bad,name", [
    (dict(budget_init=0.6, budget_ext=0.5), "budget"),
    (dict(budget_init=0.0), "budget"),
    (dict(steepness=0.0), "steepness"),
    (dict(init_pairs=0), "init_pairs"),
    (dict(es_rounds=0), "es_rounds"),
    (dict(min_acc=1.5), "min_acc"),
    (dict(max_attributes=0), "max_attributes"),
    (dict(epsilon=1e-9, es_rounds=80), "too small"),
])
def test_bad_serenade_parameters_name_the_problem_and_charge_nothing(tmp_path, clinic_dataset,
                                                                     bad, name):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.register_dataset("clinic", clinic_dataset.schema, None, 3.0, actor="owner",
                            confirmed=True)
    with pytest.raises(ParameterError, match=name):
        charge_and_mine(ledger, "clinic", SerenadeParams(algorithm="serenade_es", **bad),
                        data=clinic_dataset)
    assert ledger.budget("clinic").spent_nano == 0
    assert ledger.list_runs("clinic") == []


def test_a_charged_serenade_run_is_stored_and_round_trips(tmp_path, clinic_dataset):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.register_dataset("clinic", clinic_dataset.schema, None, 3.0, actor="owner",
                            confirmed=True)
    params = SerenadeParams(algorithm="serenade_es", epsilon=2.0, **TINY, **LOOSE)
    result = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="s1", seed=1)
    assert ledger.budget("clinic").spent_nano == epsilon_to_nano(2.0)
    stored = load_result(ledger, "s1", requester=Requester())
    assert stored.to_dict() == result.to_dict() and stored.redescriptions
    red = stored.redescriptions[0]
    assert red.extraction == -1 and red.left.tree == -1 and red.left.tests


def test_faithful_results_mark_unreleased_statistics_and_serialise():
    params = SerenadeParams(algorithm="serenade_es", epsilon=5.0, mode="faithful", **TINY,
                          **LOOSE)
    result = mine(toy_dataset(), params, rng=np.random.default_rng(SEED))
    assert result.redescriptions
    for red in result.redescriptions:
        assert math.isnan(red.support_left) and math.isnan(red.pvalue)
        assert 0.0 <= red.jaccard <= 1.0
    assert RunResult.from_json(result.to_json()).redescriptions[0].text == \
        result.redescriptions[0].text
    json.loads(result.to_json())  # Python's json reads its own NaN back


# --------------------------------------------------------------------------- privacy of candidates

def test_strict_literals_are_the_public_grid_and_faithful_ones_are_not():
    ds = toy_dataset()
    strict = code_dataset_strict(ds)
    for view in (0, 1):
        for a, at in enumerate(ds.views[view].attributes):
            if at.type == "numeric":
                np.testing.assert_array_equal(strict[view].thresholds[a],
                                              ds.schema.split_grid(at))
    other = toy_dataset(seed=SEED + 1)
    lits_a, lits_b = literal_set(strict[1]), literal_set(code_dataset_strict(other)[1])
    for k in (0, 17, lits_a.size - 1):
        assert lits_a.test(k) == lits_b.test(k)
    seg_a, seg_b = code_view_segments(ds.views[1]), code_view_segments(other.views[1])
    assert not np.array_equal(seg_a.thresholds[0], seg_b.thresholds[0])


@pytest.mark.parametrize("algorithm", ["serenade_es", "serenade_cs"])
def test_strict_release_ignores_raw_values_within_a_grid_cell(algorithm):
    ds = toy_dataset()
    changed = _with_new_maximum(ds, 1, 1)
    params = family_type(algorithm)(algorithm=algorithm, epsilon=3.0, **TINY, **LOOSE)
    a = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED)
    b = mine(changed, params, rng=np.random.default_rng(SEED), seed=SEED)
    assert a.redescriptions
    assert _release(a) == _release(b)


@pytest.mark.parametrize("algorithm", ["serenade_es", "serenade_cs"])
def test_every_released_threshold_is_a_grid_value(algorithm, clinic_dataset):
    params = family_type(algorithm)(algorithm=algorithm, epsilon=5.0, **TINY, **LOOSE)
    result = mine(clinic_dataset, params, rng=np.random.default_rng(SEED))
    grids = {a.name: set(clinic_dataset.schema.split_grid(a).tolist())
             for a in clinic_dataset.schema.attributes if a.type == "numeric"}
    seen = 0
    for red in result.redescriptions:
        for q in (red.left, red.right):
            for t in q.tests:
                for v in (t.low, t.high):
                    if v is not None:
                        assert v in grids[t.attribute]
                        seen += 1
    assert seen > 0


# --------------------------------------------------------------------------- results

def test_query_text_reads_left_to_right():
    a, b, c = (AttributeTest("A", "is", value=True), AttributeTest("B", "equals", value="x"),
               AttributeTest("C", "interval", low=1.0, high=None))
    assert formula_text((a, b, c), ("and", "or")) == "([A] ∧ [B = x]) ∨ [C > 1]"
    assert formula_text((a, b, c), ("or", "or")) == "[A] ∨ [B = x] ∨ [C > 1]"
    assert AttributeTest("D", "interval", low=None, high=2.5).text() == "[D ≤ 2.5]"
    assert AttributeTest("D", "interval", low=1.0, high=2.5).text() == "[1 < D ≤ 2.5]"


@pytest.mark.parametrize("algorithm", ["serenade_es", "serenade_cs"])
@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_evaluate_reads_serenade_queries_as_the_miner_built_them(algorithm, mode,
                                                                 clinic_dataset):
    """True statistics from the released formulas (raw values, public thresholds) agree
    with the miner's own row masks (codes): the same queries, read two ways."""
    params = family_type(algorithm)(algorithm=algorithm, epsilon=20.0, mode=mode, init_pairs=6,
                          es_rounds=12, cs_rounds=3, min_acc=0.0, steepness=0.02, **LOOSE)
    result = mine(clinic_dataset, params, rng=np.random.default_rng(SEED))
    assert result.redescriptions
    truth = evaluate(result, clinic_dataset)
    final = result.diagnostics.score_traces["final true quality"]
    x0 = 0.1 * clinic_dataset.n_rows
    for red, t in zip(result.redescriptions, truth):
        union = t.support_left + t.support_right - t.support_both
        if mode == "faithful":  # x0 = 0.1·N exactly, so the qualities must match
            assert final[red.trial] == pytest.approx(quality(t.support_both, union,
                                                             params.steepness, x0))
        assert abs(red.support_both - t.support_both) < 300  # noise at ε ≈ 0.1 per table
        assert red.step <= len(red.left.tests) + len(red.right.tests) - 2 + params.es_rounds


# --------------------------------------------------------------------------- utility

@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["serenade_es", "serenade_cs"])
def test_high_epsilon_recovers_a_planted_rule(algorithm, clinic_dataset):
    """At ε = 100 on clinic, most runs return a planted rule (true J ≥ 0.6, same attributes)."""
    rules = clinic_planted_rules()
    hits = 0
    for seed in range(5):
        result = mine(clinic_dataset, family_type(algorithm)(algorithm=algorithm, epsilon=100.0),
                      rng=np.random.default_rng(seed))
        truth = {t.id: t for t in evaluate(result, clinic_dataset)}
        for red in result.redescriptions:
            left = {t.attribute for t in red.left.tests}
            right = {t.attribute for t in red.right.tests}
            if truth[red.id].jaccard >= 0.6 and any(
                    set(r.left_attrs) & left and r.right_attr in right for r in rules):
                hits += 1
                break
    assert hits >= 4, f"{algorithm} recovered a planted rule in only {hits}/5 runs"


@pytest.mark.slow
def test_noisy_jaccard_tracks_the_true_one_at_moderate_epsilon(clinic_dataset):
    result = mine(clinic_dataset, SerenadeParams(algorithm="serenade_es", epsilon=10.0),
                  rng=np.random.default_rng(SEED))
    truth = {t.id: t for t in evaluate(result, clinic_dataset)}
    errors = [abs(r.jaccard - truth[r.id].jaccard) for r in result.redescriptions]
    assert errors and float(np.median(errors)) < 0.05
