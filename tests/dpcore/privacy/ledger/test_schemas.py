"""dpcore.privacy.ledger.schemas: schemas stored as JSON by kind, checked to load back."""

from __future__ import annotations

import json

import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.data.table.schema import Feature, TableSchema
from dpcore.errors import DataError
from dpcore.privacy.ledger.schemas import (
    schema_from_json,
    schema_kind,
    schema_to_json,
    stored_schema,
)

TWO_VIEW = Schema(
    name="clinic",
    attributes=(Attribute("DX", 0, "boolean"),
                Attribute("LAB", 1, "numeric", domain=(0.0, 10.0), unit="mg")),
    views=(ViewSpec("dx", "dx.csv"), ViewSpec("labs", "labs.csv")),
    id_column="id",
)
SEQ = SequenceSchema(name="clicks", alphabet=("a", "b"), l1=4,
                     files={"format": "lines", "records": "records.txt"})
TABLE = TableSchema(name="pima", label="y", classes=(0, 1),
                    features=(Feature("age", "numeric", bounds=(18.0, 90.0)),), file="p.csv")


@pytest.mark.parametrize("schema, kind", [(TWO_VIEW, "two_view"), (SEQ, "sequences"),
                                          (TABLE, "table")])
def test_each_kind_round_trips(schema, kind):
    assert schema_kind(schema) == kind
    stored_kind, text = stored_schema(schema)
    assert stored_kind == kind and text == schema_to_json(schema)
    assert json.loads(text) and schema_from_json(text, "d", kind) == schema


def test_the_json_is_canonical():
    text = schema_to_json(TWO_VIEW)
    assert text == json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)


def test_an_unknown_schema_type_names_the_accepted_ones():
    with pytest.raises(DataError, match="schema must be one of .*got dict"):
        schema_kind({"name": "x"})


def test_an_unreadable_stored_schema_names_the_dataset():
    with pytest.raises(DataError, match="stored schema of dataset 'clicks' cannot be read"):
        schema_from_json('{"name": "x"}', "clicks", "sequences")
    with pytest.raises(json.JSONDecodeError):
        schema_from_json("{not json", "clicks", "sequences")
