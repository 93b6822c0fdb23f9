"""Every numba kernel of dpcore.redescriptions.kernels (and the strict-mode bitset kernels of
dpcore.redescriptions.bitset_mcmc) against the naive references in tests/support/reference.py.

Random two-view data with missing values, a ≤4-category (multiway) and a >4-category
(one-vs-rest) categorical attribute per view, numeric values on grid thresholds, coded in
strict (public grid) and faithful (data-derived thresholds) mode. The MCMC chains are
driven through dpcore.redescriptions.trees, so strict mode exercises the bitset chains and
faithful mode
the row-based ones (random_tree / grow_structure / relayout).

Seeds: fixed default, override with DPRM_TEST_SEED; assertion messages print it.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions import trees as T
from dpcore.redescriptions.coding import code_view_faithful, code_view_strict
from tests.support import reference as R

N_ROWS = 400
N_CLASSES = 3
DEPTH = 4
MSG = R.SEED_MSG


class Data:
    """One random dataset with both codings of both views and row classes."""

    def __init__(self, n: int, name: str):
        rng = R.make_rng(name)
        self.ds = R.random_dataset(n, rng, missing=0.1)
        self.n = n
        self.raw = [v.values for v in self.ds.views]
        self.coded = {
            "strict": [code_view_strict(self.ds.schema, v) for v in self.ds.views],
            "faithful": [code_view_faithful(v, rng) for v in self.ds.views],
        }
        # classes predicted by a tree on view v come from the other view (as in mining)
        self.y = [R.random_classes(n, N_CLASSES, rng, self.raw[1 - v]) for v in (0, 1)]


@pytest.fixture(scope="module")
def data() -> Data:
    return Data(N_ROWS, "test_kernels")


def _bufs(n):
    return np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)


def _check_routing(nodes, perm, leaf, coded, raw, what):
    """leaf_of_row = naive walk = leaf_rows_for_codes; every node's rows = naive rows."""
    split = nodes[R.SPLIT]
    naive = R.naive_route(split, coded.fanout, coded, raw)
    bad = np.flatnonzero(naive != leaf)
    assert bad.size == 0, (f"{what}: leaf_of_row differs from the naive router at rows "
                           f"{bad[:10]} (kernel {leaf[bad[:10]]}, naive {naive[bad[:10]]}) {MSG}")
    via_codes = K.leaf_rows_for_codes(coded.codes, T.cands_matrix(coded), coded.fanout,
                                      nodes, coded.codes.shape[1])
    assert np.array_equal(via_codes, naive), f"{what}: leaf_rows_for_codes differs {MSG}"
    if perm is None:
        return
    assert np.array_equal(np.sort(perm), np.arange(perm.size)), f"{what}: perm broken {MSG}"
    for u in np.flatnonzero(split != R.ABSENT):
        got = np.sort(perm[nodes[R.START, u]:nodes[R.END, u]])
        want = R.rows_reaching(int(u), split, coded.fanout, coded, raw)
        assert np.array_equal(got, want), f"{what}: rows of node {u} differ {MSG}"


# ---------------------------------------------------------------------------
# child_of / partition_node
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
def test_child_of_matches_raw_routing(data, mode, view):
    coded = data.coded[mode][view]
    cands = T.cands_matrix(coded)
    raw = data.raw[view]
    kinds = set(coded.cand_kind.tolist())
    assert kinds == {R.THRESHOLD, R.MULTIWAY, R.EQUALS}, "dataset must exercise all kinds"
    rows = np.arange(data.n)
    for s in range(coded.n_candidates):
        want = R.naive_child_column(coded, s, raw)
        got = np.array([K.child_of(coded.codes, cands, s, r) for r in rows])
        assert np.array_equal(got, want), (f"child_of differs for candidate {s} "
                                           f"({R.candidate_info(coded, s)}) {MSG}")
        # scalar reference agrees with the vectorised one on a few rows
        for r in rows[:: 37]:
            assert R.naive_child(coded, s, float(raw[coded.cand_attr[s], r])) == want[r]


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
def test_partition_node_stable_and_missing_last(data, mode, view):
    coded = data.coded[mode][view]
    cands = T.cands_matrix(coded)
    raw = data.raw[view]
    rng = R.make_rng("partition", view)
    f = coded.fanout
    cap = K.tree_capacity(f, 2)
    n = data.n
    # one candidate of every kind, plus a few random ones
    picks = {int(np.flatnonzero(coded.cand_kind == k)[0]) for k in (0, 1, 2)}
    picks |= set(rng.choice(coded.n_candidates, 5, replace=False).tolist())
    for s in sorted(picks):
        perm0 = rng.permutation(n).astype(np.int64)
        lo, hi = sorted(rng.choice(n + 1, 2, replace=False).tolist())
        for u in (0, 1):  # the root (all rows) and a node holding a middle slice
            a, b = (0, n) if u == 0 else (lo, hi)
            nodes = np.zeros((4, cap), dtype=np.int64)
            nodes[R.SPLIT, :] = R.ABSENT
            nodes[R.SPLIT, u] = s
            nodes[R.START, u], nodes[R.END, u], nodes[R.KEPT, u] = a, b, b
            perm = perm0.copy()
            K.partition_node(u, nodes, perm, coded.codes, cands, f, *_bufs(n))
            ctx = f"candidate {s} {R.candidate_info(coded, s)} node {u} [{a},{b}) {MSG}"
            assert np.array_equal(perm[:a], perm0[:a]) and np.array_equal(perm[b:], perm0[b:]), \
                f"rows outside the node moved: {ctx}"
            assert nodes[R.END, u] == b and nodes[R.START, u] == a, ctx
            child = R.naive_child_column(coded, s, raw)
            seg = perm0[a:b]
            pos = a
            for c in range(int(coded.cand_nchild[s])):
                ch = f * u + 1 + c
                want = seg[child[seg] == c]  # stable: original order kept
                assert nodes[R.START, ch] == pos, f"child {c} start: {ctx}"
                assert nodes[R.END, ch] == pos + want.size, f"child {c} end: {ctx}"
                assert np.array_equal(perm[pos:pos + want.size], want), \
                    f"child {c} rows/order differ: {ctx}"
                pos += want.size
            assert nodes[R.KEPT, u] == pos, f"KEPT: {ctx}"
            miss = seg[child[seg] < 0]
            assert np.array_equal(perm[pos:b], miss), f"missing rows not in [KEPT, END): {ctx}"
            assert np.isnan(raw[coded.cand_attr[s], perm[pos:b]]).all(), ctx


@pytest.mark.parametrize("view", [0, 1])
def test_candidate_child_bits_and_popcounts(data, view):
    """Strict-mode MCMC runs on row bitsets: bit r of child c of candidate s is set iff the
    naive router sends row r to child c; popcounts equal NumPy's."""
    coded = data.coded["strict"][view]
    bits, offset = B.candidate_child_bits(coded.codes, T.cands_matrix(coded), coded.n_codes)
    assert bits.shape == (offset[-1], (data.n + 63) // 64) and bits.dtype == np.uint64
    as_bool = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :data.n]
    assert not np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, data.n:].any()
    for s in range(coded.n_candidates):
        child = R.naive_child_column(coded, s, data.raw[view])
        for c in range(int(coded.cand_nchild[s])):
            assert np.array_equal(as_bool[offset[s] + c].astype(bool), child == c), \
                f"candidate {s} child {c} {MSG}"
    rng = R.make_rng("popcount")
    words = rng.integers(0, 2**63, 50, dtype=np.uint64) | (
        rng.integers(0, 2, 50, dtype=np.uint64) << np.uint64(63))
    words[:3] = (0, 2**64 - 1, 1)
    other = rng.permutation(words)
    for w in words:
        assert B.popcount(w) == bin(int(w)).count("1")
    assert B.count_bits(words) == sum(bin(int(w)).count("1") for w in words)
    assert B.and_count(words, other) == sum(bin(int(a) & int(b)).count("1")
                                            for a, b in zip(words, other))
    y = data.y[view]
    cls = B.class_bits(y, N_CLASSES, data.n)
    cls_bool = np.unpackbits(cls.view(np.uint8), axis=1, bitorder="little")[:, :data.n]
    assert np.array_equal(cls_bool.argmax(axis=0), y) and (cls_bool.sum(axis=0) == 1).all()


def test_popcount_is_overflow_free_without_jit():
    """The pure-Python body of popcount (what runs under NUMBA_DISABLE_JIT=1) must give
    the same counts as the compiled one, without NumPy overflow warnings."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for w in (0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF):
            popcount = getattr(B.popcount, "py_func", B.popcount)
            assert int(popcount(np.uint64(w))) == bin(w).count("1")


# ---------------------------------------------------------------------------
# random_tree / grow_structure / relayout / random_split_move
# ---------------------------------------------------------------------------

def _check_hist(nodes, leaf, hist, y, below=None, what=""):
    """hist[leaf] = the naive class histogram of the rows whose leaf_of_row is that leaf."""
    leaves = np.flatnonzero(nodes[R.SPLIT] == R.LEAF)
    for u in leaves if below is None else [u for u in leaves if u in below]:
        want = np.bincount(y[leaf == u], minlength=hist.shape[1])
        assert np.array_equal(hist[u], want), f"{what}: class histogram of leaf {u} {MSG}"


def _subtree(h, fanout, cap):
    out, stack = set(), [h]
    while stack:
        v = stack.pop()
        out.add(v)
        stack += [fanout * v + 1 + i for i in range(fanout) if fanout * v + 1 + i < cap]
    return out


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
@pytest.mark.parametrize("rep", [0, 1, 2])
def test_random_tree(data, mode, view, rep):
    coded = data.coded[mode][view]
    y = data.y[view]
    rng = R.make_rng("random_tree", 100 * rep + 10 * view + (mode == "faithful"))
    faithful_stop = mode == "faithful"
    min_rows = 10 if faithful_stop else 0
    nodes, perm, leaf, hist = R.grow_random_tree(coded, y, DEPTH, rng, faithful_stop,
                                                 min_rows, N_CLASSES)
    split = nodes[R.SPLIT]
    what = f"random tree ({mode}, view {view}, rep {rep})"
    assert R.structure_problems(split, coded, coded.fanout) == [], f"{what} {MSG}"
    _check_routing(nodes, perm, leaf, coded, data.raw[view], what)
    assert R.layout_problems(nodes, perm, coded, data.raw[view], coded.fanout) == [], what
    _check_hist(nodes, leaf, hist, y, what=what)
    assert R.repeated_on_path(split, coded.fanout) == [], \
        f"{what}: a candidate repeats on a root-to-leaf path {MSG}"
    depths = [R.heap_depth(int(u), coded.fanout) for u in np.flatnonzero(split == R.LEAF)]
    if not faithful_stop:
        assert set(depths) == {DEPTH}, f"{what}: strict leaves at depths {set(depths)} {MSG}"
    else:
        assert min(depths) < DEPTH, f"{what}: faithful growth never stopped early {MSG}"
        # faithful growth stops only at small or pure nodes
        for u in np.flatnonzero(split == R.LEAF):
            if R.heap_depth(int(u), coded.fanout) < DEPTH:
                rows = np.flatnonzero(leaf == u)
                assert rows.size < min_rows or np.unique(y[rows]).size <= 1, \
                    f"{what}: leaf {u} stopped early but is large and impure {MSG}"
        # ... and every node that was split was large enough and impure
        for u in np.flatnonzero(split >= 0):
            rows = perm[nodes[R.START, u]:nodes[R.END, u]]
            assert rows.size >= min_rows and np.unique(y[rows]).size > 1, \
                f"{what}: node {u} ({rows.size} rows) should have stopped as a leaf {MSG}"


@pytest.mark.parametrize("view", [0, 1])
def test_faithful_growth_stops_at_pure_or_small_nodes(data, view):
    """Faithful random growth (paper's code) stops exactly at pure or small nodes; strict
    growth ignores the data."""
    coded, raw = data.coded["faithful"][view], data.raw[view]
    n = data.n
    rng = R.make_rng("stops", view)
    one_class = np.zeros(n, dtype=np.int64)
    nodes, _, leaf, _ = R.grow_random_tree(coded, one_class, DEPTH, rng, True, 10, 1)
    assert nodes[R.SPLIT, 0] == R.LEAF and (leaf == 0).all(), f"pure root must stay a leaf {MSG}"
    nodes, _, leaf, _ = R.grow_random_tree(coded, data.y[view], DEPTH, rng, True, n + 1)
    assert nodes[R.SPLIT, 0] == R.LEAF, f"a root with < min_rows rows must stay a leaf {MSG}"
    nodes, _, _, _ = R.grow_random_tree(coded, one_class, DEPTH, rng, False, 10, 1)
    assert nodes[R.SPLIT, 0] >= 0, "strict growth ignores purity"
    # classes = one Boolean attribute: below a split on it every child is pure
    a = next(i for i, at in enumerate(coded.view.attributes) if at.type == "boolean")
    y = np.where(np.isnan(raw[a]), 2, raw[a]).astype(np.int64)
    s_bool = int(np.flatnonzero(coded.cand_attr == a)[0])
    f, cands = coded.fanout, T.cands_matrix(coded)
    for faithful in (True, False):
        nodes = np.zeros((4, K.tree_capacity(f, DEPTH)), dtype=np.int64)
        perm, leaf = _bufs(n)
        K.init_tree(nodes, perm, leaf, n)
        nodes[R.SPLIT, 0] = s_bool
        nodes[R.SPLIT, 1:3] = R.GROW
        K.grow_structure(0, nodes, K.node_depths(f, DEPTH), DEPTH, f, cands, rng, faithful,
                         perm, coded.codes, y, 10)
        kids = nodes[R.SPLIT, 1:3]
        if faithful:
            assert (kids == R.LEAF).all(), f"pure children must stop as leaves {MSG}"
        else:
            assert (kids >= 0).all(), f"strict growth splits pure children too {MSG}"


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
@pytest.mark.parametrize("role", [1, 2], ids=["tree_gives_rows", "tree_gives_columns"])
def test_move_relayout_and_rollback(data, mode, view, role):
    """One MCMC move by hand: random_split_move → replace_split → grow_structure →
    relayout (with the leaf×leaf table update), then the rollback relayout. After each:
    routing, layout, class histograms and the table equal their naive recomputation, and
    nothing outside the moved subtree changed."""
    coded, y, raw = data.coded[mode][view], data.y[view], data.raw[view]
    other = data.coded[mode][1 - view]
    faithful = mode == "faithful"
    min_rows = 10 if faithful else 0
    f, n = coded.fanout, data.n
    cands = T.cands_matrix(coded)
    depth_of = K.node_depths(f, DEPTH)
    cap = nodes_cap = K.tree_capacity(f, DEPTH)
    rng = R.make_rng("move", 10 * view + role + 100 * faithful)
    o_nodes, _, o_leaf, _ = R.grow_random_tree(other, data.y[1 - view], DEPTH, rng)
    cap_o = o_nodes.shape[1]
    stop_buf, pos_buf = _bufs(n)
    offset = np.zeros(cap, dtype=np.int64)

    def fresh_table(leaf):
        if role == 1:  # this tree gives the table's rows, the other tree its columns
            return K.pair_table(nodes, leaf, o_leaf, cap_o, n)
        return K.pair_table(o_nodes, o_leaf, leaf, cap, n)

    n_moves = 0
    for rep in range(8):
        nodes, perm, leaf, hist = R.grow_random_tree(coded, y, DEPTH, rng, faithful, min_rows,
                                                     N_CLASSES)
        table, sumsq = fresh_table(leaf)
        internal = np.flatnonzero(nodes[R.SPLIT] >= 0)
        h = int(internal[rep % internal.size]) if rep < 4 else int(rng.choice(internal))
        s_new = K.random_split_move(h, nodes, cands, f, rng)
        if s_new < 0:
            continue
        n_moves += 1
        what = f"move at node {h} → {s_new} ({mode}, view {view}, role {role}, rep {rep})"
        lo, hi = nodes[R.START, h], nodes[R.END, h]
        saved = (nodes.copy(), perm.copy(), leaf.copy(), table.copy(), sumsq.copy())
        K.replace_split(h, s_new, nodes, cands, f)
        K.grow_structure(h, nodes, depth_of, DEPTH, f, cands, rng, faithful, perm,
                         coded.codes, y, min_rows)
        K.relayout(h, nodes, perm, coded.codes, cands, f, leaf, stop_buf, pos_buf, offset, y,
                   hist, True, o_leaf, table, sumsq, role, cap if role == 2 else cap_o)
        split = nodes[R.SPLIT]
        assert split[h] == s_new
        assert R.structure_problems(split, coded, f) == [], what
        assert R.repeated_on_path(split, f) == [], f"{what}: repeated candidate {MSG}"
        _check_routing(nodes, perm, leaf, coded, raw, what)
        assert R.layout_problems(nodes, perm, coded, raw, f) == [], what
        below = _subtree(h, f, nodes_cap)
        _check_hist(nodes, leaf, hist, y, below, what)
        assert np.array_equal(perm[:lo], saved[1][:lo]) and np.array_equal(perm[hi:],
                                                                           saved[1][hi:]), what
        moved = np.zeros(n, dtype=bool)
        moved[saved[1][lo:hi]] = True
        assert np.array_equal(leaf[~moved], saved[2][~moved]), what
        others = sorted(set(range(nodes_cap)) - below)
        assert np.array_equal(nodes[:, others], saved[0][:, others]), what
        want_t, want_s = fresh_table(leaf)
        assert np.array_equal(table, want_t), f"{what}: incremental table {MSG}"
        assert np.array_equal(sumsq, want_s), f"{what}: incremental Σ² {MSG}"
        # rollback as the chains do it: old structure back, one relayout without histograms
        nodes[:, :] = saved[0]
        K.relayout(h, nodes, perm, coded.codes, cands, f, leaf, stop_buf, pos_buf, offset, y,
                   hist, False, o_leaf, table, sumsq, role, cap if role == 2 else cap_o)
        assert np.array_equal(nodes, saved[0]), f"{what}: rollback changed the ranges {MSG}"
        assert np.array_equal(leaf, saved[2]), f"{what}: rollback leaf_of_row {MSG}"
        assert np.array_equal(table, saved[3]) and np.array_equal(sumsq, saved[4]), what
        _check_routing(nodes, perm, leaf, coded, raw, what + " (rolled back)")
        assert R.layout_problems(nodes, perm, coded, raw, f) == [], what
    assert n_moves >= 4, f"too few valid proposals to test ({n_moves}) {MSG}"


@pytest.mark.parametrize("view", [0, 1])
def test_random_split_move_support_and_uniformity(data, view):
    """Proposals are uniform over the candidates used neither on the path to h nor in
    the subtrees the move would keep (children i < min(children now, children of s)),
    and leaving every numeric split satisfiable on both sides (value-space check)."""
    coded, y = data.coded["strict"][view], data.y[view]
    f = coded.fanout
    cands = T.cands_matrix(coded)
    rng = R.make_rng("proposal", view)
    nodes, _, _, _ = R.grow_random_tree(coded, y, DEPTH, rng)
    split = nodes[R.SPLIT]
    for h in (0, int(np.flatnonzero(split >= 0)[-1])):
        path = {int(split[a]) for a in R.ancestors(h, f)}
        n_now = int(coded.cand_nchild[split[h]])

        def kept_nodes(s):
            kept = min(n_now, int(coded.cand_nchild[s]))
            out = set()
            for i in range(kept):
                out |= {v for v in _subtree(f * h + 1 + i, f, split.size) if split[v] >= 0}
            return out

        def satisfiable_everywhere(s):
            trial = split.copy()
            trial[h] = s
            return all(_numeric_split_satisfiable(coded, trial, v, f)
                       for v in {h} | kept_nodes(s))

        valid = sorted(s for s in range(coded.n_candidates)
                       if s not in path and s not in {int(split[v]) for v in kept_nodes(s)}
                       and satisfiable_everywhere(s))
        draws = np.array([K.random_split_move(h, nodes, cands, f, rng)
                          for _ in range(300 * max(len(valid), 1))])
        if not valid:
            assert (draws == -1).all(), MSG
            continue
        assert set(draws.tolist()) == set(valid), (
            f"node {h}: proposals {sorted(set(draws.tolist()))} ≠ valid {valid} {MSG}")
        counts = np.array([(draws == s).sum() for s in valid])
        if len(valid) > 1:
            p = stats.chisquare(counts).pvalue
            assert p > 1e-6, f"node {h}: proposals not uniform (p = {p:.2e}) {MSG}"
        # random_split (growth) bans the path and splits that leave a side empty
        grow_valid = set()
        for s in range(coded.n_candidates):
            trial = split.copy()
            trial[h] = s
            if s not in path and _numeric_split_satisfiable(coded, trial, h, f):
                grow_valid.add(s)
        g = {int(K.random_split(h, nodes, cands, f, rng)) for _ in range(3000)}
        assert g == grow_valid, MSG


def _numeric_split_satisfiable(coded, split, v, fanout):
    """Value space: a numeric split θ at v is satisfiable on both sides given the path's
    tests on the same attribute, L < θ < U (L = largest '>' bound, U = smallest '≤')."""
    s = int(split[v])
    a = int(coded.cand_attr[s])
    if coded.view.attributes[a].type != "numeric":
        return True
    theta = coded.thresholds[a][int(coded.cand_thr[s])]
    lower, upper = -np.inf, np.inf
    for anc in R.ancestors(v, fanout):
        sp = int(split[anc])
        if int(coded.cand_attr[sp]) != a:
            continue
        child = next(c for c in range(fanout) if v in _subtree(fanout * anc + 1 + c, fanout,
                                                                 split.size))
        value = coded.thresholds[a][int(coded.cand_thr[sp])]
        if child == 0:
            upper = min(upper, value)
        else:
            lower = max(lower, value)
    return lower < theta < upper


# ---------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------

def test_gini_and_purity_contributions():
    rng = R.make_rng("contrib")
    cases = [np.zeros(3, dtype=np.int64), np.array([5], dtype=np.int64),
             np.array([0, 7, 0], dtype=np.int64), np.array([1, 1], dtype=np.int64)]
    cases += [rng.integers(0, 40, rng.integers(1, 8)).astype(np.int64) for _ in range(200)]
    for counts in cases:
        labels = np.repeat(np.arange(counts.size), counts)
        n_rows = int(counts.sum()) + int(rng.integers(1, 50))
        assert K.gini_contribution(counts) == pytest.approx(-R.weighted_gini(labels),
                                                            abs=1e-9), (counts, MSG)
        m = int(counts.sum())
        want = 0.0 if m == 0 else (m / n_rows) * float(np.sum((counts / m) ** 2))
        assert K.purity_contribution(counts, n_rows) == pytest.approx(want, abs=1e-12), counts


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
def test_split_utilities_brute_force(data, mode, view):
    coded, y, raw = data.coded[mode][view], data.y[view], data.raw[view]
    f = coded.fanout
    first, last = T.attribute_candidate_ranges(coded)
    cands = T.cands_matrix(coded)
    nodes, perm, _, _ = R.grow_random_tree(coded, y, DEPTH, R.make_rng("util", view))
    split = nodes[R.SPLIT]
    internal = [int(u) for u in np.flatnonzero(split >= 0)]
    rng = R.make_rng("util-pick", view)
    by_depth = {}
    for u in internal:
        by_depth.setdefault(R.heap_depth(u, f), []).append(u)
    picked = [int(rng.choice(v)) for _, v in sorted(by_depth.items())]
    for u in [0] + picked:
        util = K.split_utilities(u, nodes, perm, coded.codes, cands, first, last,
                                 coded.n_codes, y, N_CLASSES, f)
        used = {int(split[a]) for a in R.ancestors(u, f)}
        for s in range(coded.n_candidates):
            trial = split.copy()
            trial[u] = s
            if not _numeric_split_satisfiable(coded, trial, u, f):
                used.add(s)
        rows = R.rows_reaching(u, split, f, coded, raw)
        want = R.split_utilities(rows, coded, raw, y, used)
        ctx = f"node {u} (depth {R.heap_depth(u, f)}, {len(rows)} rows) {MSG}"
        assert np.array_equal(np.isneginf(util), np.isneginf(want)), \
            f"−inf exactly for candidates used on the path or unsatisfiable there: {ctx}"
        assert np.isneginf(util).sum() == len(used), ctx
        ok = ~np.isneginf(want)
        np.testing.assert_allclose(util[ok], want[ok], rtol=0, atol=1e-9, err_msg=ctx)


# ---------------------------------------------------------------------------
# Leaf×leaf tables
# ---------------------------------------------------------------------------

def _tree(view, coded, nodes, leaf, depth):
    assert K.tree_capacity(coded.fanout, depth) == nodes.shape[1]
    return T.Tree(view, coded, nodes, depth, leaf)


@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_contingency_and_true_leaf_table(data, mode):
    rng = R.make_rng("table", mode == "faithful")
    trees = []
    for view in (0, 1):
        coded = data.coded[mode][view]
        nodes, _, leaf, _ = R.grow_random_tree(coded, data.y[view], 3, rng)
        trees.append(_tree(view, coded, nodes, leaf, 3))
    left, right = trees
    ll, lr = left.leaves(), right.leaves()
    want = R.leaf_table(left.leaf_of_row, right.leaf_of_row, ll, lr)
    got = T.true_leaf_table(left, right)
    assert np.array_equal(got, want), MSG
    got2 = K.contingency(left.leaf_of_row, right.leaf_of_row, left.compact_leaf_ids(),
                         right.compact_leaf_ids(), ll.size, lr.size)
    assert np.array_equal(got2, want), MSG
    both = int(np.sum((left.leaf_of_row >= 0) & (right.leaf_of_row >= 0)))
    assert got.sum() == both and both < data.n, "missing values must drop some rows " + MSG


@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_pair_table_and_purity_from_table(data, mode):
    rng = R.make_rng("pair_table", mode == "faithful")
    c1, c2 = data.coded[mode]
    n1, _, leaf1, _ = R.grow_random_tree(c1, data.y[0], DEPTH, rng)
    n2, _, leaf2, _ = R.grow_random_tree(c2, data.y[1], DEPTH, rng)
    cap1 = n1.shape[1]
    table, sumsq = K.pair_table(n2, leaf2, leaf1, cap1, data.n)
    assert table.shape == (n2.shape[1], cap1 + 1)
    want = np.zeros_like(table)
    for r in range(data.n):
        if leaf2[r] >= 0:
            want[leaf2[r], leaf1[r] if leaf1[r] >= 0 else cap1] += 1
    assert np.array_equal(table, want), MSG
    assert np.array_equal(sumsq, (want ** 2).sum(axis=1)), MSG
    classes2 = np.where(leaf1 >= 0, leaf1, -1)
    assert K.purity_from_table(n2, sumsq, data.n) == pytest.approx(
        R.purity(leaf2, classes2, data.n), abs=1e-12), MSG


# ---------------------------------------------------------------------------
# MCMC (createDTMCMC, sampleTreePair): incremental re-partitioning and rollback
# ---------------------------------------------------------------------------

EPS_HIGH = 10**12  # ε = 1000 (nano-ε): mostly accepts improvements
EPS_LOW = 10**7  # ε = 0.01: accepts almost anything
MC_ITER = 1500


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("eps", [EPS_HIGH, EPS_LOW], ids=["eps_high", "eps_low"])
@pytest.mark.parametrize("rep", [0, 1])
def test_mcmc_single_tree_invariants(data, mode, eps, rep):
    view = rep  # one chain on each view
    coded, y, raw = data.coded[mode][view], data.y[view], data.raw[view]
    rng = R.make_rng("mcmc", 10 * rep + (eps == EPS_HIGH) + 2 * (mode == "faithful"))
    acc = PrivacyAccountant(10**30)
    tree, trace = T.sample_mcmc_tree(view, coded, y, N_CLASSES, DEPTH, eps, rng, acc, "t",
                                     mc_iter=MC_ITER, faithful=mode == "faithful",
                                     sigma=1e-12, window=100)
    what = f"MCMC tree ({mode}, ε={eps / 1e9:g}, rep {rep})"
    assert 0 < trace.size <= MC_ITER
    if mode == "strict":
        assert trace.size == MC_ITER, f"strict chains run exactly MCIter iterations {MSG}"
    assert R.structure_problems(tree.nodes[R.SPLIT], coded, coded.fanout) == [], what
    _check_routing(tree.nodes, None, tree.leaf_of_row, coded, raw, what)
    want = R.gini_score(tree.leaf_of_row, y)
    assert abs(trace[-1] - want) <= 1e-9, \
        f"{what}: last trace value {trace[-1]!r} ≠ recomputed score {want!r} {MSG}"
    assert np.all(trace <= 0.0) and np.all(trace >= -data.n)
    if mode == "strict":
        depths = {R.heap_depth(int(u), coded.fanout)
                  for u in np.flatnonzero(tree.nodes[R.SPLIT] == R.LEAF)}
        assert depths == {DEPTH}, f"{what}: strict leaves at depths {depths} {MSG}"
    if eps == EPS_HIGH:
        # a greedy-ish chain ends well above where it started
        assert trace[-1] > trace[0], f"{what}: no improvement {MSG}"


@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("eps", [EPS_HIGH, EPS_LOW], ids=["eps_high", "eps_low"])
@pytest.mark.parametrize("rep", [0, 1])
def test_mcmc_tree_pair_invariants(data, mode, eps, rep):
    first = rep  # T1 on view `first`, its classes from the other view
    second = 1 - first
    c1, c2 = data.coded[mode][first], data.coded[mode][second]
    y = data.y[first]
    rng = R.make_rng("pair", 10 * rep + (eps == EPS_HIGH) + 2 * (mode == "faithful"))
    acc = PrivacyAccountant(10**30)
    t1, t2, trace = T.sample_tree_pair((first, second), c1, c2, y, N_CLASSES, DEPTH, eps, rng,
                                       acc, "p", mc_iter=MC_ITER, faithful=mode == "faithful",
                                       sigma=1e-12, window=100)
    what = f"tree pair ({mode}, ε={eps / 1e9:g}, rep {rep})"
    assert 0 < trace.size <= MC_ITER
    if mode == "strict":
        assert trace.size == MC_ITER, MSG
    for t, c, raw in ((t1, c1, data.raw[first]), (t2, c2, data.raw[second])):
        assert R.structure_problems(t.nodes[R.SPLIT], c, c.fanout) == [], what
        _check_routing(t.nodes, None, t.leaf_of_row, c, raw, what)
    want = R.pair_score(t1.leaf_of_row, t2.leaf_of_row, y)
    assert abs(trace[-1] - want) <= 1e-9, \
        f"{what}: last trace value {trace[-1]!r} ≠ recomputed score {want!r} {MSG}"
    assert np.all((trace >= 0.0) & (trace <= 1.0)), what


@pytest.mark.parametrize("kind", ["single", "pair"])
@pytest.mark.parametrize("mode", ["strict", "faithful"])
def test_mcmc_never_repeats_a_candidate_on_a_path(data, kind, mode):
    """Spec §3.1: an attribute–value pair is not reused on one path. Regression test: MCMC
    proposals used to be checked against the ancestors of the changed node only, so a kept
    subtree below it could already use the proposed split (low ε chains showed it in most
    runs). Low ε so that almost every proposal is accepted."""
    acc = PrivacyAccountant(10**30)
    found = []
    for rep in range(12):
        rng = R.make_rng("reuse-" + kind + mode, rep)
        c0, c1 = data.coded[mode]
        if kind == "single":
            tree, _ = T.sample_mcmc_tree(0, c0, data.y[0], N_CLASSES, DEPTH, 10**7, rng, acc,
                                         "r", mc_iter=1500, faithful=mode == "faithful",
                                         sigma=1e-12,
                                         window=100)
            trees = [tree]
        else:
            t1, t2, _ = T.sample_tree_pair((0, 1), c0, c1, data.y[0], N_CLASSES, DEPTH, 10**7,
                                           rng, acc, "r", mc_iter=1500,
                                           faithful=mode == "faithful",
                                           sigma=1e-12, window=100)
            trees = [t1, t2]
        for t in trees:
            found += R.repeated_on_path(t.nodes[R.SPLIT], t.fanout)
    assert found == [], (f"{len(found)} leaves whose path repeats a candidate, e.g. leaf "
                         f"{found[0][0]} with ancestor splits {found[0][1]} {MSG}")


# ---------------------------------------------------------------------------
# createDTExpMech
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
def test_expmech_huge_epsilon_is_argmax_everywhere(data, mode, view):
    coded, y, raw = data.coded[mode][view], data.y[view], data.raw[view]
    depth = 3
    f = coded.fanout
    acc = PrivacyAccountant(10**40)
    eps = 10**30  # ε = 1e21 per tree: exp(ε·q/4) picks the best split
    roots = set()
    for rep in range(3):
        tree = T.build_expmech_tree(view, coded, y, N_CLASSES, depth, eps,
                                    R.make_rng("expmech-huge", 10 * rep + view), acc, "e")
        split = tree.nodes[R.SPLIT]
        assert R.structure_problems(split, coded, f) == [], MSG
        _check_routing(tree.nodes, None, tree.leaf_of_row, coded, raw, "expmech tree")
        assert R.repeated_on_path(split, f) == [], MSG
        depths = {R.heap_depth(int(u), f) for u in np.flatnonzero(split == R.LEAF)}
        assert depths == {depth}, f"expmech grows every node to depth d: {depths} {MSG}"
        roots.add(int(split[0]))
        for u in np.flatnonzero(split >= 0) if rep == 0 else [0]:
            u = int(u)
            rows = R.rows_reaching(u, split, f, coded, raw)
            used = {int(split[a]) for a in R.ancestors(u, f)}
            util = R.split_utilities(rows, coded, raw, y, used)
            s = int(split[u])
            assert util[s] >= util.max() - 1e-9, (
                f"node {u}: split {s} has utility {util[s]} < best {util.max()} "
                f"(argmax {int(util.argmax())}) {MSG}")
    assert len(roots) == 1 or np.ptp([R.split_utilities(range(data.n), coded, raw, y)[s]
                                      for s in roots]) <= 1e-9, MSG


def test_expmech_tiny_epsilon_varies(data):
    coded, y = data.coded["strict"][0], data.y[0]
    acc = PrivacyAccountant(10**12)
    roots = [int(T.build_expmech_tree(0, coded, y, N_CLASSES, 2, 1000,
                                      R.make_rng("expmech-tiny", k), acc, "e").nodes[0, 0])
             for k in range(20)]
    assert len(set(roots)) >= 3, f"root splits {roots} barely vary at ε = 1e-6 {MSG}"


def test_expmech_root_follows_softmax(data):
    """χ² of the root choice (depth-1 trees) against softmax(ε_level·q/(2·2))."""
    coded, y = data.coded["strict"][1], data.y[1]
    util = R.split_utilities(range(data.n), coded, data.raw[1], y)
    eps = 4.0 / max(np.ptp(util), 1e-9) * 3.0  # spreads mass over several candidates
    p = np.exp(eps * (util - util.max()) / 4.0)
    p /= p.sum()
    rng = R.make_rng("softmax")
    f = coded.fanout
    first, last = T.attribute_candidate_ranges(coded)
    cands = T.cands_matrix(coded)
    nodes = np.zeros((4, K.tree_capacity(f, 1)), dtype=np.int64)
    perm = np.empty(data.n, dtype=np.int64)
    leaf = np.empty(data.n, dtype=np.int64)
    depth_of = K.node_depths(f, 1)
    level = np.array([eps])
    trials = 4000
    counts = np.zeros(coded.n_candidates, dtype=np.int64)
    for _ in range(trials):
        K.expmech_tree(coded.codes, cands, first, last, coded.n_codes, y, N_CLASSES, f,
                       depth_of, 1, nodes, perm, leaf, level, rng)
        counts[nodes[R.SPLIT, 0]] += 1
    expected = p * trials
    big = expected >= 5
    assert big.sum() >= 3, "the test needs several plausible candidates"
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    pval = stats.chisquare(obs[keep], exp[keep]).pvalue
    assert pval > 1e-6, f"root choices do not follow softmax(ε·q/4): p = {pval:.2e} {MSG}"
