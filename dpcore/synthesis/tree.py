"""Strict MC-GEN-DP's tree structure: a class-conditional tree of feature pairs chosen under DP.

Privacy unit: one record; neighbours add or remove one record. Every release below is charged
to the run's accountant before its noise is drawn; the shares are
:func:`dpcore.synthesis.params.tree_shares`, which sum exactly to the run's ε. The argument
is in ``dpcore/synthesis/PRIVACY.md`` (§6.8, "The tree").

Steps (after the noisy class counts N̂_y, :func:`dpcore.synthesis.mcgen.noisy_class_counts`):

1. **Codes.** Every feature is cut into public codes: a numeric feature into ``K`` equal-width
   bins of its declared bounds, a categorical one into its declared levels. ``K`` comes from
   N̂ and public parameters only (:func:`tree_bins`), so it is post-processing.
2. **Marginals.** Per feature j, the class × code histogram plus discrete Laplace (Δ = 1: a
   record is in one cell; the classes are disjoint), at ε_j each.
3. **Edges** (Chow–Liu in the manner of MST, McKenna et al. 2021). The utility of a pair (a, b)
   is the L1 distance between its true class × a × b table and the table the released
   marginals predict under independence, N̂_y·P̂(a | y)·P̂(b | y). The prediction reads
   released values only, and one record changes one cell of the true table by one, so the
   utility moves by at most Δ = 1 (a public offset, :func:`_independent_gap`, is subtracted
   so that wide pairs do not win on noise). Up to p − 1 rounds of the exponential mechanism
   (ε_sel each) each pick one pair that joins two components of the forest so far; pairs
   that would close a cycle get −∞, which depends on earlier releases only. From the second
   round on a data-free "stop" candidate (:func:`stop_utility`) can end the forest: an
   independent feature is then drawn from its own marginal instead of an edge table of
   noise, and the undrawn rounds' ε goes to the edge tables (:func:`realised_shares`).
4. **Edge tables.** Each tree of the forest is oriented from its smallest feature; per edge
   parent → child, the class × parent × child table plus discrete Laplace (Δ = 1), at ε_e
   each.
5. **Model and generation** (post-processing): each root from its noisy marginal, each child
   from its edge's noisy row for the parent's code, smoothed towards the child's noisy
   marginal with pseudo-counts of about one noise scale per cell; a numeric code becomes a
   value drawn uniformly inside its bin.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from dpcore.data.table.table import SynthesisTable
from dpcore.privacy.mechanisms import discrete_laplace, exponential_mechanism
from dpcore.privacy.units import split_evenly
from dpcore.synthesis.intervals import MARGINAL_PREFIX
from dpcore.synthesis.params import (
    EDGE,
    FEATURES,
    GROUPS,
    HISTOGRAM,
    SELECTION,
    SynthesisParams,
    marginal_codes,
    tree_shares,
)

__all__ = ["TREE_NOISE_SCALES", "MIN_TREE_BINS", "tree_bins", "feature_codes",
           "pair_utilities", "TreeModel",
           "fit_tree", "sample_tree"]

#: Records a cell of an edge table of two numeric features (K × K per class) should expect,
#: in scales of the edge's noise, for the tree to be built (see :func:`tree_bins`).
#: Measured (docs/results.md, issue 35): at 1 the tree was built on the 614-row Diabetes and
#: Pima-shaped seeds at ε = 1 (K = 4) and scored 0.01–0.05 below the floor (8 rounds); at 5
#: those fall back to independent histograms, while the tree is still built there at
#: ε = 10 (K = 4) and on the 39,073-row Adult-shaped seed at ε = 1 (K = 4 since the edge
#: tables' share is 0.3 of ε_G, ``TREE_MARGINAL_SHARE``; K = 8 with the earlier 0.7).
TREE_NOISE_SCALES = 5.0

#: Smallest coarse K for which the tree is built: with K = 2 (each numeric feature cut in
#: halves) the edges carry little and their tables cost the marginals budget. Measured
#: (docs/results.md, issue 35): on the 48,842-row Adult shape at ε = 0.1 the rule gave
#: K = 2 and the tree scored 0.007–0.011 below the floor (logistic regression, 2 splits);
#: skipped, the per-feature histograms were level with it.
MIN_TREE_BINS = 4

#: Whether rounds after the first may stop the tree (a forest; :func:`stop_utility`).
STOP = True


def _share(shares, phase: str, index: int, part: str) -> int:
    for s in shares:
        if s.phase == phase and s.index == index and s.part == part:
            return s.epsilon_nano
    raise KeyError((phase, index, part))


def tree_bins(params: SynthesisParams, n_features: int, n_classes: int, n_hat) -> int:
    """Coarse bins K of every numeric feature in the edge tables, or 0 when the tree is skipped.

    K is the largest divisor of ``histogram_bins`` (the marginals' fine bins, so that coarse
    bins are unions of fine ones) with K ≤ √(N̂ / (C·TREE_NOISE_SCALES·b_e)), N̂ = Σ_y
    max(N̂_y, 0), C classes and b_e = 1/ε_e the noise scale of one edge table: a K × K table
    per class then expects ≥ TREE_NOISE_SCALES noise scales of records per cell. No such
    K ≥ :data:`MIN_TREE_BINS` means the edge tables would be noise or too coarse to pay: the
    caller then models the features independently (so does ``histogram_bins`` < 4).
    Public parameters and DP counts only (post-processing).
    """
    shares = tree_shares(params, n_features)
    scale = 1e9 / _share(shares, GROUPS, n_features, EDGE)
    total = float(np.maximum(np.asarray(n_hat, dtype=np.float64), 0.0).sum())
    limit = np.sqrt(total / (n_classes * TREE_NOISE_SCALES * scale))
    fine = int(params.histogram_bins)
    fits = [k for k in range(MIN_TREE_BINS, fine + 1) if fine % k == 0 and k <= limit]
    return max(fits) if fits else 0


def feature_codes(table: SynthesisTable, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Each record's code of every feature (int64[n, p]) and each feature's number of codes.

    Numeric: ``bins`` equal-width bins of the public bounds (on the encoded [−1, 1] scale);
    categorical: its declared levels. A record's codes depend on that record alone.
    """
    schema = table.schema
    z = table.encoded()
    codes = np.zeros((table.n_rows, schema.n_features), dtype=np.int64)
    cards = np.zeros(schema.n_features, dtype=np.int64)
    for j, f in enumerate(schema.features):
        cols = schema.columns_of(j)
        if f.is_numeric:
            x = z[:, cols.start]
            codes[:, j] = np.clip(np.floor((x + 1.0) * 0.5 * bins), 0, bins - 1)
            cards[j] = bins
        else:
            codes[:, j] = np.argmax(z[:, cols.start:cols.stop], axis=1)
            cards[j] = len(cols)
    return codes, cards


def _widths(schema, fine: int, coarse: int) -> np.ndarray:
    """Fine codes per coarse code of every feature: fine/coarse for numeric, 1 otherwise."""
    return np.array([fine // coarse if f.is_numeric else 1 for f in schema.features],
                    dtype=np.int64)


def _coarsen(hist: np.ndarray, width: int) -> np.ndarray:
    """A class × fine-code histogram summed into coarse codes of ``width`` fine codes."""
    return hist.reshape(hist.shape[0], -1, width).sum(axis=2)


def _table(labels, a, b, n_classes: int, ca: int, cb: int) -> np.ndarray:
    """True class × a × b counts (int64[C, ca, cb])."""
    flat = (labels.astype(np.int64) * ca + a) * cb + b
    return np.bincount(flat, minlength=n_classes * ca * cb).reshape(n_classes, ca, cb)


def _probabilities(hist: np.ndarray) -> np.ndarray:
    """Rows of max(count, 0), normalised (uniform where a row has no positive count)."""
    w = np.maximum(hist.astype(np.float64), 0.0)
    total = w.sum(axis=-1, keepdims=True)
    return np.where(total > 0, w / np.where(total > 0, total, 1.0), 1.0 / w.shape[-1])


@dataclass
class TreeModel:
    """A fitted tree: post-processing of DP releases only (safe to keep).

    Attributes
    ----------
    bins : int
        Coarse equal-width bins K of every numeric feature in the edge tables.
    fine_bins : int
        Equal-width bins of every numeric feature in the marginals (a multiple of K).
    cards : int64[p]
        Coarse codes per feature (edge tables).
    widths : int64[p]
        Fine codes per coarse code.
    marginals : list of int64[C, fine card_j]
        The noisy class × fine-code histograms.
    edges : list of (parent, child)
        Schema feature indices, in sampling order (parents before children).
    tables : list of int64[C, card_parent, card_child]
        The noisy edge tables.
    noisy_class_counts : int64[C]
    shares : list of BudgetSlot
        What the run spent (:func:`realised_shares`).
    selection_utilities : list of float64 arrays
        Owner-only diagnostics: the true utilities of every round (NOT private).
    """

    bins: int
    fine_bins: int
    cards: np.ndarray
    widths: np.ndarray
    marginals: list
    edges: list
    tables: list
    noisy_class_counts: np.ndarray
    shares: list
    selection_utilities: list = field(default_factory=list)


def _independent_gap(ca: int, cb: int, n_classes: int, total: float, scale_a: float,
                     scale_b: float) -> float:
    """The L1 gap an independent pair shows anyway (records), from public values only.

    Two parts: the released marginals' noise (about one noise scale per code of either
    feature and class: C·(b_a·c_a + b_b·c_b), b_j feature j's marginal noise scale) and
    the sampling spread of a table of N̂ records over C·c_a·c_b cells (E|X − EX| ≈
    √(2/π·EX) per cell, summed: at most √(2/π·cells·N̂)).
    Subtracting it from every pair's utility stops wide pairs (many codes) from winning on
    noise alone; it depends on released N̂ and public shapes, so Δ stays 1.
    """
    cells = n_classes * ca * cb
    return n_classes * (scale_a * ca + scale_b * cb) + float(np.sqrt(2.0 / np.pi * cells * total))


def pair_utilities(codes, cards, labels, marginals, n_hat, marginal_scales
                   ) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Every pair (a < b) and its utility (records): the L1 gap between its true class × a × b
    table and N̂_y·P̂(a | y)·P̂(b | y) from the released marginals, minus
    :func:`_independent_gap` (``marginal_scales``: each feature's marginal noise scale,
    public). Sensitivity 1: only the true table reads the data, and one record changes one
    of its cells by one."""
    p = codes.shape[1]
    c = len(n_hat)
    counts = np.maximum(np.asarray(n_hat, dtype=np.float64), 0.0)
    probs = [_probabilities(m) for m in marginals]   # over the pairs' (coarse) codes
    pairs = [(a, b) for a in range(p) for b in range(a + 1, p)]
    utility = np.empty(len(pairs))
    for i, (a, b) in enumerate(pairs):
        true = _table(labels, codes[:, a], codes[:, b], c, int(cards[a]), int(cards[b]))
        expected = counts[:, None, None] * probs[a][:, :, None] * probs[b][:, None, :]
        utility[i] = np.abs(true - expected).sum() - _independent_gap(
            int(cards[a]), int(cards[b]), c, counts.sum(), marginal_scales[a],
            marginal_scales[b])
    return pairs, utility


def stop_utility(n_candidates: int, epsilon_nano: int) -> float:
    """The utility of "no more edges" in a round of n candidate pairs at ε (Δ = 1): ln(n)/f,
    f = ε/2, so that stopping weighs as much as all n pairs would at utility 0 together.
    Public (a count of candidates and a share), so Δ stays 1."""
    return float(np.log(max(n_candidates, 1)) / (epsilon_nano * 1e-9 / 2.0))


def _choose_edges(codes, cards, labels, marginals, n_hat, shares, *, rng, accountant):
    """Up to p − 1 exponential-mechanism rounds of Kruskal's algorithm (module docstring,
    step 3); from the second round on, one more candidate stops the forest there. Returns
    the chosen pairs and the true utilities of each round (owner diagnostics)."""
    p = codes.shape[1]
    scales = [1e9 / _share(shares, GROUPS, j, HISTOGRAM) for j in range(p)]
    pairs, utility = pair_utilities(codes, cards, labels, marginals, n_hat, scales)
    # (``marginals`` here are the released fine marginals summed into coarse codes.)
    component = np.arange(p)
    chosen, seen = [], []
    for r in range(p - 1):
        open_ = np.array([component[a] != component[b] for a, b in pairs])
        u = np.where(open_, utility, -np.inf)
        epsilon_nano = _share(shares, FEATURES, r, SELECTION)
        if r > 0 and STOP:
            u = np.append(u, stop_utility(int(open_.sum()), epsilon_nano))
        seen.append(u.copy())
        i = exponential_mechanism(u, sensitivity=1.0, epsilon_nano=epsilon_nano, rng=rng,
                                  accountant=accountant,
                                  label=f"tree edge {r + 1}: pair choice (L1 gap to independence)")
        if i == len(pairs):
            break
        a, b = pairs[i]
        component[component == component[b]] = component[a]
        chosen.append((a, b))
    return chosen, seen


def realised_shares(shares, p: int, rounds: int, n_edges: int) -> list:
    """The shares a run spent once its edges are known: the selection rounds it drew
    (``rounds``) and ``n_edges`` ≥ 1 edge tables (index p + e) that split the edge tables'
    share plus the unused rounds' evenly. Sums to the same total as ``shares`` (a function
    of released choices and public values: sequential composition, B5)."""
    unused = [s for s in shares if s.phase == FEATURES and s.index >= rounds]
    edge = sum(s.epsilon_nano for s in shares if s.part == EDGE) \
        + sum(s.epsilon_nano for s in unused)
    slot = next(s for s in shares if s.part == EDGE)
    kept = [s for s in shares if s.part != EDGE and s not in unused]
    return kept + [replace(slot, index=p + e, epsilon_nano=x)
                   for e, x in enumerate(split_evenly(edge, n_edges))]


def _orient(chosen, p: int) -> list[tuple[int, int]]:
    """The forest's edges as (parent, child), breadth first from the smallest feature of
    each tree (public)."""
    adjacent = {j: [] for j in range(p)}
    for a, b in chosen:
        adjacent[a].append(b)
        adjacent[b].append(a)
    order, seen = [], set()
    for root in range(p):
        if root in seen:
            continue
        seen.add(root)
        queue = [root]
        while queue:
            parent = queue.pop(0)
            for child in sorted(adjacent[parent]):
                if child not in seen:
                    seen.add(child)
                    order.append((parent, child))
                    queue.append(child)
    return order


def fit_tree(table: SynthesisTable, params: SynthesisParams, n_hat, bins: int, *, rng,
             accountant) -> TreeModel:
    """Release the marginals, choose the edges and release their tables (steps 1–4).

    ``n_hat`` is the already released N̂_y and ``bins`` = :func:`tree_bins` (≥ 2), the
    coarse bins of the edge tables; the marginals use ``histogram_bins`` fine bins. Spends
    exactly the marginals', selections' and edges' shares of :func:`tree_shares`.
    """
    schema = table.schema
    p, c = schema.n_features, schema.n_classes
    fine = int(params.histogram_bins)
    shares = tree_shares(params, p, marginal_codes(schema, fine))
    fine_codes, fine_cards = feature_codes(table, fine)
    widths = _widths(schema, fine, bins)
    codes, cards = fine_codes // widths, fine_cards // widths
    labels = table.labels.astype(np.int64)
    marginals = []
    for j, f in enumerate(schema.features):
        true = np.bincount(labels * fine_cards[j] + fine_codes[:, j],
                           minlength=c * int(fine_cards[j])).reshape(c, int(fine_cards[j]))
        marginals.append(discrete_laplace(
            true, sensitivity=1, epsilon_nano=_share(shares, GROUPS, j, HISTOGRAM), rng=rng,
            accountant=accountant, label=MARGINAL_PREFIX + f.name, parallel=c))
    coarse = [_coarsen(m, int(w)) for m, w in zip(marginals, widths)]
    chosen, seen = _choose_edges(codes, cards, labels, coarse, n_hat, shares, rng=rng,
                                 accountant=accountant)
    edges = _orient(chosen, p)
    shares = realised_shares(shares, p, len(seen), len(edges))
    tables = []
    for e, (a, b) in enumerate(edges):
        true = _table(labels, codes[:, a], codes[:, b], c, int(cards[a]), int(cards[b]))
        tables.append(discrete_laplace(
            true, sensitivity=1, epsilon_nano=_share(shares, GROUPS, p + e, EDGE), rng=rng,
            accountant=accountant,
            label=f"tree edge table: class × {schema.features[a].name} × "
                  f"{schema.features[b].name}", parallel=c))
    return TreeModel(bins, fine, cards, widths, marginals, edges, tables, np.asarray(n_hat),
                     shares, seen)


def _conditional(noisy: np.ndarray, child_prior: np.ndarray, scale: float) -> np.ndarray:
    """P(child | parent) per parent code (float64[card_parent, card_child]): max(count, 0)
    plus ``scale`` pseudo-records per child code spread by the child's noisy marginal."""
    w = np.maximum(noisy.astype(np.float64), 0.0) + scale * noisy.shape[-1] * child_prior
    return w / w.sum(axis=-1, keepdims=True)


def _draw(prob: np.ndarray, rng) -> np.ndarray:
    """One code per row of ``prob`` (float64[n, k]) by inversion."""
    cdf = np.cumsum(prob, axis=1)
    return np.minimum((rng.random(prob.shape[0])[:, None] > cdf).sum(axis=1),
                      prob.shape[1] - 1)


def _fine_within(coarse_codes: np.ndarray, prior: np.ndarray, width: int, rng) -> np.ndarray:
    """A fine code inside each coarse code, ∝ the feature's noisy fine marginal there."""
    if width == 1:
        return coarse_codes
    block = _probabilities(prior.reshape(-1, width))   # coarse × fine-within
    return coarse_codes * width + _draw(block[coarse_codes], rng)


def sample_tree(model: TreeModel, schema, shares, *, rng) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic records of a fitted tree (post-processing): ``(encoded, labels)``, rows per
    class max(round(N̂_y), 0), grouped by class.

    The root's fine code comes from its noisy fine marginal; a child's coarse code from its
    edge's noisy row for the parent's coarse code (smoothed, :func:`_conditional`), then a
    fine code inside it ∝ the child's noisy fine marginal; a numeric value is drawn
    uniformly inside its fine bin."""
    p, c = schema.n_features, schema.n_classes
    per_class = np.maximum(np.rint(model.noisy_class_counts), 0).astype(np.int64)
    total = int(per_class.sum())
    labels = np.repeat(np.arange(c, dtype=np.int32), per_class)
    fine = np.zeros((total, p), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(per_class)])
    priors = [_probabilities(m) for m in model.marginals]
    coarse_priors = [_probabilities(_coarsen(np.maximum(m, 0), int(w)))
                     for m, w in zip(model.marginals, model.widths)]
    roots = sorted(set(range(p)) - {b for _, b in model.edges})
    for y in range(c):
        n = int(per_class[y])
        if n == 0:
            continue
        rows = slice(starts[y], starts[y + 1])
        for j in roots:
            fine[rows, j] = _draw(np.broadcast_to(priors[j][y], (n, priors[j].shape[1])), rng)
        for e, (a, b) in enumerate(model.edges):
            scale = 1e9 / _share(shares, GROUPS, p + e, EDGE)
            cond = _conditional(model.tables[e][y], coarse_priors[b][y], scale)
            coarse_b = _draw(cond[fine[rows, a] // model.widths[a]], rng)
            fine[rows, b] = _fine_within(coarse_b, model.marginals[b][y],
                                         int(model.widths[b]), rng)
    out = np.zeros((total, schema.width))
    for j, f in enumerate(schema.features):
        cols = schema.columns_of(j)
        if f.is_numeric:
            out[:, cols.start] = -1.0 + 2.0 * (fine[:, j] + rng.random(total)) / model.fine_bins
        else:
            out[np.arange(total), cols.start + fine[:, j]] = 1.0
    return out, labels
