"""dpcore.data.sequences.schema: the public schema of a sequence dataset — declared alphabet,
validation with clear messages, JSON round trip."""

from __future__ import annotations

import copy

import pytest

from dpcore.data.sequences.schema import (
    SEQUENCE_KIND,
    check_item_name,
    load_sequence_schema,
    save_sequence_schema,
    schema_from_dict,
    schema_to_dict,
)
from dpcore.errors import DataError

GOOD = {"kind": SEQUENCE_KIND, "name": "clicks", "alphabet": ["home", "news", "sport"],
        "l1": 6, "files": {"format": "lines", "records": "records.txt"}}


def test_round_trip_and_codes(tmp_path):
    schema = schema_from_dict(GOOD)
    assert schema.n_items == 3 and schema.item_codes() == {"home": 0, "news": 1, "sport": 2}
    assert schema_from_dict(schema_to_dict(schema)) == schema
    assert next(iter(schema_to_dict(schema))) == "kind"
    path = tmp_path / "sequence_schema.json"
    save_sequence_schema(schema, path)
    assert load_sequence_schema(path) == schema


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(alphabet=[]), "non-empty 'alphabet'"),
    (lambda d: d.update(alphabet=["a", "b", "a"]), "'a' is declared twice"),
    (lambda d: d.update(l1=0), "'l1' must be an integer"),
    (lambda d: d.update(name=""), "non-empty 'name'"),
    (lambda d: d["files"].update(format="xml"), "'files.format' must be"),
    (lambda d: d["files"].update(extra="x"), "unknown key"),
])
def test_bad_schemas_are_refused_with_a_clear_message(change, match):
    bad = copy.deepcopy(GOOD)
    change(bad)
    with pytest.raises(DataError, match=match):
        schema_from_dict(bad, file="sequence_schema.json")


@pytest.mark.parametrize("name", ["", "two words", "tab\there", 3])
def test_item_names_are_single_tokens(name):
    with pytest.raises(DataError):
        check_item_name(name, file="alphabet.txt", row=2)
    assert check_item_name("on-air") == "on-air"


def test_a_broken_file_is_named(tmp_path):
    path = tmp_path / "sequence_schema.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="sequence_schema.json"):
        load_sequence_schema(path)
