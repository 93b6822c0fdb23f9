"""dpcore.data.dataset: coded arrays are checked before they become a TwoViewDataset, and a
bad cell is named by column and 1-based row."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.dataset import TwoViewDataset, check_column_codes
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import DataError

SCHEMA = Schema(
    name="t",
    attributes=(Attribute("flag", 0, "boolean"),
                Attribute("colour", 0, "categorical", categories=("r", "g", "b")),
                Attribute("dose", 1, "numeric", domain=(0.0, 10.0))),
    views=(ViewSpec("l", "l.csv"), ViewSpec("r", "r.csv")),
    id_column="id",
)
LEFT = np.array([[0, 1, np.nan, 1], [0, 2, 1, np.nan]], dtype=float)
RIGHT = np.array([[0.0, 10.0, 5.5, np.nan]])


def test_from_arrays_keeps_views_rows_and_ids():
    data = TwoViewDataset.from_arrays(SCHEMA, LEFT, RIGHT, ids=["a", "b", "c", "d"])
    assert data.n_rows == 4 and list(data.ids) == ["a", "b", "c", "d"]
    assert [v.n_attributes for v in data.views] == [2, 1]
    assert data.views[0].values.flags.c_contiguous and data.views[0].values.dtype == np.float64
    assert [a.name for a in data.views[0].attributes] == ["flag", "colour"]
    assert list(TwoViewDataset.from_arrays(SCHEMA, LEFT, RIGHT).ids) == [0, 1, 2, 3]


@pytest.mark.parametrize("left, right, match", [
    (LEFT[:1], RIGHT, r"view 'l' array has shape \(1, 4\), expected \(2, n_rows\)"),
    (LEFT, RIGHT[:, :3], "different numbers of rows"),
    (LEFT[:, :0], RIGHT[:, :0], "no rows"),
])
def test_shape_errors_name_the_view(left, right, match):
    with pytest.raises(DataError, match=match):
        TwoViewDataset.from_arrays(SCHEMA, left, right)


@pytest.mark.parametrize("attr, column, match", [
    (SCHEMA.attributes[0], [0, 1, 0.5], "column 'flag', row 3: Boolean value .* is not 0/1"),
    (SCHEMA.attributes[1], [0, 3], r"column 'colour', row 2: category code .* not in 0..2"),
    (SCHEMA.attributes[1], [1.5], r"row 1: category code "),
    (SCHEMA.attributes[2], [1, 10.5],
     r"column 'dose', row 2: value .* outside the declared domain \[0.0, 10.0\]"),
    (SCHEMA.attributes[2], [1, np.inf], "row 2: infinite value"),
    (Attribute("z", 0, "text"), [1.0], "unknown attribute type 'text'"),
])
def test_bad_codes_name_column_and_row(attr, column, match):
    with pytest.raises(DataError, match=match):
        check_column_codes(attr, np.asarray(column, dtype=float), file="f.csv")


@pytest.mark.parametrize("attr, column, shown", [
    (SCHEMA.attributes[0], [0.5], "Boolean value 0.5 is"),
    (SCHEMA.attributes[1], [3.0], "category code 3.0 not"),
    (SCHEMA.attributes[2], [10.5], "value 10.5 outside"),
])
def test_the_bad_value_is_shown_as_a_plain_number(attr, column, shown):
    with pytest.raises(DataError) as info:
        check_column_codes(attr, np.asarray(column, dtype=float))
    assert shown in str(info.value)


def test_missing_values_are_always_allowed():
    for attr in SCHEMA.attributes:
        check_column_codes(attr, np.full(3, np.nan))
