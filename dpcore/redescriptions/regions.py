"""Where a query pair holds, privately: one noisy histogram over the declared location grid.

A two-view schema may declare a public location grid (:class:`dpcore.data.schema.Location`):
two numeric attributes holding each row's longitude and latitude, and a rectangle cut into
square cells. For a query pair (the syntax of :mod:`dpcore.redescriptions.custom_query`)
this module releases, for every cell, the noisy counts of the rows in E11 (both queries
hold), E10 (only the left) and E01 (only the right).

Privacy (``docs/PRIVACY.md`` §14): each row falls in at most one cell (or none: a missing or
out-of-rectangle coordinate) and in exactly one of E11 / E10 / E01 / E00, so adding or
removing one row changes at most one released count by one: the whole map is one histogram
of L1 sensitivity 1, released with one ε by the exact discrete Laplace mechanism (scale 1/ε
per count). Rows outside every cell and the E00 counts are not released. The cells, their
polygons and their number come from the schema only.

The result is stored like any run (a :class:`RunResult` with no redescription and one
extraction record whose ``noisy_table`` has one row per cell: E11, E10, E01).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from dpcore import __version__
from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import Location, Schema
from dpcore.errors import DataError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.mechanisms import noisy_counts
from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.custom_query import (
    CustomQueryParams,
    parse_pair,
    plan_budget,
    query_mask,
)
from dpcore.redescriptions.results import ExtractionRecord, OwnerDiagnostics, RunResult
from dpcore.registry import REGION_MAP

__all__ = ["MAP_LABEL", "RegionMapParams", "plan_budget", "location_of", "cell_of_rows",
           "cell_bounds", "cell_geojson", "map_histogram", "release_map", "check_map_run",
           "run_region_map", "MapCounts", "map_counts", "noise_sd"]

#: The accountant label of the map's histogram.
MAP_LABEL = "noisy map E11/E10/E01 per cell"
#: Released categories, in the order of each cell's row of ``noisy_table``.
CATEGORIES = ("E11", "E10", "E01")


@dataclass(frozen=True)
class RegionMapParams(CustomQueryParams):
    """A paid noisy map of a query pair (strict only); fields as :class:`CustomQueryParams`.

    ``epsilon`` pays the whole map: one histogram over disjoint (cell, E11/E10/E01) bins.
    """

    algorithm: str = REGION_MAP
    epsilon: float = 0.5


def location_of(schema: Schema) -> Location:
    """The schema's declared location grid (DataError naming the dataset if it has none)."""
    if schema.location is None:
        raise DataError(f"dataset {schema.name!r} declares no location grid (schema key "
                        "\"location\"), so it has no map")
    return schema.location


def cell_of_rows(lon: np.ndarray, lat: np.ndarray, location: Location) -> np.ndarray:
    """Cell index of every row (row-major from the south-west corner), −1 for no cell.

    A row is in cell (i, j) when ``lat_lo + i·d ≤ lat < lat_lo + (i+1)·d`` and likewise for
    the longitude; a missing coordinate or one outside the rectangle gives −1. Private
    (true data).
    """
    rows, cols = location.shape
    d = location.cell_degrees
    lon = np.asarray(lon, dtype=np.float64)
    lat = np.asarray(lat, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        j = np.floor((lon - location.lon_range[0]) / d)
        i = np.floor((lat - location.lat_range[0]) / d)
        inside = (j >= 0) & (j < cols) & (i >= 0) & (i < rows)
    out = np.full(lon.shape, -1, dtype=np.int64)
    out[inside] = (i[inside] * cols + j[inside]).astype(np.int64)
    return out


def cell_bounds(location: Location) -> np.ndarray:
    """Public (n_cells, 4) array of each cell's lon_lo, lat_lo, lon_hi, lat_hi (degrees)."""
    rows, cols = location.shape
    d = location.cell_degrees
    i, j = np.divmod(np.arange(rows * cols), cols)
    lon0 = location.lon_range[0] + j * d
    lat0 = location.lat_range[0] + i * d
    return np.column_stack([lon0, lat0, lon0 + d, lat0 + d])


def cell_geojson(location: Location) -> dict:
    """The cells as a GeoJSON FeatureCollection of squares (``id`` = cell index); public."""
    features = []
    for k, (x0, y0, x1, y1) in enumerate(cell_bounds(location).tolist()):
        ring = [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]
        features.append({"type": "Feature", "id": k, "properties": {"cell": k},
                         "geometry": {"type": "Polygon", "coordinates": [ring]}})
    return {"type": "FeatureCollection", "features": features}


def map_histogram(cells: np.ndarray, left: np.ndarray, right: np.ndarray,
                  n_cells: int) -> np.ndarray:
    """True (n_cells, 3) counts of E11, E10, E01 per cell (private).

    ``cells`` from :func:`cell_of_rows`; ``left``, ``right`` the row masks of the queries.
    Each row adds 1 to at most one entry.
    """
    category = np.where(left & right, 0, np.where(left, 1, np.where(right, 2, -1)))
    keep = (cells >= 0) & (category >= 0)
    flat = cells[keep] * 3 + category[keep]
    return np.bincount(flat, minlength=n_cells * 3).reshape(n_cells, 3).astype(np.int64)


def release_map(hist: np.ndarray, epsilon_nano: int, *, rng: np.random.Generator,
                accountant: PrivacyAccountant) -> np.ndarray:
    """The ε-DP release of a true (n_cells, 3) histogram: exact discrete Laplace, Δ = 1.

    Charges ``accountant`` ``epsilon_nano`` once, before drawing (disjoint bins: one row
    changes one count by one). Returns float64 noisy counts of the same shape.
    """
    hist = np.asarray(hist, dtype=np.int64)
    return noisy_counts(hist, kind="discrete", sensitivity=1, epsilon_nano=epsilon_nano,
                        rng=rng, accountant=accountant, label=MAP_LABEL, parallel=hist.size)


def check_map_run(data: TwoViewDataset, params: RegionMapParams) -> None:
    """Pre-charge check: the schema declares a grid and the pair parses against it."""
    params.validate()
    location_of(data.schema)
    parse_pair(data.schema, params.left_query, params.right_query)


def _column(data: TwoViewDataset, name: str) -> np.ndarray:
    for view in data.views:
        for a, attr in enumerate(view.attributes):
            if attr.name == name:
                return view.values[a]
    raise DataError(f"location attribute {name!r} is not in the data", column=name)


def run_region_map(data: TwoViewDataset, params: RegionMapParams, *,
                   rng: np.random.Generator, accountant: PrivacyAccountant,
                   run_id: str | None = None, seed: int | None = None,
                   progress=None) -> RunResult:
    """The registry's miner: release the noisy E11/E10/E01 histogram over the grid cells.

    Charged once (the plan's one slot) before any noise; the result holds no redescription
    and one extraction record whose ``noisy_table`` rows are the cells (E11, E10, E01).
    """
    location = location_of(data.schema)
    left, right = parse_pair(data.schema, params.left_query, params.right_query)
    masks = [query_mask(code_view_strict(data.schema, data.views[s]), q)
             for s, q in ((0, left), (1, right))]
    cells = cell_of_rows(_column(data, location.longitude), _column(data, location.latitude),
                         location)
    hist = map_histogram(cells, masks[0], masks[1], location.n_cells)
    noisy = release_map(hist, plan_budget(params)[0].epsilon_nano, rng=rng,
                        accountant=accountant)
    table = tuple(tuple(float(x) for x in row) for row in noisy)
    record = ExtractionRecord(0, -1, -1, 0, 0, table,
                              tuple(float(x) for x in noisy.sum(axis=1)),
                              tuple(float(x) for x in noisy.sum(axis=0)),
                              float(noisy.sum()))
    if progress:
        progress(1.0, "noisy map released")
    stored = {**params.to_dict(), "left_text": left.text, "right_text": right.text}
    return RunResult(run_id=run_id or uuid.uuid4().hex, dataset=data.schema.name,
                     algorithm=params.algorithm, mode=params.mode, params=stored,
                     version=__version__, created_at=datetime.now(UTC).isoformat(),
                     epsilon_nano=accountant.spent_nano, redescriptions=[], trees=[],
                     extractions=[record], mechanism_calls=accountant.to_records(), seed=seed,
                     diagnostics=OwnerDiagnostics())


def noise_sd(epsilon: float) -> float:
    """Standard deviation (rows) of one discrete Laplace count with Δ = 1 at ``epsilon``."""
    alpha = np.exp(-epsilon)
    return float(np.sqrt(2.0 * alpha) / (1.0 - alpha))


@dataclass(frozen=True)
class MapCounts:
    """A stored map read back: public cell bounds and the released noisy counts."""

    bounds: np.ndarray  # (n_cells, 4) lon_lo, lat_lo, lon_hi, lat_hi
    counts: np.ndarray  # (n_cells, 3) noisy E11, E10, E01 (may be negative)
    epsilon: float
    left_text: str
    right_text: str


def map_counts(result: RunResult, schema: Schema) -> MapCounts:
    """A stored map result with its cells (0 ε: reads the release and the public schema)."""
    location = location_of(schema)
    counts = np.asarray(result.extractions[0].noisy_table, dtype=np.float64)
    if counts.shape != (location.n_cells, 3):
        raise DataError(f"the stored map of run {result.run_id} has {counts.shape[0]} cells; "
                        f"the schema's grid has {location.n_cells}")
    return MapCounts(cell_bounds(location), counts, result.epsilon,
                     result.params.get("left_text", result.params.get("left_query", "")),
                     result.params.get("right_text", result.params.get("right_query", "")))
