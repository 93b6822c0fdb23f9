"""Intervals on the custom query's table and the map's cells
(dpcore/redescriptions/query_intervals.py): the half-width is the exact discrete Laplace
quantile, the stated 90 % coverage holds by simulation through the real mechanism on fixed
true counts, and intervals read at the wrong scale miss it."""

from __future__ import annotations

import os
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.count_intervals import noise_halfwidth
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions import query_intervals as qi
from dpcore.redescriptions.custom_query import QUERY_TABLE_LABEL, release_table
from dpcore.redescriptions.regions import release_map
from dpcore.registry import CUSTOM_QUERY, REGION_MAP

BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", 20231126))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED})"


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode())])


def test_bad_cells_are_refused_naming_them():
    with pytest.raises(ParameterError, match="4 finite cells"):
        qi.table_intervals([1.0, 2.0, 3.0], 1.0)


def _query_result(noisy, accountant) -> SimpleNamespace:
    e11, e10, e01, e00 = (float(x) for x in noisy)
    return SimpleNamespace(run_id="q", algorithm=CUSTOM_QUERY,
                           mechanism_calls=accountant.to_records(),
                           extractions=[SimpleNamespace(noisy_table=((e11, e10), (e01, e00)))])


def test_query_table_coverage_through_the_real_mechanism_and_wrong_scale_misses():
    """Fixed true table, 1,500 releases by release_table (charged like a run) at ε = 0.2."""
    rng = rng_for("query coverage")
    truth = np.array([40, 15, 9, 500], dtype=np.int64)
    true_stats = {"E11": 40, "E10": 15, "E01": 9, "E00": 500, "support_left": 55,
                  "support_right": 49, "support_both": 40, "jaccard": 40 / 64}
    eps_nano = epsilon_to_nano(0.2)
    hits = {k: 0 for k in qi.TABLE_STATISTICS}
    half_scale_hits = 0
    reps = 1_500
    for _ in range(reps):
        acc = PrivacyAccountant(eps_nano)
        noisy = release_table(truth, eps_nano, rng=rng, accountant=acc)
        doc = qi.result_intervals(_query_result(noisy, acc))
        assert doc["coverage"] == 0.9
        for name, (low, high) in doc["table"].items():
            hits[name] += low <= true_stats[name] <= high
        low, high = qi.table_intervals(noisy, 0.5 / 0.2)["E11"]
        half_scale_hits += low <= 40 <= high
    for name, h in hits.items():
        rate = h / reps
        # ≥ 90 % minus 3.5 binomial s.e. (0.0077); the cells' exact coverage at b = 5 is ≈ 0.905
        assert rate >= 0.873, f"{name}: coverage {rate:.3f} {SEED_MSG}"
        if name != "jaccard":      # J's box range is conservative by design
            assert rate <= 0.94, f"{name}: coverage {rate:.3f}, not calibrated {SEED_MSG}"
    assert half_scale_hits / reps < 0.75, (
        f"half the noise scale should cover ≈ 0.69, got {half_scale_hits / reps:.3f}")


def test_the_jaccard_interval_is_narrower_than_the_unit_interval_and_holds_the_noisy_j():
    low, high = qi.table_intervals([400.0, 100.0, 100.0, 5_000.0], 1.0)["jaccard"]
    assert 0.6 < low < 400 / 600 < high < 0.72


def test_map_cell_coverage_through_the_real_mechanism_and_wrong_scale_misses():
    rng = rng_for("map coverage")
    truth = rng.integers(0, 30, size=(40, 3)).astype(np.int64)
    truth[:5] = 0                              # empty cells: the interval still holds 0
    eps_nano = epsilon_to_nano(0.5)
    covered = half = total = 0
    for _ in range(60):
        acc = PrivacyAccountant(eps_nano)
        noisy = release_map(truth, eps_nano, rng=rng, accountant=acc)
        result = SimpleNamespace(run_id="m", algorithm=REGION_MAP,
                                 mechanism_calls=acc.to_records(),
                                 extractions=[SimpleNamespace(noisy_table=noisy.tolist())])
        doc = qi.result_intervals(result)
        low, high = np.asarray(doc["low"]), np.asarray(doc["high"])
        assert doc["categories"] == ["E11", "E10", "E01"] and low.shape == truth.shape
        assert np.all(low >= 0) and np.all(low <= high)
        covered += int(np.count_nonzero((low <= truth) & (truth <= high)))
        lo2, hi2 = qi.map_intervals(noisy, 1.0)           # half of the true scale 2
        half += int(np.count_nonzero((lo2 <= truth) & (truth <= hi2)))
        total += truth.size
    # exact coverage at b = 2: 1 − 2q⁶/(1+q) ≈ 0.938 (half-width 5), more on the empty cells
    assert 0.93 <= covered / total <= 0.97, f"coverage {covered / total:.3f} {SEED_MSG}"
    assert half / total < 0.85, f"half scale covers {half / total:.3f} {SEED_MSG}"


def test_other_results_and_unknown_scales_carry_no_query_intervals():
    assert qi.result_intervals(SimpleNamespace(algorithm="another miner", extractions=[],
                                               mechanism_calls=[])) is None
    result = SimpleNamespace(run_id="q", algorithm=CUSTOM_QUERY, mechanism_calls=[],
                             extractions=[SimpleNamespace(noisy_table=((1, 2), (3, 4)))])
    assert qi.result_intervals(result) is None
    with pytest.raises(ParameterError, match="no mechanism call"):
        qi.release_scale(result, QUERY_TABLE_LABEL)


def test_a_query_result_carries_its_intervals_in_json_and_old_files_still_load(clinic_dataset):
    from dpcore.redescriptions.custom_query import (
        CustomQueryParams,
        query_table,
        run_custom_query,
    )
    from dpcore.redescriptions.results import RunResult

    params = CustomQueryParams(epsilon=0.3, left_query="[DX_CHF] ∨ [DX_CKD]",
                               right_query="[LAB_BNP > 400]")
    acc = PrivacyAccountant(epsilon_to_nano(0.3))
    result = run_custom_query(clinic_dataset, params, rng=rng_for("query json"),
                              accountant=acc, run_id="q1")
    data = result.to_dict()
    table = data["query_intervals"]["table"]
    noisy = query_table(result)
    k = noise_halfwidth(1 / 0.3)
    assert table["E11"] == [max(noisy.cells[0] - k, 0.0), noisy.cells[0] + k]
    assert table["jaccard"][0] <= noisy.jaccard <= table["jaccard"][1]
    back = RunResult.from_dict(data)
    assert back.to_dict() == data
    old = {key: value for key, value in data.items() if key != "query_intervals"}
    assert RunResult.from_dict(old).to_dict() == data
