"""dpcore.sequences.evaluate (NOT DP, owner/teaching): exact frequent sequences, true
supports, F-scores and relative errors, against plain-Python counts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.sequences.evaluate import (
    exact_frequent_sequences,
    f_score,
    median_relative_error,
    support_threshold,
    true_supports,
)
from tests.support import sequences_reference as ref

SCHEMA = SequenceSchema(name="s", alphabet=("a", "b", "c", "d"), l1=6,
                        files={"format": "lines", "records": "r.txt"})
RECORDS = st.lists(st.lists(st.integers(0, 3), max_size=7), min_size=1, max_size=20)


@pytest.mark.parametrize("theta, n, s", [(0.1, 100, 10), (0.1, 101, 11), (0.333, 3, 1),
                                         (0.5, 7, 4)])
def test_support_threshold_is_the_smallest_integer_at_or_above(theta, n, s):
    assert support_threshold(theta, n) == s
    assert s >= theta * n and s - 1 < theta * n


@settings(deadline=None, max_examples=40)
@given(RECORDS, st.integers(1, 4))
def test_exact_frequent_sequences_equal_the_reference(records, min_support):
    data = SequenceDataset.from_lists(SCHEMA, records)
    found = exact_frequent_sequences(data, min_support=min_support, max_length=3)
    assert found == ref.frequent_sequences(records, min_support, max_length=3)
    assert true_supports(data, list(found)) == found


def test_f_score_counts():
    truth = {(0,): 5, (1,): 4, (0, 1): 3}
    score = f_score([(0,), (0, 1), (2,)], truth)
    assert (score.released, score.true, score.correct) == (3, 3, 2)
    assert score.precision == pytest.approx(2 / 3) and score.recall == pytest.approx(2 / 3)
    assert score.f_score == pytest.approx(2 / 3)
    assert f_score([(0,), (0, 1)], truth, max_length=1).true == 2
    empty = f_score([], {})
    assert math.isnan(empty.precision) and math.isnan(empty.recall)


def test_median_relative_error():
    data = SequenceDataset.from_lists(SCHEMA, [[0, 1], [0], [0, 1, 1], [2]])
    noisy = {(0,): 3.3, (0, 1): 1.0, (3,): 5.0}      # true 3, 2, 0 (skipped)
    assert median_relative_error(noisy, data) == pytest.approx((0.1 + 0.5) / 2)
    assert math.isnan(median_relative_error({(3,): 1.0}, data))
    assert median_relative_error({(0,): 4.0}, supports={(0,): 2}) == pytest.approx(1.0)
