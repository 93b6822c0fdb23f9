"""Initial targets (dpcore.redescriptions.targets): the attribute draw is uniform and
data-independent, strict classes come from the public target bins, missing values are a
class of their own, and faithful binning follows the paper's rule."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC
from dpcore.redescriptions.targets import (
    faithful_bin_edges,
    faithful_classes,
    make_target,
    pick_attribute,
)
from dpcore.registry import FAITHFUL, STRICT
from tests.support import reference as R


def test_pick_attribute_is_uniform_over_the_unused_attributes():
    ds = R.random_dataset(50, R.make_rng("targets-pick"))
    pool = [(v, a) for v in (0, 1) for a in range(ds.views[v].n_attributes)]
    rng = R.make_rng("targets-draws")
    exclude = set(pool[:3])
    counts = Counter(pick_attribute(ds, rng, exclude) for _ in range(7000))
    assert set(counts) == set(pool) - exclude
    assert stats.chisquare(list(counts.values())).pvalue > 1e-6
    assert pick_attribute(ds, rng, set(pool)) in pool  # all used: every attribute again


@pytest.mark.parametrize("mode", [STRICT, FAITHFUL])
def test_classes_follow_the_attribute_and_missing_rows_get_their_own_class(mode):
    ds = R.random_dataset(400, R.make_rng("targets-classes"), missing=0.15)
    schema = ds.schema
    for v in (0, 1):
        for a, attr in enumerate(ds.views[v].attributes):
            col = ds.views[v].values[a]
            target = make_target(ds, v, a, mode)
            if target is None:
                assert mode == FAITHFUL and attr.type == NUMERIC
                continue
            missing = np.isnan(col)
            assert np.all(target.classes[missing] == target.n_classes - 1)
            seen = target.classes[~missing]
            assert seen.min() >= 0 and seen.max() < target.n_classes - 1
            if attr.type == BOOLEAN:
                assert target.n_classes == 3 and np.array_equal(seen, col[~missing])
            elif attr.type == CATEGORICAL:
                assert target.n_classes == len(attr.categories) + 1
            elif mode == STRICT:
                edges = schema.target_edges(attr)
                assert target.n_classes == edges.size + 2
                expected = np.searchsorted(edges, col[~missing], side="left")
                assert np.array_equal(seen, expected)


def test_strict_numeric_bins_do_not_depend_on_the_data():
    a = R.random_dataset(300, R.make_rng("targets-a"))
    b = R.random_dataset(40, R.make_rng("targets-b"), missing=0.5)
    for v, att in ((0, 0), (1, 0)):
        ta, tb = make_target(a, v, att, STRICT), make_target(b, v, att, STRICT)
        assert ta.n_classes == tb.n_classes and ta.name == tb.name


def test_faithful_bin_edges_follow_the_paper_s_rule():
    col = np.arange(100, dtype=np.float64)
    col[5] = np.nan
    edges = faithful_bin_edges(col)
    vals = np.unique(col[:92][~np.isnan(col[:92])])
    q1, q3 = np.percentile(vals, [25, 75])
    h = 2.0 * (q3 - q1) * 100 ** (-0.33)
    assert edges.size > 0 and np.all(np.diff(edges) > h - 1e-12)
    assert edges[0] - vals[0] > h and edges[0] - vals[0] <= h + 1
    assert faithful_bin_edges(np.full(50, 3.0)) is None
    assert faithful_bin_edges(np.array([1.0, np.nan, np.nan])) is None


def _java_bin(x: float, edges: np.ndarray) -> int:
    """The authors' code's assignment, written as its if/else chain: ≤ first cut, then
    ≤ each later cut in turn, else above the last cut."""
    if x <= edges[0]:
        return 0
    if x > edges[-1]:
        return edges.size
    for i in range(1, edges.size):
        if x <= edges[i]:
            return i
    raise AssertionError("unreachable for increasing edges")


def test_faithful_classes_put_a_value_on_a_cut_point_in_the_bin_below():
    edges = np.array([1.0, 2.0, 4.0])
    values = np.array([0.0, 1.0, 1.5, 2.0, 3.0, 4.0, 4.5, -0.0])
    assert faithful_classes(edges, values).tolist() == [0, 0, 1, 1, 2, 2, 3, 0]


def test_faithful_numeric_targets_follow_the_authors_bin_rule():
    ds = R.random_dataset(600, R.make_rng("targets-edges"), missing=0.1)
    on_edge = 0
    for v in (0, 1):
        for a, attr in enumerate(ds.views[v].attributes):
            if attr.type != NUMERIC:
                continue
            col = ds.views[v].values[a]
            target = make_target(ds, v, a, FAITHFUL)
            edges = faithful_bin_edges(col)
            assert target is not None and edges is not None
            missing = np.isnan(col)
            expected = [_java_bin(x, edges) for x in col[~missing]]
            assert target.classes[~missing].tolist() == expected
            assert target.n_classes == edges.size + 2
            on_edge += int(np.isin(col[~missing], edges).sum())
    assert on_edge > 0  # every cut point is a data value: rows sit on the edges
