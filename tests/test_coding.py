"""Coding of a view (dpcore.redescriptions.coding): strict mode's candidates come from the
public grid only; every coding groups candidates by attribute with increasing thresholds
(what the kernels' proposal ratio and bitset builder rely on)."""

from __future__ import annotations

import numpy as np
import pytest
import reference as R

from dpcore.data.schema import NUMERIC
from dpcore.redescriptions.coding import code_view_faithful, code_view_strict
from dpcore.redescriptions.kernels import MULTIWAY, THRESHOLD


def test_strict_coding_does_not_depend_on_the_data():
    ds = R.random_dataset(300, R.make_rng("test_trees"), missing=0.1)
    other = R.random_dataset(57, R.make_rng("other-data"), missing=0.4)
    for v in (0, 1):
        a = code_view_strict(ds.schema, ds.views[v])
        b = code_view_strict(other.schema, other.views[v])
        for f in ("cand_attr", "cand_kind", "cand_thr", "cand_nchild", "n_codes"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
        for at, ta, tb in zip(ds.views[v].attributes, a.thresholds, b.thresholds):
            assert np.array_equal(ta, tb)
            if at.type == NUMERIC:
                assert np.array_equal(ta, ds.schema.split_grid(at))


@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_candidates_are_grouped_by_attribute_with_increasing_thresholds(mode):
    rng = R.make_rng("coding-groups")
    ds = R.random_dataset(200, rng, missing=0.2)
    for view in ds.views:
        coded = (code_view_strict(ds.schema, view) if mode == "strict"
                 else code_view_faithful(view, rng))
        attr = np.asarray(coded.cand_attr)
        assert np.all(np.diff(attr) >= 0), "candidates of one attribute are not contiguous"
        for a in np.unique(attr):
            kinds = np.asarray(coded.cand_kind)[attr == a]
            thr = np.asarray(coded.cand_thr)[attr == a]
            assert len(set(kinds.tolist())) == 1
            if kinds[0] == THRESHOLD:
                assert np.all(np.diff(thr) > 0)
                assert np.all(np.asarray(coded.cand_nchild)[attr == a] == 2)
            elif kinds[0] == MULTIWAY:
                assert thr.size == 1
                assert coded.cand_nchild[np.flatnonzero(attr == a)[0]] == coded.n_codes[a]
