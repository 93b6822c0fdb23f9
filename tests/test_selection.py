"""dpcore.redescriptions.pruning: Plotly selection → pruning threshold, and prune() (pure, 0 ε)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from dpcore.redescriptions.pruning import prune, selection_signature, threshold_from_selection

SUPPORTS = {"a1b2c3d4:0": 120.0, "a1b2c3d4:1": 35.0, "a1b2c3d4:2": 800.0, "ffff0000:0": 10.0}


def event(points=(), box=(), lasso=()):
    """The shape st.plotly_chart(on_select="rerun") stores under its key."""
    return {"selection": {"points": list(points), "point_indices": list(range(len(points))),
                          "box": list(box), "lasso": list(lasso)}}


def point(custom, x=None, y=0.5):
    p = {"curve_number": 0, "point_number": 0, "point_index": 0, "y": y}
    if custom is not None:
        p["customdata"] = custom
    if x is not None:
        p["x"] = x
    return p


# --------------------------------------------------------------------------- points

def test_click_on_a_point_uses_its_support_by_row_id():
    sel = event(points=[point("a1b2c3d4:0", x=120.0)])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 120.0


def test_row_id_wins_over_the_reported_x():
    # the id is authoritative (x may be rounded or jittered by the frontend)
    sel = event(points=[point("a1b2c3d4:2", x=799.6)])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 800.0


def test_customdata_as_one_element_list():
    sel = event(points=[point(["a1b2c3d4:1"], x=35.0)])
    assert threshold_from_selection(sel, SUPPORTS, 5.0) == 35.0


def test_several_clicked_points_keep_all_of_them():
    sel = event(points=[point("a1b2c3d4:0", 120.0), point("a1b2c3d4:1", 35.0)])
    assert threshold_from_selection(sel, SUPPORTS, 500.0) == 35.0


def test_inner_selection_dict_is_accepted_too():
    sel = event(points=[point("ffff0000:0", 10.0)])["selection"]
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 10.0


def test_missing_customdata_falls_back_to_x():
    sel = event(points=[point(None, x=77.0)])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 77.0


def test_unknown_customdata_falls_back_to_x():
    sel = event(points=[point("not-a-row", x=42.0)])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 42.0


def test_missing_customdata_and_x_keeps_current():
    sel = event(points=[point(None)])
    assert threshold_from_selection(sel, SUPPORTS, 13.0) == 13.0


def test_empty_customdata_list_falls_back_to_x():
    sel = event(points=[point([], x=9.0)])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 9.0


def test_nan_x_is_ignored():
    sel = event(points=[point(None, x=math.nan), point(None, x=50.0)])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 50.0


# --------------------------------------------------------------------------- box

def test_box_uses_its_left_edge():
    sel = event(points=[point("a1b2c3d4:0", 120.0)],
                box=[{"xref": "x", "yref": "y", "x": [300.0, 90.0], "y": [0.1, 0.9]}])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 90.0


def test_box_with_x0_x1_keys():
    sel = event(box=[{"x0": 250.0, "x1": 400.0, "y0": 0, "y1": 1}])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 250.0


def test_box_with_range_form():
    sel = event(box=[{"range": {"x": [60.0, 10.0], "y": [0, 1]}}])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 10.0


def test_empty_box_points_finds_nothing_but_still_sets_threshold():
    # a box over an empty region still moves the threshold to its left edge
    sel = event(box=[{"x": [1000.0, 2000.0], "y": [0, 1]}])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 1000.0


def test_box_left_of_zero_means_keep_everything():
    sel = event(box=[{"x": [-50.0, 30.0], "y": [0, 1]}])
    assert threshold_from_selection(sel, SUPPORTS, 100.0) == 0.0


def test_several_boxes_use_the_leftmost_edge():
    sel = event(box=[{"x": [200.0, 300.0]}, {"x": [150.0, 170.0]}])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 150.0


def test_malformed_box_falls_back_to_points():
    sel = event(points=[point("a1b2c3d4:1", 35.0)], box=[{"x": ["left", None]}])
    assert threshold_from_selection(sel, SUPPORTS, 0.0) == 35.0


# --------------------------------------------------------------------------- empty

@pytest.mark.parametrize("sel", [None, {}, event(), {"selection": {}},
                                 {"selection": None}, "junk", {"selection": {"points": []}}])
def test_empty_or_missing_selection_returns_current(sel):
    assert threshold_from_selection(sel, SUPPORTS, 123.5) == 123.5


def test_lasso_alone_is_not_a_threshold():
    sel = event(lasso=[{"x": [1, 2, 3], "y": [1, 2, 3]}])
    assert threshold_from_selection(sel, SUPPORTS, 7.0) == 7.0


# --------------------------------------------------------------------------- signature

def test_signature_is_none_when_empty_and_stable_otherwise():
    assert selection_signature(None) is None
    assert selection_signature(event()) is None
    a = selection_signature(event(points=[point("a1b2c3d4:0", 120.0)]))
    b = selection_signature(event(points=[point("a1b2c3d4:0", 120.0)]))
    c = selection_signature(event(points=[point("a1b2c3d4:1", 35.0)]))
    assert a is not None and a == b and a != c
    assert selection_signature(event(box=[{"x": [1.0, 2.0]}])) is not None


# --------------------------------------------------------------------------- prune

@dataclass(frozen=True)
class Red:
    id: int
    support_both: float


REDS = [Red(0, 5.0), Red(1, 100.0), Red(2, 99.999), Red(3, 100.0), Red(4, 0.0)]


def test_prune_splits_at_the_threshold_inclusive_and_keeps_order():
    kept, pruned = prune(REDS, 100.0)
    assert [r.id for r in kept] == [1, 3]
    assert [r.id for r in pruned] == [0, 2, 4]


def test_prune_zero_keeps_everything():
    kept, pruned = prune(REDS, 0.0)
    assert kept == REDS and pruned == []


def test_prune_above_everything_prunes_everything():
    kept, pruned = prune(REDS, 1e9)
    assert kept == [] and pruned == REDS


def test_prune_custom_support_reader_and_generator_input():
    rows = ({"id": i, "s": s} for i, s in enumerate([3.0, 30.0, 300.0]))
    kept, pruned = prune(rows, 30.0, support=lambda r: r["s"])
    assert [r["id"] for r in kept] == [1, 2] and [r["id"] for r in pruned] == [0]


def test_prune_is_a_partition():
    for t in (0.0, 5.0, 50.0, 100.0, 101.0):
        kept, pruned = prune(REDS, t)
        assert sorted(r.id for r in kept + pruned) == [r.id for r in REDS]
        assert all(r.support_both >= t for r in kept)
        assert all(r.support_both < t for r in pruned)


@pytest.mark.parametrize("bad", [math.nan, math.inf, "10", None])
def test_prune_rejects_a_non_finite_threshold(bad):
    with pytest.raises(ValueError):
        prune(REDS, bad)


def test_prune_real_redescriptions(clinic_dataset):
    """On a real (tiny, seeded) release: pruning never changes what was released."""
    import numpy as np

    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import MiningParams

    result = mine(clinic_dataset, MiningParams(algorithm="altexpm", in_tr=2, depth=3),
                  rng=np.random.default_rng(3), seed=3)
    supports = sorted(r.support_both for r in result.redescriptions)
    if not supports:
        pytest.skip("the seeded run released nothing")
    median = supports[len(supports) // 2]
    kept, pruned = prune(result.redescriptions, median)
    assert len(kept) + len(pruned) == len(result.redescriptions)
    assert min(r.support_both for r in kept) >= median
