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
synthetic data, a throwaway accountant): it reads no ledger and releases nothing, so it spends
no budget. Used by ``tests/dpcore/privacy/test_audit.py`` (every miner on neighbouring datasets)
and usable by owners and teachers on their own mechanisms.

**Replay with frozen randomness** (white box; the idea of record-and-replay DP checkers):
:class:`NoiseRecorder` records, for every noisy release a run makes through
``dpcore.privacy.mechanisms`` (``laplace``, ``discrete_laplace``), what reached the noise —
the true values, the ε and Δ the sampler used, its exact scale, the generator's state before
the draw — and the output. Replaying a run on the neighbour D′ with the same seed and every
release forced to the output recorded on D couples the two runs on one output path: a
private run must then make the same releases in the same order (no branch before a noise
draw reads the data), every release's true values must differ by at most its declared Δ in
L1 norm (:func:`replay_differences`), every draw must be calibrated to the ε and Δ the
accountant was charged (:func:`calibration_problems`) and draw from a stream no other
release used (:func:`shared_streams`). Like the statistics above this is evidence on given
data, not a proof; it sees only the releases made through those two functions (the tree and
Serenade choices are drawn inside numba kernels: the tests check what reaches them).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy import stats

from dpcore.errors import ParameterError
from dpcore.privacy import mechanisms

__all__ = ["clopper_pearson_lower", "clopper_pearson_upper", "epsilon_lower_bound",
           "count_events", "EventBound", "AuditReport", "bounds_from_counts",
           "audit_neighbours", "NoiseEvent", "NoiseRecorder", "calibration_problems",
           "redraw_problems", "shared_streams", "replay_differences", "ReplayDifference"]


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


# =========================================================================== replay

@dataclass(frozen=True)
class NoiseEvent:
    """One noisy release as the sampler saw it (recorded by :class:`NoiseRecorder`).

    Attributes
    ----------
    mechanism : str
        ``"discrete_laplace"`` or ``"laplace"``.
    label : str
        The release's accountant label.
    epsilon_nano : int
        The ε (nano-ε) the noise was drawn with — what reached the sampler, which a correct
        caller also charged.
    sensitivity : float
        The Δ the noise was calibrated to (L1, units of the values: rows for counts).
    parallel : int
        Disjoint parts recorded for the call.
    true_values : numpy.ndarray
        The values before noise (private; only ever in a test's memory).
    output : numpy.ndarray
        What the mechanism released (in replay: the forced output).
    scale : tuple or float
        ``(s, t)`` with noise P(k) ∝ exp(−|k|·s/t) (discrete), or the Laplace scale b.
    state : dict
        The generator's bit-generator state just before the draw.
    """

    mechanism: str
    label: str
    epsilon_nano: int
    sensitivity: float
    parallel: int
    true_values: np.ndarray
    output: np.ndarray
    scale: object
    state: dict

    @property
    def signature(self) -> tuple:
        """What a data-independent run fixes before the draw: mechanism, label, ε, Δ, shape."""
        return (self.mechanism, self.label, int(self.epsilon_nano), float(self.sensitivity),
                tuple(np.shape(self.true_values)))


@dataclass
class NoiseRecorder:
    """Context manager recording every release of ``mechanisms.laplace`` and
    ``mechanisms.discrete_laplace`` (white-box replay; spends nothing, releases nothing).

    Parameters
    ----------
    play : sequence of NoiseEvent, optional
        The events of a recorded run. Release i is then forced to ``play[i].output`` as long
        as the run makes the same releases (same :attr:`NoiseEvent.signature`); from the
        first release that differs (``diverged`` says which) it records without forcing.

    Notes
    -----
    While active, ``mechanisms._recorder`` points here; leaving the block restores None. Use
    only on public or synthetic data: the events hold true values.
    """

    play: Sequence[NoiseEvent] | None = None
    events: list[NoiseEvent] = field(default_factory=list)
    diverged: str | None = None

    def __enter__(self) -> NoiseRecorder:
        if mechanisms._recorder is not None:
            raise ParameterError("a NoiseRecorder is already recording")
        mechanisms._recorder = self
        return self

    def __exit__(self, *exc) -> None:
        mechanisms._recorder = None

    @staticmethod
    def state_of(rng: np.random.Generator) -> dict:
        """The generator's state before a draw (a copy)."""
        return rng.bit_generator.state

    def observe(self, mechanism, label, epsilon_nano, sensitivity, parallel, true_values,
                output, scale, state) -> np.ndarray:
        """Record one release; return what the mechanism releases (forced in replay)."""
        event = NoiseEvent(mechanism, label, int(epsilon_nano), float(sensitivity),
                           int(parallel), np.array(true_values), np.array(output), scale,
                           state)
        index = len(self.events)
        released = output
        if self.play is not None and self.diverged is None:
            if index >= len(self.play):
                self.diverged = f"release {index} ({label!r}) was not made by the recorded run"
            elif self.play[index].signature != event.signature:
                self.diverged = (f"release {index}: {event.signature} where the recorded run "
                                 f"made {self.play[index].signature}")
            else:
                released = np.array(self.play[index].output, dtype=output.dtype)
                event = NoiseEvent(mechanism, label, event.epsilon_nano, event.sensitivity,
                                   event.parallel, event.true_values, released.copy(), scale,
                                   state)
        self.events.append(event)
        return released


def _expected_scale(event: NoiseEvent):
    if event.mechanism == "discrete_laplace":
        f = Fraction(int(round(event.sensitivity)) * 10**9, int(event.epsilon_nano))
        return (f.denominator, f.numerator)
    return event.sensitivity / (event.epsilon_nano * 1e-9)


def calibration_problems(events: Sequence[NoiseEvent], calls: Sequence) -> list[str]:
    """Releases whose noise is not calibrated to what the accountant was charged.

    Each event is matched, in order, with the first unmatched accountant call
    (``accountant.MechanismCall``) of the same mechanism and label; it must have been charged
    the ε the noise was drawn with and the Δ it was calibrated to, and the sampler's scale
    must be exactly Δ/ε (``(s, t)`` = the reduced fraction ε/Δ for discrete Laplace).

    Returns
    -------
    list of str
        One message per problem; empty when every release is calibrated to its charge.
    """
    unmatched = list(calls)
    problems = []
    for i, event in enumerate(events):
        match = next((c for c in unmatched if c.mechanism == event.mechanism
                      and c.label == event.label), None)
        if match is None:
            problems.append(f"release {i} ({event.label!r}) has no charged call")
            continue
        unmatched.remove(match)
        if match.epsilon_nano != event.epsilon_nano:
            problems.append(f"release {i} ({event.label!r}) drew its noise at ε = "
                            f"{event.epsilon_nano * 1e-9:.9g} but was charged "
                            f"{match.epsilon_nano * 1e-9:.9g}")
        if float(match.sensitivity) != event.sensitivity:
            problems.append(f"release {i} ({event.label!r}) was calibrated to Δ = "
                            f"{event.sensitivity:g} but charged with Δ = {match.sensitivity:g}")
        expected = _expected_scale(event)
        same = expected == tuple(event.scale) if event.mechanism == "discrete_laplace" \
            else math.isclose(expected, float(event.scale), rel_tol=1e-12)
        if not same:
            problems.append(f"release {i} ({event.label!r}) sampled at scale {event.scale} "
                            f"instead of Δ/ε = {expected}")
    return problems


def _generator_at(state: dict) -> np.random.Generator:
    bit_generator = getattr(np.random, state["bit_generator"], None)
    if bit_generator is None:  # e.g. randomgen's ChaCha: replayed only on public seeds
        raise ParameterError(f"cannot replay a {state['bit_generator']} stream")
    bg = bit_generator()
    bg.state = state
    return np.random.Generator(bg)


def redraw_problems(events: Sequence[NoiseEvent]) -> list[str]:
    """Discrete releases whose noise is not the exact sampler's draw at the declared scale.

    Restores each release's generator state, draws ``discrete_laplace_sample`` at the scale
    Δ/ε computed here from the recorded ε and Δ, and compares with output − true values: a
    release whose noise was shrunk, reused or altered after the draw differs. (Forced
    replay outputs are skipped: their noise is by construction another run's.)
    """
    problems = []
    for i, event in enumerate(events):
        if event.mechanism != "discrete_laplace" or not np.size(event.true_values):
            continue
        s, t = _expected_scale(event)
        noise = mechanisms.discrete_laplace_sample(s, t, _generator_at(event.state),
                                                   int(np.size(event.true_values)))
        got = (np.asarray(event.output, dtype=np.int64)
               - np.asarray(event.true_values, dtype=np.int64)).ravel()
        if not np.array_equal(got, noise):
            problems.append(f"release {i} ({event.label!r}): the released noise is not the "
                            f"draw at Δ/ε = {t}/{s} from its stream")
    return problems


def shared_streams(events: Sequence[NoiseEvent]) -> list[str]:
    """Pairs of releases drawn from the same generator state (a reused random stream)."""
    seen: dict[str, int] = {}
    problems = []
    for i, event in enumerate(events):
        if not np.size(event.true_values):
            continue
        key = repr(event.state)
        if key in seen:
            problems.append(f"releases {seen[key]} ({events[seen[key]].label!r}) and {i} "
                            f"({event.label!r}) drew from the same stream state")
        else:
            seen[key] = i
    return problems


@dataclass(frozen=True)
class ReplayDifference:
    """One release of a replayed pair: its label, declared Δ and realised L1 difference."""

    label: str
    sensitivity: float
    l1: float

    @property
    def exceeds(self) -> bool:
        return self.l1 > self.sensitivity


def replay_differences(events_d: Sequence[NoiseEvent], events_d2: Sequence[NoiseEvent]
                       ) -> list[ReplayDifference]:
    """Realised sensitivity of every release of a run and its forced replay on a neighbour.

    Raises
    ------
    ParameterError
        The two runs made different releases (a different signature or number): a choice
        before a noise draw depended on the data, so the replay is not coupled.
    """
    for i, (a, b) in enumerate(zip(events_d, events_d2)):
        if a.signature != b.signature:
            raise ParameterError(f"release {i} differs between the runs: {a.signature} vs "
                                 f"{b.signature} (a branch before the noise reads the data)")
    if len(events_d) != len(events_d2):
        raise ParameterError(f"the runs made {len(events_d)} and {len(events_d2)} releases "
                             "(a branch before the noise reads the data)")
    return [ReplayDifference(a.label, a.sensitivity,
                             float(np.abs(np.asarray(b.true_values, dtype=np.float64)
                                          - np.asarray(a.true_values, dtype=np.float64)).sum()))
            for a, b in zip(events_d, events_d2)]
