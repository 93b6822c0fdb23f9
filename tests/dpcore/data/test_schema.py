"""dpcore.data.schema: the public two-view schema — validation with clear messages, the
dict/JSON round trip, and the split grids that depend on the schema alone."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dpcore.data.schema import (
    FALSE_TEXTS,
    TRUE_TEXTS,
    load_schema,
    save_schema,
    schema_from_dict,
    schema_from_json_text,
    schema_to_dict,
)
from dpcore.errors import DataError

GOOD = {
    "name": "demo",
    "id_column": "id",
    "views": {"left": {"name": "dx", "file": "dx.csv"}, "right": {"name": "labs",
                                                              "file": "labs.csv"}},
    "attributes": [
        {"name": "CHF", "view": "left", "type": "boolean"},
        {"name": "sex", "view": "left", "type": "categorical", "categories": ["F", "M"]},
        {"name": "BNP", "view": "right", "type": "numeric", "domain": [0, 330]},
    ],
    "grid_bins": 10,
}


def test_round_trip_through_dict_json_and_file(tmp_path):
    schema = schema_from_dict(GOOD)
    assert schema_from_dict(schema_to_dict(schema)) == schema
    import json
    assert schema_from_json_text(json.dumps(schema_to_dict(schema))) == schema
    save_schema(schema, tmp_path / "schema.json")
    assert load_schema(tmp_path / "schema.json") == schema


def test_split_grid_is_equal_width_inside_the_domain():
    schema = schema_from_dict(GOOD)
    bnp = schema.attributes[2]
    grid = schema.split_grid(bnp)
    assert np.allclose(grid, np.arange(1, 11) * 30.0)
    assert len(schema.target_edges(bnp)) == schema.target_bins - 1


@pytest.mark.parametrize("change, match", [
    (lambda d: d["attributes"][0].update(view="middle"), '"view" must be "left" or "right"'),
    (lambda d: d["attributes"][0].update(type="text"), "unknown attribute type 'text'"),
    (lambda d: d["attributes"][2].update(domain=[5, 1]), "needs lo < hi"),
    (lambda d: d["attributes"][2].pop("domain"), 'needs a public "domain"'),
    (lambda d: d["attributes"][1].update(categories=["F", "F"]), "duplicate category 'F'"),
    (lambda d: d["attributes"][1].update(categories=["F"]), "at least 2 categories"),
    (lambda d: d.update(colour="red"), "unknown key"),
    (lambda d: d.update(grid_bins=0), '"grid_bins" must be an integer'),
    (lambda d: d["views"].pop("right"), '"views" needs a "right" entry'),
    (lambda d: d.update(attributes=[]), 'non-empty list "attributes"'),
])
def test_bad_schemas_are_refused_with_a_clear_message(change, match):
    bad = copy.deepcopy(GOOD)
    change(bad)
    with pytest.raises(DataError, match=match):
        schema_from_dict(bad, file="schema.json")


def test_boolean_spellings_do_not_overlap():
    assert not TRUE_TEXTS & FALSE_TEXTS and "1" in TRUE_TEXTS and "no" in FALSE_TEXTS
