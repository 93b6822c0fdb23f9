"""The suggested pruning threshold: released values only, and a calibrated error model."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

from dpcore.redescriptions.intervals import exceedance_probabilities
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import TreeParams
from dpcore.redescriptions.pruning import (
    cell_noise_variance,
    expected_jaccard_errors,
    jaccard_error_sd,
    suggest_threshold,
)
from dpcore.redescriptions.results import RunResult

SEED = int(os.environ.get("DPRM_TEST_SEED", "5"))


def _noisy_jaccards(table, rows, cols, noise, marginals=None):
    """Unclipped noisy J of the query (rows, cols) for a batch of noise draws."""
    noisy = table[None] + noise
    e = noisy[:, rows][:, :, cols].sum(axis=(1, 2))
    if marginals is None:
        ql = noisy[:, rows].sum(axis=(1, 2))
        qr = noisy[:, :, cols].sum(axis=(1, 2))
    else:
        left, right = marginals
        ql, qr = left[:, rows].sum(axis=1), right[:, cols].sum(axis=1)
    return e / (ql + qr - e)


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
@pytest.mark.parametrize("epsilon", [0.05, 0.3])
def test_error_model_matches_simulation(kind, epsilon):
    rng = np.random.default_rng(SEED)
    table = rng.integers(20, 400, size=(4, 5)).astype(float)
    rows, cols = [0, 2], [1, 3, 4]
    draws = 20_000
    if kind == "discrete":
        p = 1 - np.exp(-epsilon)
        noise = (rng.geometric(p, (draws, 4, 5)) - rng.geometric(p, (draws, 4, 5))).astype(float)
    else:
        noise = rng.laplace(0, 1 / epsilon, (draws, 4, 5))
    simulated = _noisy_jaccards(table, rows, cols, noise).std()
    e = table[np.ix_(rows, cols)].sum()
    union = table[rows].sum() + table[:, cols].sum() - e
    predicted = jaccard_error_sd(e, union, 2, 3, 4, 5, cell_noise_variance(epsilon, 1, kind))
    assert predicted == pytest.approx(simulated, rel=0.1), (SEED, predicted, simulated)


def test_faithful_error_model_matches_simulation():
    rng = np.random.default_rng(SEED)
    table = rng.integers(20, 400, size=(3, 3)).astype(float)
    rows, cols, eps, draws = [1], [0, 2], 0.1, 20_000
    b = 2 / eps  # the paper's Laplace(2/ε) on the table and on each marginal
    noise = rng.laplace(0, b, (draws, 3, 3))
    left = table.sum(axis=1)[None] + rng.laplace(0, b, (draws, 3))
    right = table.sum(axis=0)[None] + rng.laplace(0, b, (draws, 3))
    simulated = _noisy_jaccards(table, rows, cols, noise, (left, right)).std()
    e = table[np.ix_(rows, cols)].sum()
    union = table[rows].sum() + table[:, cols].sum() - e
    v = cell_noise_variance(eps / 2, 1, "continuous")
    predicted = jaccard_error_sd(e, union, 1, 2, 3, 3, v, v)
    assert predicted == pytest.approx(simulated, rel=0.1), (SEED, predicted, simulated)


@pytest.fixture(scope="module")
def runs(clinic_dataset):
    out = {}
    for eps in (1.0, 0.1):
        params = TreeParams(algorithm="altexpm", epsilon=eps)
        out[eps] = mine(clinic_dataset, params, rng=np.random.default_rng(SEED), seed=SEED)
    return out


def test_uses_the_release_only(runs, monkeypatch):
    assert list(inspect.signature(suggest_threshold).parameters) == ["results", "tolerance",
                                                                      "rate"]

    def no_raw_data(*args, **kwargs):
        raise AssertionError("the suggested threshold must not read raw data")

    monkeypatch.setattr("dpcore.redescriptions.evaluate.evaluate", no_raw_data)
    monkeypatch.setattr("dpcore.data.loading.load_dataset", no_raw_data)
    result = runs[1.0]
    replayed = RunResult.from_json(result.to_json())  # what the app reads from the ledger
    assert suggest_threshold(replayed) == suggest_threshold(result)


def test_threshold_behaves_like_a_noise_threshold(runs):
    strong = runs[1.0]
    t_strong = suggest_threshold(strong)
    assert suggest_threshold(strong, 0.05) >= t_strong >= suggest_threshold(strong, 0.3)
    assert suggest_threshold(strong, rate=0.05) >= t_strong >= suggest_threshold(strong,
                                                                                rate=0.3)
    # what it keeps keeps the promise by the release's own (selection-aware) estimate
    chances = exceedance_probabilities(strong, 0.1)
    kept = [chances[r.id] for r in strong.redescriptions if r.support_both >= t_strong]
    assert not kept or np.mean(kept) <= 0.1
    # the unselected error model still falls with the support
    errors = expected_jaccard_errors(strong)
    supports = np.array([r.support_both for r in strong.redescriptions])
    errs = np.array([errors[r.id] for r in strong.redescriptions])
    assert all(e > 0 for e in errs)
    assert np.corrcoef(np.log(supports + 1), np.log(errs))[0, 1] < -0.5


def test_empty_and_bad_input():
    assert suggest_threshold([]) == 0.0
    with pytest.raises(ValueError):
        suggest_threshold([], tolerance=0)
    with pytest.raises(ValueError, match="rate"):
        suggest_threshold([], rate=1.5)
