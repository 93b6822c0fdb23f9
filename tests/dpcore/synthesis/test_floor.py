"""dpcore.synthesis.floor: the class-conditional marginals floor spends exactly its plan,
releases integer histograms, and draws rows inside the public bounds."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.table.table import table_from_frame
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import FLOOR
from dpcore.synthesis.floor import feature_bins, noisy_marginals, run_floor
from dpcore.synthesis.params import SynthesisParams, run_cost_nano
from dpcore.synthesis.samples import generate_pima_like, pima_like_schema


@pytest.fixture(scope="module")
def table():
    return table_from_frame(generate_pima_like(400, seed=3), pima_like_schema())


def test_feature_bins_are_equal_width_over_the_public_bounds(table):
    bins, n = feature_bins(table, 0, 8)
    lo, hi = table.schema.features[0].bounds
    expected = np.clip(np.floor((table.numeric[:, 0] - lo) / (hi - lo) * 8), 0, 7)
    assert n == 8 and np.array_equal(bins, expected.astype(np.int64))


def test_marginals_are_integer_and_exactly_charged(table):
    params = SynthesisParams(algorithm=FLOOR, epsilon=1.0, marginal_bins=6)
    acc = PrivacyAccountant(run_cost_nano(params))
    counts, hists = noisy_marginals(table, params, rng=np.random.default_rng(0), accountant=acc)
    assert acc.spent_nano == run_cost_nano(params)
    assert counts.dtype == np.int64 and counts.shape == (table.schema.n_classes,)
    assert len(hists) == table.schema.n_features
    assert all(h.dtype == np.int64 and h.shape == (2, 6) for h in hists)


def test_run_floor_rows_follow_the_noisy_class_counts(table):
    params = SynthesisParams(algorithm=FLOOR, epsilon=5.0)
    acc = PrivacyAccountant(run_cost_nano(params))
    encoded, labels, noisy = run_floor(table, params, rng=np.random.default_rng(1),
                                       accountant=acc)
    assert np.bincount(labels, minlength=2).tolist() == np.maximum(noisy, 0).tolist()
    assert encoded.shape == (len(labels), table.schema.width)
    assert np.all(np.abs(encoded) <= 1.0)
    again = run_floor(table, params, rng=np.random.default_rng(1),
                      accountant=PrivacyAccountant(run_cost_nano(params)))
    assert np.array_equal(again[0], encoded)
