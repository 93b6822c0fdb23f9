"""dpcore.data.samples.planted: rule masks, Jaccards and the truncated sampler."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.data.samples.planted import (
    PlantedRule,
    jaccard,
    rule_masks,
    true_jaccard,
    truncated_draws,
)

LEFT = {"A": [1, 1, 0, 0, np.nan], "B": [1, 0, 1, 0, 1]}
RIGHT = {"X": [5.0, 1.0, 7.0, 2.0, np.nan]}


def _rule(op, attrs=("A", "B"), right_op=">"):
    return PlantedRule("R", attrs, op, "X", right_op, 3.0, (0.0, 1.0))


@pytest.mark.parametrize("op, expected", [("and", [1, 0, 0, 0, 0]), ("or", [1, 1, 1, 0, 1])])
def test_left_masks_and_or(op, expected):
    left, right = rule_masks(_rule(op), LEFT, RIGHT)
    assert left.tolist() == [bool(v) for v in expected]
    assert right.tolist() == [True, False, True, False, False]  # NaN is never in a support


def test_right_at_most_and_texts():
    rule = _rule("single", ("A",), "<=")
    _, right = rule_masks(rule, LEFT, RIGHT)
    assert right.tolist() == [False, True, False, True, False]
    assert rule.text == "A  ⇔  X ≤ 3" and _rule("or").left_text == "A ∨ B"
    assert _rule("and").right_text == "X > 3"


def test_true_jaccard_of_a_rule():
    # and: left {0}, right {0, 2}: 1 / 2
    assert true_jaccard(_rule("and"), LEFT, RIGHT) == 0.5


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=50))
def test_jaccard_is_symmetric_and_in_unit_interval(pairs):
    a = np.array([p[0] for p in pairs], dtype=bool)
    b = np.array([p[1] for p in pairs], dtype=bool)
    j = jaccard(a, b)
    assert 0.0 <= j <= 1.0 and j == jaccard(b, a)
    assert jaccard(a, a) == (1.0 if a.any() else 0.0)


@pytest.mark.parametrize("log", [False, True])
def test_truncated_draws_stay_inside_and_are_seeded(log):
    draws = truncated_draws(np.random.default_rng(1), 2000, 50.0, 0.8 if log else 30.0,
                            10.0, 90.0, log)
    assert draws.shape == (2000,) and draws.min() >= 10.0 and draws.max() <= 90.0
    again = truncated_draws(np.random.default_rng(1), 2000, 50.0, 0.8 if log else 30.0,
                            10.0, 90.0, log)
    assert np.array_equal(draws, again)
    assert truncated_draws(np.random.default_rng(1), 0, 1.0, 1.0, 0.0, 2.0, False).size == 0
