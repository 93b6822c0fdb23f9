"""The MCMC chains sample the exponential mechanism: checks on models small enough to
enumerate every tree.

createDTMCMC and sampleTreePair release the last state of a Metropolis–Hastings chain whose
target is the exponential mechanism π(T) ∝ exp(ε·u(T)/(2Δ)) over the trees Ω the chain
can visit (docs/PRIVACY.md §7). The proposal (a node, a split, random growth of new
children) is not symmetric once a split changes the number of children (3- and 4-category
attributes), so the acceptance needs the Hastings factor q(T′→T)/q(T→T′)
(``kernels.log_proposal_ratio``). Here, on depth-2 trees over a Boolean, a 3- or
4-category and a numeric attribute:

* the fast option counts (``kernels.move_options``, ``kernels.growth_options``) equal a
  scan of every candidate, on random trees of the kernel-test datasets;
* every proposal T → T′ of the model is enumerated by brute force (written from the
  proposal's rules, through the kernels' own per-candidate predicates), giving q(T → T′)
  exactly; the kernel's log ratio equals log q(T′→T)/q(T→T′) on every move, Ω is closed
  under the moves and strongly connected, and the exact transition matrix has π as its
  stationary law (while the plain Metropolis chain's differs);
* many independent chains of the real kernels (row-based and bitset, single tree and tree
  pair, ε → 0 and a moderate ε) end in trees whose frequencies pass a χ² test against π at
  α = 10⁻⁶, and the same test rejects the uncorrected chain (``hastings=False``, a
  test-only kernel argument). The chain length is checked on the exact model to bring the
  law within 10⁻⁴ in total variation of π.

Fixed seeds (DPRM_TEST_SEED overrides the base seed); the χ² tests are marked slow.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from scipy import stats
from scipy.sparse.csgraph import connected_components

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, Attribute, Schema, ViewSpec
from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions.coding import code_view_faithful, code_view_strict
from dpcore.redescriptions.kernels.moves import valid_move
from dpcore.redescriptions.trees import cands_matrix, child_bitsets
from tests.support import reference as R
from tests.support import row_chains_reference as RC

MSG = R.SEED_MSG
DEPTH = 2
ALPHA = 1e-6
N_ROWS = 150
N_CLASSES = 3


# ---------------------------------------------------------------------------
# The tiny models
# ---------------------------------------------------------------------------

def _tiny_dataset(name: str) -> TwoViewDataset:
    """'single': left = Boolean B, 3-category C, numeric N with thresholds 3 and 6
    (48 trees of depth 2). 'pair': left = B, C (3), N with threshold 5 (16 trees); right =
    Boolean B2, 4-category D, numeric M with threshold 5 (24 trees)."""
    rng = R.make_rng("stationary-" + name)
    n = N_ROWS
    b = rng.integers(0, 2, n).astype(float)
    c = rng.integers(0, 3, n).astype(float)
    x = np.round(rng.uniform(0, 10, n), 1)
    left_attrs = (Attribute("B", 0, BOOLEAN),
                  Attribute("C", 0, CATEGORICAL, categories=("x", "y", "z")),
                  Attribute("N", 0, NUMERIC, domain=(0.0, 10.0),
                            thresholds=(3.0, 6.0) if name == "single" else (5.0,)))
    b2 = np.where(rng.random(n) < 0.8, b, 1 - b)
    d = np.where(rng.random(n) < 0.7, c, rng.integers(0, 4, n)).astype(float)
    m = np.clip(x + rng.normal(0, 2, n), 0, 10)
    right_attrs = (Attribute("B2", 1, BOOLEAN),
                   Attribute("D", 1, CATEGORICAL, categories=("p", "q", "r", "s")),
                   Attribute("M", 1, NUMERIC, domain=(0.0, 10.0), thresholds=(5.0,)))
    schema = Schema("stationary-" + name, left_attrs + right_attrs,
                    (ViewSpec("l"), ViewSpec("r")), grid_bins=1)
    return TwoViewDataset.from_arrays(schema, np.vstack([b, c, x]), np.vstack([b2, d, m]))


def _tiny_classes(ds: TwoViewDataset) -> np.ndarray:
    """Classes that depend on C, N and B (so the score separates the trees), 20 % noise."""
    b, c, x = ds.views[0].values
    rng = R.make_rng("stationary-classes")
    y = (c.astype(int) + (x > 5.5) + b.astype(int)) % N_CLASSES
    noise = rng.random(ds.n_rows) < 0.2
    y[noise] = rng.integers(0, N_CLASSES, int(noise.sum()))
    return y.astype(np.int64)


class Model:
    """One coded view of a tiny dataset and every tree of depth DEPTH the chain can visit."""

    def __init__(self, ds: TwoViewDataset, view: int):
        self.coded = code_view_strict(ds.schema, ds.views[view])
        self.raw = ds.views[view].values
        self.cands = cands_matrix(self.coded)
        self.f = self.coded.fanout
        self.cap = K.tree_capacity(self.f, DEPTH)
        self.depth_of = K.node_depths(self.f, DEPTH)
        self.trees, self.p_init = self._enumerate()
        self.index = {t: i for i, t in enumerate(self.trees)}
        self._moves = None

    def nodes(self, split) -> np.ndarray:
        out = np.zeros((4, self.cap), dtype=np.int64)
        out[R.SPLIT] = split
        return out

    # -- the rules of the proposal, candidate by candidate ------------------------------
    def growth_choices(self, nodes, u) -> list[int]:
        """What random_split draws from at u: not used on the path, useful there."""
        return [s for s in range(self.coded.n_candidates)
                if not K.used_on_path(u, s, nodes, self.f)
                and K.useful_at(u, s, nodes, self.cands, self.f)]

    def move_choices(self, nodes, h) -> list[int]:
        """What random_split_move draws from at h (the current split included)."""
        return [s for s in range(self.coded.n_candidates)
                if valid_move(h, s, nodes, self.cands, self.f)]

    def grow_all(self, split) -> list[tuple[tuple, float]]:
        """Every outcome of grow_structure on ``split`` (GROW nodes), with its probability."""
        split = list(split)
        todo = [u for u in range(self.cap) if split[u] == R.GROW]
        if not todo:
            return [(tuple(split), 1.0)]
        u = min(todo)  # heap order: a node's path is decided before the node
        nodes = self.nodes(split)
        choices = [] if self.depth_of[u] >= DEPTH else self.growth_choices(nodes, u)
        if not choices:
            split[u] = R.LEAF
            return self.grow_all(split)
        out = []
        for s in choices:
            nxt = list(split)
            nxt[u] = s
            for i in range(int(self.cands[K.NCHILD, s])):
                nxt[self.f * u + 1 + i] = R.GROW
            out += [(t, p / len(choices)) for t, p in self.grow_all(nxt)]
        return out

    def _enumerate(self):
        """Ω: every tree the random start can give, with its probability (the moves are
        checked to stay in it by test_hastings_ratio_is_exact_on_every_move)."""
        start = [R.ABSENT] * self.cap
        start[0] = R.GROW
        grown = self.grow_all(start)
        trees = sorted({t for t, _ in grown})
        p = dict.fromkeys(trees, 0.0)
        for t, q in grown:
            p[t] += q
        return trees, np.array([p[t] for t in trees])

    def moves(self) -> dict:
        """q_c(T → T′) summed over the ways to get there (node h, split, growth), without the
        1/(internal nodes) factor; keyed by (i, j), with the set of nodes moved."""
        if self._moves is not None:
            return self._moves
        out = {}
        for i, t in enumerate(self.trees):
            nodes = self.nodes(t)
            for h in np.flatnonzero(nodes[R.SPLIT] >= 0):
                choices = self.move_choices(nodes, int(h))
                for s in choices:
                    moved = nodes.copy()
                    K.replace_split(int(h), s, moved, self.cands, self.f)
                    for t2, pg in self.grow_all(moved[R.SPLIT]):
                        j = self.index[t2]  # KeyError: a move leaves Ω
                        q, hs = out.get((i, j), (0.0, set()))
                        out[(i, j)] = (q + pg / len(choices), hs | {int(h)})
        self._moves = out
        return out

    def n_internal(self) -> np.ndarray:
        return np.array([sum(1 for s in t if s >= 0) for t in self.trees])


@cache
def tiny_models():
    single_ds = _tiny_dataset("single")
    pair_ds = _tiny_dataset("pair")
    return {"single": (Model(single_ds, 0), _tiny_classes(single_ds), single_ds),
            "pair": ((Model(pair_ds, 0), Model(pair_ds, 1)), _tiny_classes(pair_ds), pair_ds)}


# ---------------------------------------------------------------------------
# Scores (naive references) and exact chains
# ---------------------------------------------------------------------------

def single_scores(model: Model, y) -> np.ndarray:
    return np.array([R.gini_score(R.naive_route(np.array(t), model.f, model.coded, model.raw),
                                  y) for t in model.trees])


def pair_scores(ml: Model, mr: Model, y) -> np.ndarray:
    """Scores of every pair, index i_l·|Ω_R| + i_r."""
    leaves_l = [R.naive_route(np.array(t), ml.f, ml.coded, ml.raw) for t in ml.trees]
    leaves_r = [R.naive_route(np.array(t), mr.f, mr.coded, mr.raw) for t in mr.trees]
    return np.array([R.pair_score(a, b, y) for a in leaves_l for b in leaves_r])


def target(scores, epsilon, sensitivity) -> np.ndarray:
    """The exponential mechanism: π ∝ exp(ε·u/(2Δ))."""
    x = epsilon * scores / (2.0 * sensitivity)
    w = np.exp(x - x.max())
    return w / w.sum()


def single_q(model: Model) -> np.ndarray:
    """Exact proposal matrix q(T → T′) of the single-tree chain."""
    n = len(model.trees)
    q = np.zeros((n, n))
    internal = model.n_internal()
    for (i, j), (qc, _) in model.moves().items():
        q[i, j] = qc / internal[i]
    return q


def pair_q(ml: Model, mr: Model) -> np.ndarray:
    """Exact proposal matrix of the tree-pair chain over (T_L, T_R), index i_l·|Ω_R| + i_r."""
    nl, nr = len(ml.trees), len(mr.trees)
    il, ir = ml.n_internal(), mr.n_internal()
    q = np.zeros((nl * nr, nl * nr))
    for (i, j), (qc, _) in ml.moves().items():
        for r in range(nr):
            q[i * nr + r, j * nr + r] += qc / (il[i] + ir[r])
    for (i, j), (qc, _) in mr.moves().items():
        for left in range(nl):
            q[left * nr + i, left * nr + j] += qc / (il[left] + ir[i])
    return q


def transition(q: np.ndarray, pi: np.ndarray, hastings: bool) -> np.ndarray:
    """Exact transition matrix: propose by q, accept by min(1, π′/π · [q′/q])."""
    n = q.shape[0]
    p = np.zeros_like(q)
    rows, cols = np.nonzero(q)
    for i, j in zip(rows, cols, strict=True):
        if i == j:
            continue
        a = pi[j] / pi[i]
        if hastings:
            a *= q[j, i] / q[i, j]
        p[i, j] = q[i, j] * min(1.0, a)
    p[np.arange(n), np.arange(n)] = 1.0 - p.sum(axis=1)
    return p


def stationary(p: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(p.T)
    x = np.real(v[:, np.argmin(np.abs(w - 1.0))])
    return x / x.sum()


# ---------------------------------------------------------------------------
# Fast counts = scans of every candidate
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["strict", "faithful"])
@pytest.mark.parametrize("view", [0, 1])
def test_option_counts_match_a_scan(mode, view):
    """move_options / growth_options (counted from the path and the kept subtrees) equal
    the number of candidates random_split_move / random_split accept, on the states of
    low-ε chains over data with threshold, multiway and one-vs-rest candidates (faithful
    coding: many data-derived thresholds)."""
    rng = R.make_rng("option-counts", 2 * view + (mode == "faithful"))
    ds = R.random_dataset(300, rng, missing=0.1)
    v = ds.views[view]
    coded = code_view_strict(ds.schema, v) if mode == "strict" else code_view_faithful(v, rng)
    cands = cands_matrix(coded)
    f, depth = coded.fanout, 3
    work = K.hastings_workspace(cands)
    y = rng.integers(0, 3, ds.n_rows).astype(np.int64)
    checked = 0
    for rep in range(6):
        nodes = np.zeros((4, K.tree_capacity(f, depth)), np.int64)
        n = ds.n_rows
        RC.mcmc_single_tree(coded.codes, cands, y, 3, f, K.node_depths(f, depth), depth, nodes,
                           np.empty(n, np.int64), np.empty(n, np.int64), 0.01, 30 * rep,
                           False, 1e-9, 10, 0, rng, np.zeros(30 * rep + 1))
        for u in np.flatnonzero(nodes[K.SPLIT] != K.ABSENT):
            u = int(u)
            scan = sum(1 for s in range(coded.n_candidates)
                       if not K.used_on_path(u, s, nodes, f)
                       and K.useful_at(u, s, nodes, cands, f))
            assert K.growth_options(u, nodes, cands, f, work) == scan, \
                f"growth options at node {u} ({mode}, view {view}, rep {rep}) {MSG}"
            if nodes[K.SPLIT, u] >= 0:
                scan = sum(1 for s in range(coded.n_candidates)
                           if valid_move(u, s, nodes, cands, f))
                assert K.move_options(u, nodes, cands, f, work) == scan, \
                    f"move options at node {u} ({mode}, view {view}, rep {rep}) {MSG}"
            checked += 1
    assert checked > 50


# ---------------------------------------------------------------------------
# Exact model: the ratio, closure, connectivity, stationarity
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["single", "pair-left", "pair-right"])
def test_hastings_ratio_is_exact_on_every_move(which):
    """For every move T → T′ ≠ T of the model: one node h leads there, the reverse move
    exists, and log_proposal_ratio = log q(T′→T)/q(T→T′) (single tree and inside a pair,
    where the other tree's internal nodes count in the node draw)."""
    models = tiny_models()
    if which == "single":
        model, others = models["single"][0], [None]
    else:
        ml, mr = models["pair"][0]
        model, other = (ml, mr) if which == "pair-left" else (mr, ml)
        others = other.trees
    moves = model.moves()
    internal = model.n_internal()
    work = K.hastings_workspace(model.cands)
    n_checked = n_asym = 0
    for other in others:
        o_nodes = np.full((4, 1), K.ABSENT, np.int64)
        if other is not None:
            o_nodes = np.zeros((4, len(other)), np.int64)
            o_nodes[K.SPLIT] = other
        n_o = 0 if other is None else sum(1 for s in other if s >= 0)
        for (i, j), (qc, hs) in moves.items():
            if i == j:
                continue
            assert len(hs) == 1, f"{which}: two nodes lead from tree {i} to {j}"
            assert (j, i) in moves, f"{which}: move {i} → {j} cannot be undone"
            h = next(iter(hs))
            want = (math.log(moves[(j, i)][0] / (internal[j] + n_o))
                    - math.log(qc / (internal[i] + n_o)))
            got = K.log_proposal_ratio(h, model.nodes(model.trees[i]),
                                       model.nodes(model.trees[j]), o_nodes, model.cands,
                                       model.f, model.depth_of, DEPTH, True, work)
            assert got == pytest.approx(want, abs=1e-12), \
                f"{which}: move {model.trees[i]} → {model.trees[j]} at node {h}"
            n_checked += 1
            n_asym += abs(want) > 1e-9
    assert n_checked > 100 and n_asym > 20, (n_checked, n_asym)
    # the moves stay in Ω (moves() raised otherwise) and connect it
    n = len(model.trees)
    adj = np.zeros((n, n), dtype=bool)
    for i, j in moves:
        adj[i, j] = True
    n_comp, _ = connected_components(adj, directed=True, connection="strong")
    assert n_comp == 1, f"{which}: the chain is not irreducible on Ω ({n_comp} classes)"


def _exact_chain(which: str, epsilon: float, hastings: bool):
    """(proposal matrix, exact transition matrix, target π, start law) of a model."""
    models = tiny_models()
    if which == "single":
        model, y, _ = models["single"]
        q = single_q(model)
        pi = target(single_scores(model, y), epsilon, 2.0)
        p0 = model.p_init
    else:
        (ml, mr), y, _ = models["pair"]
        q = pair_q(ml, mr)
        pi = target(pair_scores(ml, mr, y), epsilon, 1.0)
        p0 = np.outer(ml.p_init, mr.p_init).ravel()
    return q, transition(q, pi, hastings), pi, p0


EPSILONS = {"single": (1e-6, 0.3), "pair": (1e-6, 15.0)}
CHAIN_LEN = {"single": 250, "pair": 500}


@pytest.mark.parametrize("which", ["single", "pair"])
@pytest.mark.parametrize("eps_kind", [0, 1], ids=["eps_tiny", "eps_moderate"])
def test_exact_chain_targets_the_exponential_mechanism(which, eps_kind):
    """With the Hastings factor, πP = π exactly (detailed balance) and CHAIN_LEN steps
    from the random start bring the law within 10⁻⁴ of π; without it, the stationary law
    is another one (the issue: P(root = C) was 0.40 instead of 0.50 as ε → 0)."""
    epsilon = EPSILONS[which][eps_kind]
    q, p, pi, p0 = _exact_chain(which, epsilon, True)
    np.testing.assert_allclose(pi @ p, pi, rtol=0, atol=1e-13)
    flow = pi[:, None] * p
    np.testing.assert_allclose(flow, flow.T, rtol=0, atol=1e-14)
    law = p0 @ np.linalg.matrix_power(p, CHAIN_LEN[which])
    tv = 0.5 * np.abs(law - pi).sum()
    assert tv < 1e-4, f"{which}, ε = {epsilon}: TV after {CHAIN_LEN[which]} steps = {tv:.2e}"
    _, p_plain, _, _ = _exact_chain(which, epsilon, False)
    tv_plain = 0.5 * np.abs(stationary(p_plain) - pi).sum()
    assert tv_plain > 0.02, f"{which}: plain Metropolis is close to π (TV {tv_plain:.3f})"


def test_issue_example_root_split_frequency():
    """The issue's 16-tree model (Boolean, 3-category C, numeric with one threshold;
    depth 2) as ε → 0: half of the trees split the root on C, so the exponential mechanism
    gives P(root = C) = 1/2; plain Metropolis converges to 0.40 (the measured 0.396), the
    Hastings-corrected chain to 0.50."""
    model = tiny_models()["pair"][0][0]
    assert len(model.trees) == 16
    c = int(np.flatnonzero(model.coded.cand_kind == R.MULTIWAY)[0])
    root_c = np.array([t[0] == c for t in model.trees])
    q = single_q(model)
    pi = np.full(len(model.trees), 1.0 / len(model.trees))
    assert pi[root_c].sum() == pytest.approx(0.5)
    assert stationary(transition(q, pi, True))[root_c].sum() == pytest.approx(0.5, abs=1e-12)
    assert stationary(transition(q, pi, False))[root_c].sum() == pytest.approx(0.4, abs=1e-12)


# ---------------------------------------------------------------------------
# The real kernels, many chains: χ² against π
# ---------------------------------------------------------------------------

def _final_trees(which: str, path: str, epsilon: float, n_chains: int, hastings: bool,
                 seed: int) -> np.ndarray:
    """Index (in Ω, or Ω_L × Ω_R) of the last state of ``n_chains`` chains of the real
    kernels, each CHAIN_LEN iterations from its own random start."""
    models = tiny_models()
    rng = R.make_rng(f"stationary-chains-{which}-{path}", seed)
    mc = CHAIN_LEN[which]
    trace = np.zeros(mc)
    out = np.empty(n_chains, dtype=np.int64)
    if which == "single":
        model, y, ds = models["single"]
        c = model.coded
        n = ds.n_rows
        cands = model.cands
        nodes = np.zeros((4, model.cap), np.int64)
        bits, offset = child_bitsets(c)
        perm, leaf = np.empty(n, np.int64), np.empty(n, np.int64)
        for k in range(n_chains):
            if path == "rows":
                RC.mcmc_single_tree(c.codes, cands, y, N_CLASSES, model.f, model.depth_of,
                                   DEPTH, nodes, perm, leaf, epsilon, mc, False, 1e-9, 10, 0,
                                   rng, trace, None, hastings)
            else:
                B.mcmc_single_tree_bits(cands, bits, offset, y, N_CLASSES, n, model.f,
                                        model.depth_of, DEPTH, nodes, epsilon, mc, rng, trace,
                                        None, hastings)
            out[k] = model.index[tuple(nodes[K.SPLIT].tolist())]
        return out
    (ml, mr), y, ds = models["pair"]
    cl, cr = ml.coded, mr.coded
    n = ds.n_rows
    n1, n2 = np.zeros((4, ml.cap), np.int64), np.zeros((4, mr.cap), np.int64)
    b1, o1 = child_bitsets(cl)
    b2, o2 = child_bitsets(cr)
    bufs = [np.empty(n, np.int64) for _ in range(4)]
    for k in range(n_chains):
        if path == "rows":
            RC.mcmc_tree_pair(cl.codes, ml.cands, ml.f, ml.depth_of, n1, bufs[0], bufs[1],
                             cr.codes, mr.cands, mr.f, mr.depth_of, n2, bufs[2], bufs[3],
                             y, N_CLASSES, DEPTH, epsilon, mc, False, 1e-9, 10, 0, rng, trace,
                             None, hastings)
        else:
            B.mcmc_tree_pair_bits(ml.cands, b1, o1, ml.f, ml.depth_of, n1,
                                  mr.cands, b2, o2, mr.f, mr.depth_of, n2,
                                  y, N_CLASSES, n, DEPTH, epsilon, mc, rng, trace, None,
                                  hastings)
        out[k] = (ml.index[tuple(n1[K.SPLIT].tolist())] * len(mr.trees)
                  + mr.index[tuple(n2[K.SPLIT].tolist())])
    return out


def chi2_pvalue(samples: np.ndarray, pi: np.ndarray) -> float:
    """χ² goodness of fit of the samples to π; bins with expected count < 5 are pooled
    (into the smallest kept bin if the pool itself expects < 5)."""
    n = samples.size
    counts = np.bincount(samples, minlength=pi.size).astype(float)
    expected = n * pi
    big = expected >= 5
    obs = list(counts[big])
    exp = list(expected[big])
    if (~big).any():
        if expected[~big].sum() >= 5:
            obs.append(counts[~big].sum())
            exp.append(expected[~big].sum())
        else:
            k = int(np.argmin(exp))
            obs[k] += counts[~big].sum()
            exp[k] += expected[~big].sum()
    return float(stats.chisquare(obs, exp).pvalue)


N_CHAINS = {"single": 5_000, "pair": 3_000}


@pytest.mark.slow
@pytest.mark.parametrize("path", ["bits", "rows"])
@pytest.mark.parametrize("which", ["single", "pair"])
@pytest.mark.parametrize("eps_kind", [0, 1], ids=["eps_tiny", "eps_moderate"])
def test_chains_sample_the_exponential_mechanism(which, path, eps_kind):
    """Last states of many chains of the real kernels fit π (χ², α = 10⁻⁶); the same test
    rejects the chains without the Hastings factor."""
    epsilon = EPSILONS[which][eps_kind]
    *_, pi, _ = _exact_chain(which, epsilon, True)
    n = N_CHAINS[which]
    got = _final_trees(which, path, epsilon, n, True, eps_kind)
    p = chi2_pvalue(got, pi)
    plain = _final_trees(which, path, epsilon, n, False, eps_kind)
    p_plain = chi2_pvalue(plain, pi)
    print(f"{which}/{path}/ε={epsilon}: p = {p:.3g} (Hastings), {p_plain:.3g} (plain)")
    assert p > ALPHA, f"{which}, {path}, ε = {epsilon}: χ² p = {p:.2e} {MSG}"
    assert p_plain < ALPHA, \
        f"{which}, {path}, ε = {epsilon}: the plain chain fits π too (p = {p_plain:.2e}) {MSG}"
