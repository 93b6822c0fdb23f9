"""dpcore.data.table.schema: the public schema of a labelled table — encoded column layout,
validation with clear messages, JSON round trip."""

from __future__ import annotations

import copy

import pytest

from dpcore.data.table.schema import (
    load_table_schema,
    save_table_schema,
    schema_from_dict,
    schema_to_dict,
    value_text,
)
from dpcore.errors import DataError
from dpcore.synthesis.samples import pima_like_schema

GOOD = schema_to_dict(pima_like_schema())


def test_round_trip_through_dict_and_file(tmp_path):
    schema = pima_like_schema()
    assert schema_from_dict(GOOD) == schema
    save_table_schema(schema, tmp_path / "synthesis_schema.json")
    assert load_table_schema(tmp_path / "synthesis_schema.json") == schema
    assert load_table_schema(tmp_path) == schema             # a folder reads its schema file


def test_encoded_layout():
    d = copy.deepcopy(GOOD)
    d["features"].append({"name": "smoker", "type": "categorical", "levels": ["no", "yes", "ex"]})
    schema = schema_from_dict(d)
    n_num = len(GOOD["features"])
    assert schema.width == n_num + 3 and schema.n_features == n_num + 1
    assert list(schema.columns_of(n_num)) == [n_num, n_num + 1, n_num + 2]
    assert schema.numeric_columns().tolist() == [True] * n_num + [False] * 3
    assert schema.feature_index("smoker") == n_num
    with pytest.raises(DataError, match="unknown feature 'nope'"):
        schema.feature_index("nope")


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(kind="table"), "'kind' must be"),
    (lambda d: d.update(name=""), "non-empty 'name'"),
    (lambda d: d.update(features=[]), "non-empty list of 'features'"),
    (lambda d: d["features"].append(dict(d["features"][0])), "declared twice"),
    (lambda d: d["features"][0].update(bounds=[5, 1]), "needs public 'bounds'"),
    (lambda d: d["features"][0].update(type="text"), "'type' must be 'numeric' or"),
    (lambda d: d["label"].update(classes=[]), "at least one declared class"),
    (lambda d: d["label"].update(classes=[0, 0]), "declares a class twice"),
])
def test_bad_schemas_are_refused_with_a_clear_message(change, match):
    bad = copy.deepcopy(GOOD)
    change(bad)
    with pytest.raises(DataError, match=match):
        schema_from_dict(bad, file="synthesis_schema.json")


@pytest.mark.parametrize("value, text", [(1, "1"), (1.0, "1"), ("1", "1"), ("yes", "yes"),
                                         (2.5, "2.5")])
def test_value_text(value, text):
    assert value_text(value) == text


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match="schema file not found"):
        load_table_schema(tmp_path / "absent.json")
