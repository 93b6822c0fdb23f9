"""Strict MC-GEN-DP's tree structure: accounting, the edge utility's sensitivity, the public
rule that skips the tree, and that the chosen edges carry a planted dependence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.data.table.schema import schema_from_dict
from dpcore.data.table.table import table_from_frame
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.units import epsilon_to_nano
from dpcore.synthesis.floor import run_floor
from dpcore.synthesis.intervals import result_intervals
from dpcore.synthesis.miner import synthesize
from dpcore.synthesis.params import (
    CORRELATION_GROUPS,
    EDGE,
    FEATURES,
    FLOOR,
    GROUPS,
    HISTOGRAM,
    SELECTION,
    SynthesisParams,
    plan_budget,
    tree_shares,
)
from dpcore.synthesis.tree import (
    _orient,
    feature_codes,
    pair_utilities,
    realised_shares,
    stop_utility,
    tree_bins,
)


def linked_table(n=4_000, seed=0):
    """x1 copies x0 (up to a little noise); x2, x3 independent of both; class shifts x2."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    x0 = rng.uniform(-1, 1, n)
    x1 = np.clip(x0 + 0.05 * rng.standard_normal(n), -1, 1)
    x2 = np.clip(rng.uniform(-1, 1, n) * 0.5 + 0.4 * y, -1, 1)
    x3 = rng.uniform(-1, 1, n)
    schema = schema_from_dict({"name": "linked", "public_demo": True,
                               "label": {"name": "y", "classes": [0, 1]},
                               "features": [{"name": f"x{j}", "type": "numeric",
                                             "bounds": [-1, 1]} for j in range(4)]})
    frame = pd.DataFrame({"y": y, "x0": x0, "x1": x1, "x2": x2, "x3": x3})
    return table_from_frame(frame, schema)


@pytest.fixture(scope="module")
def linked():
    return linked_table()


def test_tree_shares_sum_exactly_to_the_plan_and_name_every_call():
    params = SynthesisParams(epsilon=0.7)
    shares = tree_shares(params, 5)
    assert sum(s.epsilon_nano for s in shares) == sum(s.epsilon_nano for s in plan_budget(params))
    assert sum(s.part == SELECTION and s.phase == FEATURES for s in shares) == 4
    assert sum(s.part == HISTOGRAM and s.phase == GROUPS for s in shares) == 5
    assert sum(s.part == EDGE and s.phase == GROUPS for s in shares) == 4
    with pytest.raises(ParameterError):
        tree_shares(SynthesisParams(feature_groups=[["a"], ["b"]]), 2)


def test_tree_marginals_split_their_share_in_proportion_to_each_features_codes():
    params = SynthesisParams(epsilon=0.7)
    even = tree_shares(params, 5)
    shares = tree_shares(params, 5, [16, 2, 41, 16, 7])
    marg = [s.epsilon_nano for s in shares if s.part == HISTOGRAM]
    # same total as the even split, every other call unchanged
    assert sum(marg) == sum(s.epsilon_nano for s in even if s.part == HISTOGRAM)
    assert [s for s in shares if s.part != HISTOGRAM] == [s for s in even if s.part != HISTOGRAM]
    # ε_j ∝ codes_j: the same noise per feature in total (codes × scale), to a nano-ε
    per_code = [e / c for e, c in zip(marg, [16, 2, 41, 16, 7])]
    assert max(per_code) - min(per_code) < 1.0
    with pytest.raises(ParameterError, match="one count per feature"):
        tree_shares(params, 5, [16, 2])


def test_a_tree_run_spends_exactly_its_charge_in_the_planned_calls(linked):
    params = SynthesisParams(epsilon=5.0)
    acc = PrivacyAccountant(epsilon_to_nano(5.0))
    result = synthesize(linked, params, rng=np.random.default_rng(3), accountant=acc)
    assert result.spent_nano == result.epsilon_nano == epsilon_to_nano(5.0)
    kinds = [c["mechanism"] for c in result.mechanism_calls]
    # N̂_y, 4 marginals, one edge choice per edge plus the one that stopped (if any), the
    # edge tables, which also get the unused rounds' ε
    edges = len(result.groups)
    assert 1 <= edges <= 3
    assert kinds.count("exponential") == min(edges + 1, 3)
    assert len(kinds) == 1 + 4 + min(edges + 1, 3) + edges
    assert all(g["model"].startswith("tree edge") for g in result.groups)
    charged = [c["epsilon_nano"] for c in result.mechanism_calls if "edge table" in c["label"]]
    assert charged == [g["epsilon_nano"] for g in result.groups]
    assert len(result.synthetic) == sum(result.noisy_class_counts.values())


def test_edge_utility_moves_by_at_most_one_when_a_record_is_removed(linked):
    codes, cards = feature_codes(linked, 6)
    labels = linked.labels.astype(np.int64)
    rng = np.random.default_rng(0)
    # released values are held fixed (they are the same outputs on both neighbours)
    marginals = [rng.integers(-5, 400, size=(2, int(k))) for k in cards]
    n_hat = np.array([2_390, 1_610])
    _, base = pair_utilities(codes, cards, labels, marginals, n_hat, [4.0] * len(cards))
    worst = 0.0
    for row in rng.choice(linked.n_rows, size=25, replace=False):
        keep = np.arange(linked.n_rows) != row
        _, other = pair_utilities(codes[keep], cards, labels[keep], marginals, n_hat,
                                  [4.0] * len(cards))
        worst = max(worst, float(np.abs(other - base).max()))
    assert 0.0 < worst <= 1.0 + 1e-9


def test_the_tree_is_skipped_when_pairs_would_be_noise_and_built_when_not():
    params = SynthesisParams(epsilon=0.1)
    assert tree_bins(params, 8, 2, [400, 214]) == 0
    # built at the Adult size; K = 4 with the edge tables at 0.3 of ε_G (TREE_MARGINAL_SHARE)
    assert tree_bins(SynthesisParams(epsilon=1.0), 14, 2, [29_000, 10_000]) == 4
    # the Adult size at ε = 0.1: the noise rule would allow K = 2 only, too coarse to pay
    assert tree_bins(SynthesisParams(epsilon=0.1), 14, 2, [29_000, 10_000]) == 0
    assert tree_bins(SynthesisParams(epsilon=0.1), 14, 2, [290_000, 100_000]) == 4
    assert tree_bins(SynthesisParams(epsilon=10.0, histogram_bins=2), 14, 2, [29_000, 10_000]) == 0
    small = linked_table(n=300, seed=1)
    result = synthesize(small, params, rng=np.random.default_rng(0))
    assert [len(g) for g in result.feature_groups] == [1, 1, 1, 1]   # independent histograms
    assert result.spent_nano == result.epsilon_nano


def _corr01(frame):
    return float(np.corrcoef(frame["x0"], frame["x1"])[0, 1])


def test_the_chosen_edges_carry_a_planted_dependence_the_floor_loses(linked):
    hits, corr = 0, []
    for seed in range(5):
        result = synthesize(linked, SynthesisParams(epsilon=2.0),
                            rng=np.random.default_rng(seed))
        edges = {tuple(sorted(g["features"])) for g in result.groups}
        hits += ("x0", "x1") in edges
        corr.append(_corr01(result.synthetic))
    assert hits == 5
    assert min(corr) > 0.7        # true 0.99; coarse K = 8 pair bins, fine codes inside
    floor = SynthesisParams(algorithm=FLOOR, epsilon=2.0)
    enc, labels, _ = run_floor(linked, floor, rng=np.random.default_rng(0),
                               accountant=PrivacyAccountant(epsilon_to_nano(2.0)))
    assert abs(float(np.corrcoef(enc[:, 0], enc[:, 1])[0, 1])) < 0.1


def test_tree_marginals_are_kept_with_intervals_from_their_own_calls(linked):
    result = synthesize(linked, SynthesisParams(epsilon=3.0), rng=np.random.default_rng(2))
    iv = result_intervals(result)
    assert [m["feature"] for m in iv["marginals"]] == ["x0", "x1", "x2", "x3"]
    assert result.groups[0]["marginal_bins"] == 16 > result.groups[0]["bins"]
    assert all(len(m["low"]["0"]) == 16 for m in iv["marginals"])
    # the intervals' width comes from the tree marginals' own ε (all equal here)
    m = result.noisy_marginals[0]["counts"]["0"]
    lo, hi = iv["marginals"][0]["low"]["0"], iv["marginals"][0]["high"]["0"]
    assert all(h >= max(c, 0) >= lo_ for c, lo_, h in zip(m, lo, hi))


def test_the_groups_structure_stays_available(linked):
    result = synthesize(linked, SynthesisParams(epsilon=5.0, structure=CORRELATION_GROUPS),
                        rng=np.random.default_rng(0))
    assert result.noisy_marginals is None
    assert result.spent_nano == result.epsilon_nano
    with pytest.raises(ParameterError, match="structure"):
        SynthesisParams(structure="chain").validate()


def test_realised_shares_move_unused_rounds_to_the_edge_tables_and_keep_the_total():
    params = SynthesisParams(epsilon=0.7)
    shares = tree_shares(params, 5)
    total = sum(s.epsilon_nano for s in shares)
    for rounds, edges in ((4, 4), (3, 2), (1, 1)):
        spent = realised_shares(shares, 5, rounds, edges)
        assert sum(s.epsilon_nano for s in spent) == total
        assert sum(s.part == SELECTION for s in spent) == rounds
        tables = [s for s in spent if s.part == EDGE]
        assert [s.index for s in tables] == [5 + e for e in range(edges)]
        assert max(s.epsilon_nano for s in tables) - min(s.epsilon_nano for s in tables) <= 1
    assert realised_shares(shares, 5, 4, 4) == shares


def test_stop_weighs_as_much_as_all_open_pairs_at_utility_zero():
    f = 0.3 / 2.0
    assert np.isclose(np.exp(f * stop_utility(12, epsilon_to_nano(0.3))), 12.0)


def test_a_forest_is_oriented_from_each_tree_s_smallest_feature():
    assert _orient([(3, 1), (0, 2)], 5) == [(0, 2), (1, 3)]
    assert _orient([], 3) == []


def independent_table(n=3_000, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    schema = schema_from_dict({"name": "independent", "public_demo": True,
                               "label": {"name": "y", "classes": [0, 1]},
                               "features": [{"name": f"x{j}", "type": "numeric",
                                             "bounds": [-1, 1]} for j in range(4)]})
    frame = pd.DataFrame({"y": y, **{f"x{j}": rng.uniform(-1, 1, n) for j in range(4)}})
    return table_from_frame(frame, schema)


def test_independent_features_stop_the_forest_and_dependent_ones_do_not():
    """On four independent features a spanning tree would add three edges of noise; the stop
    candidate (weight ≥ all pairs at utility ≤ 0) ends it early in most runs. On the linked
    table the strong pair (x0, x1) is always taken."""
    table = independent_table()
    edges = [len(synthesize(table, SynthesisParams(epsilon=5.0),
                            rng=np.random.default_rng(s)).groups) for s in range(6)]
    assert sum(e < 3 for e in edges) >= 3, edges
