"""Compile (or load from the numba cache) every kernel the redescription miners use.

:func:`warm_kernels` runs every algorithm in both privacy modes once on a tiny synthetic
dataset built here in code, with a throwaway accountant: no ledger, no budget, output
discarded (not a release of any real data). The dtypes are those of real data (float64
views), so the compiled specialisations are the ones real runs need. The app calls it once
per server process (``components/common/warmup.py``); the test suite once per session.
"""

from __future__ import annotations

import time

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions.kernels.reselect import reselect
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import RedescriptionParams, family_type, plan_budget
from dpcore.registry import ALGORITHMS, MODES

__all__ = ["tiny_dataset", "warmup_params", "warm_kernels", "warm_intervals", "INTERVALS_KEY"]

#: The key of :func:`warm_kernels`' timing of the intervals' bootstrap kernel.
INTERVALS_KEY = "intervals/bootstrap"


def tiny_dataset(n_rows: int = 120, seed: int = 0) -> TwoViewDataset:
    """A small synthetic two-view dataset (Boolean, categorical, numeric on both sides)."""
    rng = np.random.default_rng(seed)
    schema = Schema(
        name="warmup",
        attributes=(Attribute("b1", 0, "boolean"),
                    Attribute("c1", 0, "categorical", categories=("a", "b", "c")),
                    Attribute("x1", 0, "numeric", domain=(0.0, 10.0)),
                    Attribute("b2", 1, "boolean"),
                    Attribute("x2", 1, "numeric", domain=(0.0, 10.0)),
                    Attribute("x3", 1, "numeric", domain=(0.0, 10.0))),
        views=(ViewSpec("left", "warmup.csv"), ViewSpec("right", "warmup.csv")),
        public_demo=True, grid_bins=8)
    b1 = rng.integers(0, 2, n_rows).astype(np.float64)
    c1 = rng.integers(0, 3, n_rows).astype(np.float64)
    x1 = rng.uniform(0, 10, n_rows)
    b2 = np.where(rng.random(n_rows) < 0.8, b1, 1 - b1)
    x2 = np.clip(x1 + rng.normal(0, 1, n_rows), 0, 10)
    x3 = rng.uniform(0, 10, n_rows)
    return TwoViewDataset.from_arrays(schema, np.vstack([b1, c1, x1]), np.vstack([b2, x2, x3]))


#: The smallest settings of both families (each algorithm's type takes its own).
_SMALLEST = {"in_tr": 1, "rm_iter": 1, "depth": 2, "mc_iter": 40, "sigma_window": 10,
             "init_pairs": 1, "es_rounds": 1, "cs_rounds": 1}


def warmup_params(algorithm: str, mode: str) -> RedescriptionParams:
    """The smallest run of ``algorithm`` that still calls every kernel it uses.

    Tree miners: one trial, one alternation, depth 2, 40 MCMC iterations.
    Serenade: one initial pair and one extension round (ES and CS).
    """
    family = family_type(algorithm)
    return family(algorithm=algorithm, epsilon=1.0, mode=mode,
                  **{k: v for k, v in _SMALLEST.items() if k in family.FIELDS})


def warm_kernels() -> dict:
    """Run every algorithm × mode once on :func:`tiny_dataset`, and the intervals'
    bootstrap kernel on a 4 × 3 table; return timings (s).

    Spends no ledger budget: a throwaway accountant, no ledger, output discarded.
    """
    data = tiny_dataset()
    timings = {}
    for mode in MODES:
        for algorithm in ALGORITHMS:
            params = warmup_params(algorithm, mode)
            start = time.perf_counter()
            mine(data, params, rng=np.random.default_rng(0),
                 accountant=PrivacyAccountant(sum(s.epsilon_nano for s in plan_budget(params))))
            timings[f"{algorithm}/{mode}"] = time.perf_counter() - start
    start = time.perf_counter()
    warm_intervals()
    timings[INTERVALS_KEY] = time.perf_counter() - start
    return timings


def warm_intervals() -> None:
    """Compile (or load) the intervals' bootstrap kernel, which re-runs extractReds on
    re-noised tables (post-processing, every charged run stores its intervals), on a 4 × 3
    table."""
    table = np.arange(12, dtype=np.float64).reshape(4, 3)
    reselect(table, table.sum(axis=1), table.sum(axis=0), float(table.sum()), 0.01, 0.8,
             0.1, 10.0, 3, False)
