"""Accuracy before spending: what a strict PFS2 (or baseline) run's released supports will be
worth, from its parameters and public facts alone (0 ε, no data read).

The public facts are the declared alphabet (|C_1| = its size), the declared l1 (lmax and L_f
are at most l1) and a record count N that is **stated, not measured**: the analyst's
expected N, or a bound the owner declares. The true N is never read here; the run's own
threshold uses its released N̂, which differs from the true N by noise of scale 1/ε1.

Level 1 is predictable
----------------------
Level 1 measures the |A| declared items. Its budget b_1 is the pool rule's
(:func:`~dpcore.sequences.strategy.level_budget`) on R = ε4 + ε5, |A| and θ·N: the ε
giving noise scale τ·θ·N (τ = :data:`~dpcore.sequences.strategy.TARGET_SCALE`), within
[R/L_f, R/2]. L_f is not known before the run, but L_f ≤ l1 and a larger L_f only lowers
the floor, so the budget at L_f = l1 is what the level gets at least (L_f = 1, the whole
pool, happens only when no record is longer than one item at θ). Then:

* a level that does not prune (always the baseline's) verifies all |A| items with b_1: the
  noise scale is exactly |A|/b_1 (records) at that budget;
* a PFS2 level that prunes (:func:`~dpcore.sequences.strategy.plan_level`) verifies its
  survivors with the part giving scale τ·θ·N̂, at most its verification part; the
  survivors' Δ is at most min(2·lmax − 1, M_1, |A|)
  (:func:`~dpcore.sequences.strategy.verify_sensitivity` shrinks records to lmax once
  |C′_1| ≥ 2·lmax), and a bought survivor histogram takes a fifth of the part. The
  scale is stated as that bound (the run is usually better: fewer survivors, a shorter
  bound);

* a level whose noise would drown θ·N̂ (:func:`~dpcore.sequences.strategy.too_noisy`)
  stops the run before releasing anything: stated as such.

lmax is read from the data (the η-quantile of the record lengths, at most l1), so each is
evaluated at every lmax ≤ l1: the stated scale is the largest, the run is stated to stop
only when it stops at every lmax, and said that it may stop when it does at some.

A released support of a sequence whose true support is θ·N then errs by |Z|, Z discrete
Laplace of that scale b: on average by about b (E|Z| → b for b ≫ 1), and by at most
b·ln(1/(1 − c)) with probability c (c = 90 %: 2.3·b). Both are stated relative to θ·N.
A released support is selected (it passed θ·N̂), so near θ its error leans upward; the
interval the run attaches (:mod:`dpcore.sequences.intervals`) accounts for that, this
statement does not.

Later levels are not predictable
--------------------------------
Level k ≥ 2 measures the candidates joined from what level k − 1 released (about m² at
k = 2 for m released items), a function of the data. What the rule does fix is its
budget: while each level needs more than half of what is left (the case on every
generated shape), level k gets exactly half of what is left, b_k = R_k/2; it gets less
only when its need fits, which leaves more for the levels after it. So each later level
is stated as its budget and its *capacity* (a level whose noise at that budget would exceed
ρ·θ·N̂ may instead take all of what is left and be the last,
:func:`~dpcore.sequences.strategy.concentrate_bound`: it then gets more than stated and the
levels after it none, so it delivers no more levels than stated): the number of measured
candidates (Δ) it can verify at the target error τ, ⌊τ·θ·N·b_k⌋, and at the stop line (scale θ·N),
⌊θ·N·b_k⌋. A level measuring Δ candidates errs by Δ/(b_k·θ·N) relative to θ·N. The
**levels the budget reaches** are the levels whose capacity at the stop line holds at
least one candidate; a level beyond them can release only sequences whose noise is larger
than θ·N.

Faithful runs are not DP and get no statement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.errors import ParameterError
from dpcore.privacy.count_intervals import COVERAGE
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import FAITHFUL, PFS2
from dpcore.sequences.params import PRUNE, VERIFY, SequenceMiningParams, plan_budget
from dpcore.sequences.strategy import (
    TARGET_SCALE,
    VERIFY_LENGTH_SHARE,
    level_budget,
    plan_level,
    release_cap,
    split_level_budget,
    too_noisy,
)

__all__ = ["LevelOutlook", "SequenceAccuracy", "expected_accuracy", "accuracy_lines",
           "accuracy_text", "MAX_LEVELS_SHOWN", "TOLERANCE"]

#: At most this many levels are listed (the budget halves at each: deeper ones get < 1 %).
MAX_LEVELS_SHOWN = 8

#: Later levels listed in the text (the budget halves at each).
LATER_LEVELS_TEXT = 3

#: The statement's stated tolerance: a measured level-1 noise scale may exceed the stated
#: one by at most this share when the level does not prune (N̂ differs from the stated N by
#: its noise and the stated N may be off); the harness checks it.
TOLERANCE = 0.25


@dataclass(frozen=True)
class LevelOutlook:
    """What the budget rule gives level k (typical: each earlier level took half).

    Attributes
    ----------
    length : int
        k.
    epsilon : float
        b_k (ε).
    target_capacity : int
        Candidates (Δ) verifiable at noise scale τ·θ·N: ⌊τ·θ·N·b_k⌋.
    stop_capacity : int
        Candidates (Δ) verifiable at noise scale θ·N: ⌊θ·N·b_k⌋.
    """

    length: int
    epsilon: float
    target_capacity: int
    stop_capacity: int


@dataclass(frozen=True)
class SequenceAccuracy:
    """The accuracy statement of one strict run (0 ε; see the module docstring).

    Attributes
    ----------
    expected_records : int
        The stated N (records; public).
    support_threshold : float
        θ·N (records).
    coverage : float
        Coverage of ``level1_halfwidth``.
    level1_epsilon : float
        b_1 (ε), what level 1 gets at least.
    level1_prunes : bool
        Whether level 1 prunes at lmax = l1.
    level1_scale : float
        Level 1's noise scale b (records): exact when it does not prune, a bound when it
        does.
    level1_exact : bool
        Whether ``level1_scale`` is the scale the level gets (not pruning) or a bound.
    level1_error : float
        E|Z|/(θ·N) ≈ b/(θ·N): the expected relative error of a released support at θ.
    level1_halfwidth : float
        b·ln(1/(1 − coverage))/(θ·N): the relative error not exceeded with that coverage.
    level1_stops : bool
        Whether level 1's noise would drown θ·N̂ so the run releases nothing (at every
        lmax ≤ l1).
    level1_may_stop : bool
        Whether it would at some lmax ≤ l1 (lmax is read from the data).
    levels : tuple of LevelOutlook
        Level 1 and the later levels' budgets and capacities.
    levels_reached : int
        Levels whose capacity at the stop line holds at least one candidate (0 when level 1
        stops): an upper bound on the levels that can release with noise below θ·N.
    levels_at_target : int
        Levels whose capacity at the target error τ holds at least one candidate.
    """

    expected_records: int
    support_threshold: float
    coverage: float
    level1_epsilon: float
    level1_prunes: bool
    level1_scale: float
    level1_exact: bool
    level1_error: float
    level1_halfwidth: float
    level1_stops: bool
    level1_may_stop: bool
    levels: tuple[LevelOutlook, ...]
    levels_reached: int
    levels_at_target: int


def _level1(params: SequenceMiningParams, plan: dict, n_items: int, l1: int, threshold: float
            ) -> tuple[int, bool, float, bool, bool]:
    """(b_1 nano-ε, prunes, noise scale (records), stops, may stop) of level 1, over every
    lmax ≤ l1 (lmax is read from the data): it stops when it stops at every lmax, may stop
    when at some; the scale is the largest of the lmax at which it does not stop."""
    pool = plan.get(PRUNE, 0) + plan[VERIFY]
    b1 = level_budget(pool, l1, n_items, threshold)
    full_scale = n_items / nano_to_epsilon(b1)
    if params.algorithm != PFS2:
        return b1, False, full_scale, False, False   # the baseline never stops (no cap)
    prune_part, verify_part = split_level_budget(b1, plan[PRUNE], plan[VERIFY])
    scales, stops, prunes = [], [], False
    for lmax in range(1, l1 + 1):
        lp = plan_level(n_items, 1, lmax, prune_part, verify_part, threshold,
                        float(params.zeta))
        if lp.prune:
            delta = min(2 * lmax - 1, release_cap(lmax, 1, float(params.theta)), n_items)
            part = nano_to_epsilon(lp.verify_nano) * (1.0 - VERIFY_LENGTH_SHARE)
            scales.append(max(TARGET_SCALE * threshold, delta / part))
            prunes = True
        elif too_noisy(full_scale, n_items, threshold,
                       release_cap(lmax, 1, float(params.theta))):
            stops.append(lmax)
        else:
            scales.append(full_scale)
    if not scales:
        return b1, False, full_scale, True, True
    return b1, prunes, max(scales), False, bool(stops)


def expected_accuracy(params: SequenceMiningParams, n_items: int, l1: int,
                      expected_records: int, coverage: float = COVERAGE
                      ) -> SequenceAccuracy | None:
    """The accuracy a strict run with ``params`` will deliver, before it runs (0 ε).

    Parameters
    ----------
    params : SequenceMiningParams
        The run's parameters (validated here).
    n_items : int
        Size of the declared alphabet (public).
    l1 : int
        The run's l1 (``params.l1`` or the schema's; public).
    expected_records : int
        A stated record count (the analyst's expectation or the owner's declared bound; never
        the private count).
    coverage : float
        Coverage of the stated half-width.

    Returns
    -------
    SequenceAccuracy or None
        None for a faithful run (not DP: nothing to state).

    Raises
    ------
    ParameterError
        Bad parameters, alphabet, l1 or record count (named).
    """
    params = params.validate()
    if params.mode == FAITHFUL:
        return None
    for name, value in (("alphabet size", n_items), ("l1", l1),
                        ("expected number of records", expected_records)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"{name} must be a whole number ≥ 1; got {value!r}")
    if not 0 < coverage < 1:
        raise ParameterError(f"coverage must be in (0, 1); got {coverage!r}")
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    threshold = float(params.theta) * expected_records
    b1, prunes, scale, stops, may_stop = _level1(params, plan, n_items, l1, threshold)
    levels, remaining = [], plan.get(PRUNE, 0) + plan[VERIFY]
    budget = b1
    for k in range(1, min(l1, MAX_LEVELS_SHOWN) + 1):
        if k > 1:
            budget = remaining if k == l1 else remaining // 2
        eps = nano_to_epsilon(budget)
        levels.append(LevelOutlook(k, eps, math.floor(TARGET_SCALE * threshold * eps),
                                   math.floor(threshold * eps)))
        remaining -= budget
    reached = 0 if stops else sum(1 for lv in levels if lv.stop_capacity >= 1)
    at_target = 0 if stops else sum(1 for lv in levels if lv.target_capacity >= 1)
    return SequenceAccuracy(
        expected_records=expected_records, support_threshold=threshold, coverage=coverage,
        level1_epsilon=nano_to_epsilon(b1), level1_prunes=prunes, level1_scale=scale,
        level1_exact=not prunes, level1_error=scale / threshold,
        level1_halfwidth=scale * math.log(1.0 / (1.0 - coverage)) / threshold,
        level1_stops=stops, level1_may_stop=may_stop, levels=tuple(levels), levels_reached=reached,
        levels_at_target=at_target)


def accuracy_lines(acc: SequenceAccuracy | None) -> list[str]:
    """The statement as plain sentences (CLI and launch form; markdown-free)."""
    if acc is None:
        return ["Accuracy to expect: none stated — a faithful run is not DP."]
    t = acc.support_threshold
    head = (f"Accuracy to expect (from the parameters and a stated N = "
            f"{acc.expected_records:,} records alone, 0 ε; θ·N = {t:,.0f} records):")
    if acc.level1_stops:
        return [head, f"Level 1 would get ε = {acc.level1_epsilon:.3g}: noise of scale "
                      f"{acc.level1_scale:,.0f} records against θ·N = {t:,.0f}, so the run "
                      "would stop at level 1 and release no sequence (a larger ε or θ helps)."]
    bound = "" if acc.level1_exact else "at most "
    how = "may prune first, then verifies the survivors" if acc.level1_prunes else \
        "verifies every declared item"
    lines = [head,
             f"Level 1 (ε = {acc.level1_epsilon:.3g}, {how}): a released support of a "
             f"sequence at θ errs by {bound}{acc.level1_error:.0%} of θ·N on average "
             f"(noise scale {bound}{acc.level1_scale:,.1f} records) and by {bound}"
             f"{acc.level1_halfwidth:.0%} with {acc.coverage:.0%} probability."
             + (" If few records are long (a short lmax), level 1's noise may instead drown "
                "θ·N̂ and the run stop there, releasing nothing." if acc.level1_may_stop
                else "")]
    later = [lv for lv in acc.levels if lv.length > 1][:LATER_LEVELS_TEXT]
    if later:
        lines.append(
            "Levels 2 and up measure candidates joined from what the level before released "
            "(about m² for m released items), so their error is not predictable from the "
            "parameters; a level of Δ candidates errs by Δ/(ε_k·θ·N) of θ·N. Their "
            "budgets while each level needs more than half of what is left: " + "; ".join(
                f"level {lv.length} ε = {lv.epsilon:.3g}: ≤ {TARGET_SCALE:.0%} error for up "
                f"to {lv.target_capacity:,} candidates, < 100 % for up to "
                f"{lv.stop_capacity:,}" for lv in later) + ".")
    lines.append(f"The budget reaches {acc.levels_reached} level(s) where at least one "
                 f"candidate stays below 100 % error ({acc.levels_at_target} at "
                 f"{TARGET_SCALE:.0%}).")
    return lines


def accuracy_text(params: SequenceMiningParams, n_items: int, l1: int,
                  expected_records: int) -> str:
    """The statement as one markdown paragraph for the launch form."""
    lines = accuracy_lines(expected_accuracy(params, n_items, l1, expected_records))
    return f"**{lines[0]}** " + " ".join(lines[1:])
