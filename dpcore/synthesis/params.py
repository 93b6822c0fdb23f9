"""Synthesis parameters, their help texts, and the exact budget plan.

:func:`plan_budget` divides a run's ε among its phases; the ledger charges its total before
any noise is drawn. The group phase is split further at run time, once the feature groups
are known (they come from a DP release, or from the owner): :func:`mechanism_shares` lists
every mechanism call's share given the group sizes, and the synthesizers spend exactly
those. All parts are integers in nano-ε that sum exactly to ε (rounded up to whole nano-ε).

Phases (strict MC-GEN-DP, docs/ALGORITHMS.md §9)
-------------------------------------------------
* ``classes`` — ε_Y = ``budget_classes``·ε: the noisy class counts N̂_y (one histogram).
* ``features`` — ε_F = ``budget_features``·ε, only when the feature groups are not given:
  the noisy sufficient statistics (count, sums, second moments) behind the correlations.
* ``groups`` — ε_G = the rest, split over the groups in proportion to their sizes p_m
  (ε_m = ε_G·p_m/p, the paper's eq. 7), each ε_m into counts / sums / second moments of the
  cells (``budget_cell_counts``, ``budget_cell_sums``, the rest; 0.2/0.4/0.4 by default).
  A one-feature group (grid cells) is a histogram: its whole ε_m pays the counts. When the
  noisy correlations are skipped (a public rule on N̂, ``max_correlation_noise``), ε_F is
  added to ε_G before the split, so the total stays ε.
  A group with one cell per class needs no counts (they are the class counts N̂_y), a
  group of one categorical feature no second moments: a part not needed gives its share to
  the others in proportion; ε_F (one cell of all records) is split into sums and moments.

Faithful MC-GEN (NOT DP): ``groups`` = ε, ε_m = ε·d_m/d over encoded columns, 40 % to the
cluster means and 60 % to the covariances (the authors' code). The class counts are exact
and the clustering unpaid; the plan charges the nominal ε, which does not bound what a
faithful run reveals.

The floor: ``classes`` as above, ``marginals`` = the rest in equal parts, one noisy
class × bin histogram per feature.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from dpcore.errors import ParameterError
from dpcore.privacy.units import (
    BudgetSlot,
    epsilon_to_nano,
    fraction_to_nano,
    split_evenly,
    split_fraction,
)
from dpcore.registry import ALGORITHM_LABELS as _LABELS
from dpcore.registry import (
    FAITHFUL,
    FLOOR,
    MCGEN,
    MODES,
    STRICT,
    SYNTHESIS,
    SYNTHESIS_ALGORITHMS,
)
from dpcore.synthesis.fixedpoint import DEFAULT_BITS, MAX_BITS, MIN_BITS

__all__ = ["SYNTHESIS", "MCGEN", "FLOOR", "SYNTHESIS_ALGORITHMS", "ALGORITHM_LABELS",
           "GRID", "SINGLE", "CELL_KINDS", "DAVIES_BOULDIN", "THRESHOLD", "GROUPINGS",
           "TREE", "CORRELATION_GROUPS", "STRUCTURES", "TREE_MARGINAL_SHARE", "SELECTION",
           "EDGE", "tree_shares", "marginal_codes",
           "CLASSES", "FEATURES", "GROUPS", "MARGINALS",
           "COUNTS", "SUMS", "MOMENTS", "MEAN", "COVARIANCE", "HISTOGRAM",
           "FAITHFUL_MEAN_SHARE", "HELP", "SynthesisParams", "BudgetSlot", "plan_budget",
           "mechanism_shares", "group_epsilons", "run_cost_nano"]

# The family and algorithm names (SYNTHESIS, MCGEN, FLOOR, SYNTHESIS_ALGORITHMS) live in
# dpcore.registry and are re-exported here.
#: Display names of the synthesis algorithms (from the registry).
ALGORITHM_LABELS = {key: _LABELS[key] for key in SYNTHESIS_ALGORITHMS}

#: Cell assignment in strict MC-GEN-DP: a public grid over the declared bounds, or one cell.
GRID, SINGLE = "grid", "single"
CELL_KINDS = (GRID, SINGLE)

#: How feature groups are cut from the UPGMA tree: the paper's Davies–Bouldin choice, or a
#: distance threshold (``group_threshold``).
DAVIES_BOULDIN, THRESHOLD = "davies_bouldin", "threshold"
GROUPINGS = (DAVIES_BOULDIN, THRESHOLD)

#: Strict MC-GEN-DP without owner groups: how the dependence between features is modelled.
#: ``tree``: a class-conditional tree of feature pairs whose edges the exponential mechanism
#: picks (dpcore/synthesis/tree.py); ``groups``: feature groups from noisy correlations, each
#: a mixture of Gaussian cells (the published MC-GEN structure, made DP).
TREE, CORRELATION_GROUPS = "tree", "groups"
STRUCTURES = (TREE, CORRELATION_GROUPS)

#: Tree structure: share of the groups' budget ε_G for the per-feature class × bin marginals;
#: the rest pays the edges' class × parent × child tables. Measured (docs/results.md, issue
#: 35, "the ceiling"): on the 48,842-row Adult shape at ε = 1, 0.7 beat 0.3 by about 0.005
#: (logistic regression, 2 splits) and 0.01 (gradient boosting) — the marginals' noise, not
#: the edges', was what kept the tree near the floor; level (±0.002) on the 768-row tables
#: at ε = 10, the only small-table cells where the tree is built.
TREE_MARGINAL_SHARE = 0.7

#: Budget phases, in the order a run spends them.
CLASSES, FEATURES, GROUPS, MARGINALS = "classes", "features", "groups", "marginals"
#: Parts of a phase (one mechanism call each).
COUNTS, SUMS, MOMENTS = "counts", "sums", "moments"
MEAN, COVARIANCE, HISTOGRAM = "mean", "covariance", "histogram"
#: Tree structure: one exponential-mechanism choice of an edge; one edge's noisy table.
SELECTION, EDGE = "selection", "edge"

#: Faithful mode: share of each group's ε for the cluster means (the authors' code: 0.4).
FAITHFUL_MEAN_SHARE = 0.4

HELP = {
    "algorithm": "MC-GEN models each class as independent feature groups, each a mixture of "
                 "Gaussians over cells of records. The floor draws every feature "
                 "independently from a noisy per-class histogram (no correlations): any "
                 "method that models correlations must beat it.",
    "epsilon": "Total privacy budget ε the run spends (smaller = more private, noisier).",
    "mode": "strict (default): MC-GEN-DP, every step is ε-DP with integer noise. faithful: "
            "the published pipeline (raw feature clustering, MDAV, exact class counts) — NOT "
            "ε-DP; owner or public demo data only.",
    "k": "k: records per cell. Strict: a class with N̂ noisy records gets at most N̂/k grid "
         "cells per feature group. Faithful: the MDAV cluster size (the paper's k).",
    "feature_groups": "Feature groups modelled jointly (lists of feature names covering every "
                      "feature once). Given by the owner they cost nothing; blank = built "
                      "from DP correlations (strict) or raw correlations (faithful).",
    "grouping": "How feature groups are cut from the feature tree (UPGMA): 'davies_bouldin' "
                "(the paper's rule; it tends to split features into singletons) or "
                "'threshold' (features closer than group_threshold share a group).",
    "group_threshold": "Threshold grouping: largest average distance 1 − |correlation| "
                       "(correlation ratio or Cramér's V for categoricals) inside a group, "
                       "in [0, 1].",
    "cells": "Strict: 'grid' splits each group's records into cells of a public grid over the "
             "declared bounds (at most max_cells, at most N̂/k); 'single' fits one Gaussian "
             "per class and group.",
    "grid_bins": "Strict grid: equal-width bins per numeric feature over its public bounds.",
    "max_cells": "Strict grid: most cells per class and feature group.",
    "budget_classes": "Share of ε for the noisy class counts N̂_y (ε_Y).",
    "budget_features": "Strict, no groups given: share of ε for the noisy correlations that "
                       "build the feature groups (ε_F).",
    "budget_cell_counts": "Share of each group's ε for the noisy cell counts.",
    "budget_cell_sums": "Share of each group's ε for the noisy cell sums; the rest pays the "
                        "noisy second moments.",
    "fixed_point_bits": "Strict: values are rounded to a grid of 2^bits steps over the public "
                        "bounds so that sums take integer noise.",
    "min_eigenvalue": "Strict: covariance eigenvalues are clipped below at this (encoded "
                      "units², features in [−1, 1]) so every cell model is positive definite.",
    "shrinkage": "Strict: pseudo-records pulling each cell's noisy moments towards its "
                 "class's pooled moments (post-processing; 0 = none).",
    "marginal_bins": "Floor: equal-width bins per numeric feature over its public bounds.",
    "histogram_bins": "Strict: a feature group of one feature is a noisy class-conditional "
                      "histogram (counts only): at most this many equal-width bins of a "
                      "numeric feature's public bounds, fewer when N̂_y is small.",
    "structure": "Strict, no groups given: 'tree' (default) models each class as a tree of "
                 "feature pairs — the exponential mechanism picks the edges from how far each "
                 "pair is from independent, then each edge is a noisy class × parent × child "
                 "table; 'groups' builds feature groups from noisy correlations, each a "
                 "mixture of Gaussian cells. Either falls back to independent histograms "
                 "when N̂ is too small for pairs to carry signal.",
    "max_correlation_noise": "Strict, no groups given: the noisy correlations are released "
                             "only if the predicted noise (standard deviation) of one noisy "
                             "second moment, from N̂ and ε_F, is at most this (encoded "
                             "units²); otherwise every feature is its own group and ε_F "
                             "goes to the groups. Large = always release.",
}


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"{name} must be a number; got {value!r}")
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    return float(value)


def _int_range(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ParameterError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
    return value


def _groups_tuple(groups) -> tuple[tuple[str, ...], ...] | None:
    if groups is None:
        return None
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        raise ParameterError("feature_groups must be a list of lists of feature names")
    out = []
    for g in groups:
        if isinstance(g, (str, bytes)) or not hasattr(g, "__iter__"):
            raise ParameterError("feature_groups must be a list of lists of feature names; "
                                 f"got the group {g!r}")
        names = tuple(g)
        if not names or not all(isinstance(x, str) and x for x in names):
            raise ParameterError(f"every feature group needs ≥ 1 feature name; got {g!r}")
        out.append(names)
    if not out:
        raise ParameterError("feature_groups must name at least one group (blank = DP groups)")
    flat = [x for g in out for x in g]
    if len(set(flat)) != len(flat):
        dup = sorted({x for x in flat if flat.count(x) > 1})
        raise ParameterError(f"feature_groups name a feature twice: {', '.join(dup)}")
    return tuple(out)


@dataclass(frozen=True)
class SynthesisParams:
    """Parameters of one synthesis run; ``validate()`` checks every range.

    Units: ε in ε; ``k`` in records; the budget shares are fractions (of ε, or of a
    group's ε for the cell parts); ``min_eigenvalue`` in encoded units² (features scaled to
    [−1, 1]); ``shrinkage`` in records.
    """

    algorithm: str = MCGEN
    epsilon: float = 1.0
    mode: str = STRICT
    k: int = 100
    feature_groups: tuple[tuple[str, ...], ...] | None = None
    grouping: str = DAVIES_BOULDIN
    group_threshold: float = 0.6
    cells: str = GRID
    grid_bins: int = 4
    max_cells: int = 32
    budget_classes: float = 0.3
    budget_features: float = 0.15
    budget_cell_counts: float = 0.2
    budget_cell_sums: float = 0.4
    fixed_point_bits: int = DEFAULT_BITS
    min_eigenvalue: float = 1e-2
    shrinkage: float = 10.0
    marginal_bins: int = 16
    histogram_bins: int = 16
    max_correlation_noise: float = 0.01
    structure: str = TREE

    def __post_init__(self):
        if self.feature_groups is not None:
            try:  # lists from JSON or a form → tuples (a bad value is reported by validate())
                object.__setattr__(self, "feature_groups", _groups_tuple(self.feature_groups))
            except (ParameterError, TypeError):
                pass

    @property
    def groups_given(self) -> bool:
        return self.feature_groups is not None

    def validate(self) -> SynthesisParams:
        """Return self if every parameter is in range, else raise ParameterError naming it."""
        if self.algorithm not in SYNTHESIS_ALGORITHMS:
            raise ParameterError(f"algorithm must be one of {', '.join(SYNTHESIS_ALGORITHMS)}; "
                                 f"got {self.algorithm!r}")
        if self.mode not in MODES:
            raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if self.algorithm == FLOOR and self.mode != STRICT:
            raise ParameterError("the floor baseline has a strict mode only")
        if not _number("epsilon (ε)", self.epsilon) > 0:
            raise ParameterError(f"epsilon (ε) must be > 0; got {self.epsilon!r}")
        _int_range("k", self.k, 1, 10_000_000)
        _groups_tuple(self.feature_groups)
        if self.grouping not in GROUPINGS:
            raise ParameterError(f"grouping must be one of {', '.join(GROUPINGS)}; "
                                 f"got {self.grouping!r}")
        if not 0.0 <= _number("group_threshold", self.group_threshold) <= 2.0:
            raise ParameterError(f"group_threshold must lie in [0, 2]; "
                                 f"got {self.group_threshold!r}")
        if self.structure not in STRUCTURES:
            raise ParameterError(f"structure must be one of {', '.join(STRUCTURES)}; "
                                 f"got {self.structure!r}")
        if self.cells not in CELL_KINDS:
            raise ParameterError(f"cells must be one of {', '.join(CELL_KINDS)}; "
                                 f"got {self.cells!r}")
        _int_range("grid_bins", self.grid_bins, 2, 1024)
        _int_range("max_cells", self.max_cells, 1, 4096)
        _int_range("marginal_bins", self.marginal_bins, 1, 4096)
        _int_range("histogram_bins", self.histogram_bins, 2, 4096)
        if not 0.0 < _number("max_correlation_noise", self.max_correlation_noise) <= 1e6:
            raise ParameterError("max_correlation_noise must lie in (0, 1e6] encoded units²; "
                                 f"got {self.max_correlation_noise!r}")
        _int_range("fixed_point_bits", self.fixed_point_bits, MIN_BITS, MAX_BITS)
        if not 0.0 < _number("min_eigenvalue", self.min_eigenvalue) <= 1.0:
            raise ParameterError(f"min_eigenvalue must lie in (0, 1]; got {self.min_eigenvalue!r}")
        if not 0.0 <= _number("shrinkage", self.shrinkage) <= 1e6:
            raise ParameterError(f"shrinkage must lie in [0, 1e6] records; got {self.shrinkage!r}")
        top = [("budget_classes", self.budget_classes)]
        if self.algorithm == MCGEN and self.mode == STRICT and not self.groups_given:
            top.append(("budget_features", self.budget_features))
        if self.algorithm == MCGEN and self.mode == FAITHFUL:
            top = []
        shares = [_number(n, v) for n, v in top]
        if any(s <= 0 for s in shares) or sum(shares) >= 1.0:
            raise ParameterError("the budget shares " + " and ".join(n for n, _ in top)
                                 + " must each be > 0 and together < 1 (the rest pays the "
                                 "feature groups); got " + ", ".join(f"{s:g}" for s in shares))
        cnt = _number("budget_cell_counts", self.budget_cell_counts)
        sms = _number("budget_cell_sums", self.budget_cell_sums)
        if not (cnt > 0 and sms > 0 and cnt + sms < 1.0):
            raise ParameterError("budget_cell_counts and budget_cell_sums must be > 0 and "
                                 "together < 1 (the rest pays the second moments); got "
                                 f"{self.budget_cell_counts!r}, {self.budget_cell_sums!r}")
        return self

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.feature_groups is not None:
            d["feature_groups"] = [list(g) for g in self.feature_groups]
        return d

    @classmethod
    def from_dict(cls, data: dict) -> SynthesisParams:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ParameterError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        d = dict(data)
        # Stored before the tree existed: those runs modelled correlation groups (the
        # default then), so a resumed or finished run keeps the parameters it was charged for.
        d.setdefault("structure", CORRELATION_GROUPS)
        if d.get("feature_groups") is not None:
            d["feature_groups"] = _groups_tuple(d["feature_groups"])
        return cls(**d)


def plan_budget(params: SynthesisParams) -> list[BudgetSlot]:
    """Divide the run's ε exactly among its phases (what the ledger charges).

    Raises
    ------
    ParameterError
        Bad parameters, or ε too small for every phase to get ≥ 1 nano-ε.
    """
    params.validate()
    total = epsilon_to_nano(params.epsilon, name="epsilon (ε)")
    if params.algorithm == MCGEN and params.mode == FAITHFUL:
        return [BudgetSlot(GROUPS, 0, total)]
    classes, _ = split_fraction(total, fraction_to_nano(params.budget_classes,
                                                        name="budget_classes"))
    slots = [BudgetSlot(CLASSES, 0, classes)]
    rest = total - classes
    if params.algorithm == MCGEN and not params.groups_given:
        feats, _ = split_fraction(total, fraction_to_nano(params.budget_features,
                                                          name="budget_features"))
        slots.append(BudgetSlot(FEATURES, 0, feats))
        rest -= feats
    slots.append(BudgetSlot(GROUPS if params.algorithm == MCGEN else MARGINALS, 0, rest))
    if min(s.epsilon_nano for s in slots) <= 0:
        raise ParameterError("ε is too small to split among the phases: one would get 0 budget")
    return slots


def group_epsilons(total_nano: int, sizes) -> list[int]:
    """ε_m = total·p_m/p for groups of sizes p_m, in integers summing exactly to ``total``.

    Cumulative flooring: ε_m = ⌊total·C_m/P⌋ − ⌊total·C_{m−1}/P⌋ with C_m the running sum of
    the sizes and P their total.
    """
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 1:
        raise ParameterError(f"group sizes must be ≥ 1; got {sizes}")
    whole, out, acc, prev = sum(sizes), [], 0, 0
    for s in sizes:
        acc += s
        cur = int(total_nano) * acc // whole
        out.append(cur - prev)
        prev = cur
    return out


def _parts(nano: int, params: SynthesisParams, *, counts: bool = True, moments: bool = True,
           sums: bool = True) -> list[tuple[str, int]]:
    """Split one release's ε among its present parts in the ratio of their shares.

    The shares are ``budget_cell_counts`` : ``budget_cell_sums`` : the rest; an absent part
    (no counts, no sums, no second moments) gives its share to the others in proportion.
    A histogram group (counts only) puts all of ``nano`` on its counts. Integers that sum
    exactly to ``nano``.
    """
    weights = {COUNTS: params.budget_cell_counts, SUMS: params.budget_cell_sums,
               MOMENTS: 1.0 - params.budget_cell_counts - params.budget_cell_sums}
    if not sums:
        moments = False
    present = [p for p, keep in ((COUNTS, counts), (SUMS, sums), (MOMENTS, moments)) if keep]
    if not present:
        raise ParameterError("a group release needs at least one part")
    whole = sum(weights[p] for p in present)
    out, used = [], 0
    for p in present[:-1]:
        part, _ = split_fraction(nano, fraction_to_nano(round(weights[p] / whole, 9),
                                                        name=f"{p} share"))
        out.append((p, part))
        used += part
    out.append((present[-1], int(nano) - used))
    return out


def mechanism_shares(params: SynthesisParams, group_sizes, counted=None, moments=None,
                     histogram=None, *, features_released: bool = True) -> list[BudgetSlot]:
    """Every mechanism call's share, once the group sizes are known.

    Parameters
    ----------
    params : SynthesisParams
    group_sizes : sequence of int
        Strict MC-GEN: features per group (p_m); faithful: encoded columns per group (d_m);
        the floor: ignored (one histogram per feature, in equal parts of ``marginals``) —
        pass the number of features as ``[1] * p``.
    counted : sequence of bool, optional
        Strict MC-GEN: per group, whether its cells need noisy counts. A group whose grid
        has one cell for every class needs none (the cell count is the class count N̂_y,
        already released). Whether a group is counted depends only on N̂_y and public
        parameters. Default: all counted.
    moments : sequence of bool, optional
        Strict MC-GEN: per group, whether it has second moments to release (a group made of
        one categorical feature has none: its one-hot products are fixed by its sums).
        Default: all.
    histogram : sequence of bool, optional
        Strict MC-GEN: per group, whether it is a histogram group (one feature: noisy cell
        counts only, over a finer public grid; no sums or second moments). Its whole ε_m
        pays the counts. Decided from N̂_y and public parameters only. Default: none.
    features_released : bool
        Strict MC-GEN without owner groups: False when the public rule on N̂
        (:func:`dpcore.synthesis.mcgen.correlations_informative`) skipped the noisy
        correlations; then ε_F joins the groups' budget ε_G, so the total is unchanged.

    A part a group does not need gives its share to the group's other parts in proportion
    (:func:`_parts`). The ``features`` release (strict, groups built from data) never needs
    a count: its one cell holds every record, Σ_y N̂_y.

    Returns
    -------
    list of BudgetSlot
        In spending order; the shares sum exactly to :func:`plan_budget`'s total.

    Raises
    ------
    ParameterError
        A call would get 0 nano-ε.
    """
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    sizes = [int(s) for s in group_sizes]
    counted = [True] * len(sizes) if counted is None else [bool(c) for c in counted]
    moments = [True] * len(sizes) if moments is None else [bool(c) for c in moments]
    histogram = [False] * len(sizes) if histogram is None else [bool(c) for c in histogram]
    if len(counted) != len(sizes) or len(moments) != len(sizes) or len(histogram) != len(sizes):
        raise ParameterError("counted, moments and histogram need one flag per group")
    if FEATURES in plan and not features_released:
        plan[GROUPS] += plan.pop(FEATURES)
    out: list[BudgetSlot] = []
    if CLASSES in plan:
        out.append(BudgetSlot(CLASSES, 0, plan[CLASSES], part=COUNTS))
    if FEATURES in plan:
        out += [BudgetSlot(FEATURES, 0, e, part=part)
                for part, e in _parts(plan[FEATURES], params, counts=False)]
    if params.algorithm == FLOOR:
        out += [BudgetSlot(MARGINALS, j, e, part=HISTOGRAM)
                for j, e in enumerate(split_evenly(plan[MARGINALS], len(sizes)))]
    else:
        for m, e_m in enumerate(group_epsilons(plan[GROUPS], sizes)):
            if params.mode == FAITHFUL:
                mean, cov = split_fraction(e_m, fraction_to_nano(FAITHFUL_MEAN_SHARE,
                                                                 name="mean share"))
                out += [BudgetSlot(GROUPS, m, mean, part=MEAN),
                        BudgetSlot(GROUPS, m, cov, part=COVARIANCE)]
            else:
                out += [BudgetSlot(GROUPS, m, e, part=part) for part, e in
                        _parts(e_m, params, counts=counted[m] or histogram[m],
                               moments=moments[m], sums=not histogram[m])]
    if min(s.epsilon_nano for s in out) <= 0:
        raise ParameterError("ε is too small for this many mechanism calls: one would get "
                             "0 budget")
    return out


def run_cost_nano(params: SynthesisParams) -> int:
    """Total nano-ε a run with these parameters will be charged."""
    return sum(s.epsilon_nano for s in plan_budget(params))


def marginal_codes(schema, fine_bins: int) -> list[int]:
    """Codes of every feature's tree marginal: ``fine_bins`` for a numeric feature, its
    number of declared levels for a categorical one (public schema and parameters)."""
    return [int(fine_bins) if f.is_numeric else len(f.levels) for f in schema.features]


def tree_shares(params: SynthesisParams, n_features: int, codes=None) -> list[BudgetSlot]:
    """Every mechanism call's share of a strict run with the tree structure (tree built).

    ``classes`` pays N̂_y; ``features`` is split evenly over the p − 1 edge choices
    (``SELECTION``, one exponential mechanism each); ``groups`` gives
    :data:`TREE_MARGINAL_SHARE` to the p per-feature marginals (``HISTOGRAM``) and the rest
    to the p − 1 edge tables (``EDGE``, evenly; index p + e for edge e). The marginals'
    part is split in proportion to ``codes`` (each feature's number of codes,
    :func:`marginal_codes`; evenly when None), so that every marginal carries the same
    total noise (codes × scale, in records): an even split gave a 41-level feature 41
    cells of the same noise scale as a 2-level one, and that feature's empty cells were
    where the synthetic table lost most against exact marginals (docs/results.md, issue 35,
    fourth pass). Codes are public, so the split is fixed before any data is read. When
    the public rule skips the tree, the run spends :func:`mechanism_shares` of one-feature
    groups instead. Integers in nano-ε that sum exactly to :func:`plan_budget`'s total.

    Raises
    ------
    ParameterError
        Fewer than two features, owner groups given, ``codes`` not p counts ≥ 1, or a call
        would get 0 nano-ε.
    """
    p = int(n_features)
    if p < 2 or params.groups_given:
        raise ParameterError("the tree structure needs ≥ 2 features and no owner groups")
    if codes is not None and len(codes) != p:
        raise ParameterError(f"codes: one count per feature expected ({p}); got {len(codes)}")
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    out = [BudgetSlot(CLASSES, 0, plan[CLASSES], part=COUNTS)]
    out += [BudgetSlot(FEATURES, r, e, part=SELECTION)
            for r, e in enumerate(split_evenly(plan[FEATURES], p - 1))]
    marg, edges = split_fraction(plan[GROUPS], fraction_to_nano(TREE_MARGINAL_SHARE,
                                                               name="tree marginal share"))
    # equal codes (e.g. an all-numeric table) keep the even split's exact integers
    per_feature = split_evenly(marg, p) if codes is None or len(set(codes)) == 1 \
        else group_epsilons(marg, codes)
    out += [BudgetSlot(GROUPS, j, e, part=HISTOGRAM) for j, e in enumerate(per_feature)]
    out += [BudgetSlot(GROUPS, p + r, e, part=EDGE)
            for r, e in enumerate(split_evenly(edges, p - 1))]
    if min(s.epsilon_nano for s in out) <= 0:
        raise ParameterError("ε is too small for this many mechanism calls: one would get "
                             "0 budget")
    return out
