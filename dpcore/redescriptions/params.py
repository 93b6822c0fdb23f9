"""Mining parameters (paper Table 6 defaults; ω chosen by measurement) and the exact budget
plan of a run.

``plan_budget`` is the single place that decides how a run's ε is divided
among its mechanism calls. The ledger charges the plan's total before any
noise is drawn; the algorithms spend exactly the plan's parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from types import MappingProxyType

from dpcore.errors import ParameterError
from dpcore.family import ParamField, params_from_fields
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

_ALGORITHM_HELP = (
    "MCMCTreePair samples a pair of trees jointly; AltMCMC / AltExpM alternate trees built "
    "by MCMC sampling / the exponential mechanism. SerenadeES / SerenadeCS grow literal "
    "queries greedily, one exponential-mechanism draw per step (ES: one extension per round "
    "over all redescriptions; CS: every redescription extended each round until its noisy "
    "Jaccard drops).")
_SHARE_OF_EPSILON = "share of ε"

#: Every redescription parameter, declared once: type, default (paper Table 6; ω measured,
#: docs/results.md "Defaults chosen by measurement"), range, help,
#: unit. The parameter types below take their fields from it, ``validate()`` checks each
#: field against it, and the command line's flags and the Mine form's number boxes are
#: built from it. Rules across fields (strict mode's integer noise, MCMCTreePair's ω,
#: Serenade's budget split) are the types' own ``validate()``.
FIELDS: Mapping[str, ParamField] = MappingProxyType({f.name: f for f in (
    ParamField("epsilon", float, 1.0, "Total privacy budget ε the run spends (smaller = more "
               "private, noisier).", unit="ε", low=0.0, low_open=True),
    ParamField("mode", str, STRICT, "strict (default): every step is ε-DP. faithful: "
               "reproduces the paper's code, which reads raw data unpaid at several steps — "
               "NOT strictly ε-DP.", choices=MODES),
    ParamField("omega", float, 0.5, "MCMCTreePair: share ω of each trial's ε for sampling the "
               "tree pair; the rest (1−ω) pays for the noisy counts. Default 0.5, chosen by "
               "measurement: with the count-scale tree score it kept better redescriptions "
               "than ω 0.1 (the paper's default), 0.3 or 0.7 at ε = 1; a smaller ω gives "
               "more accurate noisy Jaccards and a lower suggested pruning threshold.",
               unit="share of a trial's ε", low=0.0, high=1.0),
    ParamField("in_tr", int, 4, "InTr: number of initial targets (independent trials); the "
               "budget is split evenly among them.", unit="trials", low=1, high=10_000),
    ParamField("rm_iter", int, 1, "RMIter (AltMCMC/AltExpM): alternation steps per initial "
               "target; each builds one tree and extracts redescriptions.",
               unit="alternations", low=1, high=1_000),
    ParamField("depth", int, 4, "d: maximum tree depth (attributes per branch).",
               unit="levels", low=1, high=8),
    ParamField("mc_iter", int, 10_000, "MCIter: MCMC iterations per sampled tree (pair).",
               unit="iterations", low=1, high=10_000_000),
    ParamField("sigma", float, 0.005, "σ (faithful mode only): stop the chain when the "
               "variance of the last window accepted scores is below σ.", low=0.0,
               low_open=True),
    ParamField("sigma_window", int, 500, "k: window of accepted scores for the σ stopping "
               "rule (faithful only).", unit="accepted scores", low=2, high=10_000_000),
    ParamField("min_jaccard", float, 0.1, "Γ.minJ: keep redescriptions whose noisy Jaccard "
               "is at least this.", low=0.0, high=1.0),
    ParamField("max_pvalue", float, 0.01, "Γ.pval: keep redescriptions whose noisy p-value "
               "is at most this.", low=0.0, high=1.0, low_open=True),
    ParamField("min_support", float, 10.0, "Γ.minSupp: smallest noisy support |E11| kept "
               "(rows).", unit="rows", low=0.0),
    ParamField("max_support", float, 0.8, "Γ.maxSupp: largest noisy support, as a share of "
               "the noisy row count.", unit="share of the rows", low=0.0, high=1.0,
               low_open=True),
    ParamField("max_clauses", int, 3, "maxClauses: most literals joined by ∨ on each side.",
               unit="literals", low=1, high=10),
    ParamField("noise", str, "discrete", "Noise on counts. Strict mode: discrete Laplace only "
               "(integer noise, safe from floating-point attacks). Faithful mode always uses "
               "the paper's float Laplace.", choices=("discrete", "continuous")),
    ParamField("tree_score", str, COUNT_SCORE, "MCMCTreePair, strict mode: the score its chain "
               "samples tree pairs by. count: the purities of both trees counted in rows "
               "(Δ = 3; a score difference of tens of rows moves the chain even at a small "
               "budget). paper: the paper's purities divided by N (Δ = 1; at a small budget "
               "the chain is close to a random walk). Faithful mode always uses the paper's "
               "score.", choices=TREE_SCORES),
    ParamField("init_pairs", int, 20, "Serenade I: initial literal pairs, each one "
               "exponential-mechanism draw with ε_init/I; the run returns at most I "
               "redescriptions.", unit="pairs", low=1, high=1_000),
    ParamField("es_rounds", int, 80, "SerenadeES K: extension rounds; each extends one "
               "redescription (or none) with one draw of ε_ext/K over all redescriptions' "
               "extensions.", unit="rounds", low=1, high=100_000),
    ParamField("cs_rounds", int, 4, "SerenadeCS L: extension rounds; each extends every "
               "surviving redescription with ε_ext/(L·I) and measures its noisy quality.",
               unit="rounds", low=1, high=1_000),
    ParamField("steepness", float, 0.02, "Serenade s: steepness of the support sigmoid in "
               "the quality f = J·σ(|E11|), σ centred at 10 % of the rows (0.01–0.03). Larger "
               "s prefers large supports more sharply but raises the sensitivity Δf ≈ s/4.",
               low=0.0, high=1.0, low_open=True),
    ParamField("budget_init", float, 0.45, "Serenade: share of ε for the initial pairs "
               "(ε_init).", unit=_SHARE_OF_EPSILON, low=0.0, high=1.0, low_open=True,
               high_open=True),
    ParamField("budget_ext", float, 0.45, "Serenade: share of ε for the extensions (ε_ext); "
               "the rest (ε_qual) pays the noisy counts of the results (and, in strict mode, "
               "a noisy row count).", unit=_SHARE_OF_EPSILON, low=0.0, high=1.0,
               low_open=True, high_open=True),
    ParamField("min_acc", float, 0.3, "SerenadeCS: stop extending a redescription whose "
               "noisy Jaccard falls below this; it is returned in its previous form.",
               low=0.0, high=1.0),
    ParamField("memo_age", int, 40, "SerenadeES, faithful mode only: a memoised best "
               "extension expires after this many rounds (strict mode memoises exact "
               "weights, which never go stale).", unit="rounds", low=1, high=100_000),
    ParamField("max_attributes", int, 4, "Serenade: most attributes in one query (per side).",
               unit="attributes", low=1, high=16),
)})

#: Help text of every parameter (and of the algorithm choice), from :data:`FIELDS`.
HELP: Mapping[str, str] = MappingProxyType({"algorithm": _ALGORITHM_HELP,
                                            **{n: f.help for n, f in FIELDS.items()}})


def _algorithm_field(algorithms: tuple[str, ...]) -> ParamField:
    return ParamField("algorithm", str, algorithms[0], _ALGORITHM_HELP, choices=algorithms)


_CONSTRAINTS = ("min_jaccard", "max_pvalue", "min_support", "max_support")
_TREE = ("epsilon", "omega", "mode", "in_tr", "rm_iter", "depth", "mc_iter", "sigma",
         "sigma_window", *_CONSTRAINTS, "max_clauses", "noise", "tree_score")
_SERENADE_OWN = ("init_pairs", "es_rounds", "cs_rounds", "steepness", "budget_init",
                 "budget_ext", "min_acc", "memo_age", "max_attributes")
_SERENADE = ("epsilon", "mode", *_CONSTRAINTS, "noise", *_SERENADE_OWN)


def _table(algorithms: tuple[str, ...]) -> dict[str, ParamField]:
    return {"algorithm": _algorithm_field(algorithms), **FIELDS}


class _Checked:
    """``validate()`` and ``to_dict()`` of the parameter types below."""

    FIELDS: Mapping[str, ParamField]

    def validate(self):
        """Return self if every field is in its declared range and the rules across
        fields hold, else raise ParameterError naming the field."""
        for name, declared in self.FIELDS.items():
            declared.check(getattr(self, name))
        if self.mode == STRICT and self.noise != "discrete":
            raise ParameterError(
                "strict mode draws integer (discrete Laplace) noise only: textbook float "
                "Laplace noise at full precision is open to Mironov's floating-point attack "
                "and is not ε-DP. Faithful mode (owner only on private data) uses it, "
                "labelled.")
        if "omega" in self.FIELDS and self.algorithm == MCMCTREEPAIR \
                and self.omega in (0.0, 1.0):
            raise ParameterError("omega (ω) must lie strictly between 0 and 1 for "
                                 "MCMCTreePair: both the tree sampling and the counts need ε")
        if "budget_init" in self.FIELDS and self.budget_init + self.budget_ext >= 1.0:
            raise ParameterError("the Serenade budget split needs 0 < budget_init, "
                                 "0 < budget_ext and budget_init + budget_ext < 1 (the rest "
                                 f"pays the noisy counts); got {self.budget_init!r} and "
                                 f"{self.budget_ext!r}")
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping):
        """Stored parameters of this family, read by :func:`read_params` (ParameterError if
        they are another family's)."""
        params = read_params(data)
        if not isinstance(params, cls):
            raise ParameterError(f"{params.algorithm} is not an algorithm of {cls.__name__}; "
                                 f"its parameters are {type(params).__name__}")
        return params


@params_from_fields(_table(TREE_ALGORITHMS), ("algorithm", *_TREE))
class TreeParams(_Checked):
    """Parameters of a tree miner's run (MCMCTreePair, AltMCMC, AltExpM; paper Table 6).

    Fields, defaults, units and ranges: :data:`FIELDS` (ε in ε; supports in rows;
    ``max_support`` a share of the noisy row count). ``validate()`` checks every range
    (:class:`~dpcore.errors.ParameterError` names the parameter).
    """

    is_serenade = False


@params_from_fields(_table(SERENADE_ALGORITHMS), ("algorithm", *_SERENADE))
class SerenadeParams(_Checked):
    """Parameters of a Serenade run (SerenadeES, SerenadeCS).

    Fields, defaults, units and ranges: :data:`FIELDS` (ε in ε; supports in rows;
    ``max_support`` a share of the noisy row count; ``budget_init`` / ``budget_ext`` shares
    of ε). ``validate()`` checks every range.
    """

    is_serenade = True


#: Any redescription miner's parameters: a tree miner's or Serenade's (what the registry's
#: ``params_type`` of each algorithm is, and what a run stores, as ``to_dict()``).
RedescriptionParams = TreeParams | SerenadeParams

#: Keys a run of either family ever stored, before its family type was the boundary: the
#: 26 of the union of both families (every key but the algorithm's own family's was
#: ignored by the miner).
_STORED_KEYS = frozenset({"algorithm", *_TREE, *_SERENADE_OWN})


def family_type(algorithm: str) -> type[TreeParams] | type[SerenadeParams]:
    """The parameter type of redescription miner ``algorithm`` (ParameterError otherwise)."""
    if algorithm in SERENADE_ALGORITHMS:
        return SerenadeParams
    if algorithm in TREE_ALGORITHMS:
        return TreeParams
    raise ParameterError(f"algorithm must be one of {', '.join(ALGORITHMS)}; "
                         f"got {algorithm!r}")


def read_params(data: Mapping) -> RedescriptionParams:
    """A redescription run's stored ``params`` dict, read into its family's type.

    Reads every form a run ever stored: the family type's own ``to_dict()`` (runs stored
    since the family types are the boundary) and the 26-key dicts of earlier runs, which
    hold both families' fields (the other family's were never read by the miner, so they
    are dropped here). A run stored before the ``tree_score`` choice existed ran the
    paper's score, so a missing ``tree_score`` reads as ``paper`` (not today's default);
    any other missing field takes its default. A key neither family ever had is refused.
    The result is not validated (call ``validate()``).

    Raises
    ------
    ParameterError
        ``data`` is not a mapping, names an unknown algorithm, or has an unknown key.
    """
    if not isinstance(data, Mapping):
        raise ParameterError(f"stored parameters must be a mapping; got {type(data).__name__}")
    unknown = set(data) - _STORED_KEYS
    if unknown:
        raise ParameterError(f"unknown parameter(s) {', '.join(sorted(unknown))}: not a "
                             "parameter of any redescription miner")
    family = family_type(data.get("algorithm", MCMCTREEPAIR))
    values = {"tree_score": PAPER_SCORE, **data} if family is TreeParams else dict(data)
    return family(**{name: value for name, value in values.items() if name in family.FIELDS})



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
    params = params.validate()
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
