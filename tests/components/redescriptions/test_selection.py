"""components.redescriptions.selection: Plotly selection → pruning threshold (pure, 0 ε), and
dpcore.redescriptions.pruning.prune()."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from components.redescriptions.selection import (
    box_ranges,
    covered_by_boxes,
    selection_signature,
    threshold_from_selection,
)
from dpcore.redescriptions.pruning import prune

#: row id → (noisy support |E11|, noisy Jaccard)
POINTS = {"a1b2c3d4:0": (120.0, 0.30), "a1b2c3d4:1": (35.0, 0.90),
          "a1b2c3d4:2": (800.0, 0.60), "ffff0000:0": (10.0, 0.95)}


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


def threshold(sel, current=0.0):
    return threshold_from_selection(sel, POINTS, current).threshold


# --------------------------------------------------------------------------- points

def test_click_on_a_point_uses_its_support_by_row_id():
    choice = threshold_from_selection(event(points=[point("a1b2c3d4:0", x=120.0)]), POINTS, 0.0)
    assert choice.threshold == 120.0 and choice.changed and choice.selected == ("a1b2c3d4:0",)


def test_row_id_wins_over_the_reported_x():
    # the id is authoritative (x may be rounded or jittered by the frontend)
    assert threshold(event(points=[point("a1b2c3d4:2", x=799.6)])) == 800.0


def test_customdata_as_one_element_list():
    assert threshold(event(points=[point(["a1b2c3d4:1"], x=35.0)]), 5.0) == 35.0


def test_several_clicked_points_keep_all_of_them():
    sel = event(points=[point("a1b2c3d4:0", 120.0), point("a1b2c3d4:1", 35.0)])
    assert threshold(sel, 500.0) == 35.0


def test_inner_selection_dict_is_accepted_too():
    assert threshold(event(points=[point("ffff0000:0", 10.0)])["selection"]) == 10.0


def test_missing_customdata_falls_back_to_x():
    assert threshold(event(points=[point(None, x=77.0)])) == 77.0


def test_unknown_customdata_falls_back_to_x():
    assert threshold(event(points=[point("not-a-row", x=42.0)])) == 42.0


def test_missing_customdata_and_x_keeps_current():
    choice = threshold_from_selection(event(points=[point(None)]), POINTS, 13.0)
    assert choice.threshold == 13.0 and not choice.changed


def test_empty_customdata_list_falls_back_to_x():
    assert threshold(event(points=[point([], x=9.0)])) == 9.0


def test_nan_x_is_ignored():
    assert threshold(event(points=[point(None, x=math.nan), point(None, x=50.0)])) == 50.0


# --------------------------------------------------------------------------- box

def test_a_box_selects_what_it_covers_on_both_axes():
    """Issue: the box set the threshold to its left edge and ignored its height. A box from
    x = 0 to 1000 but only J ≥ 0.5 covers 35 (J .9), 800 (J .6) and 10 (J .95) — not 120
    (J .3) — so the threshold is the smallest of their supports, 10, not the edge 0."""
    box = {"xref": "x", "yref": "y", "x": [0.0, 1000.0], "y": [0.5, 1.0]}
    choice = threshold_from_selection(event(box=[box]), POINTS, 500.0)
    assert set(choice.selected) == {"a1b2c3d4:1", "a1b2c3d4:2", "ffff0000:0"}
    assert choice.threshold == 10.0 and choice.changed


def test_the_box_height_matters():
    low = {"x": [0.0, 1000.0], "y": [0.0, 0.7]}        # 120 (J .3) and 800 (J .6)
    high = {"x": [0.0, 1000.0], "y": [0.7, 1.0]}       # 35 (J .9) and 10 (J .95)
    assert threshold(event(box=[low])) == 120.0
    assert threshold(event(box=[high])) == 10.0


def test_the_box_left_edge_is_not_the_threshold():
    box = {"x": [100.0, 900.0], "y": [0.0, 1.0]}       # covers 120 and 800
    assert threshold(event(box=[box])) == 120.0


def test_a_box_wins_over_the_points_plotly_reports_in_it():
    box = {"x": [300.0, 900.0], "y": [0.0, 1.0]}
    sel = event(points=[point("a1b2c3d4:0", 120.0)], box=[box])
    assert threshold(sel) == 800.0


def test_box_with_x0_x1_keys():
    assert threshold(event(box=[{"x0": 100.0, "x1": 400.0, "y0": 0, "y1": 1}])) == 120.0


def test_box_with_range_form():
    assert threshold(event(box=[{"range": {"x": [60.0, 1.0], "y": [1, 0.9]}}])) == 10.0


def test_a_box_over_no_point_keeps_the_threshold_and_says_so():
    choice = threshold_from_selection(event(box=[{"x": [1000.0, 2000.0], "y": [0, 1]}]),
                                      POINTS, 77.0)
    assert choice.threshold == 77.0 and not choice.changed and choice.selected == ()
    assert "covers no redescription" in choice.note


def test_several_boxes_select_their_union():
    sel = event(box=[{"x": [700.0, 900.0], "y": [0, 1]}, {"x": [100.0, 130.0], "y": [0, 1]}])
    choice = threshold_from_selection(sel, POINTS, 0.0)
    assert set(choice.selected) == {"a1b2c3d4:0", "a1b2c3d4:2"} and choice.threshold == 120.0


def test_box_edges_are_inclusive_and_corners_in_any_order():
    assert covered_by_boxes([{"x": [120.0, 35.0], "y": [0.9, 0.3]}], POINTS) == \
        ["a1b2c3d4:0", "a1b2c3d4:1"]


def test_a_box_without_a_y_range_is_not_used():
    assert box_ranges({"x": [0.0, 1.0]}) is None
    sel = event(points=[point("a1b2c3d4:1", 35.0)], box=[{"x": [0.0, 1000.0]}])
    assert threshold(sel) == 35.0                       # falls back to the points


def test_a_box_of_no_area_is_a_click():
    sel = event(points=[point("a1b2c3d4:1", 35.0)], box=[{"x": [35.0, 35.0], "y": [0.9, 0.9]}])
    assert box_ranges(sel["selection"]["box"][0]) is None
    assert threshold(sel) == 35.0


def test_malformed_box_falls_back_to_points():
    sel = event(points=[point("a1b2c3d4:1", 35.0)], box=[{"x": ["left", None]}])
    assert threshold(sel) == 35.0


# --------------------------------------------------------------------------- empty

@pytest.mark.parametrize("sel", [None, {}, event(), {"selection": {}},
                                 {"selection": None}, "junk", {"selection": {"points": []}}])
def test_empty_or_missing_selection_returns_current(sel):
    choice = threshold_from_selection(sel, POINTS, 123.5)
    assert choice.threshold == 123.5 and not choice.changed


def test_lasso_alone_is_not_a_threshold():
    assert threshold(event(lasso=[{"x": [1, 2, 3], "y": [1, 2, 3]}]), 7.0) == 7.0


# --------------------------------------------------------------------------- signature

def test_signature_is_none_when_empty_and_stable_otherwise():
    assert selection_signature(None) is None
    assert selection_signature(event()) is None
    a = selection_signature(event(points=[point("a1b2c3d4:0", 120.0)]))
    b = selection_signature(event(points=[point("a1b2c3d4:0", 120.0)]))
    c = selection_signature(event(points=[point("a1b2c3d4:1", 35.0)]))
    assert a is not None and a == b and a != c
    assert selection_signature(event(box=[{"x": [1.0, 2.0], "y": [0, 1]}])) is not None


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
    from dpcore.redescriptions.params import TreeParams

    result = mine(clinic_dataset, TreeParams(algorithm="altexpm", in_tr=2, depth=3),
                  rng=np.random.default_rng(3), seed=3)
    supports = sorted(r.support_both for r in result.redescriptions)
    if not supports:
        pytest.skip("the seeded run released nothing")
    median = supports[len(supports) // 2]
    kept, pruned = prune(result.redescriptions, median)
    assert len(kept) + len(pruned) == len(result.redescriptions)
    assert min(r.support_both for r in kept) >= median
