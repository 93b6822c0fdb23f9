"""The Synthesis page: its figures and files (on results made by the core with a throwaway
accountant), its form helpers, and the page under AppTest with a temporary ledger."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from components.synthesis_charts import (
    association_heatmap,
    association_matrix,
    class_count_table,
    csv_bytes,
    group_order,
    histogram_figure,
    parquet_bytes,
    released_association,
)
from components.synthesis_form import format_groups, parse_groups
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.synthesis.miner import synthesize
from dpcore.synthesis.params import SynthesisParams, run_cost_nano
from dpcore.synthesis.results import PARQUET_METADATA_KEY, SynthesisResult
from dpcore.synthesis.schema import schema_from_dict
from dpcore.synthesis.table import load_synthesis_dataset

REPO_ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- core results

@pytest.fixture(scope="module")
def pima():
    return load_synthesis_dataset(REPO_ROOT / "sample_data" / "pima_like")


def _synthesize(table, **overrides) -> SynthesisResult:
    """A run on a throwaway accountant (tests only: the app charges through the ledger)."""
    params = SynthesisParams(**{"epsilon": 1.0, **overrides})
    return synthesize(table, params, rng=np.random.default_rng(5),
                      accountant=PrivacyAccountant(run_cost_nano(params)))


@pytest.fixture(scope="module")
def dp_groups_result(pima):
    return _synthesize(pima)


def _mixed_schema():
    return schema_from_dict({
        "name": "mixed", "label": {"name": "y", "classes": [0, 1]},
        "features": [{"name": "a", "type": "numeric", "bounds": [-5, 5]},
                     {"name": "b", "type": "numeric", "bounds": [-5, 5]},
                     {"name": "c", "type": "numeric", "bounds": [-5, 5]},
                     {"name": "colour", "type": "categorical",
                      "levels": ["red", "green", "blue"]}]})


# --------------------------------------------------------------------------- figures

def test_association_matrix_measures_what_the_grouping_measures():
    rng = np.random.default_rng(0)
    n = 4_000
    a = rng.uniform(-2, 2, n)
    colour = rng.integers(0, 3, n)
    frame = pd.DataFrame({"y": rng.integers(0, 2, n), "a": a, "b": -2 * a + 1,
                          "c": rng.uniform(-2, 2, n) + 0.0 * a,
                          "colour": np.array(["red", "green", "blue"])[colour]})
    frame["c"] = frame["c"] + np.array([-3.0, 0.0, 3.0])[colour] * 0.5
    m = association_matrix(frame, _mixed_schema())
    assert m.shape == (4, 4) and np.allclose(m, m.T) and np.allclose(np.diag(m), 1.0)
    assert m[0, 1] == pytest.approx(1.0, abs=1e-6)      # b = −2a + 1: |r| = 1
    assert m[0, 2] < 0.05                                 # independent
    assert m[2, 3] > 0.5                                  # c's mean moves with the colour
    assert m[0, 3] < 0.05
    assert ((0.0 <= m) & (m <= 1.0)).all()


def test_released_association_is_the_runs_dp_distances(dp_groups_result, pima):
    released = released_association(dp_groups_result)
    distances = np.asarray(dp_groups_result.feature_distances)
    p = pima.schema.n_features
    assert released.shape == (p, p)
    off = ~np.eye(p, dtype=bool)
    assert np.allclose(released[off], np.clip(1.0 - distances[off], 0, 1))
    given = _synthesize(pima, feature_groups=[list(pima.schema.feature_names[:4]),
                                              list(pima.schema.feature_names[4:])])
    assert given.feature_distances is None and released_association(given) is None


def test_the_heat_map_outlines_each_chosen_group(pima):
    schema = pima.schema
    groups = [["glucose", "insulin"], ["bmi", "skin_thickness", "age"]]
    order, spans = group_order(schema, groups)
    names = [schema.feature_names[i] for i in order]
    assert names[:5] == ["glucose", "insulin", "bmi", "skin_thickness", "age"]
    assert sorted(order) == list(range(schema.n_features))
    assert spans[:2] == [(0, 2), (2, 3)] and all(size == 1 for _, size in spans[2:])
    fig = association_heatmap(np.eye(schema.n_features), schema, groups=groups, title="t")
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == len(spans)
    assert (rects[1].x0, rects[1].x1) == (1.5, 4.5)
    assert list(fig.data[0].x) == names
    # faithful groups name encoded columns (sex=F): they map to their feature
    assert group_order(_mixed_schema(), [["colour=red", "colour=blue", "a"]])[0][:2] == [3, 0]


def test_histograms_overlay_the_real_table_only_when_given(dp_groups_result, pima):
    synthetic_only = histogram_figure("glucose", pima.schema, dp_groups_result.synthetic)
    assert len(synthetic_only.data) == 1 and synthetic_only.data[0].name == "synthetic"
    both = histogram_figure("glucose", pima.schema, dp_groups_result.synthetic,
                            pima.to_frame())
    assert [t.name for t in both.data] == ["synthetic", "real"]
    assert both.data[0].xbins.start == 0 and both.data[0].xbins.end == 250   # public bounds


def test_downloads_hold_the_synthetic_table_and_never_the_diagnostics(dp_groups_result):
    result = dp_groups_result
    assert result.diagnostics.true_rows == 768           # the run has owner diagnostics …
    back = pd.read_csv(io.BytesIO(csv_bytes(result)))
    assert list(back.columns) == result.columns
    assert len(back) == len(result.synthetic) == sum(result.noisy_class_counts.values())
    assert np.allclose(back.to_numpy(dtype=float), result.synthetic.to_numpy(dtype=float))
    table = pq.read_table(io.BytesIO(parquet_bytes(result)))
    assert table.num_rows == len(result.synthetic)
    meta = json.loads(table.schema.metadata[PARQUET_METADATA_KEY])
    assert meta["run_id"] == result.run_id and meta["epsilon_nano"] == result.epsilon_nano
    assert "diagnostics" not in meta                     # … the files do not


def test_class_counts_show_true_rows_only_when_given(dp_groups_result):
    noisy = class_count_table(dp_groups_result)
    assert list(noisy.columns) == ["class", "synthetic rows"]
    both = class_count_table(dp_groups_result, {"0": 500, "1": 268})
    assert list(both["true rows (not private)"]) == [500, 268]


# --------------------------------------------------------------------------- form helpers

def test_feature_groups_parse_and_name_what_is_wrong():
    names = ("a", "b", "c")
    assert parse_groups("", names) is None and parse_groups("  ", names) is None
    assert parse_groups("a, b; c", names) == [["a", "b"], ["c"]]
    assert format_groups([["a", "b"], ["c"]]) == "a, b; c"
    for text, words in [("a, x; b, c", "unknown feature(s) x"), ("a, b; b, c", "b named more"),
                        ("a, b", "missing: c"), ("a;; b, c", "empty group")]:
        with pytest.raises(ParameterError, match=re.escape(words)):
            parse_groups(text, names)
