"""MCMCTreePair's two pair scores (docs/PRIVACY.md S2 and S2c): the count-scale score
Q(T_L) + [Q(T_R) − Q(root of T_R)], Q(T) = Σ_leaves Σ_c n_c²/|leaf| in rows, has
sensitivity 3 under add/remove-one-row neighbours and is not normalised by N; the paper's
score has sensitivity 1.

The property test runs the real strict kernel (``bitset_mcmc.mcmc_tree_pair_bits``) on a
random dataset D and on D′ = D with one row added or removed, with the same seed and an
ε so small (10⁻³⁰⁰) that every Metropolis–Hastings decision is the data-independent
min(1, q ratio) in floating point: both chains then visit the same tree pairs (checked:
the final structures are equal), and the kernel's own score traces give the score of each
visited pair on D and on D′. The largest difference must not exceed the stated Δ.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, Attribute, Schema, ViewSpec
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions.coding import code_dataset_strict
from dpcore.redescriptions.kernels.scores import (
    PAIR_SENSITIVITY_COUNT,
    PAIR_SENSITIVITY_PAPER,
)
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import TreeParams, plan_budget, read_params
from dpcore.redescriptions.results import RunResult
from dpcore.redescriptions.trees import cands_matrix, child_bitsets
from dpcore.registry import (
    ALGORITHM_SPECS,
    COUNT_SCORE,
    FAITHFUL,
    MCMCTREEPAIR,
    PAPER_SCORE,
    STRICT,
    tree_score_of,
)

TINY_EPSILON = 1e-300
SCHEMA = Schema("score", (Attribute("a", 0, BOOLEAN),
                          Attribute("x", 0, NUMERIC, domain=(0.0, 1.0)),
                          Attribute("c", 1, CATEGORICAL, categories=("p", "q", "r")),
                          Attribute("z", 1, NUMERIC, domain=(0.0, 1.0))),
                (ViewSpec("l"), ViewSpec("r")), grid_bins=3)
N_CLASSES = 3


def _rows(draw_rows: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    left = np.array([[r[0] for r in draw_rows], [r[1] for r in draw_rows]], dtype=float)
    right = np.array([[r[2] for r in draw_rows], [r[3] for r in draw_rows]], dtype=float)
    y = np.array([r[4] for r in draw_rows], dtype=np.int64)
    return left, right, y


def _pair_trace(rows: list[tuple], seed: int, depth: int, count_scale: bool, mc_iter: int):
    """Score trace and final structures of the strict pair chain at ε = 10⁻³⁰⁰."""
    left, right, y = _rows(rows)
    data = TwoViewDataset.from_arrays(SCHEMA, left, right)
    coded_l, coded_r = code_dataset_strict(data)
    bits_l, off_l = child_bitsets(coded_l)
    bits_r, off_r = child_bitsets(coded_r)
    nodes_l = np.zeros((4, K.tree_capacity(coded_l.fanout, depth)), dtype=np.int64)
    nodes_r = np.zeros((4, K.tree_capacity(coded_r.fanout, depth)), dtype=np.int64)
    trace = np.zeros(mc_iter, dtype=np.float64)
    B.mcmc_tree_pair_bits(cands_matrix(coded_l), bits_l, off_l, coded_l.fanout,
                          K.node_depths(coded_l.fanout, depth), nodes_l,
                          cands_matrix(coded_r), bits_r, off_r, coded_r.fanout,
                          K.node_depths(coded_r.fanout, depth), nodes_r,
                          y, N_CLASSES, len(rows), depth, TINY_EPSILON, mc_iter,
                          np.random.default_rng(seed), trace, None, True, count_scale)
    return trace, nodes_l, nodes_r


_value = st.one_of(st.just(np.nan), st.floats(0.0, 1.0))
_row = st.tuples(st.sampled_from([0.0, 1.0, np.nan]), _value,
                 st.sampled_from([0.0, 1.0, 2.0, np.nan]), _value,
                 st.integers(0, N_CLASSES - 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_row, min_size=1, max_size=40), extra=_row, add=st.booleans(),
       seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 3),
       count_scale=st.booleans())
def test_score_changes_by_at_most_its_sensitivity_between_neighbours(
        rows, extra, add, seed, depth, count_scale):
    """D vs D′ = D plus one row (add) or D minus its last row (remove): at every visited
    tree pair, |S_D − S_D′| ≤ Δ (3 for the count-scale score, 1 for the paper's)."""
    if add:
        d, d2 = rows, rows + [extra]
    elif len(rows) >= 2:
        d, d2 = rows, rows[:-1]
    else:
        d, d2 = rows + [extra], rows
    t1, l1, r1 = _pair_trace(d, seed, depth, count_scale, 40)
    t2, l2, r2 = _pair_trace(d2, seed, depth, count_scale, 40)
    # Same tree pairs visited on both datasets (the coupling the comparison relies on).
    assert np.array_equal(l1[K.SPLIT], l2[K.SPLIT]) and np.array_equal(r1[K.SPLIT],
                                                                         r2[K.SPLIT])
    bound = PAIR_SENSITIVITY_COUNT if count_scale else PAIR_SENSITIVITY_PAPER
    assert np.max(np.abs(t1 - t2)) <= bound + 1e-9
    if count_scale:
        # 0 ≤ Q(T) ≤ rows reaching a leaf and Q(root) ≤ N, so −N ≤ S ≤ 2N.
        assert np.all(t1 <= 2 * len(d) + 1e-9) and np.all(t1 >= -len(d) - 1e-9)
    else:
        assert np.all((t1 >= 0) & (t1 <= 1 + 1e-12))


def test_count_score_bound_three_is_approached():
    """50 rows of one kind and 1 of another; the added row is of the rare kind. Every
    depth-1 pair separates the two kinds, so the row joins a pure leaf of T_L with its class
    (+1), a pure leaf of T_R with its T_L leaf as class (+1), and makes T_R's root less pure
    (2501/51 → 2504/52, −0.885): the score moves by 2.885, near Δ = 3 and above 2."""
    rows = [(1.0, 0.1, 0.0, 0.1, 0)] * 50 + [(0.0, 0.9, 1.0, 0.9, 1)]
    t1, *_ = _pair_trace(rows, 7, 1, True, 20)
    t2, *_ = _pair_trace(rows + [(0.0, 0.9, 1.0, 0.9, 1)], 7, 1, True, 20)
    change = np.abs(t2 - t1)
    assert np.allclose(change, 2 + 2500 / 51 + 1 / 51 - 2504 / 52)
    assert 2.8 < change.max() <= PAIR_SENSITIVITY_COUNT


def test_count_score_is_n_times_the_paper_purities():
    """The kernel's score of its final pair, recomputed by hand from the rows: the count
    trace is Q_L + Q_R − Q(root of T_R) and the paper trace g_L(1 + g_R)/2 with g = Q/N."""
    rows = [(1.0, 0.1, 0.0, 0.1, 0)] * 6 + [(0.0, 0.1, 0.0, 0.1, 1)] * 3 + \
        [(0.0, 0.1, 1.0, 0.1, 1)] * 4
    for count_scale in (True, False):
        trace, nodes_l, nodes_r = _pair_trace(rows, 3, 1, count_scale, 10)
        left, right, y = _rows(rows)
        data = TwoViewDataset.from_arrays(SCHEMA, left, right)
        coded_l, coded_r = code_dataset_strict(data)
        leaf_l = K.leaf_rows_for_codes(coded_l.codes, cands_matrix(coded_l), coded_l.fanout,
                                       nodes_l, len(rows))
        leaf_r = K.leaf_rows_for_codes(coded_r.codes, cands_matrix(coded_r), coded_r.fanout,
                                       nodes_r, len(rows))

        def purity(leaf, classes):
            q = 0.0
            for u in set(leaf[leaf >= 0].tolist()):
                _, counts = np.unique(classes[leaf == u], return_counts=True)
                q += float(np.sum(counts ** 2)) / counts.sum()
            return q

        q_l = purity(leaf_l, y)
        q_r = purity(leaf_r, leaf_l)   # T_L's leaf as class, −1 = no leaf of T_L
        n = len(rows)
        root = purity(np.zeros(n, dtype=np.int64), leaf_l)
        expected = q_l + q_r - root if count_scale else (q_l / n) * (1 + q_r / n) / 2
        assert trace[-1] == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------ the parameter

def test_tree_score_is_validated_and_offered_in_strict_mode_only():
    with pytest.raises(ParameterError, match="tree_score"):
        TreeParams(tree_score="normalised").validate()
    spec = ALGORITHM_SPECS[MCMCTREEPAIR]
    assert "tree_score" in spec.parameters_used(STRICT)
    assert "tree_score" not in spec.parameters_used(FAITHFUL)
    assert spec.help("tree_score")


def test_old_results_without_tree_score_read_as_the_paper_score():
    stored = TreeParams().to_dict()
    stored.pop("tree_score")
    assert read_params(stored).tree_score == PAPER_SCORE
    assert tree_score_of(stored) == PAPER_SCORE
    assert tree_score_of({**stored, "tree_score": COUNT_SCORE}) == COUNT_SCORE
    assert tree_score_of({**stored, "tree_score": COUNT_SCORE, "mode": FAITHFUL}) == PAPER_SCORE


def _two_view(n_rows: int, seed: int) -> TwoViewDataset:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n_rows).astype(float)
    x = np.clip(a * 0.6 + rng.random(n_rows) * 0.4, 0, 1)
    c = np.where(rng.random(n_rows) < 0.85, a, 2.0)
    z = np.clip(x + rng.normal(0, 0.05, n_rows), 0, 1)
    return TwoViewDataset.from_arrays(SCHEMA, np.stack([a, x]), np.stack([c, z]))


@pytest.mark.parametrize("score", [COUNT_SCORE, PAPER_SCORE])
def test_a_run_charges_the_pair_at_the_score_sensitivity_and_spends_the_plan(score):
    params = TreeParams(algorithm=MCMCTREEPAIR, epsilon=1.0, in_tr=2, depth=2,
                          mc_iter=200, tree_score=score)
    total = sum(s.epsilon_nano for s in plan_budget(params))
    result = mine(_two_view(300, 1), params, rng=np.random.default_rng(5),
                  accountant=PrivacyAccountant(total))
    assert result.epsilon_nano == total
    pairs = [c for c in result.mechanism_calls if c["mechanism"] == "mcmc"]
    want = PAIR_SENSITIVITY_COUNT if score == COUNT_SCORE else PAIR_SENSITIVITY_PAPER
    assert pairs and all(c["sensitivity"] == want for c in pairs)
    assert RunResult.from_json(result.to_json()).params["tree_score"] == score


def test_faithful_mode_keeps_the_paper_score():
    params = TreeParams(algorithm=MCMCTREEPAIR, epsilon=1.0, in_tr=1, depth=2,
                          mc_iter=100, mode=FAITHFUL, noise="continuous",
                          tree_score=COUNT_SCORE)
    total = sum(s.epsilon_nano for s in plan_budget(params))
    result = mine(_two_view(200, 2), params, rng=np.random.default_rng(5),
                  accountant=PrivacyAccountant(total))
    pairs = [c for c in result.mechanism_calls if c["mechanism"] == "mcmc"]
    assert pairs and all(c["sensitivity"] == PAIR_SENSITIVITY_PAPER for c in pairs)
    trace = next(iter(result.diagnostics.score_traces.values()))
    assert max(trace) <= 1.0


def test_count_score_chain_prefers_the_matching_pair():
    """With a planted a ⇔ c relation on 300 rows and ε = 1 per pair, the count-scale chain
    climbs: its late scores are above its first ones (a random walk would not be)."""
    data = _two_view(300, 3)
    means = {}
    for score in (COUNT_SCORE,):
        params = TreeParams(algorithm=MCMCTREEPAIR, epsilon=4.0, omega=0.5, in_tr=2,
                              depth=1, mc_iter=300, tree_score=score)
        finals, firsts = [], []
        for seed in range(4):
            result = mine(data, params, rng=np.random.default_rng(seed))
            for trace in result.diagnostics.score_traces.values():
                finals.append(np.mean(trace[-50:]))
                firsts.append(trace[0])
        means[score] = (np.mean(finals), np.mean(firsts))
    assert means[COUNT_SCORE][0] > means[COUNT_SCORE][1]
