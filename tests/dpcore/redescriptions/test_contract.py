"""The redescription family object (dpcore.redescriptions.contract): its kind reads the
two-view samples, and ``prepare`` builds the strict coding that ``mine`` then consumes — the
views are coded once per run, with nothing carried between the two in a module cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpcore.executor import execute_charged, prepare_run
from dpcore.redescriptions import FAMILY, mining
from dpcore.redescriptions.contract import QueryAlgorithm, RedescriptionMiner
from dpcore.redescriptions.params import SerenadeParams, TreeParams
from dpcore.registry import (
    ALTEXPM,
    CUSTOM_QUERY,
    FAITHFUL,
    KIND_TWO_VIEW,
    SERENADE_ALGORITHMS,
    SERENADE_ES,
)

CLINIC = Path(__file__).resolve().parents[3] / "sample_data" / "clinic"


def test_the_kind_reads_and_round_trips_the_two_view_schema():
    kind = FAMILY.kind
    assert kind.key == KIND_TWO_VIEW
    schema = kind.load_schema(CLINIC / "schema.json")
    assert isinstance(schema, kind.schema_type)
    assert kind.schema_to_dict(kind.schema_from_dict(kind.schema_to_dict(schema))) == \
        kind.schema_to_dict(schema)
    data = kind.load_data(CLINIC, schema)
    assert isinstance(data, kind.data_type) and data.n_rows > 0
    assert isinstance(FAMILY.algorithms[ALTEXPM], RedescriptionMiner)
    assert isinstance(FAMILY.algorithms[CUSTOM_QUERY], QueryAlgorithm)


def test_prepare_codes_the_views_once_and_mine_consumes_them(clinic_dataset, monkeypatch):
    calls = []
    real = mining.strict_coding
    monkeypatch.setattr(mining, "strict_coding", lambda d: calls.append(1) or real(d))
    for key, params in ((ALTEXPM, TreeParams(algorithm=ALTEXPM, epsilon=1.0, in_tr=1)),
                        (SERENADE_ES, SerenadeParams(algorithm=SERENADE_ES, epsilon=1.0,
                                                     init_pairs=4, es_rounds=2))):
        calls.clear()
        checked = prepare_run(params, clinic_dataset)
        assert checked.prepared.strict_codes is not None and calls == [1]
        executed = execute_charged(checked, rng=np.random.default_rng(0), seed=0)
        assert calls == [1], f"{key}: mine recoded the views instead of using prepare's"
        assert executed.result.epsilon_nano == checked.cost_nano
    faithful = prepare_run(TreeParams(algorithm=ALTEXPM, mode=FAITHFUL, in_tr=1),
                           clinic_dataset)
    assert faithful.prepared.strict_codes is None


def test_each_miner_s_parameter_type_is_its_family_s():
    """The registry's ``params_type`` of a tree miner is TreeParams, of Serenade
    SerenadeParams: no union type at the boundary."""
    for key, miner in FAMILY.algorithms.items():
        if isinstance(miner, RedescriptionMiner):
            assert miner.params_type is (SerenadeParams if key in SERENADE_ALGORITHMS
                                         else TreeParams)
