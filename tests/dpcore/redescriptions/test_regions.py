"""Noisy maps (dpcore/redescriptions/regions.py) and the schema's location grid: validation
with clear messages, cell assignment, the charged and stored map, the calibration of its
noise (the ``sites`` sample itself: tests/dpcore/data/samples/test_sites.py)."""

from __future__ import annotations

import json
import math
import os
import zlib

import numpy as np
import pytest
from scipy import stats

from dpcore.data.kinds import sample_data_dir
from dpcore.data.loading import load_dataset
from dpcore.data.samples.sites import SITES_RULES
from dpcore.data.schema import MAX_LOCATION_CELLS, schema_from_dict, schema_to_dict
from dpcore.errors import DataError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions import regions as rg
from dpcore.redescriptions.custom_query import QueryError
from dpcore.redescriptions.evaluate import serenade_query_mask
from dpcore.redescriptions.results import RunResult
from dpcore.runs import charge_and_mine, load_result

BASE_SEED = int(os.environ.get("DPRM_TEST_SEED", 20231126))
SEED_MSG = f"(DPRM_TEST_SEED={BASE_SEED})"
SITES = sample_data_dir() / "sites"


@pytest.fixture(scope="module")
def sites():
    return load_dataset(SITES)


@pytest.fixture()
def ledger(tmp_path, sites, clinic_dataset):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.register_dataset("sites", sites.schema, str(SITES), 2.0, actor="owner", confirmed=True)
    led.register_dataset("clinic", clinic_dataset.schema, None, 2.0, actor="owner",
                         confirmed=True)
    return led


# --------------------------------------------------------------------------- the schema

def _with_location(location) -> dict:
    d = schema_to_dict(load_dataset(SITES).schema)
    d["location"] = location
    return d


GOOD = {"longitude": "LON", "latitude": "LAT", "cell_degrees": 4, "lon_range": [72, 136],
        "lat_range": [16, 56]}


@pytest.mark.parametrize("change, named", [
    ({"longitude": "NOPE"}, "'NOPE', which is not an attribute"),
    ({"latitude": "HYP", "longitude": "HYP"}, "two different attributes"),
    ({"cell_degrees": 0}, "cell_degrees"),
    ({"lon_range": [72, 135]}, "not a whole number of cells"),
    ({"lat_range": [56, 16]}, "lo < hi"),
    ({"lat_range": [-100, 20]}, "-90"),
    ({"cell_degrees": 0.1, "lon_range": [-180, 180], "lat_range": [-90, 90]},
     f"at most {MAX_LOCATION_CELLS}"),
    ({"extra": 1}, "unknown key(s) 'extra'"),
])
def test_a_bad_location_is_refused_naming_the_problem(change, named):
    with pytest.raises(DataError) as err:
        schema_from_dict(_with_location({**GOOD, **change}), file="schema.json")
    assert named in str(err.value)


def test_a_location_must_name_numeric_attributes(clinic_dataset):
    d = schema_to_dict(clinic_dataset.schema)
    d["location"] = {**GOOD, "longitude": "SEX", "latitude": "LAB_BNP"}
    with pytest.raises(DataError, match="numeric attribute"):
        schema_from_dict(d)


def test_the_location_round_trips_and_counts_its_cells(sites):
    loc = sites.schema.location
    assert loc.shape == (10, 16) and loc.n_cells == 160
    again = schema_from_dict(json.loads(json.dumps(schema_to_dict(sites.schema))))
    assert again.location == loc


# --------------------------------------------------------------------------- cells

def test_cells_are_half_open_row_major_and_outside_rows_get_none(sites):
    loc = sites.schema.location  # 4° cells, lon 72..136, lat 16..56
    lon = np.array([72.0, 75.99, 76.0, 135.999, 136.0, 71.9, np.nan, 100.0])
    lat = np.array([16.0, 16.0, 19.99, 55.9, 30.0, 30.0, 30.0, np.nan])
    assert rg.cell_of_rows(lon, lat, loc).tolist() == [0, 0, 1, 9 * 16 + 15, -1, -1, -1, -1]
    bounds = rg.cell_bounds(loc)
    assert bounds[17].tolist() == [76.0, 20.0, 80.0, 24.0]
    geo = rg.cell_geojson(loc)
    assert len(geo["features"]) == 160
    assert geo["features"][17]["geometry"]["coordinates"][0][0] == [76.0, 20.0]


def test_the_histogram_puts_each_row_in_one_bin(sites):
    loc = sites.schema.location
    rng = np.random.default_rng(3)
    cells = rng.integers(-1, loc.n_cells, 500)
    left, right = rng.random(500) < 0.4, rng.random(500) < 0.5
    hist = rg.map_histogram(cells, left, right, loc.n_cells)
    expected = np.zeros((loc.n_cells, 3), dtype=np.int64)
    for c, a, b in zip(cells, left, right):
        if c >= 0 and (a or b):
            expected[c, 0 if a and b else 1 if a else 2] += 1
    np.testing.assert_array_equal(hist, expected)


# --------------------------------------------------------------------------- the run

def test_a_map_is_charged_once_stored_and_read_back(ledger, sites):
    left, right = SITES_RULES[0]
    params = rg.RegionMapParams(epsilon=0.5, left_query=left, right_query=right)
    result = charge_and_mine(ledger, "sites", params, run_id="m1", seed=11)
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.5)
    [call] = result.mechanism_calls
    assert call["epsilon_nano"] == epsilon_to_nano(0.5) and call["sensitivity"] == 1
    stored = load_result(ledger, "m1", requester=Requester())
    assert isinstance(stored, RunResult) and stored.redescriptions == []
    counts = rg.map_counts(stored, sites.schema)
    assert counts.counts.shape == (160, 3) and counts.epsilon == 0.5
    assert counts.left_text == "[HYP > 1.5]"
    # the truth (public demo): noise of scale 2 per count stays far below 40 rows
    ml, mr = (serenade_query_mask(sites, q) for q in rg.parse_pair(sites.schema, left, right))
    loc = sites.schema.location
    truth = rg.map_histogram(rg.cell_of_rows(sites.views[1].values[0],
                                             sites.views[1].values[1], loc), ml, mr,
                             loc.n_cells)
    assert np.all(np.abs(counts.counts - truth) < 40)
    assert counts.counts[:, 0].sum() == pytest.approx(truth[:, 0].sum(), abs=200)


def test_a_dataset_without_a_grid_or_a_bad_query_charges_nothing(ledger, clinic_dataset):
    params = rg.RegionMapParams(epsilon=0.5, left_query="[DX_CHF]",
                                right_query="[LAB_BNP > 400]")
    with pytest.raises(DataError, match="declares no location grid"):
        charge_and_mine(ledger, "clinic", params, data=clinic_dataset)
    bad = rg.RegionMapParams(epsilon=0.5, left_query="[HYP > 1.55]", right_query="[TMEAN > 10]")
    with pytest.raises(QueryError, match="not on its public grid"):
        charge_and_mine(ledger, "sites", bad)
    assert ledger.budget("clinic").spent_nano == ledger.budget("sites").spent_nano == 0


def test_the_map_noise_is_discrete_laplace_with_the_charged_epsilon():
    """χ² of the map's noise against discrete Laplace(1/ε), α = 1e-6, with a power check."""
    eps = 0.7
    hist = np.arange(160 * 3, dtype=np.int64).reshape(160, 3) % 17
    rng = np.random.default_rng([BASE_SEED, zlib.crc32(b"noisy map")])
    noise = []
    for _ in range(40):
        acc = PrivacyAccountant(epsilon_to_nano(eps))
        noise.append(rg.release_map(hist, epsilon_to_nano(eps), rng=rng, accountant=acc) - hist)
        assert acc.spent_nano == epsilon_to_nano(eps)
    pooled = np.concatenate([n.ravel() for n in noise]).astype(np.int64)

    def pvalue(e):
        a = math.exp(-e)
        k_cut = 1
        while pooled.size * 2 * a**k_cut / (1 + a) >= 5:
            k_cut += 1
        ks = np.arange(-k_cut + 1, k_cut)
        probs = np.concatenate([[a**k_cut / (1 + a)], (1 - a) / (1 + a) * a ** np.abs(ks),
                                [a**k_cut / (1 + a)]])
        observed = np.bincount(np.clip(pooled, -k_cut, k_cut) + k_cut, minlength=2 * k_cut + 1)
        return stats.chisquare(observed, probs * pooled.size).pvalue

    assert pvalue(eps) > 1e-6, SEED_MSG
    assert pvalue(0.7 * eps) < 1e-6 and pvalue(1.3 * eps) < 1e-6, f"power {SEED_MSG}"
    sd = rg.noise_sd(eps)
    assert pooled.std() == pytest.approx(sd, rel=0.05)
