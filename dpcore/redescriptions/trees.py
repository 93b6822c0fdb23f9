"""Tree builders: createDTExpMech, createDTMCMC and sampleTreePair, charged first.

Each builder takes the ε it may spend (nano-ε), records the mechanism in the
accountant *before* any random choice is drawn, then calls one numba kernel.
The returned :class:`Tree` holds the released structure (a DP output) and the
row→leaf map (private, used only to count and never released as is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.schema import CATEGORICAL
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.units import split_evenly
from dpcore.redescriptions import bitset_mcmc as B
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions.coding import MAX_MULTIWAY, CodedView
from dpcore.redescriptions.kernels.scores import PAIR_SENSITIVITY_COUNT, PAIR_SENSITIVITY_PAPER
from dpcore.redescriptions.results import TreeNode, TreeRecord

FAITHFUL_MIN_ROWS = 10
"""Faithful mode's "too small" node size for random growth (rows)."""


@dataclass
class Tree:
    """A built tree over one coded view.

    Attributes
    ----------
    view : int
        0 = left, 1 = right.
    coded : CodedView
    nodes : ndarray of int64, shape (4, capacity)
        Heap layout (see ``kernels``); the released structure is ``nodes[SPLIT]``.
    leaf_of_row : ndarray of int64
        Private: heap index of each row's leaf, −1 if it reaches none.
    """

    view: int
    coded: CodedView
    nodes: np.ndarray
    depth: int
    leaf_of_row: np.ndarray

    @property
    def fanout(self) -> int:
        return self.coded.fanout

    def leaves(self) -> np.ndarray:
        """Heap indices of the existing leaves, in heap order (= leaf order 0..m-1)."""
        return np.flatnonzero(self.nodes[K.SPLIT] == K.LEAF)

    def compact_leaf_ids(self) -> np.ndarray:
        """Array mapping heap index → leaf order (−1 for non-leaves)."""
        out = np.full(self.nodes.shape[1], -1, dtype=np.int64)
        leaves = self.leaves()
        out[leaves] = np.arange(leaves.size)
        return out

    def to_record(self, tree_id: int, trial: int, step: int) -> TreeRecord:
        """The released structure: splits and each leaf's path conditions (no counts)."""
        split = self.nodes[K.SPLIT]
        existing = [h for h in range(split.size) if split[h] != K.ABSENT]
        ids = {h: i for i, h in enumerate(existing)}
        leaf_ids = self.compact_leaf_ids()
        nodes, leaf_conditions = [], {}
        f = self.fanout
        for h in existing:
            parent = (h - 1) // f if h > 0 else -1
            branch = None
            if parent >= 0:
                branch = self.coded.branch_condition(int(split[parent]), (h - 1) % f)
            s = int(split[h])
            attr = self.coded.view.attributes[int(self.coded.cand_attr[s])] if s >= 0 else None
            children = tuple(ids[f * h + 1 + i] for i in range(f)
                             if f * h + 1 + i < split.size and split[f * h + 1 + i] != K.ABSENT)
            threshold = None
            if s >= 0 and attr.type == "numeric":
                threshold = float(self.coded.thresholds[int(self.coded.cand_attr[s])]
                                  [int(self.coded.cand_thr[s])])
            nodes.append(TreeNode(ids[h], ids.get(parent, -1), int(_depth(h, f)),
                                  attr.name if attr else None, attr.type if attr else None,
                                  threshold, children, branch, int(leaf_ids[h])))
            if s == K.LEAF:
                path, v = [], h
                while v > 0:
                    p = (v - 1) // f
                    path.append(self.coded.branch_condition(int(split[p]), (v - 1) % f))
                    v = p
                leaf_conditions[int(leaf_ids[h])] = tuple(reversed(path))
        return TreeRecord(tree_id, self.view, trial, step, tuple(nodes),
                          tuple(leaf_conditions[i] for i in range(len(leaf_conditions))))


def _depth(h: int, fanout: int) -> int:
    d = 0
    while h > 0:
        h = (h - 1) // fanout
        d += 1
    return d


def _empty_tree(view: int, coded: CodedView, depth: int) -> Tree:
    cap = K.tree_capacity(coded.fanout, depth)
    n_rows = coded.codes.shape[1]
    return Tree(view, coded, np.zeros((4, cap), dtype=np.int64), depth,
                np.full(n_rows, -1, dtype=np.int64))


def cands_matrix(coded: CodedView) -> np.ndarray:
    return np.ascontiguousarray(np.stack([coded.cand_attr, coded.cand_kind, coded.cand_thr,
                                          coded.cand_nchild]).astype(np.int64))


def attribute_candidate_ranges(coded: CodedView) -> tuple[np.ndarray, np.ndarray]:
    """First and one-past-last candidate index of each attribute (candidates are grouped)."""
    n_attr = coded.codes.shape[0]
    first = np.searchsorted(coded.cand_attr, np.arange(n_attr), side="left").astype(np.int64)
    last = np.searchsorted(coded.cand_attr, np.arange(n_attr), side="right").astype(np.int64)
    return first, last


def view_fanout(view) -> int:
    """Largest number of children of a split on ``view``, from its attribute types only.

    Boolean and numeric attributes split in two; a categorical one with at most
    ``coding.MAX_MULTIWAY`` categories splits into one child per category, a larger one in
    two (``A = c`` / ``A != c``). Data-independent: it is the ``fanout`` of a strict coding
    of the view, and of a faithful coding unless a numeric attribute has no threshold in
    the faithful sample (then the faithful coding's fanout can only be smaller). Used for
    the ``parallel`` count of the records a tree's ε is charged under.
    """
    out = 2
    for at in view.attributes:
        if at.type == CATEGORICAL and len(at.categories) <= MAX_MULTIWAY:
            out = max(out, len(at.categories))
    return out


def charge_expmech_tree(accountant: PrivacyAccountant, label: str, epsilon_nano: int,
                        depth: int, fanout: int, *, shares: int | None = None) -> np.ndarray:
    """Charge a createDTExpMech tree: ε split evenly over the ``depth`` levels, one record
    per level (``exponential``, Δ = 2, ``parallel`` = fanout^level), before any draw.

    ``shares`` (faithful mode, > ``depth``): split ε into ``shares`` equal parts and draw
    only the first ``depth`` levels with them, as the authors' code does (it divides the
    tree's ε by ``maxTreeDepth`` and splits on ``maxTreeDepth − 1`` levels,
    docs/ALGORITHMS.md §4.3 item 1). The parts no level uses are charged too, each as its
    own record labelled "unused", so the tree still costs exactly ``epsilon_nano``.

    Returns
    -------
    ndarray of float64, shape (depth,)
        Each drawn level's ε (as a float), for :func:`draw_expmech_tree`.
    """
    shares = depth if shares is None else int(shares)
    if shares < depth:
        raise ValueError(f"shares ({shares}) must be at least the depth ({depth})")
    levels = split_evenly(epsilon_nano, shares)
    spent = [accountant.spend("exponential", f"{label} level {t}", e, 2.0,
                              parallel=fanout ** t)
             for t, e in enumerate(levels[:depth])]
    for t, e in enumerate(levels[depth:], start=depth):
        accountant.spend("exponential", f"{label} level {t} unused (as the authors' code)",
                         e, 2.0, parallel=fanout ** t)
    return np.array(spent, dtype=np.float64)


def draw_expmech_tree(view: int, coded: CodedView, classes: np.ndarray, n_classes: int,
                      depth: int, level_eps: np.ndarray, rng: np.random.Generator) -> Tree:
    """Draw a createDTExpMech tree whose level ε ``level_eps`` were charged by
    :func:`charge_expmech_tree` (call it only after that charge). Releases the GIL while
    its kernel runs, so independent trees can be drawn in parallel threads, each with its
    own generator."""
    tree = _empty_tree(view, coded, depth)
    perm = np.empty(coded.codes.shape[1], dtype=np.int64)
    first, last = attribute_candidate_ranges(coded)
    K.expmech_tree(coded.codes, cands_matrix(coded), first, last, coded.n_codes,
                   classes, n_classes, coded.fanout, K.node_depths(coded.fanout, depth),
                   depth, tree.nodes, perm, tree.leaf_of_row,
                   np.ascontiguousarray(level_eps, dtype=np.float64), rng)
    return tree


def build_expmech_tree(view: int, coded: CodedView, classes: np.ndarray, n_classes: int,
                       depth: int, epsilon_nano: int, rng: np.random.Generator,
                       accountant: PrivacyAccountant, label: str) -> Tree:
    """createDTExpMech (Alg. 2, Friedman & Schuster 2010): ε-DP tree.

    The ε is split evenly over the ``depth`` levels; each level's ε is charged
    once and covers all its nodes (disjoint rows: parallel composition). At each
    node the split is drawn by the exponential mechanism with utility
    −Σ_children |child|·gini(child), sensitivity 2. :func:`charge_expmech_tree` then
    :func:`draw_expmech_tree`.

    Parameters
    ----------
    classes : ndarray of int64
        Class of each row in [0, n_classes) (private).
    epsilon_nano : int
        ε for the whole tree, nano-ε.
    """
    level_eps = charge_expmech_tree(accountant, label, epsilon_nano, depth, coded.fanout)
    return draw_expmech_tree(view, coded, classes, n_classes, depth, level_eps, rng)


def child_bitsets(coded: CodedView) -> tuple[np.ndarray, np.ndarray]:
    """Row bitsets of every candidate's children (private), computed once per coded view.

    Kept on the coded view itself (the view is immutable, so the bitsets stay valid for as
    long as it lives and die with it), not in a table keyed by the object's address."""
    cached = coded.__dict__.get("_child_bits")
    if cached is None:
        cached = B.candidate_child_bits(coded.codes, cands_matrix(coded), coded.n_codes)
        object.__setattr__(coded, "_child_bits", cached)  # frozen dataclass: a memo only
    return cached


def _route(tree: Tree) -> None:
    tree.leaf_of_row[:] = K.leaf_rows_for_codes(tree.coded.codes, cands_matrix(tree.coded),
                                                tree.fanout, tree.nodes,
                                                tree.coded.codes.shape[1])


def sample_mcmc_tree(view: int, coded: CodedView, classes: np.ndarray, n_classes: int,
                     depth: int, epsilon_nano: int, rng: np.random.Generator,
                     accountant: PrivacyAccountant, label: str, *, mc_iter: int,
                     faithful: bool, sigma: float, window: int,
                     stats: np.ndarray | None = None) -> tuple[Tree, np.ndarray]:
    """createDTMCMC (Alg. 3, Bai et al. 2017): a tree sampled by MCMC with score
    −Σ_leaves |leaf|·gini(leaf), sensitivity 2, Metropolis–Hastings acceptance
    min(1, exp(ε·ΔS/4)·q(T′→T)/q(T→T′)) (``kernels.log_proposal_ratio``: the proposal
    ratio, a function of the tree structures and the public candidates only). Faithful
    mode accepts with min(1, exp(ε·ΔS/4)), without the ratio, as the paper and the
    authors' code do (plain Metropolis; not the exponential mechanism, docs/PRIVACY.md §8).

    In strict mode the chain's stationary law is the exponential mechanism exp(ε·S/4)
    over the trees it visits, so the release is ε-DP only upon convergence of the chain
    (in the limit); no bound holds for the finite chain run here. Both modes run the chain on
    row bitsets (``bitset_mcmc``: strict with every candidate's children precomputed,
    faithful with a split's children built when a node takes it). Returns the
    tree and its score trace (NOT private: computed from true data; owner
    diagnostics only). ``stats[0]``, if given, accumulates the rows reaching each
    changed node (benchmark diagnostics).
    """
    eps = charge_mcmc_tree(accountant, label, epsilon_nano)
    return draw_mcmc_tree(view, coded, classes, n_classes, depth, eps, rng, mc_iter=mc_iter,
                          faithful=faithful, sigma=sigma, window=window, stats=stats)


def charge_mcmc_tree(accountant: PrivacyAccountant, label: str, epsilon_nano: int) -> float:
    """Charge a createDTMCMC chain (record ``mcmc``, Δ = 2) before it starts; its ε."""
    return accountant.spend("mcmc", label, epsilon_nano, 2.0)


def draw_mcmc_tree(view: int, coded: CodedView, classes: np.ndarray, n_classes: int,
                   depth: int, eps: float, rng: np.random.Generator, *, mc_iter: int,
                   faithful: bool, sigma: float, window: int,
                   stats: np.ndarray | None = None) -> tuple[Tree, np.ndarray]:
    """Run a createDTMCMC chain whose ε ``eps`` was charged by :func:`charge_mcmc_tree`
    (call it only after that charge). The kernel releases the GIL: independent chains can
    run in parallel threads, each with its own generator and its own ``stats``."""
    tree = _empty_tree(view, coded, depth)
    trace = np.zeros(mc_iter, dtype=np.float64)
    depths = K.node_depths(coded.fanout, depth)
    if faithful:
        done = B.mcmc_single_tree_faithful_bits(coded.codes, cands_matrix(coded), classes,
                                                n_classes, coded.fanout, depths, depth,
                                                tree.nodes, eps, mc_iter, sigma, window,
                                                FAITHFUL_MIN_ROWS, rng, trace, stats)
    else:
        bits, offset = child_bitsets(coded)
        done = B.mcmc_single_tree_bits(cands_matrix(coded), bits, offset, classes, n_classes,
                                       coded.codes.shape[1], coded.fanout, depths, depth,
                                       tree.nodes, eps, mc_iter, rng, trace, stats)
    _route(tree)
    return tree, trace[:done]


def sample_tree_pair(views: tuple[int, int], coded_first: CodedView, coded_second: CodedView,
                     classes: np.ndarray, n_classes: int, depth: int, epsilon_nano: int,
                     rng: np.random.Generator, accountant: PrivacyAccountant, label: str, *,
                     mc_iter: int, faithful: bool, sigma: float, window: int,
                     stats: np.ndarray | None = None,
                     count_scale: bool = False) -> tuple[Tree, Tree, np.ndarray]:
    """sampleTreePair (Alg. 5): joint MCMC over two trees.

    Score: the paper's g(T1)(1+g(T2))/2 ∈ [0, 1], Δ = 1; or, with ``count_scale`` (strict
    mode only; faithful mode always uses the paper's score), Q(T1) + Q(T2) − Q(root of T2)
    in rows with Q(T) = Σ_leaves Σ_c n_c²/|leaf|, Δ = 3, not normalised by the row count N
    (docs/PRIVACY.md S2c). ``coded_first`` is the tree with the initial target ``classes`` as class,
    ``coded_second`` the tree whose classes are the first tree's leaves. Acceptance
    min(1, exp(ε·ΔS/(2Δ))·q(T′→T)/q(T→T′)) with the data-independent proposal ratio, so in
    strict mode the stationary law is the exponential mechanism over pairs: ε-DP only upon
    convergence (in the limit), not for the finite chain. Faithful mode drops the ratio,
    as the paper and the authors' code do (not the exponential mechanism). Both modes run on
    row bitsets (``bitset_mcmc``). Returns both trees and the (non-private) trace (score
    units: [0, 1] for the paper's score, rows for the count-scale one).
    """
    eps = charge_tree_pair(accountant, label, epsilon_nano, count_scale=count_scale,
                           faithful=faithful)
    return draw_tree_pair(views, coded_first, coded_second, classes, n_classes, depth, eps,
                          rng, mc_iter=mc_iter, faithful=faithful, sigma=sigma, window=window,
                          stats=stats, count_scale=count_scale)


def charge_tree_pair(accountant: PrivacyAccountant, label: str, epsilon_nano: int, *,
                     count_scale: bool, faithful: bool) -> float:
    """Charge a sampleTreePair chain (record ``mcmc``; Δ = 3 for the count-scale score in
    strict mode, else 1) before it starts; its ε."""
    count_scale = bool(count_scale) and not faithful
    return accountant.spend("mcmc", label, epsilon_nano,
                            PAIR_SENSITIVITY_COUNT if count_scale else PAIR_SENSITIVITY_PAPER)


def draw_tree_pair(views: tuple[int, int], coded_first: CodedView, coded_second: CodedView,
                   classes: np.ndarray, n_classes: int, depth: int, eps: float,
                   rng: np.random.Generator, *, mc_iter: int, faithful: bool, sigma: float,
                   window: int, stats: np.ndarray | None = None,
                   count_scale: bool = False) -> tuple[Tree, Tree, np.ndarray]:
    """Run a sampleTreePair chain whose ε ``eps`` was charged by :func:`charge_tree_pair`
    with the same ``count_scale`` and ``faithful`` (call it only after that charge). The
    kernel releases the GIL: independent pairs can run in parallel threads, each with its
    own generator and its own ``stats``."""
    count_scale = bool(count_scale) and not faithful
    t1 = _empty_tree(views[0], coded_first, depth)
    t2 = _empty_tree(views[1], coded_second, depth)
    n_rows = coded_first.codes.shape[1]
    trace = np.zeros(mc_iter, dtype=np.float64)
    d1 = K.node_depths(coded_first.fanout, depth)
    d2 = K.node_depths(coded_second.fanout, depth)
    if faithful:
        done = B.mcmc_tree_pair_faithful_bits(coded_first.codes, cands_matrix(coded_first),
                                              coded_first.fanout, d1, t1.nodes,
                                              coded_second.codes, cands_matrix(coded_second),
                                              coded_second.fanout, d2, t2.nodes,
                                              classes, n_classes, depth, eps, mc_iter, sigma,
                                              window, FAITHFUL_MIN_ROWS, rng, trace, stats)
    else:
        bits1, off1 = child_bitsets(coded_first)
        bits2, off2 = child_bitsets(coded_second)
        done = B.mcmc_tree_pair_bits(cands_matrix(coded_first), bits1, off1,
                                     coded_first.fanout, d1, t1.nodes,
                                     cands_matrix(coded_second), bits2, off2,
                                     coded_second.fanout, d2, t2.nodes,
                                     classes, n_classes, n_rows, depth, eps, mc_iter, rng,
                                     trace, stats, True, count_scale)
    _route(t1)
    _route(t2)
    return t1, t2, trace[:done]


def leaf_classes(tree: Tree) -> tuple[np.ndarray, int]:
    """A tree's leaves as classes for the next tree: leaf order 0..m-1, m = 'no leaf'."""
    compact = tree.compact_leaf_ids()
    m = int(tree.leaves().size)
    classes = np.where(tree.leaf_of_row >= 0, compact[tree.leaf_of_row], m)
    return classes.astype(np.int64), m + 1


def true_leaf_table(tree_left: Tree, tree_right: Tree) -> np.ndarray:
    """True |A_i ∩ B_j| (private; only ever released with noise)."""
    return K.contingency(tree_left.leaf_of_row, tree_right.leaf_of_row,
                         tree_left.compact_leaf_ids(), tree_right.compact_leaf_ids(),
                         int(tree_left.leaves().size), int(tree_right.leaves().size))
