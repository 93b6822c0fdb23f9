"""The miners end to end: exact accounting, no data-derived leaks in strict mode,
bad input, and what they find on the synthetic clinic data."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections import defaultdict

import numpy as np
import pytest

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import ParameterError
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.evaluate import evaluate
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import TreeParams, family_type, nominal_budget, plan_budget
from dpcore.redescriptions.results import RunResult

SEED = int(os.environ.get("DPRM_TEST_SEED", "7"))


def toy_dataset(n_rows: int = 400, seed: int = SEED, missing: bool = True) -> TwoViewDataset:
    """Small two-view data with a planted rule D0 ∨ D1 ⇔ L0 > 60, missing values, categories."""
    rng = np.random.default_rng(seed)
    left = (rng.random((6, n_rows)) < 0.3).astype(float)
    left[5] = rng.integers(0, 3, n_rows)
    right = rng.random((4, n_rows)) * 100
    right[0] = np.where(left[0] + left[1] > 0, 60 + 40 * rng.random(n_rows),
                        60 * rng.random(n_rows))
    if missing:
        right[2, :7] = np.nan
    attrs = [Attribute(f"D{i}", 0, "boolean") for i in range(5)]
    attrs.append(Attribute("GROUP", 0, "categorical", categories=("a", "b", "c")))
    attrs += [Attribute(f"L{i}", 1, "numeric", domain=(0.0, 100.0)) for i in range(4)]
    schema = Schema("toy", tuple(attrs), (ViewSpec("left"), ViewSpec("right")),
                    public_demo=True)
    return TwoViewDataset.from_arrays(schema, left, right)


def slot_of(label: str) -> tuple[int, int, str]:
    """Map a mechanism call's label to its budget slot (trial, step, role)."""
    m = re.match(r"trial (\d+)(?: step (\d+))? (tree|extraction)", label)
    assert m, f"unexpected mechanism label {label!r}"
    trial, step, role = int(m[1]), int(m[2] or 0), m[3]
    return trial, step, "extract" if role == "extraction" else "tree"


GRID = [(alg, eps, omega, in_tr, rm_iter)
        for alg in ("mcmctreepair", "altmcmc", "altexpm")
        for eps in (0.3, 1.0, 2.7)
        for omega in (0.1, 0.5)
        for in_tr in (1, 3)
        for rm_iter in (1, 2)
        if not (alg == "mcmctreepair" and rm_iter == 2)
        and not (alg != "mcmctreepair" and omega == 0.5)]


@pytest.mark.parametrize("algorithm,epsilon,omega,in_tr,rm_iter", GRID)
def test_charges_sum_exactly_to_epsilon_and_follow_the_split(algorithm, epsilon, omega, in_tr,
                                                             rm_iter):
    ds = toy_dataset()
    params = family_type(algorithm)(algorithm=algorithm, epsilon=epsilon, omega=omega, in_tr=in_tr,
                          rm_iter=rm_iter, mc_iter=30)
    result = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED)
    spent = defaultdict(int)
    for call in result.mechanism_calls:
        spent[slot_of(call["label"])] += call["epsilon_nano"]
    planned = {(s.trial, s.step, s.role): s.epsilon_nano for s in plan_budget(params)}
    assert dict(spent) == planned
    assert sum(spent.values()) == epsilon_to_nano(epsilon) == result.epsilon_nano
    if algorithm == "mcmctreepair":
        for t in range(in_tr):
            tree, extract = planned[(t, 0, "tree")], planned[(t, 0, "extract")]
            assert abs(tree / (tree + extract) - omega) < 1e-8
    else:
        assert len(set(planned.values()) - {max(planned.values()) - 1}) == 1, \
            "AltX parts must be equal up to one nano-ε"
        assert len(planned) == in_tr * (2 * rm_iter + 1)


@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_altexpm_level_epsilon_is_a_depth_share(mode):
    """Each drawn level of an AltExpM tree gets ε_tree/d (d = ``depth``). Faithful mode, as
    the authors' code, draws d − 1 levels and charges the d-th part as unused; strict draws
    d levels. A tree's records sum to its slot either way."""
    params = TreeParams(algorithm="altexpm", mode=mode, epsilon=1.0, in_tr=1, rm_iter=1,
                          depth=4)
    result = mine(toy_dataset(), params, rng=np.random.default_rng(SEED))
    per_tree = defaultdict(list)
    for c in result.mechanism_calls:
        if c["mechanism"] == "exponential":
            per_tree[c["label"].split(" level ")[0]].append(c)
    assert len(per_tree) == 2
    for calls in per_tree.values():
        tree_eps = sum(c["epsilon_nano"] for c in calls)
        assert len(calls) == 4
        assert all(abs(4 * c["epsilon_nano"] - tree_eps) <= 4 for c in calls)
        unused = ["unused" in c["label"] for c in calls]
        assert unused == ([False] * 3 + [True] if mode == "faithful" else [False] * 4)
    depth = max(len(conds) for t in result.trees for conds in t.leaf_conditions)
    assert depth <= (3 if mode == "faithful" else 4)


def test_altexpm_charges_each_level_once_with_sensitivity_two():
    params = TreeParams(algorithm="altexpm", epsilon=1.0, in_tr=2, rm_iter=1, depth=3)
    result = mine(toy_dataset(), params, rng=np.random.default_rng(SEED))
    levels = [c for c in result.mechanism_calls if c["mechanism"] == "exponential"]
    assert len(levels) == 2 * 2 * 3  # trials × trees per trial × depth
    assert all(c["sensitivity"] == 2.0 for c in levels)
    extractions = [c for c in result.mechanism_calls if "extraction" in c["label"]]
    assert len(extractions) == 2 and all(c["sensitivity"] == 1 for c in extractions)


def test_faithful_mode_charges_the_true_cost_of_three_histograms():
    params = TreeParams(algorithm="mcmctreepair", epsilon=1.0, in_tr=2, mc_iter=30,
                          mode="faithful")
    result = mine(toy_dataset(), params, rng=np.random.default_rng(SEED))
    nominal = sum(s.epsilon_nano for s in nominal_budget(params))
    extract_nominal = sum(s.epsilon_nano for s in nominal_budget(params) if s.role == "extract")
    assert result.epsilon_nano == sum(s.epsilon_nano for s in plan_budget(params))
    assert result.epsilon_nano - nominal == pytest.approx(extract_nominal / 2, abs=4)
    assert sum(1 for c in result.mechanism_calls if "extraction" in c["label"]) == 6


def _release(result: RunResult) -> dict:
    data = result.to_dict()
    for key in ("run_id", "created_at"):
        data.pop(key)
    return data


def _with_new_maximum(ds: TwoViewDataset, view: int, attr: int) -> TwoViewDataset:
    """Same data except the column's maximum moves, staying within its public grid cell."""
    values = ds.views[view].values.copy()
    col = values[attr]
    i = int(np.nanargmax(col))
    grid = ds.schema.split_grid(ds.views[view].attributes[attr])
    upper = ds.schema.view_attributes(view)[attr].domain[1]
    above = grid[grid < col[i]].max()
    new = above + 0.5 * (upper - above)
    col[i] = new if abs(new - col[i]) > 1e-3 else above + 0.9 * (upper - above)
    assert col[i] > above and col[i] <= upper
    arrays = [ds.views[0].values, ds.views[1].values]
    arrays[view] = values
    return TwoViewDataset.from_arrays(ds.schema, *arrays)


@pytest.mark.parametrize("algorithm", ["mcmctreepair", "altmcmc", "altexpm"])
def test_strict_release_ignores_raw_values_outside_the_schema(algorithm):
    ds = toy_dataset()
    changed = _with_new_maximum(ds, 1, 1)
    assert not np.array_equal(ds.views[1].values, changed.views[1].values, equal_nan=True)
    params = family_type(algorithm)(algorithm=algorithm, epsilon=1.0, in_tr=2, mc_iter=200)
    a = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED)
    b = mine(changed, params, rng=np.random.default_rng(SEED), seed=SEED)
    assert _release(a) == _release(b)


def test_faithful_release_does_contain_raw_values():
    """The counterpart: faithful mode's split thresholds are raw data values (not ε-DP)."""
    ds = toy_dataset()
    params = TreeParams(algorithm="altexpm", epsilon=1.0, in_tr=2, mode="faithful")
    result = mine(ds, params, rng=np.random.default_rng(SEED), seed=SEED)
    raw = {a.name: set(ds.views[1].values[i]) for i, a in enumerate(ds.views[1].attributes)}
    released = [(n.attribute, n.threshold) for t in result.trees for n in t.nodes
                if n.threshold is not None]
    assert released and all(value in raw[name] for name, value in released)


def test_result_json_round_trip_keeps_everything_but_diagnostics():
    result = mine(toy_dataset(), TreeParams(in_tr=2, mc_iter=100),
                  rng=np.random.default_rng(SEED), seed=SEED)
    back = RunResult.from_json(result.to_json())
    assert back.to_dict() == result.to_dict()
    assert back.diagnostics.score_traces == {}
    assert result.diagnostics.score_traces, "owner diagnostics are kept apart, not dropped"
    assert "diagnostics" not in json.loads(result.to_json())


@pytest.mark.parametrize("change,message", [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"), ({"omega": 1.5}, "omega"),
    ({"omega": 0.0}, "omega"), ({"algorithm": "magic"}, "algorithm"),
    ({"mode": "lenient"}, "mode"), ({"in_tr": 0}, "in_tr"), ({"depth": 0}, "depth"),
    ({"max_support": 0.0}, "max_support"), ({"epsilon": "1"}, "epsilon"),
])
def test_bad_parameters_are_refused_before_anything_is_spent(change, message):
    params = dataclasses.replace(TreeParams(), **change)
    rng = np.random.default_rng(SEED)
    state = json.dumps(rng.bit_generator.state)
    with pytest.raises(ParameterError, match=message):
        mine(toy_dataset(), params, rng=rng)
    assert json.dumps(rng.bit_generator.state) == state, "no randomness may be drawn"


def test_released_trees_use_only_public_thresholds(clinic_dataset):
    result = mine(clinic_dataset, TreeParams(algorithm="altexpm", in_tr=2),
                  rng=np.random.default_rng(SEED))
    grids = {a.name: set(clinic_dataset.schema.split_grid(a))
             for a in clinic_dataset.schema.attributes if a.type == "numeric"}
    for tree in result.trees:
        for node in tree.nodes:
            if node.threshold is not None:
                assert node.threshold in grids[node.attribute]


# --- What the miners find on the clinic data (planted rules, true J 0.6–0.79) ----------

PRUNE_AT = 200  # noisy support threshold (rows) used for "after pruning"


def _summary(dataset, algorithm, epsilon, seeds, **overrides):
    """(runs with ≥ 1 redescription, runs recovering a planted rule, median gap of kept)."""
    found, recovered, gaps = 0, 0, []
    for seed in seeds:
        params = family_type(algorithm)(algorithm=algorithm, epsilon=epsilon, **overrides)
        result = mine(dataset, params, rng=np.random.default_rng(seed), seed=seed)
        truth = {t.id: t for t in evaluate(result, dataset)}
        found += bool(result.redescriptions)
        kept = [r for r in result.redescriptions if r.support_both >= PRUNE_AT]
        recovered += any(truth[r.id].jaccard >= 0.6 for r in kept)
        gaps += [abs(r.jaccard - truth[r.id].jaccard) for r in kept]
    return found, recovered, float(np.median(gaps)) if gaps else float("nan")


@pytest.fixture(scope="module")
def clinic_at_epsilon_one(clinic_dataset):
    # ω 0.1, the paper's: the product's default ω 0.5 trades this accuracy for better trees
    # (median gap 0.14 here; docs/results.md "Defaults chosen by measurement")
    return {alg: _summary(clinic_dataset, alg, 1.0, range(10),
                          **({"omega": 0.1} if alg == "mcmctreepair" else {}))
            for alg in ("mcmctreepair", "altmcmc", "altexpm")}


@pytest.mark.slow
def test_clinic_at_epsilon_one(clinic_at_epsilon_one):
    """Paper defaults (InTr 4, MCIter 10,000, d 4, ω 0.1), seeds 0–9, strict mode.

    Observed: all three return redescriptions in 10/10 runs. A planted rule (true J ≥ 0.6
    among kept, noisy support ≥ 200) is recovered by AltMCMC in 0/10 runs, AltExpM in
    2/10, MCMCTreePair in 0/10 (with the exact samplers' random stream; with the earlier
    Gumbel-max stream: 2/10, 1/10, 0/10 — two or three recoveries in 20 runs either way,
    so the test asks for at least one): with the paper's normalised pair score (Δ = 1) the tree
    pair gets ε·ω/InTr = 0.025, so its acceptance ratio is ≥ 0.99 and the chain is close
    to a uniform random walk over trees. What MCMCTreePair does well is report honest
    numbers: 90 % of its budget buys the counts, and the median |noisy J − true J| of its
    kept redescriptions is about 0.04 (AltMCMC ≈ 0.26, AltExpM ≈ 0.14).
    """
    for algorithm, (found, recovered, gap) in clinic_at_epsilon_one.items():
        print(f"{algorithm} ε=1: {found}/10 runs return redescriptions, {recovered}/10 "
              f"recover a planted rule (true J ≥ 0.6, noisy support ≥ {PRUNE_AT}), "
              f"median |noisy J − true J| of kept = {gap:.3f}")
        assert found >= 9, algorithm
    alt_recovered = sum(clinic_at_epsilon_one[a][1] for a in ("altmcmc", "altexpm"))
    assert alt_recovered >= 1, "AltMCMC + AltExpM never recovered a planted rule in 20 runs"
    assert clinic_at_epsilon_one["mcmctreepair"][2] <= 0.1
    assert clinic_at_epsilon_one["mcmctreepair"][2] < min(
        clinic_at_epsilon_one[a][2] for a in ("altmcmc", "altexpm"))


@pytest.mark.slow
def test_noise_gap_grows_at_small_epsilon(clinic_dataset):
    _, _, gap_1 = _summary(clinic_dataset, "altexpm", 1.0, range(10))
    _, _, gap_001 = _summary(clinic_dataset, "altexpm", 0.01, range(10))
    print(f"AltExpM median |noisy J − true J| of kept: ε=1 {gap_1:.3f}, ε=0.01 {gap_001:.3f}")
    assert gap_001 > 2 * gap_1


def test_true_statistics_match_noisy_ones_when_the_noise_vanishes():
    """evaluate() recomputes supports from the released trees on raw data; at ε = 10⁶
    the extraction's noisy counts are the true counts up to rounding. (With missing
    values they differ by design: the noisy table counts only rows that reach a leaf
    of both trees, while true supports count every row satisfying the query.)"""
    ds = toy_dataset(600, missing=False)
    params = TreeParams(algorithm="altexpm", epsilon=1e6, in_tr=3, min_support=1)
    result = mine(ds, params, rng=np.random.default_rng(SEED))
    truth = {t.id: t for t in evaluate(result, ds)}
    assert result.redescriptions
    for red in result.redescriptions:
        t = truth[red.id]
        assert abs(red.support_both - t.support_both) < 0.5
        assert abs(red.support_left - t.support_left) < 0.5
        assert abs(red.support_right - t.support_right) < 0.5
        assert abs(red.jaccard - t.jaccard) < 1e-3


@pytest.mark.parametrize("algorithm", ["mcmctreepair", "altmcmc", "altexpm"])
@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_no_released_leaf_contradicts_itself(algorithm, mode):
    """Leaves like [5 < A ≤ 3] would be empty by logic and only ever release noise."""
    params = family_type(algorithm)(algorithm=algorithm, epsilon=0.5, in_tr=3, mc_iter=400,
                                    mode=mode)
    result = mine(toy_dataset(), params, rng=np.random.default_rng(SEED))
    for tree in result.trees:
        for conditions in tree.leaf_conditions:
            lower, upper = defaultdict(lambda: -np.inf), defaultdict(lambda: np.inf)
            for c in conditions:
                if c.op == ">":
                    lower[c.attribute] = max(lower[c.attribute], c.value)
                elif c.op == "<=":
                    upper[c.attribute] = min(upper[c.attribute], c.value)
            assert all(lower[a] < upper[a] for a in lower), conditions


@pytest.mark.parametrize("alg", ["altmcmc", "altexpm", "mcmctreepair"])
@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_target_classed_tree_view(alg, mode, monkeypatch):
    """The tree with the initial target's classes grows on the opposite view in strict mode,
    on the target's own view in faithful mode (the paper's sampleTreePair and the authors'
    code); later alternation trees alternate views, one extraction per step."""
    import dpcore.redescriptions.mining as M

    target_view = 0
    monkeypatch.setattr(M, "pick_attribute",
                        lambda ds, rng, exclude=None: (target_view, 0))   # D0, Boolean
    extra = {} if alg == "mcmctreepair" else {"rm_iter": 3}
    res = mine(toy_dataset(), family_type(alg)(algorithm=alg, mode=mode, epsilon=1.0, in_tr=1,
                                           mc_iter=300, **extra),
               rng=np.random.default_rng(3), seed=3)
    first = target_view if mode == "faithful" else 1 - target_view
    views = [t.view for t in sorted(res.trees, key=lambda t: t.step)]
    if alg == "mcmctreepair":
        assert views == [first, 1 - first]
        assert len(res.extractions) == 1
    else:
        assert views == [first, 1 - first, first, 1 - first]
        assert len(res.extractions) == 3


def test_faithful_extraction_counts_are_truncated_and_n_from_right_marginals():
    """Faithful extractions release integer counts (truncated toward zero, as the authors'
    code stores noisy counts in ints) and Ñ = Σ_j max(0, |B_j|~) over the noisy right
    marginals; strict Ñ stays the sum of the noisy table."""
    ds = toy_dataset()
    for seed in (1, 2):
        res = mine(ds, TreeParams(algorithm="altexpm", mode="faithful", epsilon=1.0,
                                    in_tr=1, rm_iter=2), rng=np.random.default_rng(seed),
                   seed=seed)
        assert res.extractions
        for ex in res.extractions:
            cells = [x for row in ex.noisy_table for x in row]
            for x in (*cells, *ex.noisy_left, *ex.noisy_right):
                assert x == int(x)
            assert ex.noisy_n == sum(max(0.0, x) for x in ex.noisy_right)
    res = mine(ds, TreeParams(algorithm="altexpm", epsilon=1.0, in_tr=1, rm_iter=2),
               rng=np.random.default_rng(1), seed=1)
    for ex in res.extractions:
        assert ex.noisy_n == max(sum(x for row in ex.noisy_table for x in row), 0)
