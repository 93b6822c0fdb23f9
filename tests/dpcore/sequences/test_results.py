"""dpcore.sequences.results: a stored PFS2 result reads back as written, and the owner-only
diagnostics leave only when asked for."""

from __future__ import annotations

import json

import numpy as np

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.sequences.miner import mine_frequent_sequences
from dpcore.sequences.params import SequenceMiningParams, run_cost_nano
from dpcore.sequences.results import (
    FrequentSequence,
    SequenceRunResult,
    pattern_key,
)
from dpcore.sequences.samples import generate_clickstream


def test_pattern_key_and_text():
    assert pattern_key((3, 0, 0)) == "3 0 0" and pattern_key([]) == ""
    seq = FrequentSequence(items=(0, 2), names=("home", "news"), noisy_support=12.5, length=2)
    assert seq.text() == "home → news" and seq.text(" ") == "home news"


def _result() -> SequenceRunResult:
    data = generate_clickstream(800, seed=2, public_demo=True)
    params = SequenceMiningParams(epsilon=2.0, theta=0.1)
    return mine_frequent_sequences(data, params, rng=np.random.default_rng(0),
                                   accountant=PrivacyAccountant(run_cost_nano(params)),
                                   run_id="r1", seed=0)


def test_round_trip_and_diagnostics_kept_apart():
    result = _result()
    assert result.spent_nano + result.unspent_nano == result.epsilon_nano
    released = json.loads(result.to_json())
    assert "diagnostics" not in released
    back = SequenceRunResult.from_json(result.to_json())
    assert back.patterns == result.patterns and back.levels == result.levels
    assert back.supports() == result.supports()
    assert back.diagnostics == type(result.diagnostics)()      # empty, never leaked
    full = SequenceRunResult.from_json(result.to_json(include_diagnostics=True))
    assert full == result
    assert result.epsilon == 2.0
