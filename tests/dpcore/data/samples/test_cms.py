"""dpcore.data.samples.cms: the CMS-shaped sample, as DataFrames or built directly, holds
the same seeded data and its four planted rules."""

from __future__ import annotations

import numpy as np

from dpcore.data.samples.cms import (
    cms_like_planted_rules,
    generate_cms_like,
    generate_cms_like_dataset,
)
from dpcore.data.samples.planted import true_jaccard


def test_shapes_types_and_seed():
    schema, left, right, rules = generate_cms_like(800, n_bool=30, n_numeric=12, seed=5)
    assert left.shape == (800, 31) and right.shape == (800, 13)
    assert schema.public_demo and schema.id_column == "beneficiary_id"
    assert rules == cms_like_planted_rules()
    flags = left.drop(columns="beneficiary_id").to_numpy()
    assert set(np.unique(flags)) <= {0, 1}
    pay = right.drop(columns="beneficiary_id").to_numpy()
    assert (pay >= 0).all() and np.allclose(pay % 10, 0)
    assert generate_cms_like(800, n_bool=30, n_numeric=12, seed=5)[1].equals(left)


def test_the_dataset_form_holds_the_dataframe_data():
    schema, left, right, _ = generate_cms_like(600, n_bool=25, n_numeric=10, seed=9)
    data = generate_cms_like_dataset(600, n_bool=25, n_numeric=10, seed=9)
    assert data.n_rows == 600 and data.schema == schema
    names = [a.name for a in data.views[0].attributes]
    assert np.array_equal(data.views[0].values, left[names].to_numpy(dtype=float).T)
    rnames = [a.name for a in data.views[1].attributes]
    assert np.allclose(data.views[1].values, right[rnames].to_numpy(dtype=float).T,
                       equal_nan=True)


def test_planted_rules_hold_on_the_dataset():
    data = generate_cms_like_dataset(4000, n_bool=40, n_numeric=20, seed=20232)
    rules = cms_like_planted_rules()
    assert len(rules) == 4
    for rule in rules:
        lo, hi = rule.jaccard_range
        assert lo <= true_jaccard(rule, data) <= hi, rule.name
