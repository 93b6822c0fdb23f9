"""dpcore.redescriptions.pruning (0 ε, post-processing): prune by noisy support, read a
chart selection once, and the noise variances behind the suggested threshold."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.redescriptions.pruning import (
    cell_noise_variance,
    prune,
    selection_signature,
    threshold_from_selection,
)


def _reds(*supports):
    return [SimpleNamespace(id=i, support_both=s) for i, s in enumerate(supports)]


def test_prune_keeps_at_or_above_the_threshold_in_order():
    reds = _reds(5, 1, 9, 3, 5)
    kept, pruned = prune(reds, 5)
    assert [r.id for r in kept] == [0, 2, 4] and [r.id for r in pruned] == [1, 3]
    kept, pruned = prune([("a", 2.0), ("b", 0.5)], 1.0, support=lambda t: t[1])
    assert kept == [("a", 2.0)] and pruned == [("b", 0.5)]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "x", None])
def test_prune_refuses_a_threshold_that_is_not_finite(bad):
    with pytest.raises(ValueError, match="finite number"):
        prune(_reds(1), bad)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.lists(st.floats(-100, 100), max_size=30), st.floats(-100, 100))
def test_prune_partitions(supports, threshold):
    reds = _reds(*supports)
    kept, pruned = prune(reds, threshold)
    assert sorted(r.id for r in kept + pruned) == list(range(len(reds)))
    assert all(r.support_both >= threshold for r in kept)
    assert all(r.support_both < threshold for r in pruned)


def test_threshold_from_a_box_points_or_nothing():
    supports = {0: 12.0, 1: 30.0, 2: 7.5}
    box = {"selection": {"box": [{"x": [4.0, 20.0], "y": [0, 1]}], "points": []}}
    assert threshold_from_selection(box, supports, 99.0) == 4.0
    clicked = {"points": [{"customdata": [1], "x": 30.0}, {"customdata": [2], "x": 7.5}]}
    assert threshold_from_selection(clicked, supports, 99.0) == 7.5
    assert threshold_from_selection(None, supports, 99.0) == 99.0
    assert threshold_from_selection({"points": [], "box": []}, supports, 3.0) == 3.0
    left_of_zero = {"box": [{"x": [-5.0, 3.0]}]}
    assert threshold_from_selection(left_of_zero, supports, 9.0) == 0.0


def test_selection_signature_is_stable_and_none_when_empty():
    a = {"selection": {"points": [{"customdata": [1], "x": 3.0, "y": 0.5}]}}
    b = {"points": [{"customdata": [1], "x": 3.0, "y": 0.5}]}
    assert selection_signature(a) == selection_signature(b) is not None
    assert selection_signature(None) is None
    assert selection_signature({"points": [], "box": []}) is None
    assert selection_signature({"points": [{"customdata": [2], "x": 3.0}]}) != \
        selection_signature(b)


def test_noise_variances():
    assert cell_noise_variance(0.5, 1.0, "continuous") == pytest.approx(8.0)
    alpha = math.exp(-0.5)
    ks = np.arange(-400, 401)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ks)
    assert cell_noise_variance(0.5, 1.0, "discrete") == pytest.approx(float((pmf * ks**2).sum()))
