"""PFS2 parameters (Xu et al. 2015 defaults), their help texts, and the exact budget plan.

:func:`plan_budget` decides how a run's ε is divided among its phases; the ledger charges
its total before any noise is drawn. The level phases are split further at run time: in strict mode
each level draws its budget from the pool ε4 + ε5 by a rule on public and released values
(:func:`dpcore.sequences.strategy.level_budget`); in faithful mode :func:`mechanism_shares`
lists every call's share given lmax and L_f. What an early stop (no candidates left before
level L_f) leaves unspent is reported, never re-spent.
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
from dpcore.registry import (
    MODES,
    PFS2,
    PFS2_BASELINE,
    SEQUENCE_ALGORITHMS,
    SEQUENCES,
    STRICT,
)

__all__ = ["PFS2", "PFS2_BASELINE", "SEQUENCE_ALGORITHMS", "SEQUENCES", "HELP",
           "SequenceMiningParams", "BudgetSlot", "plan_budget", "mechanism_shares",
           "probe_count", "run_cost_nano", "RECORDS", "LENGTHS", "MAX_LENGTH",
           "PRUNE", "VERIFY"]

# The family and algorithm names (SEQUENCES, PFS2, PFS2_BASELINE, SEQUENCE_ALGORITHMS) live in
# dpcore.registry and are re-exported here.

#: Budget phases, in the order a run spends them.
RECORDS, LENGTHS, MAX_LENGTH, PRUNE, VERIFY = (
    "records", "lengths", "max_length", "prune", "verify")
#: The largest l1 (so lmax and L_f) a run can have; plans are checked against it.
_MAX_LEVELS = 1000

HELP = {
    "algorithm": "PFS2 prunes a level's candidates before paying for their noisy supports "
                 "where that is less noisy (strict: on all records, decided from public and "
                 "released values; faithful: on a disjoint sample, as the paper); the "
                 "straightforward approach pays for every candidate (teaching baseline).",
    "epsilon": "Total privacy budget ε the run spends (smaller = more private, noisier).",
    "mode": "strict (default): every step is ε-DP. faithful: the paper as written, which "
            "is NOT ε-DP at several steps (owner or public demo data only).",
    "theta": "θ: relative support threshold; a sequence is frequent when at least this "
             "share of the records contain it.",
    "zeta": "ζ: relaxation of the pruning threshold, the tolerated chance of pruning a "
            "sequence of support exactly θ on a sample (0.3 in the paper).",
    "eta": "η: lmax is the shortest length that at least this share of the records do "
           "not exceed (noisy histogram), capped at l1.",
    "l1": "l1: public upper bound on the record length kept in the samples (items); "
          "blank = the dataset's declared l1.",
    "budget_records": "Share of ε for the noisy number of records N̂ (ε1).",
    "budget_lengths": "Share of ε for the noisy histogram of record lengths (ε2).",
    "budget_max_length": "Share of ε for estimating the longest frequent length L_f (ε3): "
                         "strict, a noisy histogram of record lengths; faithful, the "
                         "paper's noisy maximal supports.",
    "budget_prune": "PFS2: share of ε for pruning the candidates (ε4). Strict: each level "
                    "gets its share of ε4 for pruning on all records, or adds it to its "
                    "verification when pruning cannot pay; faithful: every level uses all "
                    "of ε4 on its own disjoint sample. The rest (ε5) pays the noisy "
                    "supports on all records.",
}


@dataclass(frozen=True)
class SequenceMiningParams:
    """Parameters of one PFS2 run; ``validate()`` checks every range.

    Units: ε in ε; θ a share of the records; ζ, η probabilities; l1 in items; the budget
    shares are fractions of ε (the verification gets the rest).
    """

    algorithm: str = PFS2
    epsilon: float = 1.0
    mode: str = STRICT
    theta: float = 0.02
    zeta: float = 0.3
    eta: float = 0.85
    l1: int | None = None
    budget_records: float = 0.025
    budget_lengths: float = 0.025
    budget_max_length: float = 0.05
    budget_prune: float = 0.45

    def validate(self) -> SequenceMiningParams:
        """Return self if every parameter is in range, else raise ParameterError naming it."""
        if self.algorithm not in SEQUENCE_ALGORITHMS:
            raise ParameterError(f"algorithm must be one of {', '.join(SEQUENCE_ALGORITHMS)}; "
                                 f"got {self.algorithm!r}")
        if self.mode not in MODES:
            raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if not _number("epsilon (ε)", self.epsilon) > 0:
            raise ParameterError(f"epsilon (ε) must be > 0; got {self.epsilon!r}")
        if not 0.0 < _number("theta (θ)", self.theta) < 1.0:
            raise ParameterError(f"theta (θ) must lie in (0, 1); got {self.theta!r}")
        if not 0.0 < _number("zeta (ζ)", self.zeta) < 1.0:
            raise ParameterError(f"zeta (ζ) must lie in (0, 1); got {self.zeta!r}")
        if not 0.0 < _number("eta (η)", self.eta) <= 1.0:
            raise ParameterError(f"eta (η) must lie in (0, 1]; got {self.eta!r}")
        if self.l1 is not None and (isinstance(self.l1, bool) or not isinstance(self.l1, int)
                                    or not 1 <= self.l1 <= 1000):
            raise ParameterError(f"l1 must be an integer in [1, 1000] or blank; got {self.l1!r}")
        shares = [_number(name, getattr(self, name)) for name in
                  ("budget_records", "budget_lengths", "budget_max_length", "budget_prune")]
        if self.algorithm == PFS2_BASELINE:
            shares = shares[:3]
        if any(s <= 0 for s in shares) or sum(shares) >= 1.0:
            raise ParameterError("every budget share must be > 0 and together < 1 (the rest "
                                 "pays the noisy supports on all records); got "
                                 + ", ".join(f"{s:g}" for s in shares))
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SequenceMiningParams:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ParameterError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        return cls(**data)


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"{name} must be a number; got {value!r}")
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    return float(value)


def plan_budget(params: SequenceMiningParams) -> list[BudgetSlot]:
    """Divide the run's ε exactly among its phases (what the ledger charges).

    PFS2: ε1 N̂ (``records``), ε2 length histogram (``lengths``), ε3 L_f
    (``max_length``), ε4 noisy supports on the samples (``prune``), ε5 = the rest, noisy
    supports on all records (``verify``); the paper's shares are 0.025/0.025/0.05/0.45/0.45.
    The straightforward baseline has no ``prune``: ε4 + ε5 go to ``verify``. The parts are
    integers in nano-ε (ε rounded up to whole nano-ε) that sum exactly to ε; faithful mode
    charges the same (its true cost is not bounded by ε, see :mod:`dpcore.sequences.miner`).

    Raises
    ------
    ParameterError
        Bad parameters, or ε too small for every phase to get ≥ 1 nano-ε.
    """
    params.validate()
    total = epsilon_to_nano(params.epsilon, name="epsilon (ε)")
    names = [(RECORDS, params.budget_records), (LENGTHS, params.budget_lengths),
             (MAX_LENGTH, params.budget_max_length)]
    if params.algorithm == PFS2:
        names.append((PRUNE, params.budget_prune))
    slots, rest = [], total
    for phase, share in names:
        part, _ = split_fraction(total, fraction_to_nano(share, name=f"budget share {phase}"))
        slots.append(BudgetSlot(phase, 0, part))
        rest -= part
    slots.append(BudgetSlot(VERIFY, 0, rest))
    by_phase = {s.phase: s.epsilon_nano for s in slots}
    if min(by_phase.values()) <= 0 or by_phase[VERIFY] < _MAX_LEVELS \
            or by_phase.get(PRUNE, _MAX_LEVELS) < _MAX_LEVELS \
            or by_phase[MAX_LENGTH] < probe_count(_MAX_LEVELS):
        raise ParameterError("ε is too small to split among the phases and their calls (up "
                             f"to {_MAX_LEVELS} levels): a call would get 0 budget")
    return slots


def probe_count(lmax: int) -> int:
    """Q = ⌈log2 lmax⌉ (at least 1): the paper's binary-search probe count, which sets
    faithful mode's noise scale Q/ε3 on the maximal supports (strict mode has no probes)."""
    return max(1, math.ceil(math.log2(lmax))) if lmax > 1 else 1


def mechanism_shares(params: SequenceMiningParams, lmax: int, n_levels: int
                     ) -> list[BudgetSlot]:
    """Every mechanism call's share, once lmax and L_f (``n_levels``) are known.

    * ``records``, ``lengths``: one call each.
    * ``max_length``: one call. Strict: the noisy histogram of record lengths 1..lmax
      (sensitivity 1) from which L_f is read; faithful: all lmax noisy maxima at the
      paper's scale Q/ε3 each (Q = :func:`probe_count`).
    * ``prune`` and ``verify``, strict mode (PFS2 and the baseline): ONE pool of ε4 + ε5
      (the baseline's ε4 + ε5 in ``verify``), listed as the two phase totals (index 0).
      Level k's calls draw b_k from what levels 1..k−1 left, chosen from public and
      released values at run time (:func:`dpcore.sequences.strategy.level_budget`);
      together they never exceed the pool, and what an early stop leaves is unspent.
    * faithful: ``prune`` one share, charged once, used in full on each of the L_f
      disjoint sample databases (``parallel = L_f``); ``verify`` L_f equal parts.

    The shares sum exactly to :func:`plan_budget`'s total.
    """
    plan = {s.phase: s.epsilon_nano for s in plan_budget(params)}
    if lmax < 1 or n_levels < 1 or n_levels > lmax:
        raise ParameterError(f"need 1 ≤ L_f ≤ lmax; got lmax = {lmax}, L_f = {n_levels}")
    out = [BudgetSlot(RECORDS, 0, plan[RECORDS]), BudgetSlot(LENGTHS, 0, plan[LENGTHS])]
    out.append(BudgetSlot(MAX_LENGTH, 0, plan[MAX_LENGTH]))
    if params.mode == STRICT:
        if PRUNE in plan:
            out.append(BudgetSlot(PRUNE, 0, plan[PRUNE]))
        out.append(BudgetSlot(VERIFY, 0, plan[VERIFY]))
    else:
        if PRUNE in plan:
            out.append(BudgetSlot(PRUNE, 0, plan[PRUNE], parallel=n_levels))
        out += [BudgetSlot(VERIFY, i, e)
                for i, e in enumerate(split_evenly(plan[VERIFY], n_levels))]
    if min(s.epsilon_nano for s in out) <= 0:
        raise ParameterError("ε is too small for this many mechanism calls: one would get "
                             "0 budget")
    return out


def run_cost_nano(params: SequenceMiningParams) -> int:
    """Total nano-ε a run with these parameters will be charged."""
    return sum(s.epsilon_nano for s in plan_budget(params))
