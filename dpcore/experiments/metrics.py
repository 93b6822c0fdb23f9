"""Evaluation metrics of the paper's experiments: OWNER / TEACHING ONLY, NOT private.

These pure functions reproduce the evaluation of Mihelčić & Miettinen (DMKD 2023,
Section 5, Tables 2–5 and 7–8) for an experiment harness: the share of runs
with output, the number of redescriptions before and after pruning, the share
of kept redescriptions that are truly significant, the Spearman correlation of
noisy and true Jaccard, the median true Jaccard and the median absolute Jaccard
error, false positives among pruned and kept redescriptions, and one-sided
Mann–Whitney U comparisons between methods.

Privacy
-------
The *noisy* fields of :class:`ScoredRedescription` (``noisy_support``,
``noisy_jaccard``, ``noisy_pvalue``) are DP releases (post-processing of a
:class:`~dpcore.redescriptions.results.RunResult`). The *true* fields (``true_jaccard``,
``true_pvalue``) come from :func:`dpcore.redescriptions.evaluate.evaluate`, which reads the raw
data and is NOT differentially private. Every metric that uses a true field
is therefore NOT private and must be shown only to data owners or on
``public_demo`` datasets. Functions that read only noisy fields
(:func:`split_by_threshold`, :func:`count_before_after`,
:func:`share_of_runs_with_output`) are post-processing of DP releases and cost
0 ε.

Missing noisy values
--------------------
Faithful-mode Serenade (SerenadeES / SerenadeCS) releases only |E11| and
|E10 ∪ E01|, so its noisy p-value (and noisy side supports) are NaN; its noisy
support |E11| and noisy Jaccard are always numbers. No metric here reads the
noisy p-value: false positives and significance use the TRUE p-value, pruning
uses the noisy support, ρ and the errors use the noisy Jaccard. A NaN noisy
p-value therefore changes no metric and is never compared with a threshold
here. (The release filter Γ.pval, applied by the miner, skips a NaN p-value.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpcore.redescriptions.evaluate import TrueStatistics
from dpcore.redescriptions.intervals import STATISTICS
from dpcore.redescriptions.pruning import prune
from dpcore.redescriptions.results import RunResult

__all__ = [
    "ScoredRedescription",
    "score_run",
    "share_of_runs_with_output",
    "split_by_threshold",
    "count_before_after",
    "share_truly_significant",
    "spearman_noisy_true",
    "median_true_jaccard",
    "median_abs_error",
    "false_positives",
    "compare_methods",
    "summarize",
    "interval_coverage",
    "exceedance_rate",
]

NAN = float("nan")


@dataclass(frozen=True)
class ScoredRedescription:
    """One released redescription with its noisy (DP) and true (NOT DP) statistics.

    Attributes
    ----------
    noisy_support : float
        Noisy support |E11| (DP release).
    noisy_jaccard : float
        Jaccard computed from the noisy counts (DP post-processing).
    noisy_pvalue : float
        Binomial "marg" p-value from the noisy counts (DP post-processing); NaN when
        the run released no p-value (faithful Serenade).
    true_jaccard : float
        True Jaccard on the raw data (NOT private).
    true_pvalue : float
        True "marg" p-value on the raw data (NOT private).
    run : str
        The ``run_id`` of the :class:`~dpcore.redescriptions.results.RunResult` it came from.
    covered : tuple of (str, bool)
        Per released statistic (``jaccard``, ``support_both``, …), whether its interval
        (:mod:`dpcore.redescriptions.intervals`) holds the true value (NOT private); empty
        when no intervals were given.
    """

    noisy_support: float
    noisy_jaccard: float
    noisy_pvalue: float
    true_jaccard: float
    true_pvalue: float
    run: str
    covered: tuple[tuple[str, bool], ...] = ()


def score_run(result: RunResult, truth: Sequence[TrueStatistics],
              intervals: Mapping | None = None) -> list[ScoredRedescription]:
    """Join a run's released redescriptions with their true statistics by id.

    Parameters
    ----------
    result : RunResult
        A mining run; its redescriptions' statistics are DP releases.
    truth : sequence of TrueStatistics
        ``evaluate(result, dataset)``: true statistics, NOT private.
    intervals : mapping, optional
        ``redescription_intervals(result)`` (released values only); each scored
        redescription then records which of its intervals hold the true value.

    Returns
    -------
    list of ScoredRedescription
        One per redescription, in the order of ``result.redescriptions``.
        The result is NOT private (it carries true statistics).

    Raises
    ------
    ValueError
        If the ids of ``result.redescriptions`` and ``truth`` differ (as sets),
        or either side has a duplicate id.
    """
    red_ids = [r.id for r in result.redescriptions]
    true_by_id = {t.id: t for t in truth}
    if len(true_by_id) != len(truth):
        raise ValueError("the true statistics contain duplicate redescription ids")
    if len(set(red_ids)) != len(red_ids):
        raise ValueError("the run contains duplicate redescription ids")
    if set(red_ids) != set(true_by_id):
        missing = sorted(set(red_ids) - set(true_by_id))
        extra = sorted(set(true_by_id) - set(red_ids))
        raise ValueError(f"redescription ids do not match the true statistics: "
                         f"missing truth for {missing}, unknown ids {extra}")
    out = []
    for r in result.redescriptions:
        t = true_by_id[r.id]
        covered = () if intervals is None else _covered(intervals[r.id], t)
        out.append(ScoredRedescription(float(r.support_both), float(r.jaccard),
                                       float(r.pvalue), float(t.jaccard), float(t.pvalue),
                                       result.run_id, covered))
    return out


def _covered(iv, t: TrueStatistics) -> tuple[tuple[str, bool], ...]:
    """Which released statistics' intervals hold the truth (unreleased ones: left out)."""
    out = []
    for stat in STATISTICS:
        bounds = getattr(iv, stat)
        if math.isfinite(bounds.low) and math.isfinite(getattr(t, stat)):
            out.append((stat, bool(bounds.low <= getattr(t, stat) <= bounds.high)))
    return tuple(out)


def interval_coverage(scored: Sequence[ScoredRedescription]) -> dict[str, float]:
    """Share of redescriptions whose interval holds the true value, per statistic (NOT
    private: uses true statistics). NaN for a statistic no redescription has."""
    hits: dict[str, list[bool]] = {stat: [] for stat in STATISTICS}
    for s in scored:
        for stat, ok in s.covered:
            hits[stat].append(ok)
    return {stat: (sum(v) / len(v) if v else NAN) for stat, v in hits.items()}


def exceedance_rate(kept: Sequence[ScoredRedescription], tolerance: float) -> float:
    """Share of ``kept`` whose |noisy J − true J| exceeds ``tolerance`` (NOT private); NaN
    when nothing is kept."""
    if not kept:
        return NAN
    return sum(1 for s in kept if abs(s.noisy_jaccard - s.true_jaccard) > tolerance) / len(kept)


def share_of_runs_with_output(runs: Sequence[Sequence[ScoredRedescription]]) -> float:
    """Share of runs that returned at least one redescription (paper: "% runs with output").

    Reads only how many redescriptions each run released: DP post-processing.

    Parameters
    ----------
    runs : sequence of sequences of ScoredRedescription
        One list per run (possibly empty).

    Returns
    -------
    float
        In [0, 1]; 0.0 when there are no runs.
    """
    if not runs:
        return 0.0
    return sum(1 for r in runs if len(r) > 0) / len(runs)


def split_by_threshold(scored: Iterable[ScoredRedescription], threshold: float
                       ) -> tuple[list[ScoredRedescription], list[ScoredRedescription]]:
    """Split into (kept, pruned) by noisy support, as
    :func:`dpcore.redescriptions.pruning.prune` does.

    The split reads only the noisy support (DP post-processing, 0 ε), though the
    items themselves carry true statistics.

    Parameters
    ----------
    scored : iterable of ScoredRedescription
    threshold : float
        Kept: ``noisy_support >= threshold``; pruned: below it.

    Returns
    -------
    (list, list)
        Kept and pruned items, each in input order.
    """
    return prune(scored, threshold, support=lambda s: s.noisy_support)


def count_before_after(scored: Sequence[ScoredRedescription], threshold: float
                       ) -> tuple[int, int]:
    """Number of redescriptions before and after pruning at ``threshold`` (DP post-processing).

    Returns
    -------
    (int, int)
        ``(len(scored), number with noisy_support >= threshold)``.
    """
    kept, _ = split_by_threshold(scored, threshold)
    return len(scored), len(kept)


def share_truly_significant(kept: Sequence[ScoredRedescription], alpha: float = 0.01) -> float:
    """Share of redescriptions whose TRUE p-value is ≤ ``alpha``. NOT private.

    Returns
    -------
    float
        In [0, 1]; NaN when ``kept`` is empty.
    """
    if not kept:
        return NAN
    return sum(1 for s in kept if s.true_pvalue <= alpha) / len(kept)


def spearman_noisy_true(kept: Sequence[ScoredRedescription]) -> tuple[float, float]:
    """Spearman's ρ between noisy and true Jaccard (``scipy.stats.spearmanr``). NOT private.

    Returns
    -------
    (float, float)
        ρ and its two-sided p-value; ``(NaN, NaN)`` with fewer than 3 items,
        when either input is constant (ρ undefined), or with non-finite values.
    """
    if len(kept) < 3:
        return NAN, NAN
    noisy = np.array([s.noisy_jaccard for s in kept], dtype=float)
    true = np.array([s.true_jaccard for s in kept], dtype=float)
    if not (np.all(np.isfinite(noisy)) and np.all(np.isfinite(true))):
        return NAN, NAN
    if np.all(noisy == noisy[0]) or np.all(true == true[0]):
        return NAN, NAN
    res = stats.spearmanr(noisy, true)
    return float(res.statistic), float(res.pvalue)


def median_true_jaccard(kept: Sequence[ScoredRedescription]) -> float:
    """Median TRUE Jaccard. NOT private. NaN when empty."""
    if not kept:
        return NAN
    return float(np.median([s.true_jaccard for s in kept]))


def median_abs_error(kept: Sequence[ScoredRedescription]) -> float:
    """Median of |noisy Jaccard − true Jaccard|. NOT private. NaN when empty."""
    if not kept:
        return NAN
    return float(np.median([abs(s.noisy_jaccard - s.true_jaccard) for s in kept]))


def false_positives(kept: Sequence[ScoredRedescription], pruned: Sequence[ScoredRedescription],
                    alpha: float = 0.01) -> tuple[int, int]:
    """False positives among pruned and kept redescriptions. NOT private.

    A false positive is a released redescription whose TRUE p-value exceeds
    ``alpha`` (the miner released it as significant from noisy counts, but it
    is not significant on the real data).

    Returns
    -------
    (int, int)
        ``(fp_pruned, fp_kept)``.
    """
    return (sum(1 for s in pruned if s.true_pvalue > alpha),
            sum(1 for s in kept if s.true_pvalue > alpha))


def compare_methods(values_by_method: dict[str, Sequence[float]],
                    higher_is_better: bool = True) -> dict:
    """Pick the best method by median and test it against each other one (Mann–Whitney U).

    Whether this is private depends on the values: on metrics from true
    statistics (e.g. true Jaccard) it is NOT private.

    Parameters
    ----------
    values_by_method : dict of str to sequence of float
        A metric's values per method (e.g. one per run). Methods with no
        values are skipped.
    higher_is_better : bool
        If True the best method has the highest median and the tests are
        one-sided ``alternative="greater"`` (best > other); else the lowest
        median and ``alternative="less"``. Ties in the median go to the first
        method in dict order.

    Returns
    -------
    dict
        ``{"best": name or None, "tests": {other: {"U": float, "pvalue": float}}}``,
        where ``U`` is ``scipy.stats.mannwhitneyu``'s statistic for the best
        method's sample (the number of pairs (best, other) with best > other,
        ties counting ½). ``best`` is None with no usable method; ``tests`` is
        empty with fewer than 2 usable methods. When all pooled values of a
        pair are equal the test is undefined and ``pvalue`` is NaN.
    """
    usable = {name: [float(v) for v in vals] for name, vals in values_by_method.items()
              if len(vals) > 0}
    if not usable:
        return {"best": None, "tests": {}}
    medians = {name: float(np.median(vals)) for name, vals in usable.items()}
    pick = max if higher_is_better else min
    best = pick(medians, key=lambda name: medians[name])
    alternative = "greater" if higher_is_better else "less"
    tests = {}
    for name, vals in usable.items():
        if name == best:
            continue
        x, y = usable[best], vals
        pooled = x + y
        if all(v == pooled[0] for v in pooled):
            # All values tied: U = n1·n2/2, no evidence either way; scipy would
            # warn or divide by a zero variance.
            tests[name] = {"U": len(x) * len(y) / 2.0, "pvalue": NAN}
            continue
        res = stats.mannwhitneyu(x, y, alternative=alternative)
        tests[name] = {"U": float(res.statistic), "pvalue": float(res.pvalue)}
    return {"best": best, "tests": tests}


def _json_number(x: float | int) -> float | int | None:
    """NaN / inf → None so the value is JSON-serialisable."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    x = float(x)
    return x if math.isfinite(x) else None


def summarize(runs: Sequence[Sequence[ScoredRedescription]], threshold: float,
              alpha: float = 0.01, tolerance: float = 0.1) -> dict:
    """All metrics for one algorithm × ε cell, pooled over runs. NOT private.

    Parameters
    ----------
    runs : sequence of sequences of ScoredRedescription
        One list per run of the cell (from :func:`score_run`).
    threshold : float
        Pruning threshold on noisy support (kept: ``>= threshold``).
    alpha : float
        Significance level for the true p-values.

    Returns
    -------
    dict
        JSON-serialisable (NaN becomes None), with keys

        * ``share_with_output``: share of runs with ≥ 1 redescription;
        * ``n_before`` / ``n_after``: pooled counts before / after pruning;
        * ``share_significant_kept``: share of kept with true p ≤ ``alpha``;
        * ``spearman_rho`` / ``spearman_p``: noisy vs true Jaccard on kept;
        * ``median_true_j``: median true Jaccard of kept;
        * ``median_abs_error``: median |noisy J − true J| of kept;
        * ``fp_pruned`` / ``fp_kept``: released with true p > ``alpha``;
        * ``exceedance_kept``: share of kept with |noisy J − true J| > ``tolerance``;
        * ``coverage_<statistic>`` / ``coverage_kept_<statistic>``: share of all released /
          of kept redescriptions whose interval holds the true value (when the runs were
          scored with intervals).
    """
    pooled = [s for run in runs for s in run]
    kept, pruned = split_by_threshold(pooled, threshold)
    rho, rho_p = spearman_noisy_true(kept)
    fp_pruned, fp_kept = false_positives(kept, pruned, alpha)
    values = {
        "share_with_output": share_of_runs_with_output(runs),
        "n_before": len(pooled),
        "n_after": len(kept),
        "share_significant_kept": share_truly_significant(kept, alpha),
        "spearman_rho": rho,
        "spearman_p": rho_p,
        "median_true_j": median_true_jaccard(kept),
        "median_abs_error": median_abs_error(kept),
        "fp_pruned": fp_pruned,
        "fp_kept": fp_kept,
        "exceedance_kept": exceedance_rate(kept, tolerance),
        **{f"coverage_{k}": v for k, v in interval_coverage(pooled).items()},
        **{f"coverage_kept_{k}": v for k, v in interval_coverage(kept).items()},
    }
    return {k: _json_number(v) for k, v in values.items()}
