"""Experiment metrics (owner-only evaluation, paper §5): hand-computed small cases
and one end-to-end run through mine → evaluate → score_run → summarize."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.experiments.metrics import (
    ScoredRedescription,
    compare_methods,
    count_before_after,
    exceedance_rate,
    false_positives,
    interval_coverage,
    median_abs_error,
    median_true_jaccard,
    score_run,
    share_of_runs_with_output,
    share_truly_significant,
    spearman_noisy_true,
    split_by_threshold,
    summarize,
)
from dpcore.redescriptions.evaluate import TrueStatistics, evaluate
from dpcore.redescriptions.intervals import STATISTICS
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import TreeParams

SUMMARY_KEYS = {"share_with_output", "n_before", "n_after", "share_significant_kept",
                "spearman_rho", "spearman_p", "median_true_j", "median_abs_error",
                "fp_pruned", "fp_kept", "exceedance_kept",
                *(f"coverage_{k}" for k in STATISTICS),
                *(f"coverage_kept_{k}" for k in STATISTICS)}


def s(support=10.0, nj=0.5, tj=0.5, tp=0.001, np_=0.001, run="r") -> ScoredRedescription:
    return ScoredRedescription(noisy_support=support, noisy_jaccard=nj, noisy_pvalue=np_,
                               true_jaccard=tj, true_pvalue=tp, run=run)


def small_dataset(n_rows: int = 300, seed: int = 11) -> TwoViewDataset:
    """Two views with a planted rule D0 ∨ D1 ⇔ L0 > 60 (pattern of toy_dataset in
    tests/dpcore/redescriptions/test_mining.py)."""
    rng = np.random.default_rng(seed)
    left = (rng.random((4, n_rows)) < 0.3).astype(float)
    right = rng.random((3, n_rows)) * 100
    right[0] = np.where(left[0] + left[1] > 0, 60 + 40 * rng.random(n_rows),
                        60 * rng.random(n_rows))
    attrs = [Attribute(f"D{i}", 0, "boolean") for i in range(4)]
    attrs += [Attribute(f"L{i}", 1, "numeric", domain=(0.0, 100.0)) for i in range(3)]
    schema = Schema("toy-metrics", tuple(attrs), (ViewSpec("left"), ViewSpec("right")),
                    public_demo=True)
    return TwoViewDataset.from_arrays(schema, left, right)


# --- score_run -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mined():
    ds = small_dataset()
    params = TreeParams(algorithm="mcmctreepair", epsilon=5.0, in_tr=2, mc_iter=50)
    result = mine(ds, params, rng=np.random.default_rng(3), seed=3)
    return result, evaluate(result, ds)


def test_score_run_joins_by_id_in_run_order(mined):
    result, truth = mined
    scored = score_run(result, list(reversed(truth)))
    assert len(scored) == len(result.redescriptions)
    by_id = {t.id: t for t in truth}
    for sc, red in zip(scored, result.redescriptions):
        assert sc.noisy_support == red.support_both
        assert sc.noisy_jaccard == red.jaccard
        assert sc.noisy_pvalue == red.pvalue
        assert sc.true_jaccard == by_id[red.id].jaccard
        assert sc.true_pvalue == by_id[red.id].pvalue
        assert sc.run == result.run_id


def test_score_run_rejects_mismatched_ids(mined):
    result, truth = mined
    if not truth:
        pytest.skip("the seeded run released nothing")
    with pytest.raises(ValueError, match="ids"):
        score_run(result, truth[1:])
    extra = TrueStatistics(10_000, 1, 1, 1, 1.0, 0.5)
    with pytest.raises(ValueError, match="ids"):
        score_run(result, truth + [extra])
    with pytest.raises(ValueError, match="duplicate"):
        score_run(result, truth + [truth[0]])


def test_scored_redescription_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        s().noisy_support = 3.0


# --- share of runs, thresholds, counts --------------------------------------------------


def test_share_of_runs_with_output():
    assert share_of_runs_with_output([]) == 0.0
    assert share_of_runs_with_output([[], []]) == 0.0
    assert share_of_runs_with_output([[s()], [], [s(), s()], []]) == 0.5
    assert share_of_runs_with_output([[s()]]) == 1.0


def test_split_by_threshold_boundary_is_kept():
    items = [s(support=9.999), s(support=10.0), s(support=10.001), s(support=0.0)]
    kept, pruned = split_by_threshold(items, 10.0)
    assert [x.noisy_support for x in kept] == [10.0, 10.001]
    assert [x.noisy_support for x in pruned] == [9.999, 0.0]
    assert split_by_threshold([], 10.0) == ([], [])
    kept, pruned = split_by_threshold(items, 0.0)
    assert len(kept) == 4 and pruned == []


def test_count_before_after():
    items = [s(support=x) for x in (1.0, 5.0, 5.0, 7.5)]
    assert count_before_after(items, 5.0) == (4, 3)
    assert count_before_after(items, 5.0001) == (4, 1)
    assert count_before_after(items, 100.0) == (4, 0)
    assert count_before_after([], 5.0) == (0, 0)


# --- truth-based metrics -----------------------------------------------------------------


def test_share_truly_significant():
    items = [s(tp=0.001), s(tp=0.01), s(tp=0.0100001), s(tp=0.5)]
    assert share_truly_significant(items) == 0.5  # 0.01 itself counts as significant
    assert share_truly_significant(items, alpha=0.05) == 0.75
    assert math.isnan(share_truly_significant([]))


def test_spearman_hand_ranked():
    # ranks (1,2,3,4) vs (2,1,4,3): Σd² = 4, ρ = 1 − 6·4/(4·15) = 0.6;
    # t = ρ√(2/(1−ρ²)) with 2 df, two-sided p = 1 − |t|/√(2+t²) = 0.4.
    items = [s(nj=0.1, tj=0.2), s(nj=0.2, tj=0.1), s(nj=0.3, tj=0.4), s(nj=0.4, tj=0.3)]
    rho, p = spearman_noisy_true(items)
    assert rho == pytest.approx(0.6)
    assert p == pytest.approx(0.4)
    rho, p = spearman_noisy_true([s(nj=x, tj=-x) for x in (0.1, 0.5, 0.9)])
    assert rho == pytest.approx(-1.0)


def test_spearman_degenerate_inputs_give_nan_without_warnings():
    # filterwarnings = error in pytest.ini: any ConstantInputWarning would fail here.
    for items in ([], [s()], [s(nj=0.1), s(nj=0.2)],
                  [s(nj=0.3, tj=x) for x in (0.1, 0.2, 0.3)],      # noisy constant
                  [s(nj=x, tj=0.4) for x in (0.1, 0.2, 0.3)],      # true constant
                  [s(nj=0.1, tj=0.2), s(nj=float("nan"), tj=0.3), s(nj=0.2, tj=0.1)]):
        rho, p = spearman_noisy_true(items)
        assert math.isnan(rho) and math.isnan(p)


def test_medians():
    items = [s(nj=0.5, tj=0.2), s(nj=0.1, tj=0.4), s(nj=0.9, tj=0.3)]
    assert median_true_jaccard(items) == pytest.approx(0.3)
    # |errors| = 0.3, 0.3, 0.6 → median 0.3
    assert median_abs_error(items) == pytest.approx(0.3)
    items.append(s(nj=0.0, tj=0.0))
    # true J 0.0, 0.2, 0.3, 0.4 → 0.25; errors 0, 0.3, 0.3, 0.6 → 0.3
    assert median_true_jaccard(items) == pytest.approx(0.25)
    assert median_abs_error(items) == pytest.approx(0.3)
    assert math.isnan(median_true_jaccard([]))
    assert math.isnan(median_abs_error([]))


def test_false_positives_use_true_pvalue_only():
    kept = [s(tp=0.5, np_=0.0), s(tp=0.01, np_=0.9), s(tp=0.02)]
    pruned = [s(tp=0.2), s(tp=0.001, np_=0.5)]
    assert false_positives(kept, pruned) == (1, 2)
    assert false_positives(kept, pruned, alpha=0.3) == (0, 1)
    assert false_positives([], []) == (0, 0)


# --- compare_methods ------------------------------------------------------------------------


def test_compare_methods_higher_is_better():
    # A = [4,5,6] beats B = [1,2,3] in all 9 pairs: U = 9; exact one-sided p = 1/C(6,3) = 0.05.
    # C = [2,3,4.5] vs A: pairs with A > C: 4>2,4>3, 5>all 3, 6>all 3 → U = 8; p = 2/20 = 0.1.
    out = compare_methods({"A": [4.0, 5.0, 6.0], "B": [1.0, 2.0, 3.0], "C": [2.0, 3.0, 4.5],
                           "empty": []})
    assert out["best"] == "A"
    assert set(out["tests"]) == {"B", "C"}
    assert out["tests"]["B"]["U"] == 9.0
    assert out["tests"]["B"]["pvalue"] == pytest.approx(0.05)
    assert out["tests"]["C"]["U"] == 8.0
    assert out["tests"]["C"]["pvalue"] == pytest.approx(0.1)


def test_compare_methods_lower_is_better_flips_direction():
    # Best is B (median 2); U for B vs A counts pairs with B > A: 0; one-sided "less" p = 0.05.
    out = compare_methods({"A": [4.0, 5.0, 6.0], "B": [1.0, 2.0, 3.0]}, higher_is_better=False)
    assert out["best"] == "B"
    assert out["tests"]["A"]["U"] == 0.0
    assert out["tests"]["A"]["pvalue"] == pytest.approx(0.05)


def test_compare_methods_degenerate():
    assert compare_methods({}) == {"best": None, "tests": {}}
    assert compare_methods({"A": [], "B": []}) == {"best": None, "tests": {}}
    assert compare_methods({"A": [1.0, 2.0], "B": []}) == {"best": "A", "tests": {}}
    out = compare_methods({"A": [1.0, 1.0], "B": [1.0, 1.0, 1.0]})  # all tied: no warning
    assert out["best"] == "A"
    assert out["tests"]["B"]["U"] == 3.0 and math.isnan(out["tests"]["B"]["pvalue"])


# --- summarize --------------------------------------------------------------------------------


def test_summarize_hand_computed():
    runs = [
        [s(support=20, nj=0.1, tj=0.2, tp=0.001), s(support=4, tp=0.5)],
        [],
        [s(support=10, nj=0.2, tj=0.1, tp=0.2), s(support=30, nj=0.3, tj=0.4, tp=0.001),
         s(support=12, nj=0.4, tj=0.3, tp=0.005)],
    ]
    out = summarize(runs, threshold=10.0)
    assert set(out) == SUMMARY_KEYS
    assert out["share_with_output"] == pytest.approx(2 / 3)
    assert (out["n_before"], out["n_after"]) == (5, 4)
    assert out["share_significant_kept"] == pytest.approx(0.75)
    assert out["spearman_rho"] == pytest.approx(0.6)
    assert out["spearman_p"] == pytest.approx(0.4)
    assert out["median_true_j"] == pytest.approx(0.25)
    assert out["median_abs_error"] == pytest.approx(0.1)
    assert (out["fp_pruned"], out["fp_kept"]) == (1, 1)
    json.dumps(out, allow_nan=False)


def test_summarize_empty_gives_none():
    for runs in ([], [[], []], [[s(support=1.0)]]):
        out = summarize(runs, threshold=5.0)
        assert set(out) == SUMMARY_KEYS
        for key in ("share_significant_kept", "spearman_rho", "spearman_p", "median_true_j",
                    "median_abs_error"):
            assert out[key] is None
        assert out["n_after"] == 0 and out["fp_kept"] == 0
        json.dumps(out, allow_nan=False)


def test_end_to_end_mine_evaluate_score_summarize(mined):
    result, truth = mined
    scored = score_run(result, truth)
    runs = [scored, []]
    out = summarize(runs, threshold=10.0)
    assert set(out) == SUMMARY_KEYS
    assert out["share_with_output"] == (0.5 if scored else 0.0)
    assert isinstance(out["n_before"], int) and isinstance(out["n_after"], int)
    assert out["n_before"] == len(scored) and 0 <= out["n_after"] <= out["n_before"]
    assert out["fp_pruned"] + out["fp_kept"] <= out["n_before"]
    for key in ("share_significant_kept", "median_true_j", "median_abs_error"):
        assert out[key] is None or 0.0 <= out[key] <= 1.0
    if out["spearman_rho"] is not None:
        assert -1.0 <= out["spearman_rho"] <= 1.0 and 0.0 <= out["spearman_p"] <= 1.0
    text = json.dumps(out, allow_nan=False)
    assert json.loads(text) == out


# --- intervals and the threshold's promise -----------------------------------------------------


def test_exceedance_and_interval_coverage_hand_computed():
    kept = [s(nj=0.5, tj=0.2), s(nj=0.5, tj=0.45), s(nj=0.3, tj=0.5), s(nj=0.6, tj=0.6)]
    assert exceedance_rate(kept, 0.1) == pytest.approx(0.5)
    assert exceedance_rate(kept, 0.35) == 0.0
    assert math.isnan(exceedance_rate([], 0.1))
    covered = [dataclasses.replace(s(), covered=(("jaccard", True), ("support_both", False))),
               dataclasses.replace(s(), covered=(("jaccard", False), ("support_both", False))),
               dataclasses.replace(s(), covered=(("jaccard", True),))]
    cov = interval_coverage(covered)
    assert cov["jaccard"] == pytest.approx(2 / 3) and cov["support_both"] == 0.0
    assert math.isnan(cov["pvalue"])        # no redescription had that interval
    out = summarize([covered], threshold=0.0)
    assert out["coverage_jaccard"] == pytest.approx(2 / 3)
    assert out["coverage_kept_support_both"] == 0.0 and out["coverage_pvalue"] is None
