"""dpcore.redescriptions.serenade.literals: which code ranges are candidates, and that a
literal's rows are exactly the rows its readable test selects."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.redescriptions.coding import code_dataset_strict
from dpcore.redescriptions.evaluate import test_mask as readable_test_mask
from dpcore.redescriptions.serenade.literals import literal_mask, literal_set
from dpcore.redescriptions.warmup import tiny_dataset


@pytest.fixture(scope="module")
def data():
    data = tiny_dataset(n_rows=150, seed=2)
    data.views[0].values[2, :4] = np.nan
    return data


def test_candidates_per_attribute_type(data):
    coded = code_dataset_strict(data)[0]          # b1 (Boolean), c1 (3 categories), x1
    lits = literal_set(coded)
    per_attr = np.bincount(lits.attr, minlength=3)
    bins = int(coded.n_codes[2])                  # B thresholds → B + 1 bins
    assert per_attr.tolist() == [1, 3, bins * (bins + 1) // 2 - 1]
    assert lits.size == per_attr.sum()
    assert np.all(lits.lo <= lits.hi)
    assert lits.start.tolist()[:3] == [0, 1, 4]   # literals are grouped by attribute
    whole = [(lo, hi) for a, lo, hi in zip(lits.attr, lits.lo, lits.hi, strict=True)
             if a == 2 and lo == 0 and hi == bins - 1]
    assert whole == []                            # the whole range is no literal


@pytest.mark.parametrize("view", [0, 1])
def test_each_literal_selects_the_rows_of_its_readable_test(data, view):
    coded = code_dataset_strict(data)[view]
    lits = literal_set(coded)
    for k in range(lits.size):
        mask = literal_mask(coded, lits, k)
        assert mask.dtype == bool and mask.shape == (data.n_rows,)
        assert np.array_equal(mask, readable_test_mask(data, view, lits.test(k))), k


def test_missing_values_are_in_no_literal(data):
    coded = code_dataset_strict(data)[0]
    lits = literal_set(coded)
    for k in np.flatnonzero(lits.attr == 2):
        assert not literal_mask(coded, lits, int(k))[:4].any()
