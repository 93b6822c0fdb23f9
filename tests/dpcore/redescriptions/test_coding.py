"""Coding of a view (dpcore.redescriptions.coding): strict mode's candidates come from the
public grid only; every coding groups candidates by attribute with increasing thresholds
(what the kernels' proposal ratio and bitset builder rely on); the prepared faithful coder
gives exactly the codes, thresholds and candidates of the per-tree construction it replaced
(kept here as the reference), alone and inside seeded faithful runs."""

from __future__ import annotations

import numpy as np
import pytest

import dpcore.redescriptions.coding as C
import dpcore.redescriptions.mining as mining
from dpcore.data.dataset import ViewData
from dpcore.data.loading import load_dataset, sample_data_dir
from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, Attribute
from dpcore.redescriptions.coding import FaithfulCoder, code_view_faithful, code_view_strict
from dpcore.redescriptions.kernels import MULTIWAY, THRESHOLD
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import TreeParams
from dpcore.registry import TREE_ALGORITHMS
from tests.support import reference as R


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


# ---------------------------------------------------------------------------
# Faithful coding: the vectorised FaithfulCoder against the per-candidate construction it
# replaced (kept here verbatim in spirit as the reference: np.unique of the sampled column,
# searchsorted of every row, one Python append per candidate).
# ---------------------------------------------------------------------------

def _reference_faithful(view, rng, sample_share=0.8):
    n_rows = view.values.shape[1]
    take = rng.random(n_rows) < sample_share
    codes = np.empty(view.values.shape, dtype=np.uint16)
    n_codes, thresholds = [], []
    attr, kind, thr, nchild = [], [], [], []
    for a, at in enumerate(view.attributes):
        col = view.values[a]
        if at.type != NUMERIC:
            thresholds.append(np.empty(0))
            c = np.where(np.isnan(col), 0, col).astype(np.uint16)
            c[np.isnan(col)] = C.MISSING
            codes[a] = c
            n_codes.append(2 if at.type == BOOLEAN else len(at.categories))
            if at.type == BOOLEAN:
                attr.append(a), kind.append(THRESHOLD), thr.append(0), nchild.append(2)
            elif len(at.categories) <= C.MAX_MULTIWAY:
                attr.append(a), kind.append(MULTIWAY), thr.append(0)
                nchild.append(len(at.categories))
            else:
                for c in range(len(at.categories)):
                    attr.append(a), kind.append(C.EQUALS), thr.append(c), nchild.append(2)
            continue
        sample = col[take]
        vals = np.unique(sample[~np.isnan(sample)])
        if vals.size > C.MAX_CODES:
            vals = vals[np.linspace(0, vals.size - 1, C.MAX_CODES).astype(np.int64)]
        t = vals[:-1] if vals.size > 1 else vals
        thresholds.append(t)
        c = np.searchsorted(t, col, side="left").astype(np.uint16)
        c[np.isnan(col)] = C.MISSING
        codes[a] = c
        n_codes.append(len(t) + 1)
        for j in range(len(t)):
            attr.append(a), kind.append(THRESHOLD), thr.append(j), nchild.append(2)
    return codes, np.asarray(n_codes), thresholds, [np.asarray(x) for x in
                                                     (attr, kind, thr, nchild)]


def _mixed_view(n_rows, rng, n_numeric=6, missing=0.15):
    """Boolean, 3- and 7-category, and numeric columns: heavy ties, -0.0 next to 0.0, a
    constant column, values one unit in the last place apart, infinities and subnormals, an
    all-missing column, a column that is missing but for one row."""
    attrs, cols = [], []

    def add(at, col):
        col = col.astype(np.float64)
        col[rng.random(n_rows) < missing] = np.nan
        attrs.append(at), cols.append(col)

    add(Attribute("b", 0, BOOLEAN), rng.integers(0, 2, n_rows))
    add(Attribute("c3", 0, CATEGORICAL, categories=("x", "y", "z")), rng.integers(0, 3, n_rows))
    add(Attribute("c7", 0, CATEGORICAL, categories=tuple("abcdefg")), rng.integers(0, 7, n_rows))
    for i in range(n_numeric):
        scale = [1, 4, 50, 10**6][i % 4]
        add(Attribute(f"n{i}", 0, NUMERIC), np.round(rng.normal(0, 1, n_rows) * scale) / 4)
    add(Attribute("signed_zero", 0, NUMERIC), rng.choice([-0.0, 0.0, 1.5, -2.0], n_rows))
    add(Attribute("constant", 0, NUMERIC), np.full(n_rows, 3.25))
    # values a few units in the last place apart (the coder's sort keys drop low bits)
    add(Attribute("close", 0, NUMERIC), 1.0 + rng.integers(0, 5, n_rows) * np.spacing(1.0))
    add(Attribute("extremes", 0, NUMERIC),
        rng.choice([-np.inf, np.inf, -1e308, 1e-310, -5e-324, 2.0], n_rows))
    attrs.append(Attribute("all_missing", 0, NUMERIC)), cols.append(np.full(n_rows, np.nan))
    one = np.full(n_rows, np.nan)
    one[rng.integers(n_rows)] = 7.0
    attrs.append(Attribute("one_value", 0, NUMERIC)), cols.append(one)
    return ViewData(tuple(attrs), np.ascontiguousarray(np.stack(cols)))


def _assert_same_coding(coded, ref):
    codes, n_codes, thresholds, cand = ref
    assert coded.codes.dtype == np.uint16 and coded.codes.flags.c_contiguous
    assert np.array_equal(coded.codes, codes)
    assert np.array_equal(coded.n_codes, n_codes)
    assert len(coded.thresholds) == len(thresholds)
    for got, want in zip(coded.thresholds, thresholds):
        assert got.dtype == want.dtype and got.shape == want.shape
        # bit-identical, so printed conditions (e.g. "<= -0.0") are unchanged
        assert got.tobytes() == want.tobytes()
    for f, want in zip(("cand_attr", "cand_kind", "cand_thr", "cand_nchild"), cand):
        got = getattr(coded, f)
        assert got.dtype == np.int64 and np.array_equal(got, want), f
    assert coded.fanout == int(cand[3].max())


@pytest.mark.parametrize("n_rows", [1, 2, 37, 500])
def test_faithful_coder_equals_the_per_candidate_construction(n_rows):
    rng = R.make_rng(f"faithful-coder-{n_rows}")
    view = _mixed_view(n_rows, rng)
    coder = FaithfulCoder(view)
    for k in range(6):
        share = [0.8, 0.8, 0.3, 1.0, 0.0, 0.8][k]
        seed = int(rng.integers(2**32))
        ref = _reference_faithful(view, np.random.default_rng(seed), share)
        mine_rng = np.random.default_rng(seed)
        _assert_same_coding(coder.code(mine_rng, share), ref)
        # both drew exactly one uniform per row from the stream
        assert mine_rng.random() == np.random.default_rng(seed).random(n_rows + 1)[-1]
    seed = int(rng.integers(2**32))
    _assert_same_coding(code_view_faithful(view, np.random.default_rng(seed)),
                        _reference_faithful(view, np.random.default_rng(seed)))


def test_faithful_coder_views_without_numeric_attributes_and_many_distinct_values():
    rng = R.make_rng("faithful-coder-wide")
    ds = R.random_dataset(300, rng, missing=0.2)
    for view in ds.views:
        coder = FaithfulCoder(view)
        for _ in range(3):
            seed = int(rng.integers(2**32))
            _assert_same_coding(coder.code(np.random.default_rng(seed)),
                                _reference_faithful(view, np.random.default_rng(seed)))
    # A Boolean-only view: one coding for every tree (it does not depend on the sample).
    n = 50
    flags = ViewData(tuple(Attribute(f"f{i}", 0, BOOLEAN) for i in range(4)),
                     np.ascontiguousarray(rng.integers(0, 2, (4, n)).astype(np.float64)))
    coder = FaithfulCoder(flags)
    for _ in range(2):
        seed = int(rng.integers(2**32))
        _assert_same_coding(coder.code(np.random.default_rng(seed)),
                            _reference_faithful(flags, np.random.default_rng(seed)))
    # More distinct sampled values than MAX_CODES: thinned like the reference.
    n = C.MAX_CODES + 3000
    wide = ViewData((Attribute("w", 0, NUMERIC), Attribute("b", 0, BOOLEAN)),
                    np.ascontiguousarray(np.stack([rng.permutation(n) / 8.0,
                                                   rng.integers(0, 2, n).astype(float)])))
    seed = int(rng.integers(2**32))
    _assert_same_coding(FaithfulCoder(wide).code(np.random.default_rng(seed), 0.99),
                        _reference_faithful(wide, np.random.default_rng(seed), 0.99))


def _release(result) -> dict:
    out = result.to_dict()
    out.pop("run_id"), out.pop("created_at")
    return out


@pytest.mark.parametrize("algorithm", TREE_ALGORITHMS)
def test_faithful_mining_is_unchanged_by_the_prepared_coder(algorithm, monkeypatch):
    """A seeded faithful run (one coder per view, shared by the trial threads) releases
    exactly what it releases when every tree's view is coded by the reference construction
    from the trial's stream."""
    ds = load_dataset(sample_data_dir() / "cms_small")
    params = TreeParams(algorithm=algorithm, mode="faithful", epsilon=1.0, in_tr=2,
                        mc_iter=200)
    fast = mine(ds, params, rng=np.random.default_rng(5), seed=5, threads=2)

    def reference_coded(run, view, rng):
        v = run.dataset.views[view]
        codes, n_codes, thresholds, cand = _reference_faithful(v, rng)
        return C.CodedView(v, codes, n_codes.astype(np.int64), thresholds, *cand,
                           fanout=int(cand[3].max()))

    monkeypatch.setattr(mining._Run, "coded", reference_coded)
    slow = mine(ds, params, rng=np.random.default_rng(5), seed=5, threads=1)
    assert fast.trees and _release(fast) == _release(slow)
