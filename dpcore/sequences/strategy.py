"""Strict PFS2's per-level choices: the level's budget, its pruning length bound, prune or
not, and how many sequences a level may keep.

Every function here is a pure function of **public parameters** (θ, ζ, lmax, the budget
shares) and **released values** (N̂, the number of candidates |C_k|, which is
post-processing of the frequent sequences already released, and noisy supports). None
reads a record, so the choices cost no ε and neighbouring datasets that release the same
values make the same choices (the argument is in docs/PRIVACY.md, PFS2 section).

Why a choice per level
----------------------
Strict PFS2 gives each level k the budget ε_k = ε4,k + ε5,k (:func:`level_budget` and
:func:`split_level_budget`; written ε4/L_f and ε5/L_f below as when the split is even).
Verifying all |C_k|
candidates with it adds noise of scale |C_k|/ε_k (the straightforward baseline's). Pruning
first spends ε4/L_f on noisy supports of the shrunk records, whose sensitivity is
Δ_k = min(C(lmax, k), |C_k|) (a shrunk record has at most lmax items, so it holds at most
C(lmax, k) distinct k-sequences, and at most |C_k| of them are candidates), then verifies
the survivors with ε5/L_f. Pruning pays only when its own noise is small next to what it
saves, and when there is something to save. The rule prunes when all three hold:

* φ_k = Δ_k/(ε4/L_f) ≤ ½·|C_k|/ε_k: the pruning noise is at most half the noise of
  verifying everything with the whole level budget;
* θ′ > 0: a non-positive threshold keeps every candidate, so pruning would waste budget;
* s_k·ln(|C_k|/2) ≥ θ·N̂ with s_k = |C_k|/ε_k (:func:`floods`): verifying everything would
  release at least one candidate of no support in expectation. Below that, verifying all
  candidates errs only on those near θ·N̂, where pruning (which drops a candidate of
  support exactly θ·N̂ with chance ζ, and counts on records shrunk to lmax items) cannot
  do better: a simulation of the MSNBC shape's level 2 (225 candidates, s_k ≈ 0.1·θ·N)
  gave the same F either way (baseline 41.0 true and 2.6 false releases, pruning 38.8 and
  0.15, mean of 4,000 noise draws).

The pruning's length bound is lmax, or a bound read from a noisy histogram of the records'
relevant lengths (:func:`wants_length_histogram`, :func:`pruning_length`); a bound read at
one level is reused free at the later ones (relevant lengths only shrink), and a new
histogram is bought only where the bound it can plausibly give (:func:`plausible_length`)
would make pruning pay.

On small alphabets at ε = 1 no level passes and strict PFS2 verifies like the baseline, with
the same budget per level; where the baseline floods (large alphabets, small ε) the early
levels prune.

The cap
-------
A record of at most lmax items holds at most C(lmax, k) distinct k-sequences, so at most
M_k = ⌈C(lmax, k)/θ⌉ k-sequences can reach support θ·N in records of at most lmax items.
A level keeps at most M_k candidates after pruning and releases at most M_k sequences:
when more pass, the ones of largest noisy support are kept (ties: candidate order). This
is post-processing of noisy values; it bounds the next level's candidates (at most M_1²
for k = 2) and so the run's work and memory. It can drop truly frequent sequences only
when many records are longer than lmax (η of them are not, by the choice of lmax).

A pruned level always verifies its survivors: the verification is a second, independent
noisy filter. Releasing the pruning's own noisy values instead when they were the less
noisy measurement was tried and measured worse (clickstream sample, θ = 0.02, ε = 1, three
seeds: F 0.575 against 0.661 when verifying): candidates just below θ·N̂ pass one filter
far more often than two.

Stop when the noise drowns the threshold
----------------------------------------
If the measurement a level would release from (verification of all |C_k| with the whole
level budget when it does not prune; after pruning, the verification of the survivors)
has a noise scale of at least θ·N̂, a candidate of no support passes the threshold with
probability ≥ ½e⁻¹ ≈ 0.18; when the expected number of such false releases among the
candidates measured also reaches M_k, the most sequences the level can truly have, the
release would be mostly noise (the straightforward baseline's collapse on large
alphabets: thousands of released sequences).
The run stops there: the level releases nothing, no later level runs, and the unspent
budget is reported. The test reads public values only (:func:`too_noisy`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcore.errors import ParameterError
from dpcore.privacy.units import nano_to_epsilon
from dpcore.sequences.relaxation import laplace_pruning_threshold

__all__ = ["LevelPlan", "plan_level", "release_cap", "keep_largest", "floods", "too_noisy",
           "level_budget", "split_level_budget", "verify_budget", "pruning_length",
           "wants_length_histogram", "plausible_length", "verify_sensitivity",
           "wants_verify_histogram", "GROWTH", "LENGTH_SHARE", "VERIFY_LENGTH_SHARE",
           "NOISY_STOP", "CONCENTRATE_SCALE", "CONCENTRATED", "concentrate_bound",
           "NO_BUDGET_STOP", "PRUNE_GAIN", "TARGET_SCALE", "noise_bound"]

#: The note of a level where the run stopped because the noise would drown θ·N̂.
NOISY_STOP = ("stopped: noise scale ≥ θ·N̂ and expected false releases ≥ the cap; the "
              "level would release mostly noise")

#: The note of a level where the run stopped because too little budget was left (< 2 nano-ε).
NO_BUDGET_STOP = "stopped: less than 2 nano-ε of the level budget left"

#: τ: a level asks for the budget that makes its release's noise scale τ·θ·N̂ (public
#: constant; the median |Laplace| is ln 2 times the scale, so about 5 % of θ·N̂).
TARGET_SCALE = 0.07

#: Share of a flooding level's pruning part spent on the noisy histogram of its records
#: relevant lengths, from which the pruning's length bound is read (public constant).
LENGTH_SHARE = 0.1

#: Share of a pruned level's verification part spent on the noisy histogram of the records'
#: lengths in the survivors' items, from which the verification's length bound is read
#: (:func:`wants_verify_histogram`; public constant).
VERIFY_LENGTH_SHARE = 0.2

#: A level k ≥ 2 whose expected false releases reach GROWTH times the number released at
#: level k − 1 stops the run (:func:`too_noisy`; public constant).
GROWTH = 10.0

#: ρ: a level k ≥ 2 whose best release at its pool-rule budget would have a noise scale
#: above ρ·θ·N̂ takes the whole rest of the level budget instead, verifies on records shrunk
#: to the longest bound that gives scale ≤ ρ·θ·N̂, and is the run's last level
#: (:func:`concentrate_bound`; public constant).
CONCENTRATE_SCALE = 0.2

#: The note of a level that took the rest of the level budget (:func:`concentrate_bound`).
CONCENTRATED = ("last level: the noise at its share would exceed ρ·θ·N̂, so it took the rest "
                "of the level budget and verified on records shrunk to the bound giving ρ·θ·N̂")

#: Pruning must be at least this many times less noisy than one verification of every
#: candidate with the whole level budget (φ_k ≤ |C_k|/ε_k / PRUNE_GAIN).
PRUNE_GAIN = 2.0


@dataclass(frozen=True)
class LevelPlan:
    """What strict PFS2 does at one level, decided from public and released values.

    Attributes
    ----------
    prune : bool
        Whether the level prunes before verifying.
    sensitivity : int
        Δ_k = min(C(lmax, k), |C_k|) of the pruning supports (records).
    scale : float
        φ_k = Δ_k/ε_prune, the pruning noise scale (records).
    threshold : float
        θ′ on the noisy pruning supports (records; may be negative).
    prune_nano : int
        nano-ε spent on pruning (0 when the level does not prune).
    verify_nano : int
        nano-ε of the level's verification (its own part plus the pruning part when it
        does not prune).
    """

    prune: bool
    sensitivity: int
    scale: float
    threshold: float
    prune_nano: int
    verify_nano: int


def plan_level(n_candidates: int, k: int, lmax: int, prune_nano: int, verify_nano: int,
               support_threshold: float, zeta: float) -> LevelPlan:
    """Strict PFS2's choice at level k (public inputs only; see the module docstring).

    Parameters
    ----------
    n_candidates : int
        |C_k| (post-processing of released sequences, or the declared alphabet at k = 1).
    k, lmax : int
        Level and the pruning's length bound (items: lmax or the level's l_k, both DP
        outputs).
    prune_nano, verify_nano : int
        The level's two budget parts (nano-ε), from :func:`split_level_budget` (less the
        relevant-length histogram's share when the level bought one).
    support_threshold : float
        θ·N̂ (records), N̂ the released record count.
    zeta : float
        ζ: the chance of pruning a candidate whose support is exactly θ·N̂.
    """
    if n_candidates < 1 or k < 1 or lmax < 1 or prune_nano < 1 or verify_nano < 1:
        raise ParameterError("plan_level needs ≥ 1 candidate, k, lmax and budget")
    delta = min(math.comb(lmax, k), int(n_candidates))
    eps_prune = nano_to_epsilon(prune_nano)
    eps_level = nano_to_epsilon(prune_nano + verify_nano)
    phi = delta / eps_prune
    theta_prime = laplace_pruning_threshold(float(support_threshold), phi, float(zeta))
    verify_scale = n_candidates / eps_level        # verifying everything, as the baseline
    prune = (phi * PRUNE_GAIN <= verify_scale and theta_prime > 0
             and floods(verify_scale, n_candidates, support_threshold))
    if prune:
        return LevelPlan(True, delta, phi, theta_prime, int(prune_nano), int(verify_nano))
    return LevelPlan(False, delta, phi, theta_prime, 0, int(prune_nano + verify_nano))


def release_cap(lmax: int, k: int, theta: float) -> int:
    """M_k = ⌈C(lmax, k)/θ⌉: the most k-sequences a level keeps or releases (public)."""
    return max(1, math.ceil(math.comb(int(lmax), int(k)) / float(theta)))


def keep_largest(selected: np.ndarray, noisy: np.ndarray, cap: int) -> np.ndarray:
    """The indices of ``selected`` (sorted) with the ``cap`` largest noisy values.

    Ties go to the earlier index (candidate order), so the result depends only on the
    noisy values and the public candidate order: post-processing.
    """
    selected = np.asarray(selected, dtype=np.int64)
    if selected.size <= cap:
        return selected
    order = np.argsort(-np.asarray(noisy, dtype=np.float64)[selected], kind="stable")
    return np.sort(selected[order[:cap]])


def too_noisy(scale: float, n_measured: int, support_threshold: float, cap: int, *,
              previous: int | None = None) -> bool:
    """Whether a level's release would be mostly noise (public inputs only).

    True when the noise scale (records) is at least θ·N̂ — a candidate of no support then
    passes with probability ½·exp(−θ·N̂/scale) ≥ ½e⁻¹ — and the expected number of such
    false releases among the ``n_measured`` candidates reaches either the cap M_k, the
    most sequences the level can truly have (at least about half the release would be
    false), or :data:`GROWTH` times ``previous``, the number of sequences the level before
    released (k ≥ 2): the level would add far more false sequences than the run has found
    at the level before, where the frequent sequences of consecutive lengths are of the
    same order (on the generated shapes at most about 8 times as many: MSNBC at
    θ = 0.005 has 17 frequent items and 137 frequent 2-sequences).
    """
    scale, t = float(scale), float(support_threshold)
    if scale < t:
        return False
    false = n_measured * 0.5 * math.exp(-t / scale)
    if previous is not None and false >= GROWTH * max(int(previous), 1):
        return True
    return false >= cap


def floods(scale: float, n_measured: int, support_threshold: float) -> bool:
    """Whether noise of this scale would release ≥ 1 of ``n_measured`` zero-support candidates.

    A candidate of support 0 passes θ·N̂ with probability ½·exp(−θ·N̂/scale) under Laplace
    noise; the expected number of such false releases among m candidates reaches 1 when
    scale·ln(m/2) ≥ θ·N̂. Public inputs only.
    """
    if n_measured <= 2:
        return False
    return float(scale) * math.log(n_measured / 2.0) >= float(support_threshold)


def _need_nano(n_measured: int, support_threshold: float) -> int | None:
    """nano-ε for noise scale τ·θ·N̂ on n_measured candidates (None: θ·N̂ ≤ 0, unbounded)."""
    target = TARGET_SCALE * float(support_threshold)
    if not target > 0:
        return None
    return math.ceil(int(n_measured) / target * 1e9)


def level_budget(remaining_nano: int, levels_left: int, n_measured: int,
                 support_threshold: float) -> int:
    """nano-ε of level k's calls, from public and released values only (strict mode).

    Parameters
    ----------
    remaining_nano : int
        The level budget (ε4 + ε5; the baseline's ε4 + ε5 too) not yet spent by levels
        1..k−1: a function of earlier releases.
    levels_left : int
        L_f − k + 1 (L_f is released).
    n_measured : int
        |C_k| (post-processing of released sequences; the declared alphabet at k = 1).
    support_threshold : float
        θ·N̂ (records).

    Returns
    -------
    int
        The level's budget b_k: what gives the verification of all |C_k| the noise scale
        τ·θ·N̂ (:data:`TARGET_SCALE`), but at least an even share of what is left over the
        levels left (R/m) and at most half of it (R/2), all of it at the last level
        (m = 1). b_k ≤ R always, so the levels never spend more than the level budget
        (sequential composition with budgets chosen from earlier outputs, summing to at
        most ε4 + ε5 on every outcome; docs/PRIVACY.md §6.7).
    """
    remaining, m = int(remaining_nano), int(levels_left)
    if remaining < 0 or m < 1 or n_measured < 0:
        raise ParameterError("level_budget needs remaining ≥ 0, levels left ≥ 1, |C_k| ≥ 0")
    if m == 1:
        return remaining
    low, high = remaining // m, remaining // 2
    need = _need_nano(n_measured, support_threshold)
    return high if need is None else min(high, max(low, need))


def concentrate_bound(n_candidates: int, k: int, length: int, level_nano: int,
                      remaining_nano: int, support_threshold: float) -> int | None:
    """The records' length bound of a level that should take the whole rest of the level
    budget and be the last, or None (strict PFS2; public and released inputs only).

    At level k ≥ 2 the best release the level can make at its pool-rule budget
    ``level_nano`` verifies its |C_k| candidates on records shrunk to the carried bound
    ``length`` (Δ = min(C(length, k), |C_k|)). When that noise scale exceeds
    ρ·θ·N̂ (:data:`CONCENTRATE_SCALE`), the candidates near θ·N̂ — many, when |C_k| is
    hundreds — pass on noise, and the level after it would be noisier still: it gets at
    most what is left (R_k − b_k ≤ R_k/2 under the pool rule) for candidates joined from
    this level's release, whose Δ = min(C(l, k + 1), |C_{k+1}|) is at least this one's
    for k < l/2. So the level takes all of R_k (``remaining_nano``), ends the run after
    its release, and verifies all of C_k (no pruning: its Δ is this one, no smaller) on
    records shrunk to the longest bound b ≤ ``length`` with min(C(b, k), |C_k|)/R_k ≤
    ρ·θ·N̂ (b ≥ k; at b = k, Δ = 1). Shrinking trades noise for a downward bias: a
    record holding more than b of C_k's items loses some of its k-sequences. So the level
    concentrates only where that bound lowers Δ and is at least half the carried
    bound; otherwise the later levels are worth more than this
    level's precision (House_Power's shape, below).

    Measured on the BIBLE shape (θ = 0.1, ε = 0.1; level 2 with the 19 frequent items,
    361 candidates, R_2 = 0.045 ε; 200 noise draws): the bound 12 the level-1 histogram
    read gave 32 true and 33 false releases (median relative error 46 %), the bound 8
    this rule picks 28 true and 4 false (14 %); at the pool rule's R_2/2 and bound 12,
    29 true and 70 false. Without the two conditions, House_Power's shape (θ = 0.3,
    ε = 0.1) concentrated at level 2 with no shrinking (Δ = |C_2| = 121 at every bound)
    and fell from F 0.17 to 0.05: its later levels release many true sequences.

    Returns
    -------
    int or None
        b (items), or None: the level proceeds under the pool rule (k = 1, the pool rule
        already gives it everything, its noise is at most ρ·θ·N̂, or the shrinking would
        not lower Δ or would cut below half the carried bound).
    """
    n, k, length = int(n_candidates), int(k), int(length)
    if k < 2 or n < 1 or int(level_nano) < 1 or int(level_nano) >= int(remaining_nano):
        return None
    limit = CONCENTRATE_SCALE * float(support_threshold)
    if not limit > 0:
        return None
    length = max(length, k)
    if min(math.comb(length, k), n) / nano_to_epsilon(level_nano) <= limit:
        return None
    eps_all = nano_to_epsilon(remaining_nano)
    bound = k
    for b in range(k + 1, length + 1):
        if min(math.comb(b, k), n) / eps_all > limit:
            break
        bound = b
    # only where the shrinking pays and is mild: it must lower Δ (else the later levels
    # are given up for nothing — House_Power's level 2, Δ = |C_2| = 121 at any bound,
    # gave F 0.05 against 0.17), and keep at least half of the carried bound (the
    # η-quantile of the relevant lengths, or lmax), so that a record loses k-sequences
    # only beyond it
    if min(math.comb(bound, k), n) >= min(math.comb(length, k), n) or 2 * bound < length:
        return None
    return bound


def noise_bound(n_candidates: int, k: int, length: int, delta: int, level_nano: int,
                support_threshold: float) -> int | None:
    """A shorter records' bound for a level k ≥ 2 that verifies all of C_k under the pool
    rule, chosen by its noise; or None (strict PFS2; public and released inputs only).

    The level verifies with sensitivity ``delta`` (:func:`verify_sensitivity` at the
    carried bound ``length``, read from a noisy histogram) on its budget ``level_nano``.
    When that noise scale exceeds ρ·θ·N̂ (:data:`CONCENTRATE_SCALE`) — the candidates near
    θ·N̂ then pass on noise — the level verifies instead on records shrunk to the longest
    bound b with min(C(b, k), |C_k|)/ε_k ≤ ρ·θ·N̂, when b ≥ ``length``/2 (a record loses
    k-sequences only beyond it, as for :func:`concentrate_bound`) and b lowers Δ. Unlike
    :func:`concentrate_bound` the level keeps its pool-rule budget and the later levels
    run: this is the case where the rest of the pool would reach ρ·θ·N̂ without
    shrinking, so taking it would lower no Δ.

    Measured on the BIBLE shape (θ = 0.18, ε = 0.1, 8 seeds): level 2 verified 64–121
    candidates with Δ = 45–100 on 0.0225 ε (scale 2,000–4,400 records against
    θ·N̂ ≈ 6,500) and released 10–25 false 2-sequences per run, whose relative errors made
    the median: F 0.66, median relative error 26 % ± 17 %. With this bound (b = 8,
    Δ = 28, the same 0.0225 ε; level 3 then concentrates or runs under the pool rule) F
    0.85, median relative error 7.3 % ± 1.8 % (docs/results.md, issue 35).

    Returns
    -------
    int or None
        b (items, k ≤ b < ``length``), or None: keep ``delta``.
    """
    n, k, length = int(n_candidates), int(k), int(length)
    if k < 2 or n < 1 or int(level_nano) < 1 or length <= k:
        return None
    limit = CONCENTRATE_SCALE * float(support_threshold)
    eps = nano_to_epsilon(level_nano)
    if not limit > 0 or int(delta) / eps <= limit:
        return None
    bound = None
    for b in range(max(k, (length + 1) // 2), length + 1):
        if min(math.comb(b, k), n) / eps > limit:
            break
        bound = b
    if bound is None or min(math.comb(bound, k), n) >= int(delta):
        return None
    return bound


def split_level_budget(level_nano: int, prune_nano: int, verify_nano: int) -> tuple[int, int]:
    """Split a pruning level's budget b_k in the plan's ratio ε4 : ε5 (both parts ≥ 1)."""
    level_nano = int(level_nano)
    if level_nano < 2:
        raise ParameterError("a level budget below 2 nano-ε cannot be split")
    prune = (level_nano * int(prune_nano)) // (int(prune_nano) + int(verify_nano))
    prune = min(max(prune, 1), level_nano - 1)
    return prune, level_nano - prune


def verify_budget(available_nano: int, n_measured: int, support_threshold: float,
                  levels_left: int) -> int:
    """nano-ε of a pruned level's verification of its |C′_k| survivors (public inputs).

    What gives noise scale τ·θ·N̂ on the survivors, at most ``available_nano`` (the
    level's verification part) and at least 1; the rest stays in the level budget for
    the later levels. At the last level (``levels_left`` = 1) all of ``available_nano``.
    """
    available = int(available_nano)
    need = _need_nano(n_measured, support_threshold)
    if need is None or int(levels_left) <= 1:
        return available
    return max(1, min(available, need))


def pruning_length(noisy_histogram: np.ndarray, noisy_records: float, eta: float) -> int:
    """The pruning's length bound l_k from a noisy histogram of relevant lengths (public).

    ``noisy_histogram[i − 1]`` is the noisy number of records holding i items that occur
    in some candidate (i = 1..lmax, longer ones in the last cell). l_k is the smallest l
    whose noisy number of records holding more than l relevant items is at most
    (1 − η)·N̂ (records with none count as short), lmax if none: the η-quantile of the
    relevant lengths, as lmax is of the raw lengths. Post-processing of DP releases.
    """
    hist = np.asarray(noisy_histogram, dtype=np.float64)
    longer = np.concatenate([np.cumsum(hist[::-1])[::-1][1:], [0.0]])  # > l relevant items
    ok = np.flatnonzero(longer <= (1.0 - float(eta)) * max(float(noisy_records), 1.0))
    return int(ok[0]) + 1 if ok.size else int(hist.size)


def plausible_length(reference_length: int, relevant_weight: float, reference_weight: float,
                     k: int) -> int:
    """The shortest bound a relevant-length histogram at level k can plausibly give (public).

    ``max(k, ⌊l_ref·w_k/w_ref⌋)``, w the sum of the released level-1 noisy supports of a
    set of items: the level's relevant items I_k (those occurring in C_k, a subset of the
    reference's) plausibly hold at least their share w_k/w_ref of the reference's
    relevant items in a record, whose η-quantile was l_ref. The reference is the latest
    level that read such a histogram (its bound l_j and its relevant items), else lmax and
    the declared alphabet, each item not released at level 1 counted at θ·N̂. Inputs:
    released values only (C_k is the GSP join of the released FS_{k−1}, l_j and the
    supports are DP outputs) and public ones; the result is an estimate, not a bound,
    used only to skip purchases that could not pay (:func:`wants_length_histogram`).
    """
    if not (reference_weight > 0 and relevant_weight >= 0 and reference_length >= 1
            and k >= 1):
        raise ParameterError("plausible_length needs a positive reference, length and level")
    share = min(1.0, float(relevant_weight) / float(reference_weight))
    return max(int(k), math.floor(int(reference_length) * share))


def wants_length_histogram(n_candidates: int, k: int, lmax: int, prune_nano: int,
                           verify_nano: int, support_threshold: float, zeta: float,
                           length_nano: int, noisy_records: float, eta: float, *,
                           carried: int | None = None, plausible: int | None = None) -> bool:
    """Whether level k should buy a noisy histogram of relevant lengths (public inputs only).

    Yes when all hold: k ≥ 2 (at k = 1 every declared item is relevant, so the histogram
    would repeat the length histogram); with the carried bound (``carried``: the bound an
    earlier level read from its histogram, lmax if none; free to reuse) the level would
    not prune, but with the shortest bound the new histogram could plausibly give
    (``plausible``, :func:`plausible_length`; k if not given) it would (:func:`plan_level`
    with the pruning part less ``length_nano``); and the histogram's noise leaves the
    η-quantile readable: √(2·lmax)/ε_h ≤ ¼·(1 − η)·N̂ (the noisy tail sums compared with
    (1 − η)·N̂ in :func:`pruning_length` then err by a small part of it). Otherwise the
    histogram would be wasted budget or noise.
    """
    bound = int(lmax if carried is None else carried)
    best = int(k) if plausible is None else max(int(k), int(plausible))
    if k < 2 or length_nano < 1 or prune_nano - length_nano < 1 or best >= bound:
        return False
    if plan_level(n_candidates, k, bound, prune_nano, verify_nano, support_threshold,
                  zeta).prune:
        return False
    if not plan_level(n_candidates, k, best, prune_nano - length_nano, verify_nano,
                      support_threshold, zeta).prune:
        return False
    noise = math.sqrt(2.0 * lmax) / nano_to_epsilon(length_nano)
    return noise <= 0.25 * (1.0 - float(eta)) * max(float(noisy_records), 1.0)


def verify_sensitivity(n_kept: int, k: int, length: int) -> tuple[int, int]:
    """Δ of verifying a pruned level's |C′_k| survivors, and the records' length bound.

    Returns ``(Δ, bound)``. Verifying on all records as they are has Δ = |C′_k| (one
    record may hold every survivor). Verifying on the records shrunk to ``length`` items
    for C′_k (irrelevant items deleted, then the hard cut of
    :func:`~dpcore.sequences.shrinking.shrink_records`) has Δ = min(C(length, k), |C′_k|):
    a shrunk record holds at most that many distinct k-sequences. The shrunk records are
    used (``bound`` = ``length``) when that at least halves Δ (:data:`PRUNE_GAIN`), since
    a record holding more than ``length`` of the survivors' items loses some of its
    supports; otherwise ``bound`` = 0, the records as they are. Public inputs only
    (|C′_k| is released by the pruning, ``length`` is lmax or a bound read from a noisy
    histogram).

    This is what undid the large-alphabet collapse at small ε: on the BIBLE shape
    (13,905 items, lmax 32) at ε = 0.1 level 1 kept its cap of 320 survivors, and
    verifying them with Δ = 320 gave noise of scale 14,222 records against θ·N̂ ≈ 3,600;
    with Δ = 32 (or the bound read for the survivors) it is ten times smaller.
    """
    n_kept, k, length = int(n_kept), int(k), int(length)
    if n_kept < 1 or k < 1 or length < k:
        raise ParameterError("verify_sensitivity needs ≥ 1 survivor, k ≥ 1 and length ≥ k")
    shrunk = min(math.comb(length, k), n_kept)
    if shrunk * PRUNE_GAIN <= n_kept:
        return shrunk, length
    return n_kept, 0


def wants_verify_histogram(n_kept: int, k: int, length: int, kept_items: int,
                           level_items: int, histogram_nano: int, lmax: int,
                           noisy_records: float, eta: float) -> bool:
    """Whether a pruned level buys a noisy histogram of the lengths of its records in the
    survivors' items, to verify on records shrunk to a shorter bound (public inputs only).

    Yes when all hold: k = 1 (from k = 2 on the pruning's own histogram,
    :func:`wants_length_histogram`, reads a bound for C_k's items, and on the generated
    shapes a second reading for the survivors bought a bound that did not lower Δ); the
    survivors' distinct items (``kept_items``) are at most half of
    the level's relevant items (``level_items``; the bound in force, ``length``, was read
    for those or is lmax), so records plausibly hold far fewer of them; the plausible
    bound max(k, ⌊length·kept_items/level_items⌋) (an estimate, not a bound) would lower
    the verification's Δ below :func:`verify_sensitivity`'s at ``length``; and the
    histogram's noise leaves the η-quantile readable:
    √(2·lmax)/ε_h ≤ ½·(1 − η)·N̂ (the noisy tail sums compared with (1 − η)·N̂ in
    :func:`pruning_length` err by at most about half of it). Every input is released or
    public (|C′_k| and its items come from the noisy pruning supports).
    """
    if k != 1 or histogram_nano < 1 or 2 * int(kept_items) > int(level_items) or length <= k:
        return False
    plausible = max(int(k), (int(length) * int(kept_items)) // int(level_items))
    if min(math.comb(plausible, k), int(n_kept)) >= verify_sensitivity(n_kept, k, length)[0]:
        return False
    noise = math.sqrt(2.0 * lmax) / nano_to_epsilon(histogram_nano)
    return noise <= 0.5 * (1.0 - float(eta)) * max(float(noisy_records), 1.0)
