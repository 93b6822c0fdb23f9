"""Black-box privacy audit: lower bounds on ε from the outputs of runs on neighbouring data.

A mechanism M is ε-DP when P[M(D) ∈ E] ≤ e^ε · P[M(D′) ∈ E] for all neighbours D, D′ and
every event E (docs/PRIVACY.md §2). Run M many times on D and on D′, count how often an
output lands in E, and bound both probabilities with exact Clopper–Pearson intervals: with
confidence 1 − α,

    ε ≥ ε_lower = ln(p̂1_lower / p̂0_upper),

where p̂1_lower is the one-sided lower confidence bound of the larger probability and
p̂0_upper the one-sided upper bound of the smaller one (each at level α/2, together 1 − α
by Bonferroni). This is an **estimator of a lower bound**, not a proof: a mechanism whose
ε_lower stays below its claimed ε is *not shown* to be ε-DP (another event, other data or
more runs could show more loss); one whose ε_lower exceeds its claimed ε is, with
confidence 1 − α, not ε-DP on those data. The method is that of the statistical DP
testers (Ding et al. 2018; Bichsel et al. 2021, "DP-Sniper"; Jagielski et al. 2020).

Everything here is plain statistics on counts supplied by the caller (runs on public or
synthetic data, a throwaway accountant): it reads no ledger and releases nothing, so it
spends no budget. Used by ``tests/test_audit.py`` (every miner on neighbouring datasets)
and usable by owners and teachers on their own mechanisms.

References
----------
Clopper, C. J., Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated
in the case of the binomial. *Biometrika* 26(4).
Ding, Z., Wang, Y., Wang, G., Zhang, D., Kifer, D. (2018). Detecting violations of
differential privacy. *ACM CCS 2018*.
Bichsel, B., Steffen, S., Bogunovic, I., Vechev, M. (2021). DP-Sniper: black-box discovery
of differential privacy violations using classifiers. *IEEE S&P 2021*.
Jagielski, M., Ullman, J., Oprea, A. (2020). Auditing differentially private machine
learning: how private is private SGD? *NeurIPS 2020*.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scipy import stats

from dpcore.errors import ParameterError

__all__ = ["clopper_pearson_lower", "clopper_pearson_upper", "epsilon_lower_bound",
           "count_events", "EventBound", "AuditReport", "bounds_from_counts",
           "audit_neighbours"]


def _check_counts(hits: int, trials: int) -> tuple[int, int]:
    if isinstance(hits, bool) or isinstance(trials, bool):
        raise ParameterError("hits and trials must be integers, not booleans")
    hits, trials = int(hits), int(trials)
    if trials < 1:
        raise ParameterError(f"trials must be ≥ 1; got {trials}")
    if not 0 <= hits <= trials:
        raise ParameterError(f"hits must lie in [0, trials = {trials}]; got {hits}")
    return hits, trials


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"alpha (1 − confidence) must lie in (0, 1); got {alpha!r}")
    return alpha


def clopper_pearson_lower(hits: int, trials: int, alpha: float) -> float:
    """One-sided exact lower confidence bound of a binomial probability.

    Parameters
    ----------
    hits, trials : int
        Successes and runs (0 ≤ hits ≤ trials, trials ≥ 1).
    alpha : float
        Error probability: P[p < bound] ≤ α for every true p.

    Returns
    -------
    float
        The α quantile of Beta(hits, trials − hits + 1); 0 when hits = 0.
    """
    hits, trials = _check_counts(hits, trials)
    alpha = _check_alpha(alpha)
    if hits == 0:
        return 0.0
    return float(stats.beta.ppf(alpha, hits, trials - hits + 1))


def clopper_pearson_upper(hits: int, trials: int, alpha: float) -> float:
    """One-sided exact upper confidence bound of a binomial probability.

    Returns the 1 − α quantile of Beta(hits + 1, trials − hits); 1 when hits = trials.
    P[p > bound] ≤ α for every true p.
    """
    hits, trials = _check_counts(hits, trials)
    alpha = _check_alpha(alpha)
    if hits == trials:
        return 1.0
    return float(stats.beta.ppf(1.0 - alpha, hits + 1, trials - hits))


def epsilon_lower_bound(hits_high: int, trials_high: int, hits_low: int, trials_low: int,
                        *, alpha: float) -> float:
    """ε_lower = ln(p̂_high,lower / p̂_low,upper) for one event and one direction (in ε).

    ``hits_high`` of ``trials_high`` runs on one dataset and ``hits_low`` of ``trials_low``
    runs on its neighbour landed in the event. Each probability is bounded at level α/2, so
    with probability ≥ 1 − α both bounds hold and then any ε for which the mechanism is
    ε-DP satisfies ε ≥ ε_lower. Returns 0 when the data give no evidence (a lower bound
    of 0 for the larger probability, or a ratio below 1).

    Parameters
    ----------
    hits_high, trials_high : int
        Event count and runs on the dataset expected to give the event more often.
    hits_low, trials_low : int
        The same on its neighbour.
    alpha : float
        1 − confidence, in (0, 1).

    Returns
    -------
    float
        A lower bound on ε (ε units), ≥ 0; ``math.inf`` never occurs because the upper
        bound of the smaller probability is positive for finitely many runs.
    """
    alpha = _check_alpha(alpha)
    lower = clopper_pearson_lower(hits_high, trials_high, alpha / 2)
    upper = clopper_pearson_upper(hits_low, trials_low, alpha / 2)
    if lower <= 0.0:
        return 0.0
    return max(0.0, math.log(lower / upper))


def count_events(run: Callable[[], object], events: Mapping[str, Callable[[object], bool]],
                 trials: int) -> dict[str, int]:
    """Run ``run()`` ``trials`` times and count the outputs in each event.

    Parameters
    ----------
    run : callable
        One whole run of the mechanism (fresh noise each call); its output is passed to
        every event and then discarded.
    events : mapping of name → predicate
        Each predicate maps an output to True (in the event) or False.
    trials : int
        Number of runs (≥ 1).

    Returns
    -------
    dict
        Event name → number of runs whose output was in it.
    """
    _check_counts(0, trials)
    if not events:
        raise ParameterError("give at least one event")
    counts = dict.fromkeys(events, 0)
    for _ in range(int(trials)):
        output = run()
        for name, predicate in events.items():
            if predicate(output):
                counts[name] += 1
    return counts


@dataclass(frozen=True)
class EventBound:
    """The lower bound one event gives in one direction.

    ``direction`` is ``"D′ over D"`` when the event was more frequent on D′ (the neighbour
    with the added row), else ``"D over D′"``; ``epsilon_lower`` is in ε.
    """

    event: str
    direction: str
    hits_d: int
    hits_d2: int
    trials_d: int
    trials_d2: int
    epsilon_lower: float


@dataclass(frozen=True)
class AuditReport:
    """Result of :func:`audit_neighbours`: one bound per event and direction.

    ``confidence`` holds jointly for all bounds (Bonferroni over events and directions),
    so ``epsilon_lower`` (their maximum) is a lower bound on ε with that confidence.
    """

    confidence: float
    trials: int
    bounds: tuple[EventBound, ...]

    @property
    def epsilon_lower(self) -> float:
        """The largest bound over events and directions (ε), valid at ``confidence``."""
        return max(b.epsilon_lower for b in self.bounds)

    @property
    def worst(self) -> EventBound:
        """The event and direction that gave :attr:`epsilon_lower`."""
        return max(self.bounds, key=lambda b: b.epsilon_lower)

    def summary(self) -> str:
        """One line per event: counts on D and D′ and the bound (for test messages)."""
        return "; ".join(f"{b.event} [{b.direction}]: {b.hits_d}/{b.trials_d} vs "
                         f"{b.hits_d2}/{b.trials_d2} → ε ≥ {b.epsilon_lower:.3f}"
                         for b in self.bounds)


def bounds_from_counts(counts_d: Mapping[str, int], counts_d2: Mapping[str, int],
                       trials_d: int, trials_d2: int, *, confidence: float
                       ) -> AuditReport:
    """Bounds for every event in both directions from event counts on D and D′.

    Each of the 2·m (event, direction) comparisons is made at level (1 − confidence)/(2·m)
    (Bonferroni), so all of them hold together with probability ≥ ``confidence``.
    """
    if set(counts_d) != set(counts_d2):
        raise ParameterError("the two datasets' event counts name different events")
    alpha = _check_alpha(1.0 - float(confidence))
    each = alpha / (2 * len(counts_d))
    bounds = []
    for name in counts_d:
        k_d, k_d2 = counts_d[name], counts_d2[name]
        bounds.append(EventBound(name, "D′ over D", k_d, k_d2, trials_d, trials_d2,
                                 epsilon_lower_bound(k_d2, trials_d2, k_d, trials_d,
                                                     alpha=each)))
        bounds.append(EventBound(name, "D over D′", k_d, k_d2, trials_d, trials_d2,
                                 epsilon_lower_bound(k_d, trials_d, k_d2, trials_d2,
                                                     alpha=each)))
    return AuditReport(float(confidence), int(min(trials_d, trials_d2)), tuple(bounds))


def audit_neighbours(run_d: Callable[[], object], run_d2: Callable[[], object],
                     events: Mapping[str, Callable[[object], bool]], trials: int, *,
                     confidence: float = 0.999) -> AuditReport:
    """Run a mechanism on neighbours D and D′ ``trials`` times each and bound its ε.

    Parameters
    ----------
    run_d, run_d2 : callable
        One whole run on D, respectively on D′ (one row or record added), each call with
        fresh noise and a throwaway accountant (never a ledger).
    events : mapping of name → predicate on an output
        Output events chosen before the runs (choosing them after looking at the counts
        would invalidate the confidence).
    trials : int
        Runs per dataset.
    confidence : float
        Joint confidence of all bounds (default 0.999).

    Returns
    -------
    AuditReport
        ``epsilon_lower`` is a lower bound on the mechanism's ε at ``confidence`` — evidence
        of a violation when it exceeds the claimed ε, never a proof of privacy.
    """
    counts_d = count_events(run_d, events, trials)
    counts_d2 = count_events(run_d2, events, trials)
    return bounds_from_counts(counts_d, counts_d2, trials, trials, confidence=confidence)
