"""Calibration of PFS2's noisy releases, end to end through the miner.

On a dataset where every run takes the same path (400 records "a b c", l1 = 1, so lmax =
L_f = 1; with θ = 0.3 no noise of probability above e^-50 changes the path), each run
releases N̂ = 400 + Z1, the noisy support of "a" = 400 + Z2 and (strict) the L_f length
histogram's one cell, 400 + Z3. Strict mode: three
candidates and Δ_1 = 1, so pruning cannot pay (strategy.plan_level) and the level verifies
all three with its whole budget ε4/L_f + ε5/L_f at sensitivity 3; Z1, Z2, Z3 must follow
the discrete Laplace distributions of scale 1/ε1, 3/(ε4 + ε5) and 1/ε3 (χ² goodness of
fit). Faithful
mode (shrinking turns every sample record into "a", the one verified candidate): Z2 the
continuous Laplace(1/ε′) (KS). Power check: the same samples reject the scales ×0.7 and
×1.3. α = 1e-6; seeds fixed, override with DPRM_TEST_SEED.
"""

from __future__ import annotations

import math
import os
import zlib

import numpy as np
import pytest
from scipy import stats

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import FAITHFUL, STRICT
from dpcore.sequences.miner import mine_frequent_sequences
from dpcore.sequences.params import (
    MAX_LENGTH,
    PRUNE,
    RECORDS,
    VERIFY,
    SequenceMiningParams,
    mechanism_shares,
)

BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", 20241124))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED}; rerun with the same value to reproduce)"
ALPHA = 1e-6
N_RECORDS = 400
RUNS = 4000


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode())])


def _releases(mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, SequenceMiningParams]:
    schema = SequenceSchema("abc", ("a", "b", "c"), l1=1)
    data = SequenceDataset.from_lists(schema, [[0, 1, 2]] * N_RECORDS)
    params = SequenceMiningParams(epsilon=1.0, theta=0.3, mode=mode)
    rng = _rng(mode)
    n_hat, support, lengths = np.empty(RUNS), np.empty(RUNS), np.empty(RUNS)
    for i in range(RUNS):
        res = mine_frequent_sequences(data, params, rng=rng)
        assert (res.lmax, res.max_frequent_length) == (1, 1)
        verified = 3 if mode == STRICT else 1
        assert res.levels[0].verify_sensitivity == verified and res.patterns[0].items == (0,)
        n_hat[i] = res.noisy_records - N_RECORDS
        support[i] = res.patterns[0].noisy_support - N_RECORDS
        if mode == STRICT:
            lengths[i] = res.length_probes[0]["noisy_records_at_least"] - N_RECORDS
    return n_hat, support, lengths, params


def _binned(samples: np.ndarray, scale: float):
    """Observed counts and exact discrete-Laplace probabilities on |k| < K plus two tails."""
    n, a = samples.size, math.exp(-1.0 / scale)
    k_cut = 1
    while n * 2 * a**k_cut / (1 + a) >= 5:
        k_cut += 1
    ks = np.arange(-k_cut + 1, k_cut)
    inner = (1 - a) / (1 + a) * a ** np.abs(ks)
    tail = a**k_cut / (1 + a)
    probs = np.concatenate([[tail], inner, [tail]])
    counts = np.bincount(np.clip(samples.astype(np.int64), -k_cut, k_cut) + k_cut,
                         minlength=2 * k_cut + 1)
    return counts, probs


def _chi2_pvalue(samples: np.ndarray, scale: float) -> float:
    counts, probs = _binned(samples, scale)
    expected = probs * samples.size
    obs, exp, o_acc, e_acc = [], [], 0.0, 0.0
    for o, e in zip(counts, expected):   # merge adjacent bins until each expects ≥ 5
        o_acc, e_acc = o_acc + o, e_acc + e
        if e_acc >= 5:
            obs.append(o_acc)
            exp.append(e_acc)
            o_acc = e_acc = 0.0
    obs[-1] += o_acc
    exp[-1] += e_acc
    exp = np.array(exp) * (sum(obs) / sum(exp))
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.slow
def test_strict_releases_follow_their_discrete_laplace_laws():
    z_records, z_support, z_lengths, params = _releases(STRICT)
    shares = {s.phase: s.epsilon_nano for s in mechanism_shares(params, 1, 1) if s.index == 0}
    scale_records = 1.0 / nano_to_epsilon(shares[RECORDS])
    scale_support = 3.0 / nano_to_epsilon(shares[PRUNE] + shares[VERIFY])  # L_f = 1: all
    scale_lengths = 1.0 / nano_to_epsilon(shares[MAX_LENGTH])
    for z in (z_records, z_support, z_lengths):
        assert np.all(z == np.round(z))
    for z, scale in ((z_records, scale_records), (z_support, scale_support),
                     (z_lengths, scale_lengths)):
        assert _chi2_pvalue(z, scale) > ALPHA, SEED_MSG
        for wrong in (0.7, 1.3):
            assert _chi2_pvalue(z, wrong * scale) < ALPHA, (wrong, SEED_MSG)


@pytest.mark.slow
def test_faithful_verification_follows_the_continuous_laplace_law():
    _, z_support, _, params = _releases(FAITHFUL)
    share = next(s.epsilon_nano for s in mechanism_shares(params, 1, 1) if s.phase == "verify")
    scale = 1.0 / nano_to_epsilon(share)
    assert np.any(z_support != np.round(z_support))      # float noise: the paper's Laplace
    assert stats.kstest(z_support, stats.laplace(scale=scale).cdf).pvalue > ALPHA, SEED_MSG
    for wrong in (0.7, 1.3):
        assert stats.kstest(z_support, stats.laplace(scale=wrong * scale).cdf).pvalue \
            < ALPHA, (wrong, SEED_MSG)
