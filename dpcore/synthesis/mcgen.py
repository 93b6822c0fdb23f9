"""MC-GEN (Li, Zhuang & Chang 2022): MC-GEN-DP (strict, default) and the published pipeline
(faithful, NOT DP).

Privacy unit: one record; neighbours add or remove one record (replace-one doubles every ε).
Every release is charged to the run's :class:`~dpcore.privacy.accountant.PrivacyAccountant`
before its noise is drawn.

Strict mode: MC-GEN-DP (docs/ALGORITHMS.md §9) — ε-DP, integer noise only
--------------------------------------------------------------------------
1. **Class counts** N̂_y = N_y + discrete Laplace(1/ε_Y) (one histogram, Δ = 1). Class y
   gets max(round(N̂_y), 0) synthetic rows.
2. **Feature groups**: given by the owner (free); or, when the public rule on N̂ says the
   noisy correlations would be noise (:func:`correlation_noise` above
   ``max_correlation_noise``), one group per feature with ε_F added to the groups' budget;
   or built from DP correlations — one
   single-cell release (:mod:`dpcore.synthesis.moments`) of the sums and second moments of
   all records' encoded values with ε_F (the count is Σ_y N̂_y); the noisy covariance,
   repaired to PSD, gives the feature distance 1 − √s (:mod:`dpcore.synthesis.grouping`);
   UPGMA and the Davies–Bouldin choice (or a distance threshold) are post-processing.
3. **Cells**, per class and group: a public grid over the declared bounds, sized from N̂_y
   and public parameters (:mod:`dpcore.synthesis.cells`); a record's cell depends on that
   record alone. (DP k-means centroids, the spec's alternative, are not implemented.)
4. **Cell statistics**, per group m with ε_m = ε_G·p_m/p: noisy counts, sums and second
   moments of every (class, cell) on the fixed-point grid, one discrete-Laplace release
   each (parallel over the disjoint cells of all classes; sequential over the groups, since
   every record contributes to every group). A group whose grid has one cell per class
   releases no counts (they are the N̂_y), one made of a single categorical feature no
   second moments; their share goes to the group's other releases.
   A one-feature group (``cells = grid``) is a **histogram**: only its noisy class × bin
   counts are released, with all of ε_m (Δ = 1), over min(``histogram_bins``,
   max(2, ⌊N̂_y·ε_m⌋)) bins of a numeric feature's bounds or a categorical's levels.
5. **Models** (post-processing): per cell, mean and covariance shrunk towards the class's
   pooled moments, PSD repair by eigenvalue clipping; a cell whose noisy count is below
   :data:`EMPTY_CELL_SCALES` count-noise scales gets weight 0.
6. **Generation** (post-processing): each synthetic row of class y draws, per group
   independently, a cell with probability ∝ its weight and a value from N(μ_c, Σ_c),
   kept inside its cell and the bounds; a categorical the grid does not split takes a level
   drawn from the cell's noisy level frequencies. A histogram group draws a bin ∝
   max(count, 0) and a value uniformly inside it.

Total ε_Y + ε_F + Σ_m ε_m = ε exactly (:func:`dpcore.synthesis.params.mechanism_shares`).

Faithful mode: the published pipeline — NOT ε-DP
------------------------------------------------
For reproducing the paper's figures on public or owner data. As the paper and the authors'
code, with three defects fixed: proper MDAV (C12), the code's 0.4/0.6 mean/covariance split
(C3) with the corrected covariance sensitivity 2·d_m(d_m+1)/|c| (C4) and without the 1/n_y
factor (C5), and every feature modelled (no verbatim copy, C7). It keeps the defects that
make it not DP (each listed in the result's ``not_dp``): feature groups from raw
correlations (C1), data-dependent MDAV clusters with per-cluster sensitivities (C2), each
synthetic row's blocks drawn from the clusters of the same original record (C6), exact class
counts (C8), and float Laplace noise. The PSD repair is the code's Σ − 10·λ_min·I shift
(post-processing; the code's re-drawing of noise, C9, is not reproduced). No clipping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dpcore.data.table.schema import TableSchema, value_text
from dpcore.data.table.table import SynthesisTable
from dpcore.errors import ParameterError
from dpcore.privacy.mechanisms import discrete_laplace
from dpcore.synthesis.cells import (
    HISTOGRAM_NOISE_SCALES,
    CellGrid,
    assign_cells,
    choose_grid,
    constrain_to_cells,
    histogram_grid,
    target_cells,
    uniform_in_cells,
)
from dpcore.synthesis.fixedpoint import to_fixed
from dpcore.synthesis.grouping import association_distance, pearson_distance, upgma_groups
from dpcore.synthesis.mdav import mdav
from dpcore.synthesis.moments import (
    GaussianCells,
    GroupLayout,
    NoisyCellStatistics,
    cell_sufficient_statistics,
    gaussian_cells,
    group_layout,
    release_cell_statistics,
    sample_gaussians,
)
from dpcore.synthesis.params import (
    CLASSES,
    COUNTS,
    COVARIANCE,
    FEATURES,
    GRID,
    GROUPS,
    MEAN,
    MOMENTS,
    SUMS,
    THRESHOLD,
    TREE,
    SynthesisParams,
    mechanism_shares,
)
from dpcore.synthesis.tree import TreeModel, fit_tree, sample_tree, tree_bins

__all__ = ["McgenModel", "noisy_class_counts", "dp_feature_groups", "correlation_noise",
           "EMPTY_CELL_SCALES", "fit_mcgen_dp",
           "sample_mcgen_dp", "FaithfulOutput", "run_faithful", "FAITHFUL_NOT_DP"]

#: The steps of faithful MC-GEN that are not ε-DP (recorded in every faithful result).
FAITHFUL_NOT_DP = (
    "feature groups from raw Pearson correlations, unpaid (MC-GEN critique C1)",
    "MDAV clusters depend on every record; per-cluster sensitivity and parallel composition "
    "over clusters do not hold (C2)",
    "each synthetic row takes its feature-group blocks from the clusters of one original "
    "record, releasing the joint cluster membership (C6)",
    "exact class counts and row count (C8)",
    "float Laplace noise (idealised numerics, Mironov 2012)",
)


def _progress(progress, fraction: float, message: str) -> None:
    if progress is not None:
        progress(float(min(max(fraction, 0.0), 1.0)), message)


def noisy_class_counts(table: SynthesisTable, epsilon_nano: int, *, rng, accountant
                       ) -> np.ndarray:
    """N̂_y = N_y + discrete Laplace(1/ε_Y) for every declared class (int64; Δ = 1)."""
    return discrete_laplace(table.class_counts(), sensitivity=1, epsilon_nano=epsilon_nano,
                            rng=rng, accountant=accountant,
                            label="N̂_y: records per class (label histogram)")


def _threshold(params: SynthesisParams) -> float | None:
    return params.group_threshold if params.grouping == THRESHOLD else None


def _slot(shares, phase: str, index: int, part: str) -> int:
    for s in shares:
        if s.phase == phase and s.index == index and s.part == part:
            return s.epsilon_nano
    raise ParameterError(f"no budget share for {phase}/{index}/{part}")


def correlation_noise(params: SynthesisParams, n_features: int, n_total: float) -> float:
    """Predicted standard deviation of one noisy second moment E[x_a·x_b] (encoded units²).

    The features release (one cell of all records) adds discrete Laplace noise of scale
    b = Δ_Q/ε_F,moments with Δ_Q = (C(p, 2) + p)·L² (every feature counted as numeric, the
    worst case; categoricals only lower Δ_Q); one entry divided by the noisy record count
    N̂ = Σ_y max(N̂_y, 0) has standard deviation √2·b/(L²·N̂). Depends on public parameters
    and the DP counts N̂_y only, so deciding on it is post-processing.
    """
    p = int(n_features)
    slot = _slot(mechanism_shares(params, [p]), FEATURES, 0, MOMENTS) / 1e9
    scale = (p * (p - 1) // 2 + p) / slot          # b/L²
    return float(np.sqrt(2.0) * scale / max(float(n_total), 1.0))


#: Strict Gaussian groups: a cell whose noisy count is below this many count-noise scales is
#: given weight 0 (post-processing of the count: an empty cell's noisy count is ≈ noise,
#: and its model would be the shrinkage prior).
EMPTY_CELL_SCALES = 2.0


def dp_feature_groups(table: SynthesisTable, params: SynthesisParams, shares, *, rng,
                      accountant, n_hat: np.ndarray, values: np.ndarray | None = None
                      ) -> tuple[list[np.ndarray], np.ndarray, NoisyCellStatistics]:
    """Feature groups from DP sufficient statistics of all records (strict, ε_F).

    One single-cell release of the sums and second moments of every record's encoded values
    (Δ p·L and (C(p, 2) + n_num)·L²); the count is Σ_y N̂_y (already released). Everything
    after the release is post-processing.

    Returns
    -------
    groups : list of int64 arrays
        Schema feature indices per group.
    distance : float64[p, p]
        The noisy feature distance 1 − √s the groups were built from.
    noisy : NoisyCellStatistics
        The release itself (one cell; the count is Σ_y max(N̂_y, 0)).
    """
    schema = table.schema
    layout = group_layout(schema, range(schema.n_features))
    bits = params.fixed_point_bits
    if values is None:
        values = to_fixed(table.encoded(), bits)
    cells = np.zeros(table.n_rows, dtype=np.int64)
    counts, sums, moments = cell_sufficient_statistics(values[:, layout.columns], cells, 1,
                                                       layout, bits)
    noisy = release_cell_statistics(
        counts, sums, moments, layout=layout, bits=bits,
        epsilon_nano=(None, _slot(shares, FEATURES, 0, SUMS), _slot(shares, FEATURES, 0,
                                                                     MOMENTS)),
        rng=rng, accountant=accountant, label="feature correlations (all records)",
        known_counts=[int(np.maximum(n_hat, 0).sum())])
    model = gaussian_cells(noisy, layout, bits, shrinkage=0.0, min_eigenvalue=1e-12)
    distance = association_distance(model.covariances[0], schema, model.means[0])
    groups, _ = upgma_groups(distance, _threshold(params))
    return groups, distance, noisy


@dataclass
class McgenModel:
    """A fitted MC-GEN-DP model: post-processing of DP releases only (safe to keep).

    Attributes
    ----------
    schema : TableSchema
    noisy_class_counts : int64[n_classes]
        N̂_y.
    layouts : list of GroupLayout
        The feature groups.
    grids : list of list of CellGrid
        ``grids[m][y]``: the public grid of group m for class y.
    cells : list of list of GaussianCells
        ``cells[m][y]``: the Gaussian cell models.
    noisy : list of NoisyCellStatistics
        ``noisy[m]``: group m's released statistics, classes concatenated in class order.
    offsets : list of int64 arrays
        ``offsets[m][y]``: where class y's cells start in ``noisy[m]`` (length n_classes+1).
    feature_distances : float64[p, p], optional
        The noisy feature distances (groups built from data).
    true_cells : list of dict
        Owner-only: true cell counts per group and class (NOT private).
    histogram : list of bool
        Per group: a histogram group (one feature, counts only, uniform inside a bin).
    shares : list of BudgetSlot
        Every mechanism call's ε as spent (sums exactly to the run's ε).
    correlations_released : bool
        False when the public rule on N̂ skipped the noisy correlations (singleton groups).
    tree : TreeModel, optional
        The tree structure's model (then ``layouts`` … ``offsets`` are empty).
    """

    schema: TableSchema
    noisy_class_counts: np.ndarray
    layouts: list[GroupLayout]
    grids: list[list[CellGrid]]
    cells: list[list[GaussianCells]]
    noisy: list[NoisyCellStatistics]
    offsets: list[np.ndarray]
    feature_distances: np.ndarray | None = None
    true_cells: list[dict] = field(default_factory=list)
    histogram: list[bool] = field(default_factory=list)
    shares: list = field(default_factory=list)
    correlations_released: bool = True
    tree: TreeModel | None = None

    def rows_per_class(self) -> np.ndarray:
        """Synthetic rows per class: max(round(N̂_y), 0)."""
        return np.maximum(np.rint(self.noisy_class_counts), 0).astype(np.int64)


def fit_mcgen_dp(table: SynthesisTable, params: SynthesisParams, *, rng, accountant,
                 progress=None, timings: dict | None = None) -> McgenModel:
    """Fit MC-GEN-DP (strict) to ``table``, spending exactly the plan through ``accountant``.

    Parameters
    ----------
    table : SynthesisTable
        Private data.
    params : SynthesisParams
        Strict MC-GEN parameters (validated by the caller).
    rng : numpy.random.Generator
    accountant : PrivacyAccountant
    progress : callable(fraction, message), optional
    timings : dict, optional
        Filled with the wall seconds of each phase (owner diagnostics).
    """
    schema = table.schema
    timings = {} if timings is None else timings
    bits = params.fixed_point_bits
    started = time.perf_counter()
    p = schema.n_features
    head = mechanism_shares(params, [p])  # the classes / features shares do not depend on groups
    _progress(progress, 0.0, "noisy class counts")
    n_hat = noisy_class_counts(table, _slot(head, CLASSES, 0, COUNTS), rng=rng,
                               accountant=accountant)
    timings["classes"] = time.perf_counter() - started
    tree_k = tree_bins(params, p, schema.n_classes, n_hat) if _tree_structure(params) else 0
    if tree_k:
        started = time.perf_counter()
        _progress(progress, 0.1, "tree of feature pairs: noisy marginals, edges, edge tables")
        tree = fit_tree(table, params, n_hat, tree_k, rng=rng, accountant=accountant)
        timings["tree"] = time.perf_counter() - started
        return McgenModel(schema, n_hat, [], [], [], [], [], shares=tree.shares,
                          tree=tree)
    values = to_fixed(table.encoded(), bits)

    started = time.perf_counter()
    groups, distance, released = _feature_groups(table, params, head, n_hat, values, rng=rng,
                                                 accountant=accountant, progress=progress)
    layouts = [group_layout(schema, g) for g in groups]
    histogram = [params.cells == GRID and lay.p == 1 for lay in layouts]
    # Grids from N̂_y and public parameters only; a group with one cell per class needs no
    # counts, and then its ε goes to the sums and moments. A one-feature group is a noisy
    # histogram (counts only) over a grid with ≥ HISTOGRAM_NOISE_SCALES noise scales per bin.
    nominal = mechanism_shares(params, [lay.p for lay in layouts], histogram=histogram,
                               features_released=released)
    grids = _group_grids(layouts, histogram, nominal, n_hat, params, schema.n_classes)
    counted = [h or any(g.n_cells > 1 for g in grids_m) for h, grids_m in zip(histogram, grids)]
    with_moments = [not h and lay.pairs[0].shape[0] > 0 for h, lay in zip(histogram, layouts)]
    shares = mechanism_shares(params, [lay.p for lay in layouts], counted, with_moments,
                              histogram, features_released=released)
    timings["features"] = time.perf_counter() - started

    started = time.perf_counter()
    by_class = [np.flatnonzero(table.labels == y) for y in range(schema.n_classes)]
    models, releases, offsets, true_cells = [], [], [], []
    encoded_all = table.encoded()
    for m, layout in enumerate(layouts):
        _progress(progress, 0.1 + 0.8 * m / len(layouts),
                  f"feature group {m + 1}/{len(layouts)}: noisy cell statistics")
        group_values = values[:, layout.columns]
        encoded = encoded_all[:, layout.columns]
        stats, starts = [], [0]
        for y, rows in enumerate(by_class):
            grid = grids[m][y]
            cells = assign_cells(encoded[rows], layout, grid)
            stats.append(cell_sufficient_statistics(group_values[rows], cells, grid.n_cells,
                                                    layout, bits))
            starts.append(starts[-1] + grid.n_cells)
        counts = np.concatenate([s[0] for s in stats])
        sums = np.concatenate([s[1] for s in stats])
        moments = np.concatenate([s[2] for s in stats])
        names = ", ".join(schema.features[f].name for f in layout.features)
        e_counts = _slot(shares, GROUPS, m, COUNTS) if counted[m] else None
        e_sums = None if histogram[m] else _slot(shares, GROUPS, m, SUMS)
        noisy = release_cell_statistics(
            counts, sums, moments, layout=layout, bits=bits,
            epsilon_nano=(e_counts, e_sums,
                          _slot(shares, GROUPS, m, MOMENTS) if with_moments[m] else None),
            rng=rng, accountant=accountant,
            label=f"group {m + 1} ({names})" + (" histogram" if histogram[m] else ""),
            parallel=int(counts.shape[0]), known_counts=None if counted[m] else n_hat)
        starts = np.asarray(starts, dtype=np.int64)
        models.append(_class_models(noisy, starts, layout, histogram[m], e_counts, params,
                                    schema.n_classes))
        releases.append(noisy)
        offsets.append(starts)
        true_cells.append({value_text(schema.classes[y]): [int(c) for c in s[0]]
                           for y, s in enumerate(stats)})
    timings["groups"] = time.perf_counter() - started
    return McgenModel(schema, n_hat, layouts, grids, models, releases, offsets, distance,
                      true_cells, histogram, shares, released)


def _tree_structure(params: SynthesisParams) -> bool:
    return params.structure == TREE and not params.groups_given


def _feature_groups(table: SynthesisTable, params: SynthesisParams, head, n_hat, values, *,
                    rng, accountant, progress):
    """``(groups, distance, released)``: the owner's groups, one group per feature (when the
    public rule on N̂ says the noisy correlations would be noise), or groups from noisy
    correlations (spends ε_F; ``released`` is False only when nothing was released)."""
    schema = table.schema
    p = schema.n_features
    distance = None
    released = True
    if params.groups_given:
        groups = [np.array([schema.feature_index(n) for n in g]) for g in params.feature_groups]
    elif _tree_structure(params) or correlation_noise(
            params, p, float(np.maximum(n_hat, 0).sum())) > params.max_correlation_noise:
        # Public rule on N̂ (tree_bins for the tree, correlation_noise for the groups): pairs
        # would be noise. Every feature is its own
        # group, nothing is released for the grouping, and ε_F joins the groups' budget.
        released = False
        groups = [np.array([j]) for j in range(p)]
    else:
        _progress(progress, 0.05, "feature groups from noisy correlations")
        groups, distance, _ = dp_feature_groups(table, params, head, rng=rng,
                                             accountant=accountant, n_hat=n_hat, values=values)
    return groups, distance, released


def _group_grids(layouts, histogram, nominal, n_hat, params: SynthesisParams, n_classes: int):
    """Each group's cell grid per class, from N̂_y and public parameters only (a one-feature
    group's histogram bins keep ≥ HISTOGRAM_NOISE_SCALES noise scales per bin)."""
    grids = []
    for m, layout in enumerate(layouts):
        count_scale = 1e9 / _slot(nominal, GROUPS, m, COUNTS)  # 1/ε_counts (public)
        if histogram[m]:
            grids.append([histogram_grid(layout, max_bins=params.histogram_bins, target=max(
                2, int(max(float(n_hat[y]), 0.0) // (HISTOGRAM_NOISE_SCALES * count_scale))))
                for y in range(n_classes)])
            continue
        grids.append([choose_grid(layout, grid_bins=params.grid_bins, target=(
            target_cells(float(n_hat[y]), k=params.k, max_cells=params.max_cells,
                         count_noise_scale=count_scale) if params.cells == GRID else 1))
            for y in range(n_classes)])
    return grids


def _class_models(noisy, starts, layout: GroupLayout, histogram: bool, e_counts,
                  params: SynthesisParams, n_classes: int) -> list[GaussianCells]:
    """One group's per-class cell models from its released statistics (post-processing):
    noisy histogram weights, or Gaussian cells whose cells below EMPTY_CELL_SCALES count
    noise scales get weight 0."""
    bits = params.fixed_point_bits
    models_m = []
    floor = EMPTY_CELL_SCALES * 1e9 / e_counts if e_counts else 0.0
    for y in range(n_classes):
        part = slice(starts[y], starts[y + 1])
        stats_y = NoisyCellStatistics(noisy.counts[part], noisy.sums[part],
                                      noisy.moments[part])
        if histogram:
            w = np.maximum(stats_y.counts.astype(np.float64), 0.0)
            empty = np.zeros((w.shape[0], layout.width, layout.width))
            models_m.append(GaussianCells(w, np.zeros((w.shape[0], layout.width)), empty,
                                          empty))
            continue
        model_y = gaussian_cells(stats_y, layout, bits, shrinkage=params.shrinkage,
                                 min_eigenvalue=params.min_eigenvalue)
        if model_y.weights.shape[0] > 1:
            keep = model_y.weights >= floor
            if keep.any():
                model_y.weights = np.where(keep, model_y.weights, 0.0)
        models_m.append(model_y)
    return models_m


def _draw_levels(draws: np.ndarray, choice: np.ndarray, means: np.ndarray, layout: GroupLayout,
                 grid: CellGrid, rng) -> None:
    """Categoricals of a Gaussian group not split by its grid: each synthetic row draws its
    level from its cell's noisy level frequencies (the one-hot means, ∝ max(μ, 0)) instead of
    the argmax of a Gaussian draw, which over-picks the commonest level (post-processing, in
    place)."""
    for pos, width in enumerate(layout.widths):
        cols = np.flatnonzero(layout.owner == pos)
        if layout.numeric[cols[0]] or pos in grid.features:
            continue
        prob = np.maximum(means[:, cols], 0.0)
        total = prob.sum(axis=1, keepdims=True)
        prob = np.where(total > 0, prob / np.where(total > 0, total, 1.0), 1.0 / width)
        cdf = np.cumsum(prob[choice], axis=1)
        level = np.minimum((rng.random(choice.shape[0])[:, None] > cdf).sum(axis=1), width - 1)
        block = np.zeros((choice.shape[0], width))
        block[np.arange(choice.shape[0]), level] = 1.0
        draws[:, cols] = block


def sample_mcgen_dp(model: McgenModel, *, rng, progress=None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Draw the synthetic records of a fitted model (post-processing).

    Returns
    -------
    encoded : float64[N, D]
        Synthetic records in encoded units, N = Σ_y max(round(N̂_y), 0).
    labels : int32[N]
        Their class codes, grouped by class.
    """
    schema = model.schema
    if model.tree is not None:
        return sample_tree(model.tree, schema, model.shares, rng=rng)
    per_class = model.rows_per_class()
    total = int(per_class.sum())
    out = np.zeros((total, schema.width))
    labels = np.repeat(np.arange(schema.n_classes, dtype=np.int32), per_class)
    starts = np.concatenate([[0], np.cumsum(per_class)])
    for m, layout in enumerate(model.layouts):
        _progress(progress, 0.9 + 0.1 * m / max(len(model.layouts), 1),
                  f"generating feature group {m + 1}/{len(model.layouts)}")
        for y in range(schema.n_classes):
            n = int(per_class[y])
            if n == 0:
                continue
            cells, grid = model.cells[m][y], model.grids[m][y]
            w = cells.weights
            prob = w / w.sum() if w.sum() > 0 else np.full(w.shape[0], 1.0 / w.shape[0])
            choice = rng.choice(w.shape[0], size=n, p=prob)
            if model.histogram and model.histogram[m]:
                draws = uniform_in_cells(choice, layout, grid, rng)
            else:
                draws = sample_gaussians(cells.means, cells.factors, choice, rng)
                _draw_levels(draws, choice, cells.means, layout, grid, rng)
                constrain_to_cells(draws, choice, layout, grid)
            out[starts[y]:starts[y + 1], layout.columns] = draws
    return out, labels


# ----------------------------------------------------------------------------- faithful

@dataclass
class FaithfulOutput:
    """What faithful MC-GEN produced (NOT DP): encoded synthetic rows and their provenance."""

    encoded: np.ndarray
    labels: np.ndarray
    groups: list[np.ndarray]  # encoded columns per group
    clusters: list[dict]      # per group: class text → MDAV cluster sizes (owner-only)


def _faithful_groups(table: SynthesisTable, params: SynthesisParams) -> list[np.ndarray]:
    schema = table.schema
    if params.groups_given:
        return [np.concatenate([np.asarray(schema.columns_of(schema.feature_index(n)))
                                for n in g]) for g in params.feature_groups]
    groups, _ = upgma_groups(pearson_distance(table.encoded()), _threshold(params))
    return groups


def run_faithful(table: SynthesisTable, params: SynthesisParams, *, rng, accountant,
                 progress=None, timings: dict | None = None) -> FaithfulOutput:
    """The published MC-GEN pipeline with C3/C4/C5/C7/C12 fixed — NOT ε-DP (module docstring).

    Sensitivities for features in a range of width 2 (replace-one, as the paper): mean
    2·d_m/|c|, covariance upper triangle 2·d_m(d_m+1)/|c|; ε_m = ε·d_m/d split 0.4/0.6.
    Each group's mean (and covariance) release is charged once, with the largest Δ (the
    smallest cluster) and ``parallel`` = the number of clusters.
    """
    schema = table.schema
    timings = {} if timings is None else timings
    started = time.perf_counter()
    _progress(progress, 0.0, "feature groups from raw correlations (NOT DP)")
    z = table.encoded()
    groups = _faithful_groups(table, params)
    shares = mechanism_shares(params, [g.shape[0] for g in groups])
    timings["features"] = time.perf_counter() - started

    started = time.perf_counter()
    by_class = [np.flatnonzero(table.labels == y) for y in range(schema.n_classes)]
    order = np.concatenate(by_class)
    out = np.zeros((order.shape[0], schema.width))
    labels = table.labels[order].astype(np.int32)
    starts = np.concatenate([[0], np.cumsum([r.shape[0] for r in by_class])])
    cluster_sizes = []
    for m, cols in enumerate(groups):
        _progress(progress, 0.1 + 0.9 * m / len(groups),
                  f"feature group {m + 1}/{len(groups)}: MDAV and noisy cluster models")
        d_m = int(cols.shape[0])
        members, sizes_m = [], {}
        for y, rows in enumerate(by_class):
            block = z[np.ix_(rows, cols)]
            lab = mdav(block, params.k) if rows.shape[0] else np.zeros(0, dtype=np.int64)
            members.append((block, lab))
            sizes_m[value_text(schema.classes[y])] = np.bincount(lab).tolist() if lab.size \
                else []
        cluster_sizes.append(sizes_m)
        all_sizes = [s for v in sizes_m.values() for s in v]
        if not all_sizes:
            continue
        n_clusters, smallest = len(all_sizes), min(all_sizes)
        e_mean = accountant.spend(
            "laplace", f"group {m + 1}: cluster means (per-cluster Δ 2·d_m/|c|; NOT DP)",
            _slot(shares, GROUPS, m, MEAN), 2.0 * d_m / smallest, n_clusters)
        mean_noise = [rng.laplace(0.0, 1.0, size=(int(lab.max()) + 1 if lab.size else 0, d_m))
                      for _, lab in members]
        e_cov = accountant.spend(
            "laplace", f"group {m + 1}: cluster covariances (per-cluster Δ "
                       "2·d_m(d_m+1)/|c|; NOT DP)",
            _slot(shares, GROUPS, m, COVARIANCE), 2.0 * d_m * (d_m + 1) / smallest, n_clusters)
        iu = np.triu_indices(d_m)
        for y, (block, lab) in enumerate(members):
            if not lab.size:
                continue
            for c in range(int(lab.max()) + 1):
                rec = np.flatnonzero(lab == c)
                size = rec.shape[0]
                x = block[rec]
                mu = x.mean(axis=0)
                cov = (x - mu).T @ (x - mu) / size
                mu = mu + mean_noise[y][c] * (2.0 * d_m / (size * e_mean))
                noise = np.zeros((d_m, d_m))
                noise[iu] = rng.laplace(0.0, 2.0 * d_m * (d_m + 1) / (size * e_cov),
                                        size=iu[0].shape[0])
                noise = noise + np.triu(noise, 1).T
                cov = cov + noise
                lam_min = min(0.0, float(np.linalg.eigvalsh(0.5 * (cov + cov.T))[0]))
                cov = cov - 10.0 * lam_min * np.eye(d_m)
                lam, vec = np.linalg.eigh(0.5 * (cov + cov.T))
                factor = vec * np.sqrt(np.maximum(lam, 0.0))
                draws = mu + rng.standard_normal((size, d_m)) @ factor.T
                target = starts[y] + rec
                out[np.ix_(target, cols)] = draws
    timings["groups"] = time.perf_counter() - started
    return FaithfulOutput(out, labels, groups, cluster_sizes)
