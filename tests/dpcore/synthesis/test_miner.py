"""dpcore.synthesis.miner: the pre-charge check refuses what would fail later, and a run
spends no more than its charge and returns the schema's columns."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.table.table import table_from_frame
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import FLOOR, MCGEN, STRICT
from dpcore.synthesis.miner import check_runnable, synthesize
from dpcore.synthesis.params import SynthesisParams, run_cost_nano
from dpcore.synthesis.samples import generate_pima_like, pima_like_schema


@pytest.fixture(scope="module")
def table():
    return table_from_frame(generate_pima_like(500, seed=4), pima_like_schema())


@pytest.mark.parametrize("params, match", [
    (SynthesisParams(epsilon=-1.0), "ε|epsilon"),
    (SynthesisParams(feature_groups=(("glucose", "no_such_feature"),)), "no_such_feature"),
])
def test_check_refuses_before_any_charge(table, params, match):
    with pytest.raises(ParameterError, match=match):
        check_runnable(table, params)


def test_two_features_need_given_groups_in_strict_mcgen(table):
    small = table.subset(np.arange(50))
    schema = small.schema
    narrow = type(schema)(name=schema.name, label=schema.label, classes=schema.classes,
                          features=schema.features[:2], file=schema.file)
    frame = small.to_frame()[[schema.label] + [f.name for f in schema.features[:2]]]
    with pytest.raises(ParameterError, match="give feature_groups"):
        check_runnable(table_from_frame(frame, narrow), SynthesisParams(mode=STRICT))


@pytest.mark.parametrize("algorithm", [MCGEN, FLOOR])
def test_a_run_spends_at_most_its_charge_and_keeps_the_columns(table, algorithm):
    params = SynthesisParams(algorithm=algorithm, epsilon=2.0, k=50)
    check_runnable(table, params)
    cost = run_cost_nano(params)
    acc = PrivacyAccountant(cost)
    result = synthesize(table, params, rng=np.random.default_rng(0), accountant=acc,
                        run_id="r", seed=0, dataset="pima")
    assert acc.spent_nano <= cost and result.spent_nano == acc.spent_nano
    assert result.epsilon_nano == cost
    assert list(result.synthetic.columns) == [table.schema.label] + \
        [f.name for f in table.schema.features]
    for f in table.schema.features:
        lo, hi = f.bounds
        col = result.synthetic[f.name]
        assert col.min() >= lo and col.max() <= hi, f.name
