"""Accuracy before spending for synthesis (dpcore/synthesis/accuracy.py): the half-widths
stated from the parameters alone are what runs on the shipped sample deliver — about 90 %
of the released class counts and floor histogram counts lie within them of the truth —
and equal the widths of the intervals the run then shows."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from dpcore.data.table.table import load_synthesis_dataset
from dpcore.experiments.synthesis import generated_table
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.count_intervals import COVERAGE, noise_halfwidth
from dpcore.registry import FAITHFUL, FLOOR, MCGEN
from dpcore.synthesis.accuracy import accuracy_text, expected_accuracy
from dpcore.synthesis.floor import feature_bins, noisy_marginals
from dpcore.synthesis.params import (
    CORRELATION_GROUPS,
    GROUPS,
    HISTOGRAM,
    SynthesisParams,
    marginal_codes,
    run_cost_nano,
    tree_shares,
)
from dpcore.synthesis.tree import feature_codes, fit_tree

REPO = Path(__file__).resolve().parents[3]
SEED = int(os.environ.get("DPRM_TEST_SEED", 20231126))


@pytest.fixture(scope="module")
def pima():
    return load_synthesis_dataset(REPO / "sample_data" / "pima_like")


def test_the_statement_needs_only_parameters_and_says_what_it_covers(pima):
    floor = expected_accuracy(SynthesisParams(algorithm=FLOOR, epsilon=1.0), 8)
    assert floor["class_count"] > 0 and floor["marginal"] > 0 and floor["coverage"] == 0.9
    # a larger ε, a smaller error; more features share the marginals' ε: a larger one
    assert expected_accuracy(SynthesisParams(algorithm=FLOOR, epsilon=4.0), 8)["marginal"] \
        < floor["marginal"] < expected_accuracy(SynthesisParams(algorithm=FLOOR, epsilon=1.0),
                                                16)["marginal"]
    groups = SynthesisParams(algorithm=MCGEN, epsilon=1.0, structure=CORRELATION_GROUPS)
    mcgen = expected_accuracy(groups, 8)
    assert mcgen["marginal"] is None and mcgen["class_count"] == floor["class_count"]
    assert "not stated" in accuracy_text(groups, pima.schema)
    # the tree (default): its marginals get TREE_MARGINAL_SHARE·ε_G/p (0.7·0.55/p at the
    # default shares), less than the floor's (ε − ε_Y)/p
    tree = expected_accuracy(SynthesisParams(algorithm=MCGEN, epsilon=1.0), 8)
    assert tree["marginal"] > floor["marginal"]
    assert "pair tables" in accuracy_text(SynthesisParams(algorithm=MCGEN, epsilon=1.0),
                                          pima.schema)
    assert expected_accuracy(SynthesisParams(algorithm=MCGEN, mode=FAITHFUL), 8) is None


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_runs_on_the_shipped_sample_deliver_the_stated_accuracy(pima, epsilon):
    params = SynthesisParams(algorithm=FLOOR, epsilon=epsilon)
    stated = expected_accuracy(params, pima.schema.n_features)
    truth_y = pima.class_counts()
    truths = []
    for j in range(pima.schema.n_features):
        bins, n_bins = feature_bins(pima, j, params.marginal_bins)
        truths.append(np.bincount(pima.labels.astype(np.int64) * n_bins + bins,
                                  minlength=pima.schema.n_classes * n_bins)
                      .reshape(pima.schema.n_classes, n_bins))
    inside_y, inside_f, n_y, n_f = 0, 0, 0, 0
    for r in range(30):
        rng = np.random.default_rng([SEED, r, int(epsilon * 10)])
        n_hat, hists = noisy_marginals(pima, params, rng=rng,
                                       accountant=PrivacyAccountant(run_cost_nano(params)))
        inside_y += int(np.sum(np.abs(n_hat - truth_y) <= stated["class_count"]))
        n_y += truth_y.size
        for hist, truth in zip(hists, truths):
            inside_f += int(np.sum(np.abs(hist - truth) <= stated["marginal"]))
            n_f += truth.size
    # exact quantiles: at least 90 % and, the law being fine-grained at these scales, not
    # much more (a loose statement would pass the first check only); ≥ 7,000 counts
    share_f = inside_f / n_f
    assert 0.885 <= share_f <= 0.93, (epsilon, share_f, SEED)
    share_y = inside_y / n_y
    assert 0.75 <= share_y, (epsilon, share_y, SEED)      # only 60 class counts: loose


def test_tree_marginals_deliver_the_stated_accuracy(pima):
    params = SynthesisParams(algorithm=MCGEN, epsilon=2.0)
    stated = expected_accuracy(params, pima.schema.n_features)["marginal"]
    codes, cards = feature_codes(pima, params.histogram_bins)
    labels = pima.labels.astype(np.int64)
    inside = total = 0
    for r in range(20):
        rng = np.random.default_rng([SEED, r, 7])
        model = fit_tree(pima, params, pima.class_counts(), 4, rng=rng,
                         accountant=PrivacyAccountant(run_cost_nano(params)))
        for j, hist in enumerate(model.marginals):
            truth = np.bincount(labels * cards[j] + codes[:, j],
                                minlength=2 * int(cards[j])).reshape(2, int(cards[j]))
            inside += int(np.sum(np.abs(hist - truth) <= stated))
            total += truth.size
    assert 0.885 <= inside / total <= 0.93, (inside / total, SEED)


def test_tree_statement_is_the_widest_marginal_when_features_have_different_codes():
    """The tree's marginals split their ε in proportion to each feature's codes, so the
    statement must be the half-width of the feature with the fewest codes (the smallest ε),
    and the launch text must use the schema's codes, not an even split."""
    table = generated_table("adult_like", 200)
    params = SynthesisParams(algorithm=MCGEN, epsilon=1.0)
    codes = marginal_codes(table.schema, params.histogram_bins)
    assert min(codes) == 2 and max(codes) == 41          # sex, native_country
    shares = tree_shares(params, table.schema.n_features, codes)
    marg = [s.epsilon_nano for s in shares if s.phase == GROUPS and s.part == HISTOGRAM]
    stated = expected_accuracy(params, table.schema.n_features, codes=codes)["marginal"]
    assert stated == noise_halfwidth(1e9 / min(marg), coverage=COVERAGE)
    even = expected_accuracy(params, table.schema.n_features)["marginal"]
    assert stated > even
    assert f"±{stated} rows" in accuracy_text(params, table.schema)
