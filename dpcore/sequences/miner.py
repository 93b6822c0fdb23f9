"""PFS2: differentially private frequent sequence mining by sampling-based candidate pruning
(Xu, Su, Cheng, Li & Xiong 2015), and the paper's straightforward baseline.

Privacy unit: one record; neighbours differ by one record added or removed (under
replace-one-record neighbours every ε doubles). Every noisy release below is charged to the
run's :class:`~dpcore.privacy.accountant.PrivacyAccountant` before its noise is drawn.

Strict mode (default) — ε-DP, step by step
------------------------------------------
1. **N̂** = |D| + discrete Laplace(1/ε1).
2. **Length histogram** α_i = #records of length i, i = 1..l1, + discrete Laplace(1/ε2)
   each (one record is in at most one cell: L1 sensitivity 1). l2 = the smallest i whose
   cumulative noisy share Σ_{j≤i} α̂_j / N̂ reaches η (l1 if none); lmax = min(l1, l2).
3. **L_f**, the longest length the levels may reach: a second noisy histogram h_y =
   #records of length y, y = 1..lmax (longer records in cell lmax), + discrete
   Laplace(1/ε3) each (sensitivity 1); L_f = the largest y whose noisy count of records
   of length ≥ y, Σ_{j≥y} ĥ_j, reaches θ·N̂ (at least 1). A record shorter than y holds no
   y-sequence, so this bounds the support of every y-sequence from above: L_f can only
   over-estimate the longest frequent length (the levels' stop rules end the run
   earlier). O(N) work, no search over the data (the paper's exact maximal supports
   β_y are computed only in faithful mode).
4. **Levels** k = 1..L_f, drawing from one pool ε4 + ε5: level k gets b_k from what
   levels 1..k−1 left, R_k (:func:`~dpcore.sequences.strategy.level_budget`: the ε giving
   its |C_k| candidates the noise scale τ·θ·N̂, τ = 0.07, within [R_k/(L_f − k + 1),
   R_k/2], all of R_k at level L_f), split ε4,k : ε5,k in the ratio ε4 : ε5:

   a. candidates C_k: the whole declared alphabet (k = 1) or the GSP join of FS_{k−1};
   a′. **concentration** (PFS2, k ≥ 2, :func:`~dpcore.sequences.strategy.concentrate_bound`,
      public and released inputs only): if verifying C_k at b_k would have noise scale
      above ρ·θ·N̂ (ρ = 0.2) and a bound b ≥ l/2 (l the carried bound) that lowers Δ
      gives scale ≤ ρ·θ·N̂ with all of R_k, the level verifies all of C_k on D shrunk to
      b (Δ = min(C(b, k), |C_k|)) with all of R_k, and is the last;
   b. **length bound** l_k = the carried bound (lmax, or the bound an earlier level read;
      relevant lengths only shrink from level to level, so reusing it costs nothing), or,
      where pruning would pay only with a shorter bound that the histogram can plausibly
      give (:func:`~dpcore.sequences.strategy.wants_length_histogram`,
      :func:`~dpcore.sequences.strategy.plausible_length`), the η-quantile of a noisy
      histogram of the records' relevant lengths (items occurring in C_k; Δ = 1, a tenth
      of ε4,k), at least k and at most the carried bound;
   c. **plan** (:func:`~dpcore.sequences.strategy.plan_level`, public and released inputs
      only): prune when φ_k = Δ_k/ε4,k ≤ ½·s_k, s_k = |C_k|/(ε4,k + ε5,k), θ′ > 0 and
      s_k·ln(|C_k|/2) ≥ θ·N̂, with Δ_k = min(C(l_k, k), |C_k|); a level that does not
      prune verifies all of C_k with b_k (as the baseline); a level whose noise scale
      would be ≥ θ·N̂ and whose expected false releases would reach M_k stops the run;
   d. **pruning** on all records, each shrunk to at most l_k items (a local
      transformation from the record, C_k and l_k; hard truncation guarantees |S̃| ≤
      l_k): noisy supports + discrete Laplace(Δ_k/ε4,k); keep the candidates reaching
      θ′ = θ·N̂ + φ_k·ln(2ζ) (:func:`~dpcore.sequences.relaxation.laplace_pruning_threshold`),
      at most M_k = ⌈C(lmax, k)/θ⌉ of them (largest noisy values);
   e. **verification** on all of D: supports of the kept C′_k + discrete Laplace(Δ_v/ε_v),
      on D as it is (Δ_v = |C′_k|) or on D shrunk for C′_k to a bound b (Δ_v =
      min(C(b, k), |C′_k|); at level 1 b may be read from a noisy histogram of the
      records' survivor items; :func:`_plan_verification`), ε_v the part of ε5,k giving
      scale τ·θ·N̂ (:func:`~dpcore.sequences.strategy.verify_budget`; the rest stays in
      the pool); FS_k = those reaching θ·N̂, at most M_k.

   Candidates come from earlier DP outputs and the public alphabet (post-processing). Total
   at most ε1 + ε2 + ε3 + ε4 + ε5 = ε; every call's ε and Δ are in ``mechanism_calls`` and
   the rest is reported unspent. The straightforward baseline skips the plan and the
   pruning and verifies every candidate with b_k from the same pool rule. Strict mode departs
   from the paper's sample databases here (docs/ALGORITHMS.md §10; the privacy argument in
   docs/PRIVACY.md §6.7).

Faithful mode — the paper as written, NOT ε-DP
----------------------------------------------
For reproducing the paper on owner or public demo data only. It differs where the paper's
text is not DP (each listed in the result's ``not_dp``): all lmax noisy maxima β̂_1..β̂_lmax
are released at scale ⌈log2 lmax⌉/ε3 each (L1 sensitivity up to lmax); the records are
shuffled and cut into L_f equal blocks (one insertion shifts a record across every block
boundary, so every level's pruning sees a changed sample); the verification threshold is θ
times the true |D|; rebuilt records are not truncated (Algorithm 2 can leave lmax + k − 1
items, beyond the Δ_k bound); the level-1 candidates are the items found in the data; the
pruning and verification noise is continuous (float) Laplace. The plan charges the nominal
ε, which does not bound what a faithful run reveals.

Performance: the kernels are serial numba; a strict run costs one pass over the record
lengths for L_f and a few passes over the records per level, each level's candidates
bounded by public values (|alphabet| at level 1, then at most M_{k−1}² by the cap).
Faithful mode keeps the paper's exact maximal supports β_y (branch-and-bound searches
whose time grows with the number of sequences at least as frequent as the threshold).
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from dpcore import __version__
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.errors import DataError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.mechanisms import discrete_laplace, laplace
from dpcore.privacy.randomness import secure_generator
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import STRICT
from dpcore.sequences.candidates import (
    build_candidate_trie,
    generate_candidates,
    one_item_candidates,
)
from dpcore.sequences.counting import WholeCounts, record_counts
from dpcore.sequences.intervals import with_intervals
from dpcore.sequences.kernels import (
    build_occurrence_runs,
    max_supports_by_length,
    prefix_search,
)
from dpcore.sequences.params import (
    LENGTHS,
    MAX_LENGTH,
    PFS2,
    PRUNE,
    RECORDS,
    VERIFY,
    SequenceMiningParams,
    mechanism_shares,
    plan_budget,
    probe_count,
)
from dpcore.sequences.relaxation import relaxed_threshold
from dpcore.sequences.results import (
    FrequentSequence,
    LevelRecord,
    SequenceDiagnostics,
    SequenceRunResult,
    pattern_key,
)
from dpcore.sequences.shrinking import candidate_supports, relevant_items, shrink_records
from dpcore.sequences.strategy import (
    CONCENTRATED,
    LENGTH_SHARE,
    NO_BUDGET_STOP,
    NOISY_STOP,
    VERIFY_LENGTH_SHARE,
    concentrate_bound,
    keep_largest,
    level_budget,
    noise_bound,
    plan_level,
    plausible_length,
    pruning_length,
    release_cap,
    split_level_budget,
    too_noisy,
    verify_budget,
    verify_sensitivity,
    wants_length_histogram,
    wants_verify_histogram,
)

__all__ = ["mine_frequent_sequences", "check_runnable", "resolve_l1", "estimate_lmax",
           "length_counts", "frequent_length_bound", "frequent_length_exists",
           "LengthDecider", "partition_records", "NOT_DP_STEPS"]

#: A level with more candidates than this is not mined (the run stops, its budget
#: unspent): a guard on memory, decided from DP outputs only (strict PFS2's cap M_k keeps
#: its candidates far below; the baseline and faithful mode can reach it).
MAX_CANDIDATES = 5_000_000

#: Why faithful mode is not ε-DP, one sentence per step (the result's ``not_dp``).
NOT_DP_STEPS = {
    "max_length": "L_f: all lmax noisy maximal supports are drawn at scale ⌈log2 lmax⌉/ε3 "
                  "each; their L1 sensitivity is up to lmax, so this step can cost "
                  "lmax·ε3/⌈log2 lmax⌉ rather than ε3",
    "partition": "sample databases: records are shuffled and cut into L_f equal blocks; one "
                 "added record shifts a record across every block boundary, so each level's "
                 "pruning sees a changed sample (up to 2·ε4 per level, summed over levels)",
    "threshold": "verification: the threshold θ·|D| uses the true number of records",
    "shrinking": "shrinking: rebuilt records are not truncated and can hold lmax + k − 1 "
                 "items, more than the C(lmax, k) candidates the pruning noise covers",
    "alphabet": "level 1: the candidates are the items found in the data, which reveals "
                "rare items",
    "noise": "pruning and verification add continuous (float) Laplace noise, open to "
             "floating-point attacks",
}


def resolve_l1(data: SequenceDataset, params: SequenceMiningParams) -> int:
    """The run's l1: the parameter if given, else the schema's declared l1 (public)."""
    return int(params.l1 if params.l1 is not None else data.schema.l1)


def check_runnable(data: SequenceDataset, params: SequenceMiningParams) -> None:
    """Check everything a run needs before its charge, so nothing fails after it.

    Raises
    ------
    ParameterError
        Bad parameters, or a budget plan that cannot be split.
    DataError
        Not a sequence dataset, or one without records.
    """
    params.validate()
    plan_budget(params)
    if not isinstance(data, SequenceDataset):
        raise DataError(f"PFS2 mines sequence datasets; got {type(data).__name__}")
    if data.n_records == 0:
        raise DataError("the dataset has no records")
    data.schema.validate()
    mechanism_shares(params, resolve_l1(data, params), resolve_l1(data, params))


def estimate_lmax(noisy_histogram: np.ndarray, noisy_records: float, eta: float, l1: int
                  ) -> tuple[int, int]:
    """(l2, lmax) from the noisy length histogram α̂_1..α̂_l1 (post-processing).

    l2 is the smallest i with Σ_{j≤i} α̂_j / N̂ ≥ η (l1 if no i ≤ l1 reaches it), with N̂
    taken as at least 1; lmax = min(l1, l2).
    """
    cumulative = np.cumsum(np.asarray(noisy_histogram, dtype=np.float64)) / max(
        float(noisy_records), 1.0)
    reached = np.flatnonzero(cumulative >= eta)
    l2 = int(reached[0]) + 1 if reached.size else int(l1)
    return l2, min(int(l1), l2)


def length_counts(lengths: np.ndarray, lmax: int) -> np.ndarray:
    """Records of each length 1..lmax, records longer than lmax counted in cell lmax (private).

    One pass over the record lengths (O(N), no search): the work and time do not depend on
    what the records contain. One record added or removed changes one cell by 1 (L1
    sensitivity 1; an empty record is in no cell).
    """
    lmax = int(lmax)
    if lmax < 1:
        raise ValueError(f"lmax must be ≥ 1; got {lmax}")
    capped = np.minimum(np.asarray(lengths, dtype=np.int64), lmax)
    return np.bincount(capped, minlength=lmax + 1)[1:lmax + 1].astype(np.int64)


def frequent_length_bound(noisy_counts: np.ndarray, support_threshold: float
                          ) -> tuple[int, np.ndarray]:
    """Strict L_f from the noisy length counts (post-processing of a DP release).

    ``at_least[y − 1]`` = Σ_{j ≥ y} noisy_counts[j − 1] estimates the number of records of
    length ≥ y (records longer than lmax are in the last cell). A record shorter than y
    contains no y-sequence, so that number bounds the support of every y-sequence from
    above. L_f is the largest y whose estimate reaches ``support_threshold`` (θ·N̂), at
    least 1: an over-estimate of the longest frequent length, never a search.

    Returns
    -------
    (int, numpy.ndarray)
        L_f, and the noisy counts of records of length ≥ y for y = 1..lmax.
    """
    counts = np.asarray(noisy_counts, dtype=np.float64)
    at_least = np.cumsum(counts[::-1])[::-1]
    reached = np.flatnonzero(at_least >= float(support_threshold))
    return (int(reached[-1]) + 1 if reached.size else 1), at_least


def frequent_length_exists(data: SequenceDataset, runs, length: int, threshold: float) -> bool:
    """Exactly whether some ``length``-sequence has support ≥ ``threshold`` (private).

    Equivalent to β_length ≥ threshold, with β_y the largest support of a y-sequence, but
    decided by a depth-first search that stops at the first such sequence.
    """
    if threshold <= 0:
        return True
    max_len = int(data.lengths.max()) if data.n_records else 0
    if max_len < length:
        return False
    min_support = math.ceil(threshold)
    if min_support <= 1:
        return True
    found, _, _, _ = prefix_search(data.indptr, *runs, data.schema.n_items, int(min_support),
                                   int(length), int(length))
    return bool(found)


class LengthDecider:
    """Exact answers to "is β_y ≥ threshold?" for thresholds ≥ ``floor`` (private).

    β_y is the largest support of any y-sequence. A question is answered by a depth-first
    search that stops at the first y-sequence of that support (cheap when the answer is
    yes); after the first "no" (which had to search every frequent prefix) — or at once
    with ``precompute`` — every β_y ≥ ``floor``, y ≤ lmax, is computed by branch and bound
    and answers all further questions.
    """

    def __init__(self, data: SequenceDataset, runs, lmax: int, floor: float):
        self.data, self.runs, self.lmax, self.floor = data, runs, int(lmax), float(floor)
        self.beta = None

    def precompute(self) -> None:
        if self.beta is None and self.floor >= 2:  # below: the searches are cheaper
            self.beta = max_supports_by_length(
                self.data.indptr, *self.runs, self.data.schema.n_items,
                int(math.ceil(self.floor)), self.lmax)

    def __call__(self, length: int, threshold: float) -> bool:
        if self.beta is not None and threshold >= self.floor:
            return bool(self.beta[length] >= threshold)  # β below the floor is stored as 0
        hit = frequent_length_exists(self.data, self.runs, length, threshold)
        if not hit:
            self.precompute()
        return hit


def partition_records(n_records: int, parts: int, rng: np.random.Generator, *,
                      strict: bool = True) -> np.ndarray:
    """The sample database (0..parts−1) of every record.

    Strict: each record independently and uniformly at random (data-independent per
    record, so one record added or removed changes exactly one part). Faithful: a random
    permutation cut into ``parts`` equal blocks, as the paper — NOT parallel-composable.
    """
    if strict:
        return rng.integers(0, parts, size=n_records).astype(np.int64)
    order = rng.permutation(n_records)
    part = np.empty(n_records, dtype=np.int64)
    part[order] = (np.arange(n_records, dtype=np.int64) * parts) // max(n_records, 1)
    return part


class _Run:
    """One run's state: the accountant, the shares and the records of what was released."""

    def __init__(self, data, params, rng, accountant, progress, counts):
        self.data, self.params, self.rng = data, params, rng
        #: where every count over the records comes from (whole, or summed per partition)
        self.counts = counts
        self.accountant, self.progress_cb = accountant, progress
        self.strict = params.mode == STRICT
        self.timers: dict[str, float] = {}
        self.part_calls: list[dict] = []

    def timed(self, name: str, started: float) -> None:
        self.timers[name] = self.timers.get(name, 0.0) + time.perf_counter() - started

    def progress(self, fraction: float, message: str) -> None:
        if self.progress_cb is not None:
            self.progress_cb(min(max(float(fraction), 0.0), 1.0), message)

    def counts_noise(self, counts, *, sensitivity: int, epsilon_nano: int, label: str,
                     accountant=None, continuous: bool = False) -> np.ndarray:
        acc = self.accountant if accountant is None else accountant
        if continuous:
            return laplace(counts, sensitivity=sensitivity, epsilon_nano=epsilon_nano,
                           rng=self.rng, accountant=acc, label=label)
        return discrete_laplace(counts, sensitivity=sensitivity, epsilon_nano=epsilon_nano,
                                rng=self.rng, accountant=acc, label=label).astype(np.float64)


def _pre_mining(run: _Run, data: SequenceDataset, params: SequenceMiningParams, plan: dict,
                l1: int):
    """N̂ (ε1) and the noisy length histogram (ε2), and lmax read from it:
    ``(n_hat, noisy_hist, l2, lmax)``."""
    run.progress(0.0, "noisy number of records and length histogram")
    n_hat = float(run.counts_noise(np.array([data.n_records]), sensitivity=1,
                                   epsilon_nano=plan[RECORDS],
                                   label="N̂: number of records")[0])
    hist = run.counts.length_histogram(l1 + 1)[1:]
    noisy_hist = run.counts_noise(hist, sensitivity=1, epsilon_nano=plan[LENGTHS],
                                  label=f"α̂: records of each length 1..{l1}")
    l2, lmax = estimate_lmax(noisy_hist, n_hat, params.eta, l1)
    return n_hat, noisy_hist, l2, lmax


def _longest_frequent_length(run: _Run, data: SequenceDataset, runs, lmax: int,
                             target: float, epsilon_nano: int) -> tuple[int, list[dict]]:
    """L_f and the record of each length probed (ε3): strict, the upper bound read from one
    noisy histogram of record lengths; faithful, the paper's search for β_y (NOT ε3-DP)."""
    probes: list[dict] = []
    if run.strict:
        counts = run.counts.length_counts(lmax)
        noisy_counts = run.counts_noise(
            counts, sensitivity=1, epsilon_nano=epsilon_nano,
            label=f"L_f: records of each length 1..{lmax} (longer ones in cell {lmax})")
        l_f, at_least = frequent_length_bound(noisy_counts, target)
        probes = [{"length": y, "noisy_records_at_least": float(at_least[y - 1]),
                   "frequent": bool(y <= l_f)} for y in range(1, lmax + 1)]
        return l_f, probes
    q = probe_count(lmax)
    z = run.counts_noise(np.zeros(lmax, dtype=np.int64), sensitivity=q,
                         epsilon_nano=epsilon_nano,
                         label=f"β̂_1..β̂_{lmax}: noisy maximal supports at scale "
                               f"{q}/ε3 each (paper; NOT ε3-DP)")
    decide = LengthDecider(data, runs, lmax, float(np.min(target - z)))
    decide.precompute()
    l_f = 1
    for y in range(1, lmax + 1):
        hit = decide(y, target - z[y - 1])
        probes.append({"length": y, "frequent": hit})
        if hit:
            l_f = y
    return l_f, probes


def _faithful_sample_databases(data: SequenceDataset, l_f: int, lmax: int, prune_nano: int,
                               rng, accountant: PrivacyAccountant) -> list[SequenceDataset]:
    """Faithful PFS2: the records cut into L_f sample databases, and the one pruning charge
    of ε4 for all of them (the paper's parallel composition, which does not hold here)."""
    assignment = partition_records(data.n_records, l_f, rng, strict=False)
    order = np.argsort(assignment, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(assignment, minlength=l_f))])
    parts = [data.subset(order[bounds[i]:bounds[i + 1]]) for i in range(l_f)]
    accountant.spend("laplace",
                     f"noisy local supports on {l_f} disjoint sample databases, one per "
                     "level (parallel composition; each part's call in part_calls)",
                     prune_nano, float(max(math.comb(lmax, k) for k in range(1, l_f + 1))),
                     parallel=l_f)
    return parts


def _faithful_prune(run: _Run, db: SequenceDataset, trie, k: int, lmax: int, prune_nano: int,
                    n_db: float, shrinking: list[dict]):
    """Faithful PFS2's pruning at level k on sample database k (float Laplace at Δ = C(lmax,
    k), relaxed threshold): ``(kept candidates, Δ_k, scale, θ′)``."""
    n_items = run.data.schema.n_items
    started = time.perf_counter()
    sh_indptr, sh_items, stats = shrink_records(db.indptr, db.items, n_items, trie,
                                                lmax, truncate=False)
    shrinking.append({"length": k, **stats.__dict__})
    run.timed("shrink", started)
    started = time.perf_counter()
    local = candidate_supports(sh_indptr, sh_items, n_items, trie)
    delta_k = math.comb(lmax, k)
    part_acc = PrivacyAccountant(prune_nano)
    noisy_local = run.counts_noise(
        local, sensitivity=delta_k, epsilon_nano=prune_nano, accountant=part_acc,
        continuous=True,
        label=f"level {k}: noisy local supports of {trie.n_cand} candidates on "
              f"sample database {k}")
    run.part_calls += [{"part": k, **c} for c in part_acc.to_records()]
    scale = delta_k / nano_to_epsilon(prune_nano)
    theta_prime = relaxed_threshold(float(run.params.theta), n_db, scale,
                                    float(run.params.zeta))
    kept = trie.cands[noisy_local >= theta_prime]
    run.timed("prune", started)
    return kept, delta_k, scale, theta_prime


def _strict_prune(run: _Run, data: SequenceDataset, trie, length: int, lp,
                  shrinking: list) -> np.ndarray:
    """Strict pruning: noisy supports of C_k on all records shrunk to ``length`` items
    (hard cut, checked), Δ = ``lp.sensitivity``, ε = ``lp.prune_nano``."""
    started, k = time.perf_counter(), trie.k
    # each record shrunk (hard cut, checked where it is counted) and counted: one pass
    local, stats = run.counts.shrunk_supports(trie, length)
    shrinking.append({"length": k, **stats.__dict__})
    run.timed("shrink", started)
    started = time.perf_counter()
    noisy = run.counts_noise(
        local, sensitivity=lp.sensitivity, epsilon_nano=lp.prune_nano,
        label=f"level {k}: noisy supports of {trie.n_cand} candidates on all "
              f"records shrunk to ≤ {length} items (pruning)")
    run.timed("prune", started)
    return noisy


def _plan_verification(run: _Run, data: SequenceDataset, kept: np.ndarray, k: int,
                       length: int, lmax: int, verify_nano: int, threshold: float,
                       levels_left: int, n_hat: float, level_items: int
                       ) -> tuple[int, int, int, int]:
    """How a pruned strict level verifies its survivors C′_k (``kept``):
    ``(ε nano, Δ, histogram ε nano, records' length bound or 0)``.

    Privacy: every choice reads public or released values (|C′_k| and its items come from
    the noisy pruning supports; ``length`` is lmax or a bound read from a noisy
    histogram). Where the survivors' items are few next to the level's relevant items
    (:func:`~dpcore.sequences.strategy.wants_verify_histogram`), a noisy histogram of the
    records' numbers of survivor items (one record in one cell: Δ = 1) is charged and
    drawn first, from the verification part, and its η-quantile (at most ``length``) is
    the bound the records are shrunk to. Otherwise they are shrunk to ``length`` when
    that at least halves Δ (:func:`~dpcore.sequences.strategy.verify_sensitivity`).
    Shrunk records give Δ = min(C(bound, k), |C′_k|); its ε is what gives scale
    τ·θ·N̂ at that Δ, at most what is left of the part (``verify_budget``).
    """
    n_kept, hist_nano = int(kept.shape[0]), 0
    mask = np.zeros(data.schema.n_items, dtype=np.bool_)
    mask[np.unique(kept)] = True
    length_nano = int(verify_nano * VERIFY_LENGTH_SHARE)
    if wants_verify_histogram(n_kept, k, length, int(mask.sum()), level_items, length_nano,
                              lmax, n_hat, run.params.eta):
        noisy = run.counts_noise(
            run.counts.relevant_lengths(mask, lmax), sensitivity=1,
            epsilon_nano=length_nano,
            label=f"level {k}: records holding 1..{lmax} items of the {n_kept} survivors "
                  f"(more in cell {lmax})")
        hist_nano, verify_nano = length_nano, verify_nano - length_nano
        bound = max(k, min(length, pruning_length(noisy, n_hat, run.params.eta)))
        delta = min(math.comb(bound, k), n_kept)   # paid for: always used
    else:
        delta, bound = verify_sensitivity(n_kept, k, length)
    share = verify_budget(verify_nano, delta, threshold, levels_left)
    return share, delta, hist_nano, bound


def _measure(run: _Run, data: SequenceDataset, runs, vtrie, share: int, delta: int,
             bound: int, *, continuous: bool) -> tuple[np.ndarray, np.ndarray]:
    """The verification: ``(true supports on all records, noisy released supports)``.

    ``bound`` = 0: noisy supports on the records as they are (Δ = |C′_k|). Otherwise on
    the records shrunk to ``bound`` items for the candidates (a function of one record
    and public values, hard-truncated: Δ = min(C(bound, k), |C′_k|) holds whatever the
    records are, and is checked). The true supports on all records are returned for the
    owner's diagnostics only.
    """
    k = vtrie.k
    if bound and delta < min(math.comb(bound, k), vtrie.n_cand):
        raise AssertionError("verification sensitivity below its bound")
    # shrunk (bound > 0): hard cut to the bound, checked where each block is counted
    support, measured = run.counts.supports(vtrie, bound)
    where = f"all records shrunk to ≤ {bound} items" if bound else "all records"
    noisy = run.counts_noise(measured, sensitivity=delta, epsilon_nano=share,
                             continuous=continuous,
                             label=f"level {k}: noisy supports of {vtrie.n_cand} candidates "
                                   f"on {where}")
    return support, noisy


@dataclass
class _Levels:
    """The level loop's state, carried from level to level: the strict pool, the relevant-
    length bound and its item weights, the released sequences and level records (public,
    from DP outputs), and the owner-only diagnostics (true supports, shrinking statistics).
    """

    run: _Run
    runs: tuple
    plan: dict
    lmax: int
    l_f: int
    n_hat: float
    #: verification threshold (records): θ·N̂ (strict), θ·|D| (faithful, NOT DP)
    threshold: float
    #: strict: the pool (nano-ε) left for the levels, each level's budget chosen from it
    remaining: int
    #: faithful: each level's verification share (nano-ε)
    verify_shares: list
    #: faithful PFS2: the L_f sample databases, and N̂/L_f (records per database)
    parts: list
    n_db: float
    #: the latest relevant-length bound read (items) and the summed released level-1
    #: supports of that level's relevant items: lmax and the declared alphabet (each item
    #: not released at level 1 counted at θ·N̂) until a level reads one
    ref_length: int
    ref_weight: float
    item_support: np.ndarray
    previous: list | None = None
    patterns: list = field(default_factory=list)
    levels: list = field(default_factory=list)
    true_supports: dict = field(default_factory=dict)
    shrinking: list = field(default_factory=list)

    def record(self, step: _Step, kept: int, v_delta: int, v_nano: int, frequent: int,
               note: str = "", *, verify_length: bool = True) -> None:
        """Append level ``step``'s record (``verify_length``: with its verification plan's
        histogram ε and length bound)."""
        vplan = step.vplan[2:] if verify_length and step.vplan is not None else (0, 0)
        self.levels.append(LevelRecord(
            step.k, step.trie.n_cand, step.delta_k, step.scale, step.theta_prime, kept,
            v_delta, v_nano, self.threshold if self.run.strict else None, frequent,
            step.capped, note, step.prune_spent, step.prune_length, step.length_spent,
            step.read_length, *vplan))


@dataclass
class _Step:
    """What one level k has chosen and spent so far (public: from DP outputs and public
    values); :meth:`_Levels.record` turns it into the level's :class:`LevelRecord`."""

    k: int
    trie: object
    #: the verification's ε (nano-ε)
    share: int | None
    #: strict PFS2: the level's cap M_k
    cap: int | None
    #: |FS_{k−1}| (None at level 1)
    released_before: int | None
    delta_k: int = 0
    scale: float = 0.0
    theta_prime: float | None = None
    capped: int = 0
    prune_spent: int = 0
    prune_length: int = 0
    length_spent: int = 0
    read_length: int = 0
    #: the verification plan ``(ε nano, Δ, histogram ε nano, length bound or 0)``
    vplan: tuple | None = None
    #: strict PFS2: the level took the rest of the pool and is the last
    last: bool = False


def _relevant_length(lv: _Levels, step: _Step, prune_part: int, verify_part: int
                     ) -> tuple[int, np.ndarray, int]:
    """Strict PFS2: the level's relevant-length bound l_k (items), the mask of C_k's items
    and what is left of the pruning part (nano-ε): the carried bound, or one read from a
    noisy histogram of the records' relevant lengths (sensitivity 1) where
    :func:`~dpcore.sequences.strategy.wants_length_histogram` says it may pay. Every
    choice reads public or released values only (strategy module, PRIVACY.md)."""
    run, data, k, trie = lv.run, lv.run.data, step.k, step.trie
    # relevant lengths only shrink from level to level (C_k's items are items of
    # FS_{k−1}), so an earlier level's bound is reused free (hard truncation)
    level_length = max(k, lv.ref_length)   # a record with a k-candidate holds ≥ k
    length_nano = int(prune_part * LENGTH_SHARE)
    mask = relevant_items(trie, data.schema.n_items)
    weight = float(lv.item_support[mask].sum())
    best = plausible_length(level_length, weight, lv.ref_weight, k) if k > 1 else k
    if wants_length_histogram(trie.n_cand, k, lv.lmax, prune_part, verify_part,
                              lv.threshold, float(run.params.zeta), length_nano, lv.n_hat,
                              run.params.eta, carried=level_length, plausible=best):
        # pruning pays only with a shorter bound than the carried one, and the
        # histogram may plausibly give it: read it from a noisy histogram of the
        # records' relevant lengths (sensitivity 1)
        relevant = run.counts.relevant_lengths(mask, lv.lmax)
        noisy_relevant = run.counts_noise(
            relevant, sensitivity=1, epsilon_nano=length_nano,
            label=f"level {k}: records holding 1..{lv.lmax} items of the candidates "
                  f"(more in cell {lv.lmax})")
        step.length_spent, prune_part = length_nano, prune_part - length_nano
        lv.remaining -= step.length_spent
        level_length = max(k, min(level_length,
                                  pruning_length(noisy_relevant, lv.n_hat, run.params.eta)))
        step.read_length = level_length
        lv.ref_length, lv.ref_weight = level_length, weight
    return level_length, mask, prune_part


def _strict_pfs2_choice(lv: _Levels, step: _Step, level_nano: int) -> np.ndarray | None:
    """Strict PFS2's level plan, and its pruning if the plan prunes: the candidates to
    verify, or None if the level stops the run (its record appended)."""
    run, k, trie = lv.run, step.k, step.trie
    # the level's choice: public inputs only (strategy module, PRIVACY.md)
    prune_part, verify_part = split_level_budget(level_nano, lv.plan[PRUNE], lv.plan[VERIFY])
    level_length, mask, prune_part = _relevant_length(lv, step, prune_part, verify_part)
    lp = plan_level(trie.n_cand, k, level_length, prune_part, verify_part, lv.threshold,
                    float(run.params.zeta))
    step.share = lp.verify_nano
    if not lp.prune and lv.ref_length < lv.lmax:
        # a bound read for these items' records (relevant lengths only shrink): reuse
        delta_v, bound_v = verify_sensitivity(trie.n_cand, k, level_length)
        # too noisy at that Δ: a shorter public bound chosen by the noise (PRIVACY.md
        # §6.7, "A bound chosen by the noise"); Δ = min(C(b, k), |C_k|) is checked in _measure
        shorter = noise_bound(trie.n_cand, k, level_length, delta_v, step.share,
                              lv.threshold)
        if shorter is not None:
            delta_v, bound_v = min(math.comb(shorter, k), trie.n_cand), shorter
        step.vplan = (step.share, delta_v, 0, bound_v)
    if not lp.prune:
        v_delta = trie.n_cand if step.vplan is None else step.vplan[1]
        if too_noisy(v_delta / nano_to_epsilon(step.share), trie.n_cand, lv.threshold,
                     step.cap, previous=step.released_before):
            lv.record(step, 0, 0, 0, 0, NOISY_STOP, verify_length=False)
            return None
        return trie.cands
    step.prune_length = level_length
    noisy_local = _strict_prune(run, run.data, trie, step.prune_length, lp, lv.shrinking)
    started = time.perf_counter()
    step.delta_k, step.scale, step.theta_prime = lp.sensitivity, lp.scale, lp.threshold
    step.prune_spent = lp.prune_nano
    lv.remaining -= step.prune_spent
    passed = np.flatnonzero(noisy_local >= step.theta_prime)
    kept_idx = keep_largest(passed, noisy_local, step.cap)
    step.capped += int(passed.size - kept_idx.size)
    kept = trie.cands[kept_idx]
    run.timed("prune", started)
    if kept_idx.size:
        step.vplan = _plan_verification(run, run.data, kept, k, level_length, lv.lmax,
                                        lp.verify_nano, lv.threshold, lv.l_f - k + 1,
                                        lv.n_hat, int(mask.sum()))
        step.share, lv.remaining = step.vplan[0], lv.remaining - step.vplan[2]
        if too_noisy(step.vplan[1] / nano_to_epsilon(step.share), int(kept_idx.size),
                     lv.threshold, step.cap, previous=step.released_before):
            lv.record(step, int(kept_idx.size), 0, 0, 0, NOISY_STOP)
            return None
    return kept


def _concentrate(lv: _Levels, step: _Step, level_nano: int) -> np.ndarray | None:
    """Strict PFS2 at level k ≥ 2: where :func:`~dpcore.sequences.strategy.concentrate_bound`
    says so, the level takes the whole rest of the pool, verifies all of C_k on the records
    shrunk to the bound it gives and is the last; the candidates, None if the level proceeds
    under the pool rule, or an empty array if it stopped as too noisy (its record appended).

    Privacy: the choice reads public and released values only (|C_k|, the carried bound,
    the pool left, θ·N̂); the budget is what the pool has left, so the levels still spend
    at most ε4 + ε5; the shrinking is a hard cut to a public bound, so
    Δ = min(C(b, k), |C_k|) holds on every dataset (checked in :func:`_measure`).
    """
    k, trie = step.k, step.trie
    bound = concentrate_bound(trie.n_cand, k, max(k, lv.ref_length), level_nano,
                              lv.remaining, lv.threshold)
    if bound is None:
        return None
    step.share, step.last = lv.remaining, True
    delta = min(math.comb(bound, k), trie.n_cand)
    step.vplan = (step.share, delta, 0, bound)
    if too_noisy(delta / nano_to_epsilon(step.share), trie.n_cand, lv.threshold, step.cap,
                 previous=step.released_before):
        lv.record(step, 0, 0, 0, 0, NOISY_STOP, verify_length=False)
        return trie.cands[:0]
    return trie.cands


def _verify_level(lv: _Levels, step: _Step, kept: np.ndarray) -> bool:
    """The verification of C′_k (``kept``) and the release of FS_k; whether to go on."""
    run, k, pfs2 = lv.run, step.k, lv.run.params.algorithm == PFS2
    schema = run.data.schema
    started = time.perf_counter()
    vtrie = build_candidate_trie(kept, k)
    if step.vplan is None:   # not a pruned strict level: all records as they are
        step.vplan = (step.share, vtrie.n_cand, 0, 0)
    vplan = step.vplan
    support, noisy = _measure(run, run.data, lv.runs, vtrie, step.share, vplan[1], vplan[3],
                              continuous=pfs2 and not run.strict)
    if run.strict:
        lv.remaining -= step.share
    frequent = np.flatnonzero(noisy >= lv.threshold)
    if step.cap is not None:
        capped_frequent = keep_largest(frequent, noisy, step.cap)
        step.capped += int(frequent.size - capped_frequent.size)
        frequent = capped_frequent
    for i in frequent:
        items = tuple(int(x) for x in vtrie.cands[i])
        lv.patterns.append(FrequentSequence(items, tuple(schema.alphabet[x] for x in items),
                                            float(noisy[i]), k))
        lv.true_supports[pattern_key(items)] = int(support[i])
    lv.record(step, vtrie.n_cand, vplan[1], step.share, int(frequent.size),
              CONCENTRATED if step.last else "")
    lv.previous = [tuple(int(x) for x in vtrie.cands[i]) for i in frequent]
    if k == 1:
        lv.item_support[:] = lv.threshold
        lv.item_support[vtrie.cands[frequent, 0]] = noisy[frequent]
        lv.ref_weight = float(lv.item_support.sum())
    if vplan[2]:   # a bound read for the survivors: FS_k ⊆ C′_k bounds later levels too
        lv.ref_length = vplan[3]
        lv.ref_weight = float(lv.item_support[np.unique(vtrie.cands[frequent])].sum())
    run.timed("verify", started)
    return bool(lv.previous) and not step.last


def _mine_level(lv: _Levels, k: int) -> bool:
    """Level k: candidates, (strict) the level's budget and plan, pruning, verification.
    Returns whether the next level is mined."""
    run, data = lv.run, lv.run.data
    strict, pfs2 = run.strict, run.params.algorithm == PFS2
    started = time.perf_counter()
    if k == 1:
        codes = range(data.schema.n_items) if strict else np.unique(data.items)
        cands = one_item_candidates(codes)
    else:
        cands = generate_candidates(lv.previous, k)
    run.timed("candidates", started)
    if cands.shape[0] == 0 or cands.shape[0] > MAX_CANDIDATES:
        return False
    trie = build_candidate_trie(cands, k)
    step = _Step(k, trie, share=None if strict else lv.verify_shares[k - 1],
                 cap=release_cap(lv.lmax, k, float(run.params.theta)) if pfs2 and strict
                 else None,
                 released_before=None if lv.previous is None else len(lv.previous))
    if strict:
        # the level's budget: public and released values only (strategy module, PRIVACY.md)
        level_nano = level_budget(lv.remaining, lv.l_f - k + 1, trie.n_cand, lv.threshold)
        step.share = level_nano
        if level_nano < 2:
            lv.record(step, 0, 0, 0, 0, NO_BUDGET_STOP)
            return False
    if pfs2 and strict:
        kept = _concentrate(lv, step, level_nano)
        if kept is not None and kept.shape[0] == 0:
            return False
        if kept is None:
            kept = _strict_pfs2_choice(lv, step, level_nano)
        if kept is None:
            return False
    elif pfs2:
        kept, step.delta_k, step.scale, step.theta_prime = _faithful_prune(
            run, lv.parts[k - 1], trie, k, lv.lmax, lv.plan[PRUNE], lv.n_db, lv.shrinking)
    else:
        kept = trie.cands
    if kept.shape[0] == 0:
        lv.record(step, 0, 0, 0, 0)
        return False
    return _verify_level(lv, step, kept)


def _result(lv: _Levels, params: SequenceMiningParams, total: int, n_calls_before: int,
            spent_before: int, *, n_hat: float, noisy_hist, l1: int, l2: int,
            probes: list[dict], run_id: str | None, seed: int | None) -> SequenceRunResult:
    """The run's result: the released sequences, every mechanism call of this run, what is
    not DP (faithful mode) and, apart, the owner-only diagnostics."""
    run, data, accountant = lv.run, lv.run.data, lv.run.accountant
    calls = accountant.to_records()[n_calls_before:]
    spent = accountant.spent_nano - spent_before
    not_dp = []
    if not run.strict:
        keys = ["max_length", "threshold", "alphabet"] + (
            ["partition", "shrinking", "noise"] if params.algorithm == PFS2 else [])
        not_dp = [NOT_DP_STEPS[key] for key in keys]
    return with_intervals(SequenceRunResult(
        run_id=run_id or uuid.uuid4().hex, dataset=data.schema.name,
        algorithm=params.algorithm, mode=params.mode, params=params.to_dict(),
        version=__version__, created_at=datetime.now(UTC).isoformat(), epsilon_nano=total,
        spent_nano=spent, unspent_nano=total - spent, patterns=lv.patterns, levels=lv.levels,
        noisy_records=n_hat, noisy_length_histogram=[float(x) for x in noisy_hist], l1=l1,
        l2=l2, lmax=lv.lmax, max_frequent_length=lv.l_f, length_probes=probes,
        mechanism_calls=calls, part_calls=run.part_calls, not_dp=not_dp, seed=seed,
        diagnostics=SequenceDiagnostics(
            true_records=data.n_records, true_supports=lv.true_supports,
            sample_sizes=[p.n_records for p in lv.parts], shrinking=lv.shrinking,
            phase_seconds=dict(run.timers))))


def mine_frequent_sequences(data: SequenceDataset, params: SequenceMiningParams, *,
                            rng: np.random.Generator | None = None,
                            accountant: PrivacyAccountant | None = None,
                            run_id: str | None = None, seed: int | None = None,
                            progress=None, count_backend=None) -> SequenceRunResult:
    """Mine the frequent sequences of ``data`` with PFS2 (or its baseline) under ε-DP.

    Parameters
    ----------
    data : SequenceDataset
        Private records; only DP releases leave this function (plus owner-only
        ``diagnostics``).
    params : SequenceMiningParams
        Validated here; :func:`~dpcore.sequences.params.plan_budget` is what gets spent.
    rng : numpy.random.Generator, optional
        Source of all randomness. Default: fresh ChaCha20 keyed from the OS (real releases).
        Pass a seeded generator only in tests and labelled demos, and give ``seed`` so the result
        records it.
    accountant : PrivacyAccountant, optional
        Caps the run's spending (normally at what the ledger charged). Default: one capped
        at the plan's total.
    run_id : str, optional
        Stored in the result (default: a fresh id).
    seed : int, optional
        Recorded in the result (public demo data only).
    progress : callable(fraction, message), optional
        Called between phases and levels.
    count_backend : DaskCounting, optional
        Where a strict run on data read from partitions counts them
        (:mod:`dpcore.sequences.counting`); default the one the data carry, else this
        process, one partition at a time.

    Returns
    -------
    SequenceRunResult
        The frequent sequences with noisy supports, every mechanism call, and (apart)
        diagnostics.
    """
    check_runnable(data, params)
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    total = sum(plan.values())
    if accountant is None:
        accountant = PrivacyAccountant(total)
    if rng is None:
        rng = secure_generator()   # no generator given: the private-data source
    n_calls_before, spent_before = len(accountant.calls), accountant.spent_nano
    # strict runs count per partition when the data were read from partitions (summed
    # before each noise draw: the same arrays as over the whole); faithful mode needs the
    # records whole (sample databases, maximal-support searches)
    counts = record_counts(data, count_backend, whole=params.mode != STRICT)
    run = _Run(data, params, rng, accountant, progress, counts)
    strict = run.strict
    l1 = resolve_l1(data, params)
    theta = float(params.theta)

    # ---- pre-mining: N̂ and the length histogram
    started = time.perf_counter()
    n_hat, noisy_hist, l2, lmax = _pre_mining(run, data, params, plan, l1)
    n_base = max(n_hat, 1.0)
    run.timed("pre_mining", started)

    # ---- L_f
    started = time.perf_counter()
    run.progress(0.05, f"longest frequent length (lmax = {lmax})")
    runs = None
    if isinstance(counts, WholeCounts):
        runs = build_occurrence_runs(data.indptr, data.items, data.schema.n_items)
        counts.runs = runs
    l_f, probes = _longest_frequent_length(run, data, runs, lmax, theta * n_base,
                                           plan[MAX_LENGTH])
    shares = mechanism_shares(params, lmax, l_f)
    run.timed("max_length", started)

    # ---- faithful: sample databases and the one pruning charge (parallel composition)
    started = time.perf_counter()
    parts: list[SequenceDataset] = []
    if params.algorithm == PFS2 and not strict:
        parts = _faithful_sample_databases(data, l_f, lmax, plan[PRUNE], rng, accountant)
    run.timed("partition", started)

    # ---- levels; strict: one pool for the levels, each level's budget chosen from
    # released values
    lv = _Levels(run, runs, plan, lmax, l_f, n_hat,
                 threshold=theta * n_base if strict else theta * data.n_records,
                 remaining=(plan.get(PRUNE, 0) + plan[VERIFY]) if strict else 0,
                 verify_shares=[s.epsilon_nano for s in shares if s.phase == VERIFY],
                 parts=parts, n_db=n_base / l_f, ref_length=lmax, ref_weight=0.0,
                 item_support=np.zeros(data.schema.n_items))
    for k in range(1, l_f + 1):
        run.progress(0.1 + 0.9 * (k - 1) / l_f, f"level {k}/{l_f}")
        if not _mine_level(lv, k):
            break
    run.progress(1.0, f"PFS2: {len(lv.patterns)} frequent sequences")
    return _result(lv, params, total, n_calls_before, spent_before, n_hat=n_hat,
                   noisy_hist=noisy_hist, l1=l1, l2=l2, probes=probes, run_id=run_id,
                   seed=seed)
