"""dpcore.data.samples.clinic: the clinic sample is seeded, public, and hides its six rules
with the Jaccards it promises."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.samples.clinic import AGE_GROUPS, clinic_planted_rules, generate_clinic
from dpcore.data.samples.planted import true_jaccard


def test_seeded_shape_and_public_schema():
    schema, left, right, rules = generate_clinic(n_rows=1500, seed=7)
    schema2, left2, right2, _ = generate_clinic(n_rows=1500, seed=7)
    pd.testing.assert_frame_equal(left, left2)
    pd.testing.assert_frame_equal(right, right2)
    assert schema == schema2 and schema.public_demo and rules == clinic_planted_rules()
    assert len(left) == len(right) == 1500
    assert (left["patient_id"].to_numpy() == right["patient_id"].to_numpy()).all()
    assert set(left["AGE_GROUP"]) <= set(AGE_GROUPS)
    dx = [c for c in left.columns if c.startswith("DX_")]
    assert set(np.unique(left[dx].to_numpy())) <= {0, 1}
    assert not generate_clinic(n_rows=1500, seed=8)[1].equals(left)


def test_each_planted_rule_reaches_its_promised_jaccard():
    _, left, right, returned = generate_clinic(n_rows=5000, seed=20231)
    rules = clinic_planted_rules()
    assert returned == rules  # the same rules, whatever the seed
    assert len(rules) == 6 and len({r.name for r in rules}) == 6
    for rule in rules:
        lo, hi = rule.jaccard_range
        assert lo <= true_jaccard(rule, left, right) <= hi, rule.name


def test_values_lie_in_the_declared_domains():
    schema, _, right, _ = generate_clinic(n_rows=1000, seed=3)
    for attr in schema.view_attributes(1):
        values = right[attr.name].dropna().to_numpy()
        assert values.min() >= attr.domain[0] and values.max() <= attr.domain[1], attr.name
