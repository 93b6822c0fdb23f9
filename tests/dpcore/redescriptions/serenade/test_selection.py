"""The public bound on Serenade's draws (dpcore/redescriptions/serenade/selection.py): Δf's
lower bound holds for every row count, the literal counts are the miner's, the bound on
landing among the best candidates is never below the mechanism's real probability, and the
statement names the clinic sample's initial draws as close to random at ε = 1."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpcore.data.loading import load_dataset
from dpcore.redescriptions.mining import strict_coding
from dpcore.redescriptions.params import family_type
from dpcore.redescriptions.serenade.literals import literal_set
from dpcore.redescriptions.serenade.quality import quality_sensitivity
from dpcore.redescriptions.serenade.selection import (
    DrawStrength,
    literal_counts,
    min_quality_sensitivity,
    serenade_selection,
)
from dpcore.registry import FAITHFUL, SERENADE_CS, SERENADE_ES

CLINIC = Path(__file__).resolve().parents[4] / "sample_data" / "clinic"


@pytest.fixture(scope="module")
def clinic():
    return load_dataset(CLINIC)


@pytest.mark.parametrize("steepness", [0.005, 0.02, 0.1, 0.5])
def test_the_sensitivity_bound_holds_for_every_row_count_and_is_tight(steepness):
    bound = min_quality_sensitivity(steepness)
    rows = np.unique(np.logspace(0, 5, 120).astype(int))
    exact = np.array([quality_sensitivity(int(n), steepness) for n in rows])
    assert (exact >= bound * (1 - 1e-12)).all(), rows[exact < bound][:5]
    assert exact.min() <= bound * 1.01           # tight: some row count comes within 1 %


def test_literal_counts_from_the_schema_are_the_miners(clinic):
    coded = strict_coding(clinic)
    assert literal_counts(clinic.schema) == tuple(literal_set(c).size for c in coded)


@pytest.mark.parametrize("seed", range(5))
def test_the_top_share_bound_covers_the_mechanisms_real_probability(seed):
    rng = np.random.default_rng(seed)
    candidates = int(rng.integers(200, 5000))
    draw = DrawStrength("initial pair", 0.01, candidates, float(rng.uniform(0.1, 8)))
    # the worst case for the bound: the best 1 % at f = 1, everything else at f = 0
    g = max(1, math.floor(0.01 * candidates))
    worst = np.zeros(candidates)
    worst[:g] = 1.0
    for f in (worst, rng.uniform(0, 1, candidates), rng.beta(0.3, 3, candidates)):
        w = np.exp(draw.max_log_odds * (f - f.max()))
        p = w / w.sum()
        best = np.argsort(-f, kind="stable")[:g]
        assert p[best].sum() <= draw.top_share_bound() + 1e-12
    w = np.exp(draw.max_log_odds * worst)
    assert math.isclose((w[:g] / w.sum()).sum(), draw.top_share_bound(), rel_tol=1e-9)


def test_clinic_at_epsilon_one_is_named_close_to_random_not_at_ten(clinic):
    es = family_type(SERENADE_ES)(algorithm=SERENADE_ES, epsilon=1.0).validate()
    sel = serenade_selection(clinic.schema, es)
    left, right = literal_counts(clinic.schema)
    assert sel.initial.candidates == left * right == 644_000
    # ε_init = 0.45 split over I = 20 draws; the miner's own factor is never above the bound
    assert math.isclose(sel.initial.epsilon, 0.45 / 20)
    assert 0.45 / 20 / (2 * quality_sensitivity(5000, 0.02)) <= sel.initial.max_log_odds
    assert sel.near_random and sel.initial.top_share_bound() < 0.09
    text = sel.warning(1.0, "SerenadeES")
    assert "644,000 literal pairs" in text and "at most 8.7%" in text
    assert sel.extension.candidates == 20 * (2 * (left + right) + 1)   # ES: every red's
    cs = family_type(SERENADE_CS)(algorithm=SERENADE_CS, epsilon=1.0).validate()
    assert serenade_selection(clinic.schema, cs).extension.candidates == 2 * (left + right) + 1
    ten = family_type(SERENADE_ES)(algorithm=SERENADE_ES, epsilon=10.0).validate()
    assert not serenade_selection(clinic.schema, ten).near_random
    assert serenade_selection(clinic.schema, ten).warning(10.0, "SerenadeES") == ""


def test_faithful_mode_gets_no_statement(clinic):
    p = family_type(SERENADE_ES)(algorithm=SERENADE_ES, epsilon=1.0, mode=FAITHFUL).validate()
    assert serenade_selection(clinic.schema, p) is None
