"""dpcore.data.sequences.dataset: records in CSR layout, checked against the declared alphabet."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.data.sequences.dataset import SequenceDataset, csr_from_lists
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.errors import DataError

SCHEMA = SequenceSchema(name="clicks", alphabet=("home", "news", "sport"), l1=5,
                        files={"format": "lines", "records": "records.txt"})
RECORDS = st.lists(st.lists(st.integers(0, 2), max_size=6), max_size=12)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(RECORDS)
def test_lists_round_trip_through_csr(records):
    indptr, items = csr_from_lists(records)
    assert indptr.dtype == np.int64 and items.dtype == np.int32 and indptr[0] == 0
    data = SequenceDataset.from_lists(SCHEMA, records)
    assert data.to_lists() == [list(r) for r in records]
    assert data.n_records == len(records)
    assert data.lengths.tolist() == [len(r) for r in records]


def test_names_codes_and_subsets():
    data = SequenceDataset.from_names(SCHEMA, [["home", "news"], [], ["sport", "home", "news"]])
    assert data.record(2).tolist() == [2, 0, 1]
    assert data.record_names(0) == ["home", "news"]
    sub = data.subset(np.array([2, 0]))
    assert sub.to_lists() == [[2, 0, 1], [0, 1]]
    assert data.subset(np.array([1])).to_lists() == [[]]
    assert [name for name, _ in data.content_arrays()] == ["indptr", "items"]


def test_an_unknown_item_name_is_named():
    with pytest.raises(DataError, match="item 'weather' is not in the declared alphabet"):
        SequenceDataset.from_names(SCHEMA, [["home"], ["weather"]])


@pytest.mark.parametrize("indptr, items, match", [
    ([1, 2], [0, 1], "malformed record layout"),
    ([0, 2, 1], [0, 1], "malformed record layout"),
    ([0, 2], [0, 3], r"item codes must lie in \[0, 3\)"),
])
def test_bad_layouts_are_refused(indptr, items, match):
    with pytest.raises(DataError, match=match):
        SequenceDataset(SCHEMA, np.asarray(indptr, np.int64), np.asarray(items, np.int32))
