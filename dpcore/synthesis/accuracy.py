"""Accuracy before spending: what a strict synthesis run's noisy counts will be worth, from
its parameters and the table's public shape alone (0 ε, no data read).

Both counts a strict run releases as numbers carry exact discrete Laplace noise with Δ = 1
at an ε fixed by the budget plan before any data is touched (:mod:`dpcore.synthesis.params`):

* the class counts N̂_y, at ε_Y = ``budget_classes``·ε (MC-GEN and the floor);
* the floor's class × bin histogram of each feature, at an equal part of the marginals'
  share (:func:`dpcore.synthesis.params.mechanism_shares`);
* MC-GEN-DP's tree structure (strict, no owner groups): the class × bin marginal of each
  feature, at its part of ``TREE_MARGINAL_SHARE``·ε_G, split in proportion to the
  features' codes (:func:`dpcore.synthesis.params.tree_shares`); the stated half-width is
  the widest, the feature with the fewest codes. When the public rule on N̂ skips the
  tree, each feature's histogram gets (ε_F + ε_G)/p, more than any tree marginal, so the
  stated half-width still bounds it (its interval is narrower).

So the 90 % half-width k of each such count — the smallest integer with P(|Z| ≤ k) ≥ 90 %
(:func:`dpcore.privacy.count_intervals.noise_halfwidth`) — is known before the run, in rows,
whatever the data: every released count will lie within ±k rows of its true value with
probability ≥ 90 %, and its interval after the run (:mod:`dpcore.synthesis.intervals`) will
be that wide (less where it is cut at 0). The number of records is not public, so the
error is stated in rows, not as a share of a count.

MC-GEN's other releases (the tree's edge tables, the groups structure's moments and cell
counts) are chosen or split at run time; their error is not stated here. Faithful runs are
not DP and get no statement.
"""

from __future__ import annotations

from dpcore.privacy.count_intervals import COVERAGE, noise_halfwidth
from dpcore.registry import FAITHFUL, FLOOR
from dpcore.synthesis.params import (
    CLASSES,
    GROUPS,
    HISTOGRAM,
    MARGINALS,
    MCGEN,
    TREE,
    SynthesisParams,
    marginal_codes,
    mechanism_shares,
    plan_budget,
    tree_shares,
)

__all__ = ["expected_accuracy", "accuracy_text"]


def expected_accuracy(params: SynthesisParams, n_features: int, coverage: float = COVERAGE,
                      *, codes=None) -> dict | None:
    """The 90 % half-widths (rows) of a strict run's released counts, before it runs.

    Parameters
    ----------
    params : SynthesisParams
        The launch form's parameters (validated here).
    n_features : int
        Number of features of the table (public schema).
    coverage : float
        Stated coverage of each count's interval.
    codes : sequence of int, optional
        Codes of each feature's tree marginal (:func:`dpcore.synthesis.params.marginal_codes`
        of the schema; public). None: every feature as a numeric one (``histogram_bins``
        codes), which is exact for all-numeric tables only.

    Returns
    -------
    dict or None
        ``{"coverage", "class_count": k_Y, "marginal": k_f or None}`` in rows (``marginal``:
        the widest of the floor's or MC-GEN's tree's per-feature histograms; None for
        MC-GEN with owner groups or the groups structure); None for a faithful run (not DP:
        nothing to state).
    """
    params = params.validate()
    if params.mode == FAITHFUL:
        return None
    eps_y = next(s.epsilon_nano for s in plan_budget(params) if s.phase == CLASSES)
    out = {"coverage": coverage,
           "class_count": noise_halfwidth(1e9 / eps_y, coverage=coverage), "marginal": None}
    if params.algorithm == FLOOR:
        shares = mechanism_shares(params, [1] * int(n_features))
        eps_f = min(s.epsilon_nano for s in shares
                    if s.phase == MARGINALS and s.part == HISTOGRAM)
        out["marginal"] = noise_halfwidth(1e9 / eps_f, coverage=coverage)
    elif params.algorithm == MCGEN and params.structure == TREE and not params.groups_given \
            and int(n_features) >= 2:
        codes = [int(params.histogram_bins)] * int(n_features) if codes is None else codes
        eps_f = min(s.epsilon_nano for s in tree_shares(params, int(n_features), codes)
                    if s.phase == GROUPS and s.part == HISTOGRAM)
        out["marginal"] = noise_halfwidth(1e9 / eps_f, coverage=coverage)
    return out


def accuracy_text(params: SynthesisParams, schema) -> str:
    """One paragraph for the launch form (parameters and the public schema only, 0 ε)."""
    acc = expected_accuracy(params, schema.n_features,
                            codes=marginal_codes(schema, params.histogram_bins))
    if acc is None:
        return ("**Accuracy to expect:** none stated — a faithful run releases true counts "
                "(not DP).")
    text = (f"**Accuracy to expect** (from the parameters alone, 0 ε): each released class "
            f"count will be within ±{acc['class_count']} rows of the true count with "
            f"{acc['coverage']:.0%} probability")
    if acc["marginal"] is not None:
        text += (f"; each class × bin count of a feature's released marginal within "
                 f"±{acc['marginal']} rows")
        if params.algorithm == MCGEN:
            text += (" (the tree's pair tables are chosen at run time; their error is not "
                     "stated here)")
    else:
        text += ("; the per-group statistics MC-GEN releases get their ε only once the "
                 "groups are found, so their error is not stated here")
    return text + ". One count at a time: about one in ten may fall further off."
