"""dpcore.redescriptions.trees: the released TreeRecord, strict-mode thresholds, leaf classes,
charging.

* ``Tree.to_record``: each leaf's conditions, evaluated naively on the RAW values, select
  exactly the rows whose ``leaf_of_row`` is that leaf; node ids / parents / children /
  depths / branches are consistent.
* strict mode: every threshold a tree can release is a member of ``schema.split_grid``
  (none is derived from the data).
* ``leaf_classes``: shape, dtype, range, and the 'no leaf' class.

Seeds: fixed default, override with DPRM_TEST_SEED; assertion messages print it.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data.schema import NUMERIC
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions import trees as T
from dpcore.redescriptions.coding import code_view_faithful, code_view_strict
from tests.support import reference as R
from tests.support import row_chains_reference as RC

N_ROWS = 300
N_CLASSES = 3
MSG = R.SEED_MSG
BUILDERS = ["random", "expmech", "mcmc", "pair"]


@pytest.fixture(scope="module")
def data():
    rng = R.make_rng("test_trees")
    ds = R.random_dataset(N_ROWS, rng, missing=0.1)
    coded = {"strict": [code_view_strict(ds.schema, v) for v in ds.views],
             "faithful": [code_view_faithful(v, rng) for v in ds.views]}
    y = [R.random_classes(N_ROWS, N_CLASSES, rng, ds.views[1 - v].values) for v in (0, 1)]
    return ds, coded, y


def _trees(data, mode, builder, rep=0):
    """Trees over both views built by one of the builders (list of Tree)."""
    ds, coded, y = data
    rng = R.make_rng(f"trees-{mode}-{builder}", rep)
    acc = PrivacyAccountant(10**15)
    faithful = mode == "faithful"
    out = []
    if builder == "pair":
        t1, t2, _ = T.sample_tree_pair((0, 1), coded[mode][0], coded[mode][1], y[0], N_CLASSES,
                                       4, 10**9, rng, acc, "p", mc_iter=400, faithful=faithful,
                                       sigma=1e-12, window=50)
        return [t1, t2]
    for view in (0, 1):
        c = coded[mode][view]
        if builder == "random":
            nodes, _, leaf, _ = R.grow_random_tree(c, y[view], 4, rng, faithful, 10)
            out.append(T.Tree(view, c, nodes, 4, leaf))
        elif builder == "expmech":
            out.append(T.build_expmech_tree(view, c, y[view], N_CLASSES, 3, 10**9, rng, acc,
                                            "e"))
        else:
            tree, _ = T.sample_mcmc_tree(view, c, y[view], N_CLASSES, 4, 10**9, rng, acc, "m",
                                         mc_iter=400, faithful=faithful, sigma=1e-12,
                                         window=50)
            out.append(tree)
    return out


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("builder", BUILDERS)
def test_leaf_conditions_select_the_leaf_rows(data, mode, builder):
    ds = data[0]
    for tree in _trees(data, mode, builder):
        rec = tree.to_record(7, 2, 1)
        view = ds.views[tree.view]
        leaves = tree.leaves()
        assert rec.n_leaves == leaves.size and (rec.id, rec.view, rec.trial, rec.step) == (
            7, tree.view, 2, 1)
        covered = np.zeros(N_ROWS, dtype=int)
        for k, heap in enumerate(leaves):
            mask = R.conjunction_rows(rec.leaf_conditions[k], view)
            want = tree.leaf_of_row == heap
            bad = np.flatnonzero(mask != want)
            assert bad.size == 0, (
                f"{builder}/{mode} view {tree.view} leaf {k} "
                f"({rec.leaf_text(k)}): conditions and leaf_of_row disagree on rows "
                f"{bad[:10]} {MSG}")
            covered += mask
        assert covered.max() <= 1, "leaves overlap"
        # rows reaching no leaf = rows with a missing value on their path
        assert np.array_equal(covered == 0, tree.leaf_of_row < 0), MSG


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("builder", BUILDERS)
def test_record_nodes_are_consistent(data, mode, builder):
    for tree in _trees(data, mode, builder):
        rec = tree.to_record(0, 0, 0)
        split = tree.nodes[K.SPLIT]
        nodes = rec.nodes
        assert [n.id for n in nodes] == list(range(len(nodes)))
        assert len(nodes) == int(np.sum(split != K.ABSENT))
        root = nodes[0]
        assert root.parent == -1 and root.depth == 0 and root.branch is None
        leaf_ids = []
        for n in nodes:
            for c in n.children:
                child = nodes[c]
                assert child.parent == n.id and child.depth == n.depth + 1, (n, child)
                assert child.branch is not None and child.branch.attribute == n.attribute
            if n.id:
                assert n.id in nodes[n.parent].children
            if n.attribute is None:  # leaf
                assert n.children == () and n.split_type is None and n.threshold is None
                assert n.leaf >= 0
                leaf_ids.append(n.leaf)
                # its conditions are the branches from the root down to it
                path, v = [], n
                while v.parent >= 0:
                    path.append(v.branch)
                    v = nodes[v.parent]
                assert tuple(reversed(path)) == rec.leaf_conditions[n.leaf]
                assert n.depth == len(path) <= tree.depth
            else:
                assert n.leaf == -1
                attr = next(a for a in tree.coded.view.attributes if a.name == n.attribute)
                assert n.split_type == attr.type
                assert (n.threshold is not None) == (attr.type == NUMERIC)
                assert len(n.children) >= 2
                ops = {nodes[c].branch.op for c in n.children}
                if attr.type == NUMERIC:
                    assert ops == {"<=", ">"} and all(
                        nodes[c].branch.value == n.threshold for c in n.children)
                elif attr.type == "boolean":
                    assert ops == {"is"}
                else:
                    assert ops <= {"=", "!="}
        assert sorted(leaf_ids) == list(range(rec.n_leaves)), MSG
        assert leaf_ids == sorted(leaf_ids), "leaf order = heap order"


@pytest.mark.parametrize("builder", BUILDERS)
def test_strict_thresholds_come_from_the_public_grid(data, builder):
    ds, coded, _ = data
    schema = ds.schema
    by_name = {a.name: a for a in schema.attributes}
    n_numeric = 0
    for rep in range(3):
        for tree in _trees(data, "strict", builder, rep):
            rec = tree.to_record(0, 0, 0)
            values = [(n.attribute, n.threshold) for n in rec.nodes if n.threshold is not None]
            values += [(c.attribute, c.value) for leaf in rec.leaf_conditions for c in leaf
                       if c.op in ("<=", ">")]
            for name, v in values:
                grid = schema.split_grid(by_name[name])
                assert v in grid.tolist(), f"{name}: threshold {v!r} not on the grid {MSG}"
                n_numeric += 1
    assert n_numeric > 0, "no numeric split was drawn: the test checked nothing"


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("builder", BUILDERS)
def test_leaf_classes(data, mode, builder):
    for tree in _trees(data, mode, builder):
        classes, n_classes = T.leaf_classes(tree)
        leaves = tree.leaves()
        m = leaves.size
        assert classes.shape == (N_ROWS,) and classes.dtype == np.int64
        assert n_classes == m + 1
        assert classes.min() >= 0 and classes.max() <= m
        for r in range(N_ROWS):
            h = tree.leaf_of_row[r]
            want = m if h < 0 else int(np.flatnonzero(leaves == h)[0])
            assert classes[r] == want, (r, h, classes[r], want)
        # every leaf holding rows shows up as a class
        assert set(np.unique(classes[tree.leaf_of_row >= 0])) == {
            int(np.flatnonzero(leaves == h)[0]) for h in np.unique(
                tree.leaf_of_row[tree.leaf_of_row >= 0])}


def test_builders_charge_before_building(data):
    """Each builder records its (ε, Δ) once: exponential mechanism per level (Δ = 2, the
    levels sum to the tree's ε), single-tree MCMC Δ = 2, tree pair Δ = 1."""
    ds, coded, y = data
    c = coded["strict"]
    acc = PrivacyAccountant(10**12)
    rng = R.make_rng("charges")
    T.build_expmech_tree(0, c[0], y[0], N_CLASSES, 3, 1_000_000_001, rng, acc, "e")
    assert [x.mechanism for x in acc.calls] == ["exponential"] * 3
    assert sum(x.epsilon_nano for x in acc.calls) == 1_000_000_001
    assert all(x.sensitivity == 2.0 for x in acc.calls)
    assert [x.parallel for x in acc.calls] == [c[0].fanout ** t for t in range(3)]
    acc = PrivacyAccountant(10**12)
    T.sample_mcmc_tree(1, c[1], y[1], N_CLASSES, 3, 77, rng, acc, "m", mc_iter=10,
                       faithful=False, sigma=0.1, window=5)
    assert [(x.mechanism, x.epsilon_nano, x.sensitivity) for x in acc.calls] == [
        ("mcmc", 77, 2.0)]
    acc = PrivacyAccountant(10**12)
    T.sample_tree_pair((0, 1), c[0], c[1], y[0], N_CLASSES, 3, 55, rng, acc, "p", mc_iter=10,
                       faithful=False, sigma=0.1, window=5)
    assert [(x.mechanism, x.epsilon_nano, x.sensitivity) for x in acc.calls] == [
        ("mcmc", 55, 1.0)]


def test_expmech_charge_in_depth_shares_draws_fewer_levels():
    """Faithful createDTExpMech (the authors' code): ε/``shares`` per drawn level, the
    parts no level uses charged as "unused" records, so the tree costs exactly its ε;
    without ``shares`` every level gets ε/depth; fewer shares than levels is refused."""
    acc = PrivacyAccountant(10**12)
    drawn = T.charge_expmech_tree(acc, "e", 1_000_000_001, 3, 2, shares=4)
    assert drawn.tolist() == pytest.approx([0.250_000_001, 0.25, 0.25], abs=1e-12)
    assert [x.epsilon_nano for x in acc.calls] == [250_000_001] + [250_000_000] * 3
    assert sum(x.epsilon_nano for x in acc.calls) == 1_000_000_001
    assert ["unused" in x.label for x in acc.calls] == [False, False, False, True]
    assert [x.parallel for x in acc.calls] == [1, 2, 4, 8]
    acc = PrivacyAccountant(10**12)
    T.charge_expmech_tree(acc, "e", 999, 3, 2)
    assert [x.epsilon_nano for x in acc.calls] == [333, 333, 333]
    assert not any("unused" in x.label for x in acc.calls)
    with pytest.raises(ValueError, match="shares"):
        T.charge_expmech_tree(PrivacyAccountant(10**12), "e", 999, 3, 2, shares=2)


@pytest.mark.parametrize("builder", ["mcmc", "pair"])
def test_faithful_chains_accept_without_the_proposal_ratio(data, builder):
    """Faithful chains accept with min(1, exp(ε·ΔS/(2Δ))), as the paper and the authors'
    code do: the tree (its splits and each row's leaf) equals the row kernel's with
    ``hastings=False`` from the same stream (the draw runs the bitset chain), and (on these
    seeds) differs from the Metropolis–Hastings chain's."""
    ds, coded, y = data
    c0, c1 = coded["faithful"]
    eps, iters = 0.3, 300
    differs = False
    for seed in range(3):
        if builder == "mcmc":
            tree, trace = T.draw_mcmc_tree(0, c0, y[0], N_CLASSES, 3, eps,
                                           np.random.default_rng(seed), mc_iter=iters,
                                           faithful=True, sigma=1e-12, window=50)
            got = [tree.nodes[K.SPLIT], tree.leaf_of_row]
        else:
            t1, t2, trace = T.draw_tree_pair((0, 1), c0, c1, y[0], N_CLASSES, 3, eps,
                                             np.random.default_rng(seed), mc_iter=iters,
                                             faithful=True, sigma=1e-12, window=50)
            got = [t1.nodes[K.SPLIT], t1.leaf_of_row, t2.nodes[K.SPLIT], t2.leaf_of_row]
        for hastings in (False, True):
            n = c0.codes.shape[1]
            e0 = T._empty_tree(0, c0, 3)
            tr = np.zeros(iters)
            if builder == "mcmc":
                RC.mcmc_single_tree(c0.codes, T.cands_matrix(c0), y[0], N_CLASSES, c0.fanout,
                                   K.node_depths(c0.fanout, 3), 3, e0.nodes,
                                   np.empty(n, np.int64), e0.leaf_of_row, eps, iters, True,
                                   1e-12, 50, T.FAITHFUL_MIN_ROWS, np.random.default_rng(seed),
                                   tr, None, hastings)
                ref = [e0.nodes[K.SPLIT], e0.leaf_of_row]
            else:
                e1 = T._empty_tree(1, c1, 3)
                RC.mcmc_tree_pair(c0.codes, T.cands_matrix(c0), c0.fanout,
                                 K.node_depths(c0.fanout, 3), e0.nodes, np.empty(n, np.int64),
                                 e0.leaf_of_row, c1.codes, T.cands_matrix(c1), c1.fanout,
                                 K.node_depths(c1.fanout, 3), e1.nodes, np.empty(n, np.int64),
                                 e1.leaf_of_row, y[0], N_CLASSES, 3, eps, iters, True, 1e-12,
                                 50, T.FAITHFUL_MIN_ROWS, np.random.default_rng(seed), tr,
                                 None, hastings)
                ref = [e0.nodes[K.SPLIT], e0.leaf_of_row, e1.nodes[K.SPLIT], e1.leaf_of_row]
            same = all(np.array_equal(a, b) for a, b in zip(got, ref)) and np.array_equal(
                trace, tr[:len(trace)])
            if not hastings:
                assert same, MSG
            else:
                differs |= not same
    assert differs, MSG
