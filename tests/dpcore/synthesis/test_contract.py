"""The synthetic-data family object (dpcore.synthesis.contract): its kind reads the labelled
table sample, and its algorithms prepare and mine through the executor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.executor import run_sandbox
from dpcore.registry import FLOOR, KIND_TABLE, MCGEN
from dpcore.synthesis import FAMILY
from dpcore.synthesis.contract import Synthesizer
from dpcore.synthesis.params import SynthesisParams
from dpcore.synthesis.results import SynthesisResult

PIMA = Path(__file__).resolve().parents[3] / "sample_data" / "pima_like"


def test_the_kind_reads_the_sample_and_the_floor_runs_through_the_executor():
    kind = FAMILY.kind
    assert kind.key == KIND_TABLE
    schema = kind.load_schema(PIMA / "synthesis_schema.json")
    assert kind.schema_to_dict(kind.schema_from_dict(kind.schema_to_dict(schema))) == \
        kind.schema_to_dict(schema)
    table = kind.load_data(PIMA, schema)
    assert isinstance(table, kind.data_type) and table.n_rows == 768
    assert set(FAMILY.algorithms) == {MCGEN, FLOOR}
    assert all(isinstance(a, Synthesizer) for a in FAMILY.algorithms.values())
    result = run_sandbox(SynthesisParams(algorithm=FLOOR, epsilon=1.0), table,
                         rng=np.random.default_rng(0))
    assert isinstance(result, SynthesisResult) and len(result.synthetic) > 0
    with pytest.raises(ParameterError):
        FAMILY.algorithms[MCGEN].prepare(table, SynthesisParams(algorithm=MCGEN, k=-1))
