"""dpcore.synthesis.results: a synthesis result reads back from JSON and Parquet, with the
owner-only diagnostics kept apart unless asked for."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.data.table.table import table_from_frame
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import FLOOR
from dpcore.synthesis.miner import synthesize
from dpcore.synthesis.params import SynthesisParams, run_cost_nano
from dpcore.synthesis.results import SynthesisDiagnostics, SynthesisResult
from dpcore.synthesis.samples import generate_pima_like, pima_like_schema


@pytest.fixture(scope="module")
def result() -> SynthesisResult:
    table = table_from_frame(generate_pima_like(300, seed=6), pima_like_schema())
    params = SynthesisParams(algorithm=FLOOR, epsilon=1.0)
    return synthesize(table, params, rng=np.random.default_rng(2),
                      accountant=PrivacyAccountant(run_cost_nano(params)), run_id="r1",
                      seed=2, dataset="pima")


def test_json_round_trip_without_diagnostics(result):
    text = result.to_json()
    assert "diagnostics" not in json.loads(text)
    back = SynthesisResult.from_json(text)
    pd.testing.assert_frame_equal(back.synthetic, result.synthetic, check_dtype=False)
    assert back.noisy_class_counts == result.noisy_class_counts
    assert back.mechanism_calls == result.mechanism_calls
    assert back.diagnostics == SynthesisDiagnostics()
    assert result.diagnostics.true_rows == 300         # kept, but only for owners
    full = SynthesisResult.from_json(result.to_json(include_diagnostics=True))
    assert full.diagnostics == result.diagnostics


def test_parquet_round_trip(result, tmp_path):
    path = tmp_path / "r.parquet"
    result.write_parquet(path)
    back = SynthesisResult.read_parquet(path)
    pd.testing.assert_frame_equal(back.synthetic, result.synthetic, check_dtype=False)
    assert back.run_id == "r1" and back.epsilon == result.epsilon
    assert back.diagnostics == SynthesisDiagnostics()


def test_a_plain_parquet_file_is_refused(tmp_path):
    path = tmp_path / "plain.parquet"
    pd.DataFrame({"a": [1, 2]}).to_parquet(path)
    with pytest.raises(ValueError, match="not a dpcore synthesis result"):
        SynthesisResult.read_parquet(path)
