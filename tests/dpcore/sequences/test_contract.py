"""The frequent-sequence family object (dpcore.sequences.contract): its kind reads a sequence
sample, and its algorithms prepare and mine through the executor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.executor import run_sandbox
from dpcore.registry import KIND_SEQUENCES, PFS2, PFS2_BASELINE
from dpcore.sequences import FAMILY
from dpcore.sequences.contract import SequenceMiner
from dpcore.sequences.params import SequenceMiningParams
from dpcore.sequences.results import SequenceRunResult

HOUSE_POWER = Path(__file__).resolve().parents[3] / "sample_data" / "house_power"


def test_the_kind_reads_the_sample_and_round_trips_its_schema():
    kind = FAMILY.kind
    assert kind.key == KIND_SEQUENCES
    schema = kind.load_schema(HOUSE_POWER / "sequence_schema.json")
    assert kind.schema_from_dict(kind.schema_to_dict(schema)) == schema
    data = kind.load_data(HOUSE_POWER, schema)
    assert isinstance(data, kind.data_type)
    assert set(FAMILY.algorithms) == {PFS2, PFS2_BASELINE}
    assert all(isinstance(a, SequenceMiner) for a in FAMILY.algorithms.values())
    run = FAMILY.algorithms[PFS2]
    params = SequenceMiningParams(algorithm=PFS2, epsilon=1.0)
    result = run_sandbox(params, data, rng=np.random.default_rng(0))
    assert isinstance(result, SequenceRunResult)
    assert result.spent_nano + result.unspent_nano == sum(s.epsilon_nano
                                                         for s in run.plan(params))
    with pytest.raises(ParameterError):
        run.prepare(data, SequenceMiningParams(algorithm=PFS2, theta=2.0))

