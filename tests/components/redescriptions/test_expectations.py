"""The launch form's Serenade warning (components/redescriptions/expectations.py): shown from
the dataset's public schema where the draws are close to random, and only there."""

from __future__ import annotations

from pathlib import Path

from components.redescriptions.expectations import miner_warnings
from dpcore.data.schema import load_schema
from dpcore.redescriptions.params import family_type
from dpcore.registry import ALGORITHM_LABELS, SERENADE_CS, SERENADE_ES

CLINIC_SCHEMA = Path(__file__).resolve().parents[3] / "sample_data" / "clinic" / "schema.json"


def _params(algorithm: str, epsilon: float):
    return family_type(algorithm)(algorithm=algorithm, epsilon=epsilon).validate()


def test_serenade_on_clinic_at_epsilon_one_is_told_to_pick_a_tree_miner():
    schema = load_schema(CLINIC_SCHEMA)
    for algorithm in (SERENADE_ES, SERENADE_CS):
        [warning] = miner_warnings(_params(algorithm, 1.0), schema)
        assert warning.startswith(f"**{ALGORITHM_LABELS[algorithm]} draws close to random")
        assert "644,000 literal pairs" in warning and "a tree miner suits" in warning
    assert miner_warnings(_params(SERENADE_ES, 10.0), schema) == []
    # without the schema (a caller that has none) nothing is claimed
    assert miner_warnings(_params(SERENADE_ES, 1.0)) == []
