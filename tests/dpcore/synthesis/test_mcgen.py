"""MC-GEN-DP (strict), faithful MC-GEN and the floor: accounting, releases, outputs, results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.data.table.schema import schema_from_dict
from dpcore.data.table.table import load_synthesis_dataset, load_table, table_from_frame
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.policy import EVERYONE, OWNER_ONLY
from dpcore.privacy.units import epsilon_to_nano
from dpcore.registry import FAITHFUL, STRICT
from dpcore.synthesis.fixedpoint import half_range
from dpcore.synthesis.mcgen import correlation_noise, fit_mcgen_dp, sample_mcgen_dp
from dpcore.synthesis.miner import check_runnable, synthesize
from dpcore.synthesis.params import (
    CORRELATION_GROUPS,
    FLOOR,
    SINGLE,
    THRESHOLD,
    SynthesisParams,
    mechanism_shares,
    run_cost_nano,
)
from dpcore.synthesis.results import SynthesisResult
from dpcore.synthesis.samples import adult_like_schema, generate_adult_like

REPO = Path(__file__).resolve().parents[3]
L = half_range(16)


def groups_params(**kwargs) -> SynthesisParams:
    """Parameters of the groups structure, which these tests pin (the default tree
    structure is tested in test_tree.py; the floor and faithful mode ignore it)."""
    return SynthesisParams(**{"structure": CORRELATION_GROUPS, **kwargs})


@pytest.fixture(scope="module")
def pima():
    return load_synthesis_dataset(REPO / "sample_data" / "pima_like")


@pytest.fixture(scope="module")
def mixed():
    return table_from_frame(generate_adult_like(3_000, seed=9), adult_like_schema())


def continuous_table(n=1_500, seed=0, public_demo=False):
    """Four correlated continuous features (no rounding), two classes."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    z = rng.standard_normal((n, 2))
    x = np.column_stack([z[:, 0], z[:, 0] + 0.5 * rng.standard_normal(n),
                         z[:, 1] + y, -z[:, 1] + 0.3 * rng.standard_normal(n)])
    schema = schema_from_dict({"name": "cont", "public_demo": public_demo,
                               "label": {"name": "y", "classes": [0, 1]},
                               "features": [{"name": f"x{j}", "type": "numeric",
                                             "bounds": [-4, 4]} for j in range(4)]})
    frame = pd.DataFrame({"y": y, **{f"x{j}": x[:, j] for j in range(4)}})
    return table_from_frame(frame, schema)


def run(table, rng_seed=0, **kwargs):
    params = groups_params(**kwargs)
    return synthesize(table, params, rng=np.random.default_rng(rng_seed)), params


# ----------------------------------------------------------------------------- accounting

@pytest.mark.parametrize("kwargs", [{}, {"feature_groups": [["pregnancies", "age"],
                                                            ["glucose", "insulin", "bmi"],
                                                            ["blood_pressure"],
                                                            ["skin_thickness", "pedigree"]]},
                                    {"cells": SINGLE, "epsilon": 0.3}, {"k": 20, "epsilon": 5},
                                    {"max_correlation_noise": 1e6, "grouping": "threshold"}])
def test_strict_spends_exactly_epsilon_with_integer_noise_and_the_stated_sensitivities(
        pima, kwargs):
    params = groups_params(**kwargs)
    accountant = PrivacyAccountant(epsilon_to_nano(params.epsilon))
    result = synthesize(pima, params, rng=np.random.default_rng(1), accountant=accountant)
    calls = accountant.calls
    assert sum(c.epsilon_nano for c in calls) == epsilon_to_nano(params.epsilon)
    assert result.spent_nano == result.epsilon_nano == epsilon_to_nano(params.epsilon)
    assert {c.mechanism for c in calls} == {"discrete_laplace"}
    assert calls[0].sensitivity == 1 and "per class" in calls[0].label
    groups = result.feature_groups
    released = result.feature_distances is not None
    histogram = [g["model"] == "histogram" for g in result.groups]
    # one-feature groups of a grid run are histograms; cells = single keeps one Gaussian
    assert histogram == [len(g) == 1 and params.cells != SINGLE for g in groups]
    counted = [h or any(n > 1 for n in g["cells"].values())
               for h, g in zip(histogram, result.groups)]
    shares = mechanism_shares(params, [len(g) for g in groups], counted,
                              [not h for h in histogram], histogram,
                              features_released=released or params.groups_given)
    assert [c.epsilon_nano for c in calls] == [s.epsilon_nano for s in shares]
    assert sum(g["epsilon_nano"] for g in result.groups) + calls[0].epsilon_nano + sum(
        c.epsilon_nano for c in calls if "feature correlations" in c.label) == \
        epsilon_to_nano(params.epsilon)
    expected = [1.0]
    if released:
        p = pima.schema.n_features
        expected += [p * L, (p * (p - 1) // 2 + p) * L**2]
    for g, c, h in zip(groups, counted, histogram):
        p = len(g)
        expected += [1.0] if h else \
            ([1.0] if c else []) + [p * L, (p * (p - 1) // 2 + p) * L**2]
    assert [c.sensitivity for c in calls] == expected
    assert result.mechanism_calls == [c.__dict__ for c in calls]


def test_categoricals_lower_the_moment_sensitivity(mixed):
    groups = [["age", "sex", "race"], ["workclass", "education", "education_num",
                                       "marital_status", "occupation", "relationship"],
              ["fnlwgt", "capital_gain", "capital_loss", "hours_per_week", "native_country"]]
    result, _ = run(mixed, feature_groups=groups)
    moments = [c for c in result.mechanism_calls if "second moments" in c["label"]]
    # p features, n_num numeric: (C(p, 2) + n_num)·L²
    assert [c["sensitivity"] for c in moments] == [(3 + 1) * L**2, (15 + 1) * L**2,
                                                   (10 + 4) * L**2]


def test_faithful_and_floor_spend_exactly_epsilon(pima):
    for params in (groups_params(mode=FAITHFUL, k=50, epsilon=0.7),
                   groups_params(algorithm=FLOOR, epsilon=0.7)):
        accountant = PrivacyAccountant(epsilon_to_nano(0.7))
        synthesize(pima, params, rng=np.random.default_rng(2), accountant=accountant)
        assert accountant.spent_nano == epsilon_to_nano(0.7)
    floor_calls = PrivacyAccountant(epsilon_to_nano(0.7))
    synthesize(pima, groups_params(algorithm=FLOOR, epsilon=0.7),
               rng=np.random.default_rng(2), accountant=floor_calls)
    assert [c.sensitivity for c in floor_calls.calls] == [1.0] * 9
    assert [c.parallel for c in floor_calls.calls] == [1] + [2] * 8


def test_a_refused_spend_stops_the_run_before_noise(pima):
    accountant = PrivacyAccountant(epsilon_to_nano(0.5))
    with pytest.raises(Exception, match="budget exceeded"):
        synthesize(pima, groups_params(epsilon=1.0), rng=np.random.default_rng(0),
                   accountant=accountant)
    assert accountant.spent_nano <= epsilon_to_nano(0.5)


# ----------------------------------------------------------------------------- releases

def test_class_counts_are_noisy_and_drive_the_row_count(pima):
    seen = []
    for seed in range(12):
        result, _ = run(pima, seed, epsilon=0.5)
        counts = result.noisy_class_counts
        seen.append(tuple(counts.values()))
        assert len(result.synthetic) == sum(counts.values())
        assert result.synthetic["outcome"].value_counts().to_dict() == \
            {int(k): v for k, v in counts.items() if v > 0}
        assert result.diagnostics.true_class_counts == {"0": 500, "1": 268}
    assert len(set(seen)) > 6 and seen.count((500, 268)) <= 1


def test_cell_covariances_are_positive_definite(mixed):
    groups = [["age", "sex", "race"], ["workclass", "education", "education_num",
                                       "marital_status", "occupation", "relationship"],
              ["fnlwgt", "capital_gain", "capital_loss", "hours_per_week", "native_country"]]
    params = groups_params(epsilon=2.0, k=20, min_eigenvalue=1e-3, feature_groups=groups)
    model = fit_mcgen_dp(mixed, params, rng=np.random.default_rng(4),
                         accountant=PrivacyAccountant(epsilon_to_nano(2.0)))
    n_cells = 0
    for per_class, layout in zip(model.cells, model.layouts):
        for cells in per_class:
            lam = np.linalg.eigvalsh(cells.covariances)
            assert lam.min() >= 1e-3 * (1 - 1e-9) and lam.max() <= layout.p * (1 + 1e-9)
            np.testing.assert_allclose(cells.factors @ np.swapaxes(cells.factors, 1, 2),
                                       cells.covariances, atol=1e-9)
            n_cells += cells.weights.shape[0]
    assert n_cells > 2 * len(model.layouts)  # the grid split some groups into cells


def test_no_synthetic_column_copies_a_real_one():
    table = continuous_table()
    real = table.to_frame()
    for kwargs in ({}, {"mode": FAITHFUL, "k": 25}, {"algorithm": FLOOR}):
        result, _ = run(table, 3, **kwargs)
        synth = result.synthetic
        for name in table.schema.feature_names:
            values = synth[name].to_numpy()
            inside = np.abs(values) < 4  # clipped values sit on a bound
            assert not np.isin(values[inside], real[name].to_numpy()).any(), (kwargs, name)
        if kwargs.get("mode") == FAITHFUL:  # same rows, same order (by class): compare
            order = np.argsort(table.labels, kind="stable")
            for name in table.schema.feature_names:
                assert not np.any(synth[name].to_numpy() == real[name].to_numpy()[order])


def test_owner_groups_are_used_and_a_categorical_is_never_split(mixed):
    groups = [["sex", "age"], [f for f in adult_like_schema().feature_names
                               if f not in ("sex", "age")]]
    result, _ = run(mixed, feature_groups=groups)
    assert result.feature_groups == [["age", "sex"], groups[1]]
    assert result.feature_distances is None
    dp, _ = run(mixed, max_correlation_noise=1e6)
    assert sorted(f for g in dp.feature_groups for f in g) == \
        sorted(adult_like_schema().feature_names)
    assert np.asarray(dp.feature_distances).shape == (14, 14)


def test_synthetic_table_has_the_schema_and_valid_values(mixed):
    result, _ = run(mixed, epsilon=1.0, k=50)
    synth = result.synthetic
    schema = mixed.schema
    assert list(synth.columns) == list(schema.columns)
    for f in schema.features:
        if f.is_numeric:
            assert synth[f.name].between(*f.bounds).all()
            assert (synth[f.name] == synth[f.name].round(f.decimals)).all()
        else:
            assert set(synth[f.name]) <= set(f.levels)
    assert set(synth[schema.label]) <= set(schema.classes)
    assert any(n > 1 for g in result.groups for n in g["cells"].values())


def test_strict_on_an_empty_table_still_releases_noise_only():
    table = continuous_table(40).subset(np.zeros(40, dtype=bool))
    assert table.n_rows == 0
    result, _ = run(table, epsilon=1.0)
    assert result.spent_nano == epsilon_to_nano(1.0)
    assert len(result.synthetic) == sum(result.noisy_class_counts.values())


def test_fixed_seed_reproduces_and_progress_reaches_one(pima):
    seen = []
    a = synthesize(pima, groups_params(), rng=np.random.default_rng(5),
                   progress=lambda f, m: seen.append((f, m)))
    b = synthesize(pima, groups_params(), rng=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a.synthetic, b.synthetic)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and 0 <= fractions[0]
    assert all(isinstance(m, str) and m for _, m in seen)


def test_sample_is_post_processing_of_the_model(pima):
    model = fit_mcgen_dp(pima, groups_params(), rng=np.random.default_rng(0),
                         accountant=PrivacyAccountant(epsilon_to_nano(1.0)))
    enc1, lab1 = sample_mcgen_dp(model, rng=np.random.default_rng(1))
    enc2, lab2 = sample_mcgen_dp(model, rng=np.random.default_rng(2))
    assert enc1.shape == enc2.shape and (lab1 == lab2).all()
    assert not np.array_equal(enc1, enc2)


# ----------------------------------------------------------------------------- faithful, floor

def test_faithful_is_labelled_not_dp_and_keeps_exact_counts(pima):
    result, _ = run(pima, mode=FAITHFUL, k=50)
    assert result.mode == FAITHFUL and result.params["mode"] == FAITHFUL
    assert result.not_dp and any("C1" in s for s in result.not_dp)
    assert result.noisy_class_counts == {"0": 500, "1": 268}
    assert len(result.synthetic) == 768
    assert {c["mechanism"] for c in result.mechanism_calls} == {"laplace"}
    assert result.audience == EVERYONE  # public demo data
    private = continuous_table(public_demo=False)
    assert run(private, mode=FAITHFUL, k=25)[0].audience == OWNER_ONLY
    strict, _ = run(private)
    assert strict.not_dp == [] and strict.audience == EVERYONE and strict.mode == STRICT


def test_faithful_models_every_feature_and_follows_mdav_sizes(pima):
    result, _ = run(pima, mode=FAITHFUL, k=100)
    assert sorted(f for g in result.feature_groups for f in g) == \
        sorted(pima.schema.feature_names)
    for sizes in result.diagnostics.true_cells:
        assert sizes["0"] == [100] * 4 + [100] and sizes["1"] == [100, 168]


def test_floor_keeps_class_conditional_marginals_but_no_correlation():
    table = continuous_table(20_000, seed=1)
    result, _ = run(table, algorithm=FLOOR, epsilon=5.0)
    synth = result.synthetic
    real = table.to_frame()
    assert abs(np.corrcoef(real["x0"], real["x1"])[0, 1]) > 0.8
    assert abs(np.corrcoef(synth["x0"], synth["x1"])[0, 1]) < 0.1
    for y in (0, 1):
        assert abs(synth.loc[synth.y == y, "x2"].mean() - real.loc[real.y == y, "x2"].mean()) \
            < 0.15
    dp, _ = run(table, epsilon=5.0, grouping=THRESHOLD)
    assert dp.feature_groups == [["x0", "x1"], ["x2", "x3"]]
    assert abs(np.corrcoef(dp.synthetic["x0"], dp.synthetic["x1"])[0, 1]) > 0.6


# ----------------------------------------------------------------------------- checks, results

def test_check_runnable_refuses_bad_groups_and_impossible_scales(pima):
    with pytest.raises(ParameterError, match="unknown feature"):
        check_runnable(pima, groups_params(feature_groups=[["bogus"]]))
    with pytest.raises(ParameterError, match="missing: .*age"):
        check_runnable(pima, groups_params(feature_groups=[list(pima.schema.feature_names[:-1])]))
    with pytest.raises(ParameterError, match="fixed_point_bits"):
        check_runnable(pima, groups_params(epsilon=1e-5))
    check_runnable(pima, groups_params(epsilon=1e-5, fixed_point_bits=8))


def test_result_round_trips_through_json_and_parquet(tmp_path, mixed):
    result, _ = run(mixed, epsilon=1.0)
    text = result.to_json()
    data = json.loads(text)
    assert "diagnostics" not in data and "true" not in json.dumps(data["groups"])
    back = SynthesisResult.from_json(text)
    pd.testing.assert_frame_equal(back.synthetic, result.synthetic, check_dtype=False)
    assert back.to_dict() == result.to_dict()
    owner = SynthesisResult.from_json(result.to_json(include_diagnostics=True))
    assert owner.diagnostics.true_class_counts == result.diagnostics.true_class_counts
    assert owner.diagnostics.clipped == result.diagnostics.clipped
    path = tmp_path / "synthetic.parquet"
    result.write_parquet(path)
    again = SynthesisResult.read_parquet(path)
    pd.testing.assert_frame_equal(again.synthetic, result.synthetic, check_dtype=False)
    assert again.mechanism_calls == result.mechanism_calls
    assert again.diagnostics.true_rows == 0  # not written unless asked for
    assert pd.read_parquet(path).shape == result.synthetic.shape


def test_clip_counts_reach_the_owner_diagnostics_only(tmp_path):
    schema = schema_from_dict({"name": "t", "label": {"name": "y", "classes": [0, 1]},
                               "features": [{"name": "a", "type": "numeric", "bounds": [0, 1]}]})
    path = tmp_path / "t.csv"
    path.write_text("y,a\n0,0.5\n1,7\n0,-2\n1,0.25\n", encoding="utf-8")
    table = load_table(path, schema)
    with pytest.raises(ParameterError, match="only one possible grouping"):
        check_runnable(table, groups_params())
    result, _ = run(table, feature_groups=[["a"]])
    assert result.diagnostics.clipped == {"a": 2}
    assert "clipped" not in result.to_json()


# ----------------------------------------------------------------------------- Diabetes

DIABETES_FEATURES = "pregnant glucose pressure triceps insulin mass pedigree age".split()


@pytest.fixture(scope="module")
def diabetes(shared_data_dir):
    path = shared_data_dir / "mcgen_diabetes" / "diabetes_scale.csv"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    schema = schema_from_dict({
        "name": "diabetes_scale", "label": {"name": "label", "classes": [-1, 1]},
        "features": [{"name": n, "type": "numeric", "bounds": [-1, 1]}
                     for n in DIABETES_FEATURES]})
    return load_table(path, schema, label="diabetes_scale.csv")


def test_diabetes_strict_and_faithful(diabetes):
    assert diabetes.n_rows == 768 and diabetes.class_counts().tolist() == [268, 500]
    assert sum(diabetes.clipped.values()) == 0
    strict, _ = run(diabetes, epsilon=1.0)
    assert strict.spent_nano == epsilon_to_nano(1.0) and not strict.not_dp
    assert strict.synthetic[DIABETES_FEATURES].abs().max().max() <= 1.0
    faithful, _ = run(diabetes, mode=FAITHFUL, k=25, epsilon=1.0)
    assert len(faithful.synthetic) == 768 and faithful.not_dp
    # C7 is fixed: the age column (the reference code's copied feature) is redrawn.
    order = np.argsort(diabetes.labels, kind="stable")
    real_age = diabetes.to_frame()["age"].to_numpy()[order]
    assert np.mean(faithful.synthetic["age"].to_numpy() == real_age) < 0.01
    # Faithful groups come from raw correlations: pregnancies and age together, as the code.
    assert ["pregnant", "age"] in faithful.feature_groups


# ----------------------------------------------------------------------------- public choices

def test_grouping_and_histogram_bins_depend_only_on_released_counts(pima):
    """Two tables with the same labels but different feature values, the same seed: the
    noisy class counts are equal, and so are the correlation decision and every grid (they
    are functions of N̂_y and public parameters only); the bins follow the stated rule."""
    frame = pima.to_frame()
    features = list(pima.schema.feature_names)
    frame[features] = frame[features].to_numpy()[np.random.default_rng(3).permutation(
        len(frame))]                                                    # same labels
    other = table_from_frame(frame, pima.schema)
    assert (other.labels == pima.labels).all() and not np.array_equal(other.encoded(),
                                                                      pima.encoded())
    for params in (groups_params(epsilon=1.0), groups_params(epsilon=3.0, k=30),
                   groups_params(epsilon=1.0, max_correlation_noise=1e6)):
        models = [fit_mcgen_dp(t, params, rng=np.random.default_rng(11),
                               accountant=PrivacyAccountant(run_cost_nano(params)))
                  for t in (pima, other)]
        a, b = models
        assert (a.noisy_class_counts == b.noisy_class_counts).all()
        total = float(np.maximum(a.noisy_class_counts, 0).sum())
        skip = correlation_noise(params, pima.schema.n_features, total) \
            > params.max_correlation_noise
        assert a.correlations_released is b.correlations_released is (not skip)
        if skip:
            assert a.feature_distances is None and all(lay.p == 1 for lay in a.layouts)
        else:
            assert a.feature_distances is not None
        if a.correlations_released:  # groups come from noisy data: compare only the rule
            continue
        assert [[g.bins for g in gm] for gm in a.grids] == [[g.bins for g in gm] for gm in b.grids]
        for m in range(len(a.layouts)):
            e_m = sum(s.epsilon_nano for s in a.shares if s.phase == "groups" and s.index == m)
            for y, grid in enumerate(a.grids[m]):
                n_y = max(float(a.noisy_class_counts[y]), 0.0)
                assert grid.bins == (min(params.histogram_bins,
                                         max(2, int(n_y // (1e9 / e_m)))),)


def test_skipping_the_correlations_gives_their_budget_to_the_groups(pima):
    params = groups_params(epsilon=1.0)
    accountant = PrivacyAccountant(run_cost_nano(params))
    result = synthesize(pima, params, rng=np.random.default_rng(2), accountant=accountant)
    assert result.feature_distances is None                       # 768 rows at ε = 1: skipped
    assert not any("correlations" in c.label for c in accountant.calls)
    assert accountant.spent_nano == run_cost_nano(params)
    assert len(accountant.calls) == 1 + pima.schema.n_features      # N̂_y + one histogram each
    assert all(c.sensitivity == 1 for c in accountant.calls)
    released = synthesize(pima, groups_params(epsilon=1.0, max_correlation_noise=1e6),
                          rng=np.random.default_rng(2))
    assert released.feature_distances is not None


def test_categorical_levels_follow_the_cells_noisy_frequencies():
    """A categorical in a Gaussian group is drawn from its cell's level frequencies: at a
    large ε the synthetic frequencies match the real ones (an argmax of Gaussian draws over
    the one-hot columns would over-pick the commonest level)."""
    rng = np.random.default_rng(0)
    n = 20_000
    schema = schema_from_dict({"name": "lv", "label": {"name": "y", "classes": [0]},
                               "features": [{"name": "a", "type": "numeric", "bounds": [-1, 1]},
                                            {"name": "c", "type": "categorical",
                                             "levels": ["u", "v", "w"]}]})
    frame = pd.DataFrame({"y": 0, "a": rng.uniform(-1, 1, n),
                          "c": rng.choice(["u", "v", "w"], n, p=[0.5, 0.3, 0.2])})
    table = table_from_frame(frame, schema)
    result = synthesize(table, groups_params(epsilon=1e4, feature_groups=[["a", "c"]],
                                               cells=SINGLE), rng=np.random.default_rng(1))
    freq = result.synthetic["c"].astype(str).value_counts(normalize=True)
    for level, share in (("u", 0.5), ("v", 0.3), ("w", 0.2)):
        assert freq.get(level, 0.0) == pytest.approx(share, abs=0.02)
