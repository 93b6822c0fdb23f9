"""PFS2 run results: what a run releases, plus owner-only diagnostics kept apart.

Everything in :class:`SequenceRunResult` except ``diagnostics`` is a DP release or public
metadata: the frequent sequences and their noisy supports, the noisy record count N̂ and
length histogram, lmax and L_f, each level's candidate counts and thresholds (computed
from DP outputs and public parameters only), the parameters and the mechanism calls. In
faithful mode some of these are NOT ε-DP; ``not_dp`` says which steps.

``diagnostics`` is computed from the true data and is NOT private: the true record count,
the true supports of the released sequences, the true sample sizes, what shrinking did,
timings. It is serialised only when asked for, and is for owners only.

JSON shape (``to_json()``)::

    {"run_id": ..., "dataset": ..., "algorithm": "pfs2", "mode": ..., "params": {...},
     "version": ..., "created_at": ..., "epsilon_nano": charged, "spent_nano": ...,
     "unspent_nano": ..., "patterns": [{"items": [3, 0], "names": ["local", "frontpage"],
     "noisy_support": 2531.0, "length": 2}, ...],
     "levels": [{"length": 1, "candidates": 17, ...}, ...], "noisy_records": ...,
     "noisy_length_histogram": [...], "l1": 8, "l2": ..., "lmax": ...,
     "max_frequent_length": ..., "length_probes": [{"length": 5, "frequent": true,
     "noisy_records_at_least": 812.0}, ...] (strict: one entry per length 1..lmax, the noisy
     number of records at least that long; faithful: the paper's decisions, no count),
     "mechanism_calls": [{"mechanism": ..., "label": ..., "epsilon_nano": ...,
     "sensitivity": ..., "parallel": ...}, ...], "part_calls": [...], "not_dp": [...],
     "seed": null, "neighbouring": ..., "audience": "everyone"}
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from dpcore.family import Release
from dpcore.privacy.policy import EVERYONE, NEIGHBOURING_RELATION

__all__ = ["FrequentSequence", "LevelRecord", "SequenceDiagnostics", "SequenceRunResult",
           "pattern_key"]


def pattern_key(items) -> str:
    """A sequence of item codes as a JSON object key: ``"3 0 0"``."""
    return " ".join(str(int(x)) for x in items)


@dataclass(frozen=True)
class FrequentSequence:
    """A released frequent sequence.

    Attributes
    ----------
    items : tuple of int
        Item codes (into the schema's alphabet), in order.
    names : tuple of str
        The same items by name.
    noisy_support : float
        Its noisy support on all records (records; integer-valued in strict mode).
    length : int
        Number of items.
    support_low, support_high : float or None
        Its 90 % interval of the true support (records), adjusted for the selection at the
        threshold (:mod:`dpcore.sequences.intervals`; post-processing, 0 ε). None in
        results stored before intervals existed.
    flags : tuple of str
        Why this release may be noise (:mod:`dpcore.sequences.intervals`); empty if none.
    """

    items: tuple[int, ...]
    names: tuple[str, ...]
    noisy_support: float
    length: int
    support_low: float | None = None
    support_high: float | None = None
    flags: tuple[str, ...] = ()

    def text(self, separator: str = " → ") -> str:
        return separator.join(self.names)


@dataclass(frozen=True)
class LevelRecord:
    """What one level k released or derived from DP outputs (all public).

    Attributes
    ----------
    length : int
        k.
    candidates : int
        |C_k|.
    prune_sensitivity : int
        Δ_k of the noisy pruning supports: strict, min(C(lmax, k), |C_k|) on all records;
        faithful, C(lmax, k) on the level's sample. 0: the level did not prune (the
        baseline, or a strict level where pruning could not pay).
    prune_scale : float
        Noise scale of the pruning supports (records; 0 without pruning).
    relaxed_threshold : float or None
        θ′ (records; on the sample in faithful mode; None without pruning).
    kept_after_pruning : int
        |C′_k|, the candidates whose noisy local support reached θ′.
    verify_sensitivity : int
        Δ of the noisy supports on all records (= |C′_k|; 0 if nothing was left).
    verify_epsilon_nano : int
        ε′ of the level's verification (nano-ε; 0 if nothing was left).
    verify_threshold : float or None
        θ·N̂ (records); None in faithful mode, whose threshold uses the true count.
    frequent : int
        |FS_k| (released).
    capped : int
        Strict PFS2: sequences passing the pruning or verification threshold but dropped
        by the level's cap M_k = ⌈C(lmax, k)/θ⌉ (those of smallest noisy value; 0 when the
        cap did not bind). Post-processing of noisy values, so public.
    note : str
        Why the run stopped at this level, if it did for a public reason (strict PFS2:
        the noise would drown θ·N̂, or the level budget ran out); empty otherwise.
    prune_epsilon_nano : int
        ε of the level's pruning call (nano-ε; 0 without pruning; faithful runs, whose
        pruning share is charged once for all samples, also record 0 here).
    prune_length : int
        Strict PFS2: the length bound l_k the records were shrunk to for pruning (items;
        lmax unless this level or an earlier one read a bound from a noisy histogram of
        relevant lengths; 0 when the level did not prune).
    length_epsilon_nano : int
        ε of that histogram (nano-ε; 0 when the level did not draw one).
    relevant_length : int
        Strict PFS2: the bound read from that histogram, whether or not the level then
        pruned (items; later levels may reuse it; 0 when the level did not draw one).
    verify_length_epsilon_nano : int
        Strict PFS2: ε of the noisy histogram of the records' lengths in the survivors'
        items that a pruned level bought for its verification's bound (nano-ε; 0 if none;
        :func:`~dpcore.sequences.strategy.wants_verify_histogram`).
    verify_length : int
        Strict PFS2: the length bound (items) the records were shrunk to for the
        verification (Δ = min(C(bound, k), |C′_k|)); 0 when the verification read the
        records as they are (Δ = |C′_k|).
    """

    length: int
    candidates: int
    prune_sensitivity: int
    prune_scale: float
    relaxed_threshold: float | None
    kept_after_pruning: int
    verify_sensitivity: int
    verify_epsilon_nano: int
    verify_threshold: float | None
    frequent: int
    capped: int = 0
    note: str = ""
    prune_epsilon_nano: int = 0
    prune_length: int = 0
    length_epsilon_nano: int = 0
    relevant_length: int = 0
    verify_length_epsilon_nano: int = 0
    verify_length: int = 0


@dataclass
class SequenceDiagnostics:
    """NOT differentially private: computed from the true data. Owners only.

    Attributes
    ----------
    true_records : int
        |D|.
    true_supports : dict of str → int
        True support of every released sequence, keyed by :func:`pattern_key`.
    sample_sizes : list of int
        True size of each sample database db_1..db_{L_f}.
    shrinking : list of dict
        Per level, :class:`dpcore.sequences.shrinking.ShrinkStats` as a dict.
    phase_seconds : dict of str → float
        Wall time per phase (reveals the data size).
    """

    true_records: int = 0
    true_supports: dict[str, int] = field(default_factory=dict)
    sample_sizes: list[int] = field(default_factory=list)
    shrinking: list[dict] = field(default_factory=list)
    phase_seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class SequenceRunResult(Release):
    """Everything one PFS2 (or baseline) run released, with its provenance.

    ``epsilon_nano`` is the run's charge (the plan's total); ``spent_nano`` what its
    mechanism calls spent, ``unspent_nano`` the rest (left by an early stop: no candidates
    left before level L_f). ``mechanism_calls`` are the
    calls charged to the run's accountant (they sum to ``spent_nano``); ``part_calls`` the
    calls each disjoint sample database made within the one ``prune`` charge (each part's
    calls sum to at most that charge). ``seed`` is set only for public demo data.
    """

    run_id: str
    dataset: str
    algorithm: str
    mode: str
    params: dict
    version: str
    created_at: str
    epsilon_nano: int
    spent_nano: int
    unspent_nano: int
    patterns: list[FrequentSequence]
    levels: list[LevelRecord]
    noisy_records: float
    noisy_length_histogram: list[float]
    l1: int
    l2: int
    lmax: int
    max_frequent_length: int
    length_probes: list[dict]
    mechanism_calls: list[dict]
    part_calls: list[dict] = field(default_factory=list)
    not_dp: list[str] = field(default_factory=list)
    seed: int | None = None
    diagnostics: SequenceDiagnostics = field(default_factory=SequenceDiagnostics)
    neighbouring: str = NEIGHBOURING_RELATION
    audience: str = EVERYONE
    #: charged / spent / returned nano-ε (:class:`~dpcore.privacy.accountant.RunBudget`),
    #: set by the executor (strict runs return ``unspent_nano``).
    budget: dict | None = None
    #: Sentences about released patterns that may be noise
    #: (:func:`dpcore.sequences.intervals.release_warnings`; 0 ε).
    warnings: list[str] = field(default_factory=list)

    @property
    def epsilon(self) -> float:
        return self.epsilon_nano / 10**9

    def supports(self) -> dict[tuple[int, ...], float]:
        """The released sequences as {item-code tuple: noisy support}."""
        return {p.items: p.noisy_support for p in self.patterns}

    def to_dict(self, include_diagnostics: bool = False) -> dict:
        """Plain dict; the (non-private) diagnostics only when asked for."""
        data = asdict(self)
        if not include_diagnostics:
            data.pop("diagnostics")
        return data

    def to_json(self, include_diagnostics: bool = False) -> str:
        return json.dumps(self.to_dict(include_diagnostics), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> SequenceRunResult:
        d = dict(data)
        d["patterns"] = [FrequentSequence(tuple(p["items"]), tuple(p["names"]),
                                          float(p["noisy_support"]), int(p["length"]),
                                          p.get("support_low"), p.get("support_high"),
                                          tuple(p.get("flags", ())))
                         for p in d["patterns"]]
        d["levels"] = [LevelRecord(**lv) for lv in d["levels"]]
        d["diagnostics"] = SequenceDiagnostics(**(d.get("diagnostics") or {}))
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> SequenceRunResult:
        return cls.from_dict(json.loads(text))
