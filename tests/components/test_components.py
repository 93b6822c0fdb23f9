"""Pure helpers of the app's components for Serenade runs (no Streamlit script run).

Serenade results come from tiny seeded runs on the clinic sample (I 3, K 5 / L 2, ε 10),
in strict and faithful mode; faithful Serenade releases no supports |q_L|, |q_R| and no
p-value (NaN in the result).
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from components.common.export import json_safe
from components.common.family_ui import cost_breakdown, cost_text
from components.common.runs_view import NOT_USED, comparison_params_frame, parameter_summary
from components.redescriptions.explore_view import (
    kept_display_frame,
    kept_frame,
    suggested_threshold,
)
from components.redescriptions.export import export_csv, export_json
from components.redescriptions.launcher import MAX_TRIAL_BARS, trial_bar_count
from components.redescriptions.owner_views import (
    FINAL_QUALITY_TRACE,
    phase_times_text,
    serenade_trace_figures,
    truth_frame,
)
from components.redescriptions.params_form import params_from_state, quality_share
from components.redescriptions.redescription_list import list_frame
from components.redescriptions.redescription_view import (
    NOT_RELEASED,
    is_released,
    literal_condition,
    query_tests_frame,
    released_text,
    statistics_row,
)
from components.redescriptions.scatter import (
    interval_rows,
    redescription_rows,
    run_label,
    scatter_figure,
)
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.evaluate import evaluate
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import SerenadeParams, TreeParams, family_type
from dpcore.redescriptions.results import AttributeTest, Query
from dpcore.redescriptions.warmup import warmup_params
from dpcore.registry import (
    ALGORITHMS,
    COUNT_SCORE,
    FAITHFUL,
    MODES,
    PAPER_SCORE,
    PARAMETER_SYMBOLS,
    TREE_SCORES,
    algorithm_spec,
)
from dpcore.runs import run_cost


def parameters_used(algorithm, mode):
    return algorithm_spec(algorithm).parameters_used(mode)


TINY = dict(epsilon=10.0, init_pairs=3, es_rounds=5, cs_rounds=2)


@pytest.fixture(scope="module")
def serenade_results(clinic_dataset):
    """(algorithm, mode) → a seeded tiny Serenade result on clinic."""
    out = {}
    for algorithm in ("serenade_es", "serenade_cs"):
        for mode in MODES:
            params = SerenadeParams(algorithm=algorithm, mode=mode, **TINY)
            out[algorithm, mode] = mine(clinic_dataset, params, rng=np.random.default_rng(11),
                                        seed=11, run_id=f"{algorithm[-2:]}{mode[:2]}" * 8)
    return out


@pytest.fixture(scope="module")
def tree_result(clinic_dataset):
    return mine(clinic_dataset, TreeParams(in_tr=2, mc_iter=200),
                rng=np.random.default_rng(11), seed=11, run_id="t" * 32)


# --------------------------------------------------------------------------- params form

def test_parameters_used_shows_only_each_algorithms_own_parameters():
    es = parameters_used("serenade_es", "strict")
    assert es[:2] == ("epsilon", "mode")
    assert {"init_pairs", "es_rounds", "steepness", "budget_init", "budget_ext",
            "max_attributes", "min_jaccard", "max_pvalue", "min_support", "max_support",
            "noise"} == set(es) - {"epsilon", "mode"}
    assert "memo_age" in parameters_used("serenade_es", "faithful")
    assert "noise" not in parameters_used("serenade_es", "faithful")
    cs = parameters_used("serenade_cs", "strict")
    assert "cs_rounds" in cs and "min_acc" in cs and "es_rounds" not in cs
    tree_only = {"omega", "in_tr", "rm_iter", "depth", "mc_iter", "sigma", "sigma_window",
                 "max_clauses"}
    for algorithm in ("serenade_es", "serenade_cs"):
        for mode in MODES:
            assert not tree_only & set(parameters_used(algorithm, mode))
    assert "omega" in parameters_used("mcmctreepair", "strict")
    assert "mc_iter" not in parameters_used("altexpm", "strict")
    assert {"sigma", "sigma_window"} <= set(parameters_used("altmcmc", "faithful"))
    assert "init_pairs" not in parameters_used("altmcmc", "strict")
    for algorithm in ALGORITHMS:                  # every name has a symbol for the Runs page
        for mode in MODES:
            assert set(parameters_used(algorithm, mode)) <= set(PARAMETER_SYMBOLS)


def test_quality_share_is_what_the_split_leaves():
    assert quality_share(0.45, 0.45) == pytest.approx(0.1)
    assert quality_share(0.6, 0.5) < 0


def test_params_from_state_reads_the_serenade_fields():
    state = {"mine_algorithm": "serenade_cs", "mine_init_pairs": 7, "mine_cs_rounds": 3,
             "mine_steepness": 0.03, "mine_budget_init": 0.3, "mine_budget_ext": 0.5,
             "mine_min_acc": 0.4, "mine_max_attributes": 2, "mine_mode": "faithful"}
    params = params_from_state(state).validate()
    assert (params.init_pairs, params.cs_rounds, params.steepness, params.budget_init,
            params.budget_ext, params.min_acc, params.max_attributes, params.mode) == (
        7, 3, 0.03, 0.3, 0.5, 0.4, 2, "faithful")


def test_the_form_holds_both_families_and_launches_the_algorithm_s_own_type():
    """Session state keeps both families' widgets (their defaults from the one field table);
    the configured run is the algorithm's family type with only its own fields, and the
    Mine page's confirmed launch reads its stored dict back into that same type."""
    from components.redescriptions.params_form import DEFAULT_STATE
    from dpcore.redescriptions.params import FIELDS, read_params

    assert all(DEFAULT_STATE[f"mine_{name}"] == f.default for name, f in FIELDS.items())
    state = {"mine_algorithm": "altexpm", "mine_setting": "default", "mine_k": 3,
             "mine_depth": 2, "mine_init_pairs": 9, "mine_steepness": 0.05}
    tree = params_from_state(state).validate()
    assert type(tree) is TreeParams and (tree.in_tr, tree.rm_iter, tree.depth) == (1, 3, 2)
    assert set(tree.to_dict()) == set(TreeParams.FIELDS)
    serenade = params_from_state({**state, "mine_algorithm": "serenade_es"}).validate()
    assert type(serenade) is SerenadeParams and serenade.init_pairs == 9
    assert set(serenade.to_dict()) == set(SerenadeParams.FIELDS)
    for params in (tree, serenade):
        assert read_params(params.to_dict()) == params


# --------------------------------------------------------------------------- launcher

def test_trial_bars_only_for_tree_miners_with_few_trials():
    assert trial_bar_count(TreeParams(in_tr=4)) == 4
    assert trial_bar_count(TreeParams(in_tr=MAX_TRIAL_BARS + 1)) == 0
    # Serenade has no trials (its type has no InTr): one overall bar
    assert trial_bar_count(SerenadeParams(algorithm="serenade_es")) == 0
    assert trial_bar_count(SerenadeParams(algorithm="serenade_cs", init_pairs=1)) == 0


def test_cost_breakdown_of_serenade_sums_to_the_charge():
    strict = SerenadeParams(algorithm="serenade_es", epsilon=1.0)
    parts = dict(cost_breakdown(strict))
    assert list(parts) == ["the initial pairs", "the extensions", "the noisy row count",
                           "the noisy counts"]
    assert sum(parts.values()) == run_cost(strict) == epsilon_to_nano(1.0)
    faithful = SerenadeParams(algorithm="serenade_cs", epsilon=2.0, mode="faithful")
    assert "the noisy row count" not in dict(cost_breakdown(faithful))
    assert run_cost(faithful) == epsilon_to_nano(2.0)          # faithful costs exactly ε
    text = cost_text(faithful, run_cost(faithful))
    assert text.startswith("This run costs **ε = 2**: ε = 0.9 for the initial pairs, ε = 0.9 "
                           "for the extensions and ε = 0.2 for the noisy counts, over ")
    assert "exactly ε" in text and "not strictly ε-DP" in text and "1.5×" not in text
    assert "charges every round up front" in text


def test_cost_text_of_a_tree_run_is_unchanged():
    params = TreeParams(in_tr=2, mode="faithful")
    text = cost_text(params, run_cost(params))
    assert "for the trees and ε = " in text and "1.5×" in text
    assert [p for p, _ in cost_breakdown(params)] == ["the trees", "the noisy counts"]


# --------------------------------------------------------------------------- redescription view

def test_released_text_marks_nan_as_not_released():
    assert released_text(12.4, ".0f") == "12"
    assert released_text(float("nan"), ".2e") == NOT_RELEASED
    assert released_text(None, ".3f") == NOT_RELEASED
    assert is_released(0.0) and not is_released(math.inf) and not is_released(True)


def test_statistics_row_of_faithful_serenade(serenade_results):
    red = serenade_results["serenade_es", "faithful"].redescriptions[0]
    row = statistics_row(red, "serenade_es")
    assert row["noisy |q_L|"] == row["noisy |q_R|"] == row["noisy p"] == NOT_RELEASED
    assert row["noisy |E11|"] == f"{red.support_both:.0f}"
    assert row["initial pair"] == red.trial and row["extensions"] == red.step
    assert "trial" not in row


def test_query_tests_frame_lists_literals_with_their_operators():
    query = Query(0, -1, (), (), "text",
                  (AttributeTest("a", "interval", low=1.0, high=2.5),
                   AttributeTest("b", "equals", value="x"), AttributeTest("c", "is", value=True),
                   AttributeTest("d", "interval", high=3.0)),
                  ("and", "or", "and"))
    frame = query_tests_frame(query)
    assert list(frame["joined by"]) == ["", "∧ (and)", "∨ (or)", "∧ (and)"]
    assert list(frame["attribute"]) == ["a", "b", "c", "d"]
    assert list(frame["condition (x = the value)"]) == ["1 < x ≤ 2.5", "= x", "true", "x ≤ 3"]
    assert list(frame["literal"]) == [t.text() for t in query.tests]
    assert literal_condition(AttributeTest("e", "interval", low=4.0)) == "x > 4"
    assert literal_condition(AttributeTest("f", "is", value=False)) == "false"


# --------------------------------------------------------------------------- explore & export

def test_scatter_rows_and_suggestion_for_serenade_runs(serenade_results, tree_result):
    results = {r.run_id: r for r in [*serenade_results.values(), tree_result]}
    rows = redescription_rows(list(results.values()))
    assert len(rows) == sum(len(r.redescriptions) for r in results.values())
    serenade_rows = rows[rows["algorithm"].str.startswith("Serenade")]
    assert (serenade_rows["extraction"] == -1).all()
    assert (serenade_rows["left_leaves"] == ()).all()
    fig = scatter_figure(rows, 10.0)
    assert list(fig.data[0].customdata) == list(rows["row_id"])
    suggestion = suggested_threshold(results, 0.1)
    assert suggestion is not None and suggestion >= 0


def test_scatter_and_list_carry_each_points_intervals(serenade_results, tree_result):
    from dpcore.redescriptions.intervals import redescription_intervals
    from dpcore.redescriptions.listing import list_entries
    from dpcore.redescriptions.workspace import Workspace

    runs = [tree_result, serenade_results["serenade_es", "strict"]]
    rows = redescription_rows(runs)
    intervals = interval_rows(runs)
    assert set(intervals["row_id"]) == set(rows["row_id"])
    merged = rows.merge(intervals, on="row_id", how="left")
    red = tree_result.redescriptions[0]
    expected = redescription_intervals(tree_result)[red.id]
    first = merged.set_index("row_id").loc[f"{tree_result.run_id[:8]}:{red.id}"]
    assert (first["jaccard_low"], first["jaccard_high"]) == (expected.jaccard.low,
                                                             expected.jaccard.high)
    trace = scatter_figure(merged, 10.0).data[0]
    # error bars reach from each point to its interval's ends (asymmetric: selection)
    y = list(merged["jaccard"])
    assert list(trace.error_y.array) == pytest.approx(
        [max(h - v, 0) for v, h in zip(y, merged["jaccard_high"])])
    assert list(trace.error_y.arrayminus) == pytest.approx(
        [max(v - lo, 0) for v, lo in zip(y, merged["jaccard_low"])])
    assert trace.error_x.array is not None and "90% interval" in trace.text[0]
    assert scatter_figure(rows, 10.0).data[0].error_y.array is None   # none without them
    entries = list_entries(runs)
    frame = list_frame([(e, 1) for e in entries], Workspace("clinic"), intervals)
    assert list(frame.columns[frame.columns.get_loc("jaccard") + 1:][:4]) == [
        "jaccard_low", "jaccard_high", "support_low", "support_high"]
    assert (frame["jaccard_low"] <= frame["jaccard_high"]).all()
    assert "jaccard_low" not in list_frame([(e, 1) for e in entries], Workspace("clinic"))


def test_a_pooled_scatter_colours_each_runs_kept_points_and_names_them_in_a_legend(
        serenade_results, tree_result):
    """Issue 32, point 5: pooled runs were one blue cloud with no legend."""
    from components.redescriptions.scatter import KEPT_COLOR, PRUNED_COLOR

    tree_rows = redescription_rows([tree_result])
    alone = scatter_figure(tree_rows, 0.0)
    assert len(alone.data) == 1 and not alone.layout.showlegend
    assert set(alone.data[0].marker.color) == {KEPT_COLOR}

    pooled = [tree_result, serenade_results["serenade_es", "strict"]]
    rows = redescription_rows(pooled)
    threshold = float(rows["support"].median())
    fig = scatter_figure(rows, threshold)
    assert list(fig.data[0].customdata) == list(rows["row_id"])   # one trace of points
    legend = {t.name: t.marker.color for t in fig.data[1:]}
    assert fig.layout.showlegend and list(legend) == [run_label(r) for r in pooled]
    assert len(set(legend.values()) | {PRUNED_COLOR}) == 3
    assert all(t.x == (None,) for t in fig.data[1:]), "legend entries hold no point"
    for run, support, color in zip(rows["run"], rows["support"], fig.data[0].marker.color):
        assert color == (legend[run] if support >= threshold else PRUNED_COLOR)
    assert any(run_label(pooled[1]) in h for h in fig.data[0].text)


def test_a_threshold_far_beyond_every_point_does_not_squash_them(tree_result):
    """Issue 32, point 13: a typed threshold of 1e9 drew its line at 1e9, so the axis
    stretched to it and every point sat at 0."""
    rows = redescription_rows([tree_result])
    top = float(rows["support"].max())
    (line,) = scatter_figure(rows, 1e9).layout.shapes
    assert top <= line.x0 <= top * 1.05 + 1
    texts = [a.text for a in scatter_figure(rows, 1e9).layout.annotations]
    assert texts == ["threshold 1,000,000,000 →"]
    inside = scatter_figure(rows, top / 2)
    assert inside.layout.shapes[0].x0 == top / 2 and not inside.layout.annotations


def test_kept_display_frame_turns_missing_pvalues_into_text(serenade_results):
    strict = serenade_results["serenade_es", "strict"]
    faithful = serenade_results["serenade_cs", "faithful"]
    rows = redescription_rows([strict])
    shown, as_text = kept_display_frame(rows)
    assert not as_text and shown["pvalue"].dtype == float
    pooled = redescription_rows([strict, faithful])
    shown, as_text = kept_display_frame(pooled)
    assert as_text
    faithful_ids = {r for r in pooled["row_id"] if r.startswith(faithful.run_id[:8])}
    assert set(shown[shown["row_id"].isin(faithful_ids)]["pvalue"]) == {NOT_RELEASED}
    assert NOT_RELEASED not in set(shown[~shown["row_id"].isin(faithful_ids)]["pvalue"])


def _strict_json(text: str):
    def refuse(constant):
        raise AssertionError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_export_of_faithful_serenade_is_strict_json_with_nulls(serenade_results):
    result = serenade_results["serenade_cs", "faithful"]
    rows = redescription_rows([result])
    kept, _ = kept_frame(rows, 0.0)
    doc = _strict_json(export_json("clinic", kept, {result.run_id: result}, 0.0))
    assert len(doc["redescriptions"]) == len(result.redescriptions) > 0
    first, red = doc["redescriptions"][0], result.redescriptions[0]
    assert first["noisy"]["support_left"] is None and first["noisy"]["pvalue"] is None
    assert first["noisy"]["support_both"] == pytest.approx(red.support_both)
    assert first["left_structure"]["tests"][0]["attribute"] == red.left.tests[0].attribute
    assert first["left_structure"]["operators"] == list(red.left.operators)
    assert "null" in doc["not_released"]
    table = pd.read_csv(io.StringIO(export_csv(kept, {result.run_id: result}, 0.0)))
    assert table["noisy_pvalue"].isna().all() and (table["algorithm"] == "serenade_cs").all()


def test_json_export_of_a_tree_run_keeps_its_leaves(tree_result):
    rows = redescription_rows([tree_result])
    kept, _ = kept_frame(rows, 0.0)
    doc = _strict_json(export_json("clinic", kept, {tree_result.run_id: tree_result}, 0.0))
    first, red = doc["redescriptions"][0], tree_result.redescriptions[0]
    assert first["left_structure"] == {"tree": red.left.tree, "leaves": list(red.left.leaves)}
    # every released statistic carries its 90 % interval, the same in the JSON and the CSV
    from dpcore.redescriptions.intervals import redescription_intervals

    expected = redescription_intervals(tree_result)[red.id]
    assert first["intervals"]["coverage"] == 0.9
    assert first["intervals"]["jaccard"] == [expected.jaccard.low, expected.jaccard.high]
    table = pd.read_csv(io.StringIO(export_csv(kept, {tree_result.run_id: tree_result}, 0.0)))
    row = table[table["id"] == red.id].iloc[0]
    assert row["jaccard_low_90"] == pytest.approx(expected.jaccard.low)
    assert row["support_both_high_90"] == pytest.approx(expected.support_both.high)
    assert (table["jaccard_low_90"] <= table["jaccard_high_90"]).all()


def test_json_safe_replaces_non_finite_numbers():
    assert json_safe({"a": [1.0, float("nan"), (math.inf, "x")], "b": None, "c": 3}) == {
        "a": [1.0, None, [None, "x"]], "b": None, "c": 3}


# --------------------------------------------------------------------------- runs page

def test_parameter_summary_of_each_family():
    es = SerenadeParams(algorithm="serenade_es", **TINY).to_dict()
    assert parameter_summary("serenade_es", es) == \
        "I 3, K 5, s 0.02, split init/ext/qual 0.45/0.45/0.10"
    cs = {**SerenadeParams(algorithm="serenade_cs", **TINY).to_dict(), "seed": 4}
    assert parameter_summary("serenade_cs", cs) == \
        "I 3, L 2, s 0.02, split init/ext/qual 0.45/0.45/0.10, min_acc 0.3, demo seed 4"
    tree = TreeParams(in_tr=2, mc_iter=200).to_dict()
    assert parameter_summary("mcmctreepair", tree) == \
        f"InTr 2, ω 0.5, d 4, MCIter 200, score {tree['tree_score']}"
    for score in TREE_SCORES:      # the strict-mode choice, before a demo seed
        assert parameter_summary("mcmctreepair", {**tree, "tree_score": score, "seed": 3}) == \
            f"InTr 2, ω 0.5, d 4, MCIter 200, score {score}, demo seed 3"
    # faithful runs, and results stored before the choice existed, used the paper's score
    old = {k: v for k, v in tree.items() if k != "tree_score"}
    assert parameter_summary("mcmctreepair", old).endswith(f"score {PAPER_SCORE}")
    faithful = {**tree, "mode": FAITHFUL, "tree_score": COUNT_SCORE}
    assert parameter_summary("mcmctreepair", faithful).endswith(f"score {PAPER_SCORE}")
    alt = TreeParams(algorithm="altmcmc", in_tr=2, mc_iter=200).to_dict()
    assert "score" not in parameter_summary("altmcmc", alt)


def test_comparison_frame_marks_parameters_a_run_does_not_use(serenade_results, tree_result):
    es = serenade_results["serenade_es", "faithful"]
    frame = comparison_params_frame([es, tree_result], ["es", "tree"])
    assert list(frame.columns) == ["es", "tree"]
    assert list(frame.loc["algorithm"]) == ["SerenadeES", "MCMCTreePair"]
    assert list(frame.loc["K (es_rounds)"]) == ["5", NOT_USED]
    assert list(frame.loc["memo_age"]) == ["40", NOT_USED]
    assert list(frame.loc["ω (omega)"]) == [NOT_USED, "0.5"]
    assert list(frame.loc["noise"]) == [NOT_USED, "discrete"]   # faithful: always continuous
    assert list(frame.loc["Γ.minJ (min_jaccard)"]) == ["0.1", "0.1"]


def test_comparison_frame_of_an_older_result_without_serenade_fields(tree_result):
    old = type(tree_result)(**{**tree_result.__dict__, "params": {
        k: v for k, v in tree_result.params.items() if k in {"algorithm", "epsilon", "mode"}}})
    frame = comparison_params_frame([old], ["old"])
    assert frame.loc["InTr (in_tr)", "old"] == NOT_USED


# --------------------------------------------------------------------------- owner views

def test_truth_frame_and_traces_of_serenade_runs(serenade_results, clinic_dataset):
    for (_algorithm, _mode), result in serenade_results.items():
        frame = truth_frame(result, evaluate(result, clinic_dataset), 0.0)
        assert len(frame) == len(result.redescriptions)
        assert frame["true J"].between(0, 1).all()
        traces = result.diagnostics.score_traces
        figures = serenade_trace_figures(traces)
        assert len(figures) == 2
        assert len(figures[0].data) == len(traces) - 1
        assert list(figures[1].data[0].y) == traces[FINAL_QUALITY_TRACE]
        assert "initial pairs" in phase_times_text(result.diagnostics.phase_seconds)
    assert serenade_trace_figures({}) == []


# --------------------------------------------------------------------------- warm-up

def test_warmup_runs_are_tiny():
    for algorithm in ALGORITHMS:
        for mode in MODES:
            params = warmup_params(algorithm, mode).validate()
            assert type(params) is family_type(algorithm)
            if params.is_serenade:
                assert params.init_pairs == params.es_rounds == params.cs_rounds == 1
            else:
                assert params.in_tr == params.rm_iter == 1 and params.mc_iter == 40


# --------------------------------------------------------------------------- newcomer issue
# "What a newcomer trips over": each point's pure part (the app-level behaviour is in
# tests/app/test_app.py, the box selection and the diagram in a real browser).

def test_what_to_expect_is_computed_from_parameters_and_matches_the_suggestion(tree_result):
    """Point 1: a pre-launch estimate of the noisy-J error, from public parameters only.
    It ignores the miners' selection, so the suggested threshold the run's release gives
    afterwards (which accounts for it, issue 30) lands at or above it."""
    from components.redescriptions.expectations import expectation_text, expected_noise
    from dpcore.redescriptions.pruning import suggest_threshold

    params = TreeParams(in_tr=2, mc_iter=200)
    estimate = expected_noise(params).support_for(0.1)
    after = suggest_threshold([tree_result], 0.1)
    assert estimate <= 2.0 * after
    assert expected_noise(replace_eps(params, 10.0)).support_for(0.1) < estimate / 5
    text = expectation_text(params)
    assert "What to expect" in text and f"{estimate:.0f} rows" in text and "0 ε" in text
    for algorithm in ALGORITHMS:
        for mode in MODES:
            noise = expected_noise(family_type(algorithm)(algorithm=algorithm, mode=mode))
            assert 0 < noise.count_sd < math.inf and 0 < noise.support_for() < math.inf


def replace_eps(params, epsilon):
    from dataclasses import replace

    return replace(params, epsilon=epsilon)


def test_mcmctreepair_at_a_large_epsilon_is_announced_and_never_told_to_raise_it():
    """Point 1: MCMCTreePair at ε = 10 returned 0 redescriptions (ε = 1: 125) and the
    hint said "try a larger ε"."""
    from components.redescriptions.expectations import empty_result_advice, miner_warnings

    paper = TreeParams(tree_score="paper")
    assert miner_warnings(replace(paper, epsilon=1.0)) == []
    [warning] = miner_warnings(replace(paper, epsilon=10.0))
    assert "few or no" in warning and "does not help" in warning and "ω" in warning
    assert miner_warnings(replace(paper, epsilon=10.0, omega=0.9)) == []
    assert miner_warnings(replace(paper, algorithm="altexpm", epsilon=10.0)) == []
    # Faithful mode always samples by the paper's score; the count-scale score is steered.
    assert miner_warnings(TreeParams(epsilon=10.0, mode="faithful"))
    assert miner_warnings(TreeParams(epsilon=10.0, tree_score="count")) == []
    advice = empty_result_advice("mcmctreepair", replace(paper, epsilon=10.0).to_dict())
    assert "larger ε does not help" in advice and "try a larger ε" not in advice
    # A run stored before the choice existed ran the paper's score.
    old = {k: v for k, v in replace(paper, epsilon=10.0).to_dict().items() if k != "tree_score"}
    assert "larger ε does not help" in empty_result_advice("mcmctreepair", old)
    counted = TreeParams(epsilon=10.0, tree_score="count").to_dict()
    assert "try a larger ε" in empty_result_advice("mcmctreepair", counted)
    assert "try a larger ε" in empty_result_advice("altexpm", {"epsilon": 0.1})


def test_the_form_s_number_boxes_refuse_exactly_what_the_declaration_refuses():
    """Issue 34: the boxes read their ranges from the parameter declarations, so a number
    the form accepts is one the run's validate() accepts, and the other way round."""
    from components.common.number_fields import number_problem
    from components.redescriptions.params_form import FIELDS
    from dpcore.errors import ParameterError
    from dpcore.redescriptions.params import FIELDS as DECLARED

    checked = 0
    for label, bounds, name in FIELDS.values():
        if name not in DECLARED:
            continue                                    # k and the seed are the form's own
        declared = DECLARED[name]
        probes = [declared.default]
        for bound in (declared.low, declared.high):
            if bound is not None:
                probes += [bound, bound - 1e-6, bound + 1e-6, bound - 1, bound + 1]
        for value in probes:
            try:
                declared.check(declared.kind(value) if declared.kind is int
                               and float(value).is_integer() else value)
                accepted = True
            except ParameterError:
                accepted = False
            assert (number_problem(label, value, bounds) is None) == accepted, (name, value)
        checked += 1
    assert checked >= 20


def test_refused_numbers_are_explained():
    """Point 3: ε typed as 0, −1 or 50 snapped back with no message."""
    from components.common.number_fields import Bounds, number_problem
    from components.redescriptions.params_form import FIELDS, form_problems

    eps = FIELDS["mine_epsilon"][1]
    for bad in (0, 0.0, -1.0):
        assert "must be above 0" in number_problem("ε (exact)", bad, eps)
    assert number_problem("ε (exact)", 50.0, eps) is None     # the budget decides (Launch)
    assert number_problem("ε (exact)", None, eps) == "ε (exact): enter a number."
    assert "at least 1 and at most 10,000" in number_problem("InTr", 0, FIELDS["mine_in_tr"][1])
    assert "whole number" in number_problem("k", 2.5, Bounds(1, 5, integer=True))
    assert "must be at most 1" in number_problem("Γ.minJ", 1.5, FIELDS["mine_min_jaccard"][1])
    assert form_problems({"mine_epsilon": 0.0})[0].startswith("ε (exact): 0 is refused")
    # a field the chosen algorithm does not use never blocks the run
    assert form_problems({"mine_algorithm": "altexpm", "mine_init_pairs": 0}) == []
    assert form_problems({"mine_algorithm": "serenade_es", "mine_init_pairs": 0}) != []
    assert form_problems({"mine_algorithm": "altexpm", "mine_setting": "custom",
                          "mine_rm_iter": 0}) != []


def test_launch_is_blocked_with_the_reason_when_the_run_cannot_fit():
    """Point 4: Launch stayed clickable for a run the ledger refuses."""
    from components.common.family_ui import family_ui, launch_blockers
    from dpcore.privacy.ledger import BudgetStatus
    from dpcore.registry import REDESCRIPTIONS

    class Record:
        name, confirmed = "clinic", True

    ui, one = family_ui(REDESCRIPTIONS), epsilon_to_nano(1.0)
    assert launch_blockers(ui, BudgetStatus(20 * one, 0, 20 * one), one, Record()) == []
    [reason] = launch_blockers(ui, BudgetStatus(20 * one, 19.5 * one, one // 2), one,
                               Record())
    assert "costs ε = 1 but only ε = 0.5 remains on `clinic`" in reason
    assert "Lower ε (or the number of trials)" in reason
    assert "still being prepared" in launch_blockers(
        ui, BudgetStatus(20 * one, 0, 20 * one), one, Record(), engine_ready=False)[0]


def test_explore_opens_on_the_newest_run_with_results():
    """Point 2: Explore opened on the newest run even when it released nothing."""
    from components.redescriptions.explore_view import default_pick

    class Run:
        def __init__(self, run_id):
            self.run_id = run_id

    runs = [Run("new-empty"), Run("older"), Run("oldest")]        # newest first
    assert default_pick(runs, {"new-empty": 0, "older": 12, "oldest": 5}) == ["older"]
    assert default_pick(runs, {"new-empty": 0, "older": 0, "oldest": 0}) == ["new-empty"]
    assert default_pick([], {}) == []


def test_only_the_pruning_view_reruns_on_a_threshold_move():
    """The scatter, threshold, list and export are ONE fragment (a click or a typed
    threshold reruns them, not the whole page); a decorator once slid onto the helper
    inserted above it, so every click reran the page and the helper, itself a fragment,
    answered None outside a script run instead of whether the suggestion prunes all."""
    from components.redescriptions.explore_view import _prunes_everything, pruning_fragment

    rows = pd.DataFrame({"support": [3.0, 7.0]})
    assert _prunes_everything(7.5, rows) is True
    assert _prunes_everything(7.0, rows) is False
    assert _prunes_everything(9.0, rows.iloc[:0]) is False
    assert hasattr(pruning_fragment, "__wrapped__"), "pruning_fragment is an st.fragment"


def _tree(tree_id: int, view: int, attribute: str, n_leaves: int):
    """A released-looking tree with ``n_leaves`` leaves, split on ``attribute`` ≤ / > v."""
    from dpcore.redescriptions.results import Condition, TreeNode, TreeRecord

    nodes, conds = [], []

    def build(parent, depth, branch, path, lo, hi, count):
        node_id = len(nodes)
        nodes.append(None)
        if count == 1:
            nodes[node_id] = TreeNode(node_id, parent, depth, None, None, None, (), branch,
                                      leaf=len(conds))
            conds.append(tuple(path))
            return node_id
        cut = round((lo + hi) / 2, 2)
        left = Condition(attribute, "<=", cut)
        right = Condition(attribute, ">", cut)
        a = build(node_id, depth + 1, left, path + [left], lo, cut, count // 2)
        b = build(node_id, depth + 1, right, path + [right], cut, hi, count - count // 2)
        nodes[node_id] = TreeNode(node_id, parent, depth, attribute, "numeric", cut, (a, b),
                                  branch)
        return node_id

    build(-1, 0, None, [], 0.0, 100.0, n_leaves)
    return TreeRecord(tree_id, view, 0, 0, tuple(nodes), tuple(conds))


def test_tree_pair_diagram_is_readable_at_20_by_16_leaves():
    """Point 6: 20 × 16 crossing leaf links, labels over the lines, no split values."""
    import plotly.graph_objects as go

    from components.redescriptions.tree_diagram import QUERY_COLOR, tree_pair_figure, tree_units
    from dpcore.redescriptions.results import ExtractionRecord

    left, right = _tree(0, 0, "LAB_A", 20), _tree(1, 1, "LAB_B", 16)
    table = tuple(tuple(float((3 * i + 5 * j) % 17 - 2) for j in range(16)) for i in range(20))
    ext = ExtractionRecord(0, 0, 1, 0, 0, table, tuple(map(sum, table)),
                           tuple(map(sum, zip(*table))), 0.0)
    fig = tree_pair_figure(left, right, ext, (3,), (7, 8))
    [sankey] = fig.data
    assert isinstance(sankey, go.Sankey)
    labels = list(sankey.node.label)
    # the query's own leaves come first in their column, in the query colour
    assert any(lab.startswith("L3 ") for lab in labels)
    assert {lab.split()[0] for lab in labels if lab[:2] in ("R7", "R8")} == {"R7", "R8"}
    assert [c for c in sankey.node.color].count(QUERY_COLOR) == 3
    # split values on the edges: each drawn node carries its branch test, e.g. [LAB_A ≤ 50]
    assert any("[LAB_A ≤ 50]" in lab or "[LAB_A > 50]" in lab for lab in labels)
    assert any("LAB_B" in lab for lab in labels)
    # the rest is collapsed: far fewer bands than 20 × 16 leaf links
    _, units_l = tree_units(left, (3,))
    _, units_r = tree_units(right, (7, 8))
    assert len(units_l) <= 6 and len(units_r) <= 10     # one path; two paths (7 | 8)
    middle = len(units_l) * len(units_r)
    assert len(sankey.link.source) <= middle + 2 * (len(labels))
    assert len(sankey.link.source) < 80
    # negative noisy counts are drawn as 0 (no band), flows are the noisy sums
    assert min(sankey.link.value) > 0
    # ... and every leaf on demand
    full = tree_pair_figure(left, right, ext, (3,), (7, 8), expand_all=True).data[0]
    assert sum(lab[:1] == "L" and lab[1:2].isdigit() for lab in full.node.label) == 20
    assert sum(lab[:1] == "R" and lab[1:2].isdigit() for lab in full.node.label) == 16
    positive = sum(1 for row in table for v in row if v > 0)
    assert len(full.link.source) >= positive


def test_runs_page_helpers_clamp_jaccard_and_pick_runs_with_results(tree_result,
                                                                    serenade_results):
    """Point 7: the violin axis ran to 1.5; the default comparison took an empty run; one
    Explore threshold was applied to every run and algorithm."""
    from dataclasses import replace

    from components.common.runs_view import default_comparison, jaccard_violins, run_thresholds

    es = serenade_results["serenade_es", "strict"]
    fig = jaccard_violins([tree_result, es], ["tree", "es"])
    assert tuple(fig.layout.yaxis.range) == (-0.02, 1.02)
    assert all(t.spanmode == "hard" for t in fig.data)

    empty = replace(tree_result, run_id="e" * 32, redescriptions=[])

    class Run:
        def __init__(self, run_id):
            self.run_id = run_id

    done = [Run(empty.run_id), Run(tree_result.run_id), Run(es.run_id)]     # newest first
    results = {empty.run_id: empty, tree_result.run_id: tree_result, es.run_id: es}
    assert default_comparison(done, results) == [tree_result.run_id, es.run_id]

    thresholds = run_thresholds(results, (tree_result.run_id,), 123.0)
    assert thresholds[tree_result.run_id] == (123.0, "Explore")
    own, source = thresholds[es.run_id]
    assert source == "suggested" and own == suggested_threshold({es.run_id: es}, 0.1)


def _step(key, family, action=lambda: None):
    from components.common.warmup import WarmupStep

    return WarmupStep(key, key, family, action)


def test_warmup_reports_progress_and_an_estimate(monkeypatch):
    """Point 10: ~55 s of grey placeholders with no progress or estimate; issue 32: the
    estimate comes from each step's measured compile CPU, scaled by this machine's pace."""
    from components.common import warmup
    from components.common.warmup import WarmupState, progress_text, run_warmup

    monkeypatch.setattr(warmup, "STEP_SECONDS", {"a/x": (10.0, 1.0), "b/x": (30.0, 1.0),
                                                 "c/y": (20.0, 1.0)})
    steps = [_step("a/x", "fam1"), _step("b/x", "fam1"), _step("c/y", "fam2")]
    cold = WarmupState(steps=steps, cold=True, started=0.0)
    text = progress_text(cold)
    assert "step 1 of 3" in text and "compiling" in text
    assert cold.seconds_left(now=0.0) == pytest.approx(60.0)        # 10 + 30 + 20 expected
    assert cold.seconds_left(now=0.0, family="fam2") == pytest.approx(20.0)
    assert WarmupState(steps=steps, cold=False, started=0.0).seconds_left(now=0.0) == 3.0
    # the first step took 20 s for its expected 10: the machine runs at half speed
    cold.done_keys.append("a/x")
    cold.durations["a/x"] = 20.0
    cold.running.append((steps[1], 20.0))
    assert "(b/x)" in progress_text(cold)
    assert cold.seconds_left(now=20.0) == pytest.approx(2 * (30 + 20))
    # the second step overruns even that pace (90 s for 30 expected): 3x, and growing
    assert cold.seconds_left(now=110.0) == pytest.approx(20 * 3.0 + 1.0, abs=1.0)
    assert cold.seconds_left(now=200.0) > cold.seconds_left(now=110.0)
    assert cold.fraction == pytest.approx(10 / 60)

    order = []
    state = WarmupState(steps=[_step(s.key, s.family, lambda k=s.key: order.append(k))
                               for s in steps], cold=False)
    state.wanted = "fam2"                             # a page waits for fam2: it goes first
    run_warmup(state, workers=1)
    assert order == ["c/y", "a/x", "b/x"] and state.ready and state.fraction == 1.0
    assert progress_text(state) == "Mining engine ready."

    def boom():
        raise RuntimeError("no compiler")

    failed = WarmupState(steps=[], cold=True)
    run_warmup(failed, [("x", boom)], workers=1)
    assert failed.ready and "RuntimeError" in failed.error
    assert "compile on first use" in progress_text(failed)


def test_one_warmup_covers_every_family_and_a_family_is_ready_on_its_own_steps():
    """Issue 32: one warm-up (not one per family) runs every miner x mode of every family;
    a page is ready as soon as its own family's steps are done."""
    from components.common.warmup import STEP_SECONDS, WarmupState, warmup_steps
    from dpcore.redescriptions.warmup import INTERVALS_KEY
    from dpcore.registry import (
        ALGORITHM_SPECS,
        FAMILIES,
        REDESCRIPTION_QUERIES,
        SEQUENCES,
        SYNTHESIS,
        family_algorithms,
    )

    steps = warmup_steps()
    expected = {f"{a}/{m}" for f in FAMILIES for a in family_algorithms(f)
                if a not in REDESCRIPTION_QUERIES for m in ALGORITHM_SPECS[a].modes}
    expected.add(INTERVALS_KEY)                     # every charged run stores its intervals
    assert [s.key for s in steps] == list(STEP_SECONDS)          # every step is measured
    assert set(STEP_SECONDS) == expected and {s.family for s in steps} == set(FAMILIES)
    state = WarmupState(steps=steps, cold=True)
    state.done_keys = [s.key for s in steps if s.family == SEQUENCES]
    assert state.family_ready(SEQUENCES) and not state.family_ready(SYNTHESIS)
    assert not state.ready and not state.family_ready(None)


# --------------------------------------------------------------------------- Data page pieces
# (what a newcomer trips over, points 8 and 9): no server paths, the owner decides about
# every column the prefill left out.

def test_hide_server_paths_keeps_names_and_drops_the_server_file_system(tmp_path,
                                                                        monkeypatch):
    from components.common.data_locations import hide_server_paths
    from dpcore.data.loading import sample_data_dir
    from dpcore.privacy.ledger import Ledger

    monkeypatch.setenv("DPRM_DATA_DIR", str(tmp_path / "uploads"))
    ledger = Ledger(tmp_path / "state" / "ledger.sqlite")
    text = (f"line 3 of file '{sample_data_dir() / 'clinic' / 'labs.csv'}': bad; "
            f"file '{tmp_path / 'uploads' / 'mine' / 'left.csv'}'; "
            f"'{tmp_path / 'state' / 'x.json'}'; '/opt/elsewhere/data/views.csv'; "
            "expected 1/0 or true/false")
    shown = hide_server_paths(text, ledger)
    assert "'sample data/clinic/labs.csv'" in shown
    assert "'upload folder/mine/left.csv'" in shown
    assert "'ledger folder/x.json'" in shown and "'views.csv'" in shown
    assert "1/0 or true/false" in shown
    assert str(tmp_path) not in shown and "/opt" not in shown
    assert str(sample_data_dir()) not in shown


def test_data_location_text_names_folders_relative_to_what_the_app_knows(tmp_path,
                                                                         monkeypatch):
    from components.common.data_locations import data_location_text
    from dpcore.data.loading import sample_data_dir
    from dpcore.data.schema import load_schema
    from dpcore.privacy.ledger import Ledger

    monkeypatch.setenv("DPRM_DATA_DIR", str(tmp_path / "uploads"))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    clinic = sample_data_dir() / "clinic"
    schema = load_schema(next(clinic.glob("schema.*")))
    for path, expected in ((clinic, "sample data: `clinic`"),
                           (tmp_path / "uploads" / "ds", "upload folder: `ds`"),
                           (tmp_path / "other", "a folder on the server (its path is not "
                                                "shown)")):
        ledger.register_dataset(path.name, schema, str(path), 1.0, actor="t")
        text = data_location_text(ledger._dataset_record(path.name), ledger)
        assert text.startswith(expected) and str(tmp_path) not in text
        assert str(sample_data_dir()) not in text
        assert all(f"`{v.file}`" in text for v in schema.views)


def _stray_draft(tmp_path):
    """An upload whose right view's only numeric column has one stray text."""
    from components.common.dataset_upload import prefill_draft
    from dpcore.data.loading import read_table

    left = "pid,flag\n" + "".join(f"{i},{i % 2}\n" for i in range(30))
    right_rows = [f"{i},{10 + i},{i % 3}" for i in range(30)]
    right_rows[3] = "3,n/a?,0"                                     # editor line 5
    right = "pid,lab,stage\n" + "\n".join(right_rows) + "\n"
    (tmp_path / "left.csv").write_text(left)
    (tmp_path / "right.csv").write_text(right)
    draft = {"layout": "two", "name": "stray", "id_column": "pid",
             "files": ["left.csv", "right.csv"], "bytes": [left.encode(), right.encode()],
             "frames": [read_table(tmp_path / "left.csv", label="left.csv"),
                        read_table(tmp_path / "right.csv", label="right.csv")],
             "schema": None, "notes": []}
    schema, notes = prefill_draft(draft, None)
    return draft, schema, notes


def test_left_out_columns_come_into_the_editor_unticked_and_wait_for_a_decision(tmp_path):
    from components.common.dataset_upload import notes_frame, undecided_columns
    from components.common.schema_editor import (
        editor_frame_to_schema,
        schema_to_editor_frame,
    )

    _, schema, notes = _stray_draft(tmp_path)
    assert [n.column for n in notes] == ["lab"]
    assert "line 5: 'n/a?'" in notes_frame(notes)["why it was left out"].iloc[0]
    frame = schema_to_editor_frame(schema, [n.proposal for n in notes])
    assert frame[["name", "include"]].values.tolist() == [["flag", True], ["stage", True],
                                                          ["lab", False]]
    assert frame.loc[2, "type"] == "numeric" and frame.loc[2, "domain_lo"] <= 10
    assert undecided_columns(notes, schema) == ["lab"]
    kept = editor_frame_to_schema(frame, schema, name="stray", description="",
                                  provenance="", public_demo=False,
                                  view_names=("L", "R"), grid_bins=32, target_bins=4)
    assert [a.name for a in kept.attributes] == ["flag", "stage"]    # unticked: left out


def test_owner_includes_a_stray_text_column_by_declaring_the_text_missing(tmp_path,
                                                                           monkeypatch):
    """The decision path: tick include, add the stray text to the missing-value texts,
    register; without the missing text the register step names the line and writes nothing."""
    from components.common.dataset_upload import register_draft, undecided_columns
    from components.common.schema_editor import (
        editor_frame_to_schema,
        parse_missing_values,
        schema_to_editor_frame,
    )
    from dpcore.errors import DataError
    from dpcore.privacy.ledger import Ledger

    monkeypatch.setenv("DPRM_DATA_DIR", str(tmp_path / "datasets"))
    draft, schema, notes = _stray_draft(tmp_path)
    frame = schema_to_editor_frame(schema, [n.proposal for n in notes])
    frame.loc[frame["name"] == "lab", "include"] = True
    ledger = Ledger(tmp_path / "ledger.sqlite")

    def edited(missing_text):
        return editor_frame_to_schema(frame, schema, name="stray", description="",
                                      provenance="", public_demo=False,
                                      view_names=("L", "R"), grid_bins=32, target_bins=4,
                                      missing_values=parse_missing_values(missing_text))

    with pytest.raises(DataError) as info:
        register_draft(ledger, draft, edited("NA"), 1.0)
    assert "line 5 of file 'right.csv', column 'lab'" in str(info.value)
    assert not (tmp_path / "datasets" / "stray").exists() and ledger._dataset_records() == []
    chosen = edited("NA, n/a?")
    assert chosen.missing_values == ("", "NA", "n/a?") and undecided_columns(notes, chosen) == []
    register_draft(ledger, draft, chosen, 1.0)
    record = ledger._dataset_record("stray")
    assert [a.name for a in record.schema.attributes] == ["flag", "stage", "lab"]


# ------------------------------------------------------------- issue 32, the walk (small)

def test_what_to_expect_at_a_large_epsilon_names_no_fraction_of_a_row():
    """Point 13: at ε = 50 the line spoke of "0.057 rows"."""
    from components.redescriptions.expectations import expectation_text, expected_noise

    params = TreeParams(epsilon=50.0)
    assert expected_noise(params).support_for(0.1) < 1
    text = expectation_text(params)
    assert "What to expect" in text and "less than one row" in text
    assert not re.search(r"\b0\.\d+ rows", text), text


def test_a_refused_large_number_is_written_out():
    """Point 13: "1e+08 is refused"."""
    from components.common.number_fields import Bounds, number_problem

    message = number_problem("MCIter", 1e8, Bounds(low=1, high=1_000_000, integer=True))
    assert "100,000,000 is refused" in message and "at most 1,000,000" in message
    assert "e+" not in message


def test_the_budget_meter_figures_fit_a_half_width_column():
    """Point 7: "Spent ε 7.46…" and a faithful charge shown as "0.0116667"."""
    from components.common.budget_meter import fmt_meter

    assert fmt_meter(7.466667) == "7.467" and fmt_meter(0.011666667) == "0.01167"
    assert fmt_meter(20.0) == "20" and fmt_meter(16.533333) == "16.53"
    assert fmt_meter(123456.0) == "123,456"
    assert all(len(fmt_meter(x)) <= 7 for x in (0.011666667, 7.466667, 999.95, 123456.0))


def test_runs_are_counted_in_words():
    """Point 12: "1 runs"."""
    from components.common.runs_view import runs_count

    assert runs_count(1) == "1 run" and runs_count(2) == "2 runs"


def test_compare_starts_with_the_runs_explore_shows(tree_result, serenade_results):
    """Point 12: Compare took the two newest runs whatever Explore showed."""
    from components.common.runs_view import default_comparison

    es = serenade_results["serenade_es", "strict"]
    cs = serenade_results["serenade_cs", "strict"]

    class Run:
        def __init__(self, run_id):
            self.run_id = run_id

    done = [Run(cs.run_id), Run(es.run_id), Run(tree_result.run_id)]        # newest first
    results = {r.run_id: r for r in (cs, es, tree_result)}
    assert default_comparison(done, results) == [cs.run_id, es.run_id]
    assert default_comparison(done, results, (tree_result.run_id, es.run_id)) == [
        es.run_id, tree_result.run_id]
    assert default_comparison(done, results, (tree_result.run_id,)) == [cs.run_id, es.run_id]


def test_the_sequences_run_picker_shows_no_markdown():
    """Point 13: raw backticks in the Sequences page's run label (a select box shows plain
    text)."""
    from components.sequences.sequences_view import _run_label
    from dpcore.privacy.ledger import RunRecord
    from dpcore.registry import PFS2

    run = RunRecord(run_id="f" * 32, dataset="clicks", algorithm=PFS2, status="done",
                    epsilon_nano=epsilon_to_nano(1.0), params={"theta": 0.02}, error=None,
                    created_at="2026-01-02T03:04:05", finished_at=None)
    label = _run_label(run)
    assert "`" not in label and label.endswith("ffffffff") and "θ = 0.02" in label


def test_each_sankey_flow_tooltip_carries_its_90_interval():
    """Issue 30: the tree pair's flows say where their true count lies — the interval of
    the released cells each flow sums (not clipped) at the table's public noise scale."""
    import re

    from components.redescriptions.tree_diagram import tree_pair_figure
    from dpcore.redescriptions.intervals import FlowNoise
    from dpcore.redescriptions.results import ExtractionRecord

    left, right = _tree(0, 0, "LAB_A", 8), _tree(1, 1, "LAB_B", 6)
    table = tuple(tuple(float((3 * i + 5 * j) % 17 - 2) for j in range(6)) for i in range(8))
    ext = ExtractionRecord(0, 0, 1, 0, 0, table, tuple(map(sum, table)),
                           tuple(map(sum, zip(*table))), 0.0)
    noise = FlowNoise(0.5, 1.0, "discrete")
    bare = tree_pair_figure(left, right, ext, (3,), (2,)).data[0]
    assert not any("interval" in h for h in bare.link.customdata)
    sankey = tree_pair_figure(left, right, ext, (3,), (2,), noise=noise,
                              expand_all=True).data[0]
    hovers = list(sankey.link.customdata)
    assert all(re.search(r"\(90 % interval \d+–\d+\)$", h) for h in hovers), hovers[:3]
    # the leaf-to-leaf flow L3 → R3 is one cell: exact discrete bound around the raw cell
    one = next(h for h in hovers if h.startswith("L3 ") and " ∩ R3 " in h)
    k = noise.halfwidth(1)
    low, high = max(table[3][3] - k, 0), max(table[3][3] + k, 0)
    assert one.endswith(f"(90 % interval {low:.0f}–{high:.0f})"), one
    # a right-tree band sums a whole column block of 8 rows: wider than one cell's
    widths = [int(b) - int(a) for a, b in
              (re.search(r"interval (\d+)–(\d+)", h).groups() for h in hovers)]
    assert max(widths) > 2 * k


def _chain_tree(tree_id: int, view: int, attributes: tuple[str, ...], n_leaves: int):
    """A chain-shaped released tree: every inner node splits one leaf off (as clinic's
    right trees often are); nested nodes then share almost the same height."""
    from dpcore.redescriptions.results import Condition, TreeNode, TreeRecord

    nodes, conds = [], []

    def build(parent, depth, branch, path, count):
        node_id = len(nodes)
        nodes.append(None)
        if count == 1:
            nodes[node_id] = TreeNode(node_id, parent, depth, None, None, None, (), branch,
                                      leaf=len(conds))
            conds.append(tuple(path))
            return node_id
        attribute = attributes[depth % len(attributes)]
        low = Condition(attribute, "<=", 10.5 * (depth + 1))
        high = Condition(attribute, ">", 10.5 * (depth + 1))
        a = build(node_id, depth + 1, low, path + [low], 1)
        b = build(node_id, depth + 1, high, path + [high], count - 1)
        nodes[node_id] = TreeNode(node_id, parent, depth, attribute, "numeric",
                                  10.5 * (depth + 1), (a, b), branch)
        return node_id

    build(-1, 0, None, [], n_leaves)
    return TreeRecord(tree_id, view, 0, 0, tuple(nodes), tuple(conds))


@pytest.mark.parametrize("expand_all", [False, True])
def test_sankey_labels_have_room_to_their_right(expand_all):
    """Point 13, "the Sankey's right-hand labels overlap": labels written beside inner tree
    nodes ran into the next column (a parent's bar spans its children) and, in a chain
    tree, into each other. Only the two leaf columns carry written labels now, and no
    column of nodes stands within a fifth of the width to the right of either; inner nodes
    say their split on hover; the views' names head the plot."""
    from components.redescriptions.tree_diagram import tree_pair_figure
    from dpcore.redescriptions.results import ExtractionRecord

    left = _chain_tree(0, 0, ("DX_ANXIETY", "AGE_GROUP"), 10)
    right = _chain_tree(1, 1, ("LAB_SODIUM", "LAB_BUN", "LAB_HBA1C"), 8)
    table = tuple(tuple(float((7 * i + 3 * j) % 23) for j in range(8)) for i in range(10))
    ext = ExtractionRecord(0, 0, 1, 0, 0, table, (), (), 0.0)
    fig = tree_pair_figure(left, right, ext, (0, 1), (0,), expand_all=expand_all,
                           view_names=("diagnoses", "labs"))
    [sankey] = fig.data
    xs, shown = list(sankey.node.x), list(sankey.node.label)
    written = [x for x, label in zip(xs, shown) if label]
    assert len(set(written)) == 2, "labels in the two leaf columns only"
    assert len(written) >= 3
    for x in set(written):
        beside = [other for other in xs if x < other < x + 0.2]
        assert not beside, (x, beside)
    inner = [h for h, label in zip(sankey.node.customdata, shown) if not label]
    assert any("split on LAB_" in h for h in inner), "an inner node's split is in its hover"
    assert [a.text for a in fig.layout.annotations] == ["diagnoses →", "→ labs"]
