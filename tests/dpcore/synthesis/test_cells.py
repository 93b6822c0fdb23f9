"""dpcore.synthesis.cells: the public grid (a mixed-radix cell index), record assignment
and keeping synthetic draws inside their cells."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.table.schema import Feature, TableSchema
from dpcore.synthesis.cells import (
    NOISE_SCALES_PER_CELL,
    CellGrid,
    assign_cells,
    choose_grid,
    constrain_to_cells,
    histogram_grid,
    target_cells,
    uniform_in_cells,
)
from dpcore.synthesis.moments import group_layout

SCHEMA = TableSchema(name="t", label="y", classes=(0, 1), file="t.csv",
                     features=(Feature("age", "numeric", bounds=(18.0, 90.0)),
                               Feature("colour", "categorical", levels=("r", "g", "b")),
                               Feature("dose", "numeric", bounds=(0.0, 1.0))))
LAYOUT = group_layout(SCHEMA, [0, 1, 2])                  # columns: age, r, g, b, dose


@pytest.mark.parametrize("noisy, k, max_cells, scale, expected", [
    (1000, 100, 32, 0.0, 10), (1000, 100, 4, 0.0, 4), (50, 100, 32, 0.0, 1),
    (-20, 100, 32, 0.0, 1), (1000, 10, 500, 50.0, 1000 // int(NOISE_SCALES_PER_CELL * 50)),
])
def test_target_cells(noisy, k, max_cells, scale, expected):
    assert target_cells(noisy, k=k, max_cells=max_cells, count_noise_scale=scale) == expected


def test_grid_is_greedy_under_the_target():
    assert choose_grid(LAYOUT, target=12, grid_bins=4) == CellGrid((0, 1), (4, 3))
    assert choose_grid(LAYOUT, target=5, grid_bins=4) == CellGrid((0,), (4,))
    grid = choose_grid(LAYOUT, target=100, grid_bins=2)
    assert grid.n_cells == 12 and grid.strides().tolist() == [6, 2, 1]
    assert CellGrid().n_cells == 1


def _encoded(n, rng):
    colour = rng.integers(0, 3, n)
    return np.column_stack([rng.uniform(-1, 1, n), np.eye(3)[colour], rng.uniform(-1, 1, n)])


def test_cells_are_the_mixed_radix_index_of_the_bins():
    rng = np.random.default_rng(0)
    enc = _encoded(300, rng)
    grid = CellGrid((0, 1), (4, 3))
    cells = assign_cells(enc, LAYOUT, grid)
    age_bin = np.minimum(((enc[:, 0] + 1) / 2 * 4).astype(int), 3)
    colour = enc[:, 1:4].argmax(axis=1)
    assert cells.tolist() == (age_bin * 3 + colour).tolist()
    assert cells.min() >= 0 and cells.max() < grid.n_cells


def test_constrained_draws_stay_in_their_cell():
    rng = np.random.default_rng(1)
    grid = CellGrid((0, 1), (4, 3))
    cells = rng.integers(0, grid.n_cells, 500)
    draws = rng.normal(0, 2, size=(500, 5))
    out = constrain_to_cells(draws, cells, LAYOUT, grid)
    assert out is draws
    low = -1 + 2 * (cells // 3) / 4
    assert np.all(out[:, 0] >= low - 1e-12) and np.all(out[:, 0] <= low + 0.5 + 1e-12)
    assert np.array_equal(out[:, 1:4], np.eye(3)[cells % 3])
    assert np.all(np.abs(out[:, 4]) <= 1.0)               # not split: only clipped


def test_histogram_grid_bins_and_uniform_draws_stay_in_their_bin():
    age, colour = group_layout(SCHEMA, [0]), group_layout(SCHEMA, [1])
    assert histogram_grid(age, target=40, max_bins=16).bins == (16,)
    assert histogram_grid(age, target=5, max_bins=16).bins == (5,)
    assert histogram_grid(age, target=0, max_bins=16).bins == (1,)
    assert histogram_grid(colour, target=1, max_bins=16).bins == (3,)     # always its levels
    with pytest.raises(ValueError, match="one feature"):
        histogram_grid(LAYOUT, target=4, max_bins=16)
    rng = np.random.default_rng(0)
    grid = histogram_grid(age, target=5, max_bins=16)
    cells = rng.integers(0, 5, size=4000)
    draws = uniform_in_cells(cells, age, grid, rng)
    low = -1.0 + 2.0 * cells / 5
    assert ((draws[:, 0] >= low) & (draws[:, 0] <= low + 0.4)).all()
    assert (assign_cells(draws, age, grid) == cells).all()
    # uniform inside the bin: the position within it has mean ½ and variance 1/12
    pos = (draws[:, 0] - low) / 0.4
    assert abs(pos.mean() - 0.5) < 0.02 and abs(pos.var() - 1 / 12) < 0.01
    levels = rng.integers(0, 3, size=50)
    onehot = uniform_in_cells(levels, colour, histogram_grid(colour, target=3, max_bins=16),
                              rng)
    assert (onehot.sum(axis=1) == 1).all() and (onehot.argmax(axis=1) == levels).all()
