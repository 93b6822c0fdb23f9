"""The bootstrap's extractReds kernel keeps what the NumPy search keeps."""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.stats import binom

from dpcore.redescriptions.extract import _counts, marg_pvalues, released_query_masks
from dpcore.redescriptions.intervals import _reselect
from dpcore.redescriptions.kernels.reselect import binomial_tail, tail_at_most
from dpcore.redescriptions.params import TreeParams
from dpcore.registry import FAITHFUL, STRICT

SEED = int(os.environ.get("DPRM_TEST_SEED", "7"))


def _gamma(mode: str, **over) -> TreeParams:
    return TreeParams(mode=mode, **{"min_support": 10.0, **over}).validate()


def _table(rng, m: int, k: int) -> np.ndarray:
    """Whole-number noisy counts with a few strong cells (so queries pass Γ) and some
    negative cells (as released tables have)."""
    base = rng.gamma(0.3, 60, size=(m, k))
    return np.round(base + rng.laplace(0, 3, size=(m, k)))


@pytest.mark.parametrize("mode", [STRICT, FAITHFUL])
def test_kernel_releases_the_same_pairs_and_statistics_as_the_numpy_search(mode):
    rng = np.random.default_rng(SEED)
    compared = 0
    for _ in range(25):
        m, k = int(rng.integers(2, 17)), int(rng.integers(2, 9))
        table = _table(rng, m, k)
        extra = {}
        if mode == FAITHFUL:
            nl = np.trunc(table.sum(1) + rng.laplace(0, 3, m))
            nr = np.trunc(table.sum(0) + rng.laplace(0, 3, k))
            extra = {"noisy_left": nl, "noisy_right": nr,
                     "noisy_n": float(np.maximum(nr, 0).sum())}
        gamma = _gamma(mode, max_clauses=int(rng.integers(1, 4)))
        lm, rm, st = released_query_masks(table, params=gamma, **extra)
        klm, krm, kst, keys = _reselect(table, extra, gamma)
        assert np.array_equal(lm, klm) and np.array_equal(rm, krm)
        assert np.allclose(st[:, :4], kst[:, :4], rtol=0, atol=1e-9)
        assert np.allclose(st[:, 4], kst[:, 4], rtol=1e-8, atol=1e-14)
        assert len(set(keys)) == len(keys) == len(kst)
        compared += len(st)
    assert compared > 100          # the tables did release pairs to compare


def test_kernel_on_a_too_small_table_releases_nothing():
    c = _counts(np.ones((1, 5)), None, None, None)
    lm, rm, st, keys = _reselect(c.table, {}, _gamma(STRICT))
    assert lm.shape == (0, 1) and rm.shape == (0, 5) and st.shape == (0, 5) and keys == []


def test_binomial_tail_matches_scipy_from_small_to_large_row_counts():
    rng = np.random.default_rng(SEED)
    for n in (5.0, 300.0, 4_600.0, 2.0e6):
        ql, qr = rng.uniform(0, n, (2, 400))
        e = np.minimum(rng.uniform(0, n, 400), np.minimum(ql, qr))
        want = marg_pvalues(ql, qr, e, n)
        got = np.array([binomial_tail(a, b, c, n) for a, b, c in zip(ql, qr, e)])
        assert np.allclose(got, want, rtol=1e-7, atol=1e-10)
    # against the binomial's survival function directly, at the threshold's scale
    k, trials, p = 40, 1000, 0.03
    assert binomial_tail(p * trials, trials, k, trials) == pytest.approx(
        binom.sf(k - 1, trials, p), rel=1e-9)


def test_tail_at_most_decides_as_the_exact_tail():
    rng = np.random.default_rng(SEED)
    n = 3_000.0
    ql, qr = rng.uniform(1, n, (2, 3000))
    mean = ql * qr / n
    # |E11| around the mean up to far in the tail, so both shortcuts and the exact path run
    e = np.minimum(mean + rng.uniform(-3, 12, 3000) * np.sqrt(mean), np.minimum(ql, qr))
    for pval in (0.01, 0.05, 1e-6):
        exact = np.array([binomial_tail(a, b, c, n) <= pval for a, b, c in zip(ql, qr, e)])
        fast = np.array([tail_at_most(a, b, c, n, pval) for a, b, c in zip(ql, qr, e)])
        assert np.array_equal(fast, exact)
        assert 0 < exact.sum() < exact.size
