"""Mining parameters (paper Table 6 defaults) and the exact budget plan of a run.

``plan_budget`` is the single place that decides how a run's ε is divided
among its mechanism calls. The ledger charges the plan's total before any
noise is drawn; the algorithms spend exactly the plan's parts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from dpcore.errors import ParameterError
from dpcore.privacy.units import (
    BudgetSlot,
    epsilon_to_nano,
    fraction_to_nano,
    split_evenly,
    split_fraction,
)
from dpcore.registry import (
    ALGORITHMS,
    COUNT_SCORE,
    FAITHFUL,
    MCMCTREEPAIR,
    MODES,
    PAPER_SCORE,
    SERENADE_ALGORITHMS,
    SERENADE_ES,
    STRICT,
    TREE_ALGORITHMS,
    TREE_SCORES,
)

#: Share of ε_qual that pays the noisy row count N̂ behind x0 = 0.1·N̂ (strict Serenade).
SERENADE_ROWS_SHARE = 0.1

HELP = {
    "algorithm": "MCMCTreePair samples a pair of trees jointly; AltMCMC / AltExpM alternate "
                 "trees built by MCMC sampling / the exponential mechanism. SerenadeES / "
                 "SerenadeCS grow literal queries greedily, one exponential-mechanism draw "
                 "per step (ES: one extension per round over all redescriptions; CS: every "
                 "redescription extended each round until its noisy Jaccard drops).",
    "epsilon": "Total privacy budget ε the run spends (smaller = more private, noisier).",
    "omega": "MCMCTreePair: share ω of each trial's ε for sampling the tree pair; the rest "
             "(1−ω) pays for the noisy counts. 0.1 is the paper's default; with the "
             "count-scale tree score, ω = 0.5 found better trees on every dataset measured.",
    "mode": "strict (default): every step is ε-DP. faithful: reproduces the paper's code, "
            "which reads raw data unpaid at several steps — NOT strictly ε-DP.",
    "in_tr": "InTr: number of initial targets (independent trials); the budget is split "
             "evenly among them.",
    "rm_iter": "RMIter (AltMCMC/AltExpM): alternation steps per initial target; each builds "
               "one tree and extracts redescriptions.",
    "depth": "d: maximum tree depth (attributes per branch).",
    "tree_score": "MCMCTreePair, strict mode: the score its chain samples tree pairs by. "
                  "count: the purities of both trees counted in rows (Δ = 3; a score "
                  "difference of tens of rows moves the chain even at a small budget). paper: the "
                  "paper's purities divided by N (Δ = 1; at a small budget the chain is "
                  "close to a random walk). Faithful mode always uses the paper's score.",
    "mc_iter": "MCIter: MCMC iterations per sampled tree (pair).",
    "sigma": "σ (faithful mode only): stop the chain when the variance of the last "
             "window accepted scores is below σ.",
    "sigma_window": "k: window of accepted scores for the σ stopping rule (faithful only).",
    "min_jaccard": "Γ.minJ: keep redescriptions whose noisy Jaccard is at least this.",
    "max_pvalue": "Γ.pval: keep redescriptions whose noisy p-value is at most this.",
    "min_support": "Γ.minSupp: smallest noisy support |E11| kept (rows).",
    "max_support": "Γ.maxSupp: largest noisy support, as a share of the noisy row count.",
    "max_clauses": "maxClauses: most literals joined by ∨ on each side.",
    "init_pairs": "Serenade I: initial literal pairs, each one exponential-mechanism draw "
                  "with ε_init/I; the run returns at most I redescriptions.",
    "es_rounds": "SerenadeES K: extension rounds; each extends one redescription (or none) "
                 "with one draw of ε_ext/K over all redescriptions' extensions.",
    "cs_rounds": "SerenadeCS L: extension rounds; each extends every surviving "
                 "redescription with ε_ext/(L·I) and measures its noisy quality.",
    "steepness": "Serenade s: steepness of the support sigmoid in the quality "
                 "f = J·σ(|E11|), σ centred at 10 % of the rows (0.01–0.03). Larger s "
                 "prefers large supports more sharply but raises the sensitivity Δf ≈ s/4.",
    "budget_init": "Serenade: share of ε for the initial pairs (ε_init).",
    "budget_ext": "Serenade: share of ε for the extensions (ε_ext); the rest (ε_qual) pays "
                  "the noisy counts of the results (and, in strict mode, a noisy row count).",
    "min_acc": "SerenadeCS: stop extending a redescription whose noisy Jaccard falls below "
               "this; it is returned in its previous form.",
    "memo_age": "SerenadeES, faithful mode only: a memoised best extension expires after "
                "this many rounds (strict mode memoises exact weights, which never go stale).",
    "max_attributes": "Serenade: most attributes in one query (per side).",
    "noise": "Noise on counts. Strict mode: discrete Laplace only (integer noise, safe from "
             "floating-point attacks). Faithful mode always uses the paper's float Laplace.",
}


@dataclass(frozen=True)
class TreeParams:
    """Parameters of a tree miner's run (MCMCTreePair, AltMCMC, AltExpM; paper Table 6).

    Units: ε in ε; supports in rows; ``max_support`` a share of the noisy row count.
    ``validate()`` checks every range (:class:`~dpcore.errors.ParameterError` names the
    parameter).
    """

    algorithm: str = MCMCTREEPAIR
    epsilon: float = 1.0
    omega: float = 0.1
    mode: str = STRICT
    in_tr: int = 4
    rm_iter: int = 1
    depth: int = 4
    mc_iter: int = 10_000
    sigma: float = 0.005
    sigma_window: int = 500
    min_jaccard: float = 0.1
    max_pvalue: float = 0.01
    min_support: float = 10.0
    max_support: float = 0.8
    max_clauses: int = 3
    noise: str = "discrete"
    tree_score: str = COUNT_SCORE

    is_serenade = False

    def validate(self) -> TreeParams:
        """Return self if every parameter is in range, else raise ParameterError naming it."""
        _check_common(self, TREE_ALGORITHMS)
        _check_tree_fields(self)
        _check_constraints(self)
        return self

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SerenadeParams:
    """Parameters of a Serenade run (SerenadeES, SerenadeCS).

    Units: ε in ε; supports in rows; ``max_support`` a share of the noisy row count;
    ``budget_init`` / ``budget_ext`` shares of ε. ``validate()`` checks every range.
    """

    algorithm: str = SERENADE_ES
    epsilon: float = 1.0
    mode: str = STRICT
    min_jaccard: float = 0.1
    max_pvalue: float = 0.01
    min_support: float = 10.0
    max_support: float = 0.8
    noise: str = "discrete"
    init_pairs: int = 20
    es_rounds: int = 80
    cs_rounds: int = 4
    steepness: float = 0.02
    budget_init: float = 0.45
    budget_ext: float = 0.45
    min_acc: float = 0.3
    memo_age: int = 40
    max_attributes: int = 4

    is_serenade = True

    def validate(self) -> SerenadeParams:
        """Return self if every parameter is in range, else raise ParameterError naming it."""
        _check_common(self, SERENADE_ALGORITHMS)
        _check_constraints(self)
        _check_serenade_fields(self)
        return self

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MiningParams:
    """What the Mine form, the command line and a stored run give: the fields of both
    families with their defaults (the registry's parameter type of every redescription
    algorithm). The miners use :meth:`family_params`, a :class:`TreeParams` or a
    :class:`SerenadeParams`.

    ``validate()`` checks every field, whatever the algorithm, so a value out of range is
    refused even where the algorithm ignores it. ``to_dict()`` is what a result stores.
    Units: ε in ε; supports in rows; ``max_support`` a share of the noisy row count.
    """

    algorithm: str = MCMCTREEPAIR
    epsilon: float = 1.0
    omega: float = 0.1
    mode: str = STRICT
    in_tr: int = 4
    rm_iter: int = 1
    depth: int = 4
    mc_iter: int = 10_000
    sigma: float = 0.005
    sigma_window: int = 500
    min_jaccard: float = 0.1
    max_pvalue: float = 0.01
    min_support: float = 10.0
    max_support: float = 0.8
    max_clauses: int = 3
    noise: str = "discrete"
    tree_score: str = COUNT_SCORE
    init_pairs: int = 20
    es_rounds: int = 80
    cs_rounds: int = 4
    steepness: float = 0.02
    budget_init: float = 0.45
    budget_ext: float = 0.45
    min_acc: float = 0.3
    memo_age: int = 40
    max_attributes: int = 4

    @property
    def is_serenade(self) -> bool:
        return self.algorithm in SERENADE_ALGORITHMS

    def validate(self) -> MiningParams:
        """Return self if every parameter is in range, else raise ParameterError naming it."""
        _check_common(self, ALGORITHMS)
        _check_tree_fields(self)
        _check_constraints(self)
        _check_serenade_fields(self)
        return self

    def family_params(self) -> TreeParams | SerenadeParams:
        """The fields of this algorithm's family, in the family's own type."""
        family = SerenadeParams if self.is_serenade else TreeParams
        return family(**{f.name: getattr(self, f.name) for f in fields(family)})

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> MiningParams:
        """Read stored parameters. Runs stored before the ``tree_score`` choice existed ran
        the paper's score, so a missing ``tree_score`` reads as ``paper`` (not the default)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ParameterError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        return cls(**{"tree_score": PAPER_SCORE, **data})


#: Any redescription parameter object: the form's :class:`MiningParams` or a family's type.
RedescriptionParams = MiningParams | TreeParams | SerenadeParams


def family_params(params: RedescriptionParams) -> TreeParams | SerenadeParams:
    """``params`` in its family's type (a family type is returned as it is)."""
    return params.family_params() if isinstance(params, MiningParams) else params


def _check_common(params, algorithms: tuple[str, ...]) -> None:
    if params.algorithm not in algorithms:
        raise ParameterError(f"algorithm must be one of {', '.join(algorithms)}; "
                             f"got {params.algorithm!r}")
    if params.mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {params.mode!r}")
    if params.noise not in ("discrete", "continuous"):
        raise ParameterError(f"noise must be 'discrete' or 'continuous'; got {params.noise!r}")
    if params.mode == STRICT and params.noise != "discrete":
        raise ParameterError(
            "strict mode draws integer (discrete Laplace) noise only: textbook float "
            "Laplace noise at full precision is open to Mironov's floating-point attack "
            "and is not ε-DP. Faithful mode (owner only on private data) uses it, labelled.")
    _finite_positive("epsilon (ε)", params.epsilon)


def _check_tree_fields(params) -> None:
    omega = _number("omega (ω)", params.omega)
    if not 0.0 <= omega <= 1.0:
        raise ParameterError(f"omega (ω) must lie in [0, 1]; got {params.omega!r}")
    if params.algorithm == MCMCTREEPAIR and omega in (0.0, 1.0):
        raise ParameterError("omega (ω) must lie strictly between 0 and 1 for "
                             "MCMCTreePair: both the tree sampling and the counts need ε")
    _int_range("in_tr (InTr)", params.in_tr, 1, 10_000)
    _int_range("rm_iter (RMIter)", params.rm_iter, 1, 1_000)
    _int_range("depth (d)", params.depth, 1, 8)
    _int_range("mc_iter (MCIter)", params.mc_iter, 1, 10_000_000)
    _int_range("sigma_window", params.sigma_window, 2, 10_000_000)
    _int_range("max_clauses", params.max_clauses, 1, 10)
    if params.tree_score not in TREE_SCORES:
        raise ParameterError(f"tree_score must be one of {', '.join(TREE_SCORES)}; "
                             f"got {params.tree_score!r}")
    if not _number("sigma (σ)", params.sigma) > 0:
        raise ParameterError(f"sigma (σ) must be > 0; got {params.sigma!r}")


def _check_constraints(params) -> None:
    if not 0.0 <= _number("min_jaccard", params.min_jaccard) <= 1.0:
        raise ParameterError(f"min_jaccard must lie in [0, 1]; got {params.min_jaccard!r}")
    if not 0.0 < _number("max_pvalue", params.max_pvalue) <= 1.0:
        raise ParameterError(f"max_pvalue must lie in (0, 1]; got {params.max_pvalue!r}")
    if not _number("min_support", params.min_support) >= 0:
        raise ParameterError(f"min_support must be ≥ 0; got {params.min_support!r}")
    if not 0.0 < _number("max_support", params.max_support) <= 1.0:
        raise ParameterError(f"max_support must lie in (0, 1]; got {params.max_support!r}")


def _check_serenade_fields(params) -> None:
    _int_range("init_pairs (I)", params.init_pairs, 1, 1_000)
    _int_range("es_rounds (K)", params.es_rounds, 1, 100_000)
    _int_range("cs_rounds (L)", params.cs_rounds, 1, 1_000)
    _int_range("memo_age", params.memo_age, 1, 100_000)
    _int_range("max_attributes", params.max_attributes, 1, 16)
    if not 0.0 < _number("steepness (s)", params.steepness) <= 1.0:
        raise ParameterError(f"steepness (s) must lie in (0, 1]; got {params.steepness!r}")
    init, ext = _number("budget_init", params.budget_init), _number("budget_ext",
                                                                    params.budget_ext)
    if not (0.0 < init < 1.0 and 0.0 < ext < 1.0 and init + ext < 1.0):
        raise ParameterError("the Serenade budget split needs 0 < budget_init, "
                             "0 < budget_ext and budget_init + budget_ext < 1 (the rest "
                             f"pays the noisy counts); got {params.budget_init!r} and "
                             f"{params.budget_ext!r}")
    if not 0.0 <= _number("min_acc", params.min_acc) <= 1.0:
        raise ParameterError(f"min_acc must lie in [0, 1]; got {params.min_acc!r}")


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"{name} must be a number; got {value!r}")
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    return float(value)


def _finite_positive(name: str, value) -> None:
    if not _number(name, value) > 0:
        raise ParameterError(f"{name} must be > 0; got {value!r}")


def _int_range(name: str, value, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ParameterError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")


def plan_budget(params: RedescriptionParams) -> list[BudgetSlot]:
    """Divide the run's ε exactly among its mechanism calls (docs/ALGORITHMS.md §5).

    AltExpM / AltMCMC: InTr·(2·RMIter + 1) equal parts, per trial one initial tree
    then RMIter × (tree, extraction). MCMCTreePair: per trial ε/InTr, of which
    ω goes to the tree pair and the rest to the extraction. The parts are integers
    in nano-ε that sum exactly to ε (rounded up to whole nano-ε).

    Faithful mode adds Laplace(2/ε_x) to three histograms per extraction, as the
    paper's code does, which really costs 1.5·ε_x; the plan charges that honest
    cost (3 · ⌈ε_x/2⌉ per extraction), so a faithful run costs more than ε.
    """
    slots = nominal_budget(params)
    if params.mode == FAITHFUL:
        slots = [replace(s, epsilon_nano=faithful_extraction_cost(s.epsilon_nano))
                 if s.role == "extract" else s for s in slots]
    return slots


def faithful_extraction_cost(nominal_nano: int) -> int:
    """True cost of the paper's extraction: three Laplace(2/ε_x) histograms = 3·(ε_x/2)."""
    return 3 * (-(-int(nominal_nano) // 2))


def nominal_budget(params: RedescriptionParams) -> list[BudgetSlot]:
    """The paper's split of ε (what ``plan_budget`` charges in strict mode)."""
    params = family_params(params.validate())
    total = epsilon_to_nano(params.epsilon, name="epsilon (ε)")
    if params.is_serenade:
        return serenade_budget(params, total)
    slots: list[BudgetSlot] = []
    if params.algorithm == MCMCTREEPAIR:
        omega = fraction_to_nano(params.omega, name="omega (ω)")
        for t, trial_nano in enumerate(split_evenly(total, params.in_tr)):
            tree, extract = split_fraction(trial_nano, omega)
            if tree <= 0 or extract <= 0:
                raise ParameterError("ε is too small to split among the trials and ω: "
                                     "a mechanism would get 0 budget")
            slots += [BudgetSlot("tree", t, tree), BudgetSlot("extract", t, extract)]
        return slots
    n_per_trial = 2 * params.rm_iter + 1
    parts = split_evenly(total, params.in_tr * n_per_trial)
    if min(parts) <= 0:
        raise ParameterError("ε is too small to split among InTr·(2·RMIter+1) mechanisms")
    it = iter(parts)
    for t in range(params.in_tr):
        slots.append(BudgetSlot("tree", t, next(it)))
        for r in range(1, params.rm_iter + 1):
            slots.append(BudgetSlot("tree", t, next(it), step=r))
            slots.append(BudgetSlot("extract", t, next(it), step=r))
    return slots


def serenade_budget(params: SerenadeParams, total: int) -> list[BudgetSlot]:
    """Serenade's split of ε (docs/ALGORITHMS.md §5): ε_init / ε_ext / ε_qual, then per mechanism.

    * ``rows`` (strict only): ``SERENADE_ROWS_SHARE`` of ε_qual for the noisy row
      count N̂ that fixes x0 = 0.1·N̂ in the quality f (faithful mode reads N).
    * ``init``: I equal parts of ε_init, one per initial-pair draw (trial = pair).
    * ``extend``: SerenadeES, K equal parts of ε_ext (trial −1, step = round);
      SerenadeCS, L·I equal parts (trial = redescription, step = round 1..L).
    * ``quality``: ES, I equal parts of the rest of ε_qual (one noisy count table
      per final redescription); CS, (L + 1)·I parts (the initial pair and each round).

    All parts are integers in nano-ε summing exactly to the total.
    """
    init_nano, rest = split_fraction(total, fraction_to_nano(params.budget_init,
                                                             name="budget_init"))
    ext_nano, _ = split_fraction(total, fraction_to_nano(params.budget_ext, name="budget_ext"))
    qual_nano = rest - ext_nano
    slots: list[BudgetSlot] = []
    if params.mode == STRICT:
        rows_nano, qual_nano = split_fraction(qual_nano, fraction_to_nano(
            SERENADE_ROWS_SHARE, name="rows share"))
        slots.append(BudgetSlot("rows", 0, rows_nano))
    n = params.init_pairs
    slots += [BudgetSlot("init", i, e) for i, e in enumerate(split_evenly(init_nano, n))]
    if params.algorithm == SERENADE_ES:
        slots += [BudgetSlot("extend", -1, e, step=k + 1)
                  for k, e in enumerate(split_evenly(ext_nano, params.es_rounds))]
        slots += [BudgetSlot("quality", i, e)
                  for i, e in enumerate(split_evenly(qual_nano, n))]
    else:
        rounds = params.cs_rounds
        ext = iter(split_evenly(ext_nano, rounds * n))
        qual = iter(split_evenly(qual_nano, (rounds + 1) * n))
        slots += [BudgetSlot("quality", i, next(qual)) for i in range(n)]
        for r in range(1, rounds + 1):
            for i in range(n):
                slots += [BudgetSlot("extend", i, next(ext), step=r),
                          BudgetSlot("quality", i, next(qual), step=r)]
    if min(s.epsilon_nano for s in slots) <= 0:
        raise ParameterError("ε is too small for this many Serenade mechanisms: a draw or "
                             "count would get 0 budget")
    return slots


def run_cost_nano(params: RedescriptionParams) -> int:
    """Total nano-ε a run with these parameters will be charged."""
    return sum(s.epsilon_nano for s in plan_budget(params))
