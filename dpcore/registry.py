"""The algorithm registry: the one place that names every algorithm, mode and family.

Each :class:`AlgorithmSpec` declares an algorithm's family, key, label, the
parameters it uses (per privacy mode) with their symbols and help, its named
presets (the papers' settings, used by the experiment harness and the
benchmark), its parameter type, its budget plan and its miner. The Mine form,
the command-line flags, the experiment harness, the benchmark and the Runs page
read it from here; no other module spells an algorithm, mode or family name.

The registry is declarative and imports no miner: behaviour is named by import
path and resolved on first use, so the mining packages can import the names
below without an import cycle.

How to add a miner: write its package (parameters type, budget plan, miner, result
type), then add one :class:`AlgorithmSpec` to :data:`ALGORITHM_SPECS`; see
``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from dpcore.errors import ParameterError

__all__ = [
    "STRICT", "FAITHFUL", "MODES", "REDESCRIPTIONS", "MCMCTREEPAIR", "ALTMCMC", "ALTEXPM",
    "SERENADE_ES", "SERENADE_CS", "TREE_ALGORITHMS", "SERENADE_ALGORITHMS", "ALGORITHMS",
    "ALGORITHM_LABELS", "MODE_LABELS", "PARAMETER_SYMBOLS", "Preset", "AlgorithmSpec",
    "ALGORITHM_SPECS", "algorithm_spec", "presets", "preset",
]

# ----------------------------------------------------------------------------- names

#: Privacy modes. ``strict``: every step is ε-DP (the default). ``faithful``: reproduces
#: a paper's code, reads raw data unpaid, labelled not ε-DP (owner or public data only).
STRICT, FAITHFUL = "strict", "faithful"
MODES = (STRICT, FAITHFUL)
MODE_LABELS = MappingProxyType({STRICT: "strict (default): every step is ε-DP",
                                FAITHFUL: "faithful — not strictly ε-DP: reproduces the "
                                          "paper's code"})

#: Mining families (one package each).
REDESCRIPTIONS = "redescriptions"

MCMCTREEPAIR, ALTMCMC, ALTEXPM = "mcmctreepair", "altmcmc", "altexpm"
SERENADE_ES, SERENADE_CS = "serenade_es", "serenade_cs"
TREE_ALGORITHMS = (MCMCTREEPAIR, ALTMCMC, ALTEXPM)
SERENADE_ALGORITHMS = (SERENADE_ES, SERENADE_CS)

#: Short names of the parameters, as the form and the Runs page show them.
PARAMETER_SYMBOLS = MappingProxyType({
    "epsilon": "ε", "mode": "mode", "omega": "ω", "in_tr": "InTr", "rm_iter": "RMIter",
    "depth": "d", "mc_iter": "MCIter", "sigma": "σ", "sigma_window": "σ window",
    "min_jaccard": "Γ.minJ", "max_pvalue": "Γ.pval", "min_support": "Γ.minSupp",
    "max_support": "Γ.maxSupp", "max_clauses": "maxClauses", "noise": "noise",
    "init_pairs": "I", "es_rounds": "K", "cs_rounds": "L", "steepness": "s",
    "budget_init": "ε_init share", "budget_ext": "ε_ext share", "min_acc": "min_acc",
    "memo_age": "memo_age", "max_attributes": "max attributes"})

_CONSTRAINTS = ("min_jaccard", "max_pvalue", "min_support", "max_support")


# ----------------------------------------------------------------------------- specs

@dataclass(frozen=True)
class Preset:
    """A named setting of an algorithm (a paper's setting, a benchmark case).

    ``overrides`` are parameter values applied over the parameter type's defaults.
    """

    name: str
    label: str
    overrides: Mapping[str, object] = field(default_factory=dict)


def _resolve(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class AlgorithmSpec:
    """Everything the product needs to know about one algorithm.

    Attributes
    ----------
    key : str
        The stored name (ledger, results, CLI ``--algorithm``).
    family : str
        The mining family (package) it belongs to.
    label : str
        Display name.
    blurb : str
        One sentence on what it does (form help, CLI help).
    parameters : dict of mode → tuple of str
        The parameter fields that change what a run does, in the order the form shows
        them (ε and mode first).
    presets : tuple of Preset
        Named settings: the experiment harness's specs and the benchmark's cases.
    params_type, result_type, plan, check, miner : str
        Import paths (``module:name``) of the parameter dataclass, of the result type
        (``from_json`` / ``to_json``), of the budget plan
        ``plan(params) -> list[BudgetSlot]``, of the pre-charge check
        ``check(data, params)`` (builds everything the run needs; raises on a problem)
        and of the miner ``miner(data, params, *, rng, accountant, run_id, seed,
        progress)``.
    summary_fields : tuple of str
        The parameters of the one-line summary (Runs page), in order; ``"split"``
        stands for a Serenade budget split init/ext/qual.
    uses_chain : bool
        Runs MCMC chains (MCIter applies).
    per_trial_progress : bool
        Reports progress trial by trial (the app shows one bar per trial).
    """

    key: str
    family: str
    label: str
    blurb: str
    parameters: Mapping[str, tuple[str, ...]]
    presets: tuple[Preset, ...]
    params_type: str
    result_type: str
    plan: str
    check: str
    miner: str
    summary_fields: tuple[str, ...] = ()
    uses_chain: bool = False
    per_trial_progress: bool = False

    def parameters_used(self, mode: str) -> tuple[str, ...]:
        """Parameter fields that matter in ``mode`` (raises ParameterError for a bad mode)."""
        if mode not in self.parameters:
            raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        return self.parameters[mode]

    def resolve(self, what: str):
        """The object behind ``params_type``, ``plan`` or ``miner``."""
        return _resolve(getattr(self, what))

    def summary(self, params: Mapping) -> str:
        """The run's main parameters in one line, e.g. ``InTr 4, ω 0.1, d 4, MCIter 10000``.

        A Serenade budget split shows as ``split init/ext/qual 0.45/0.45/0.10``; a demo
        seed, if any, is named last.
        """
        parts = []
        for name in self.summary_fields:
            if name == "split":
                init, ext = params.get("budget_init"), params.get("budget_ext")
                if isinstance(init, (int, float)) and isinstance(ext, (int, float)):
                    parts.append(f"split init/ext/qual {init:.2f}/{ext:.2f}/"
                                 f"{1.0 - init - ext:.2f}")
            else:
                parts.append(f"{PARAMETER_SYMBOLS[name]} {params.get(name)}")
        if params.get("seed") is not None:
            parts.append(f"demo seed {params['seed']}")
        return ", ".join(parts)


def _tree_parameters(head: tuple[str, ...], chain: bool) -> dict[str, tuple[str, ...]]:
    body = head + ("depth",) + (("mc_iter",) if chain else ())
    tail = _CONSTRAINTS + ("max_clauses",)
    faithful = body + (("sigma", "sigma_window") if chain else ()) + tail
    return {STRICT: ("epsilon", "mode") + body + tail + ("noise",),
            FAITHFUL: ("epsilon", "mode") + faithful}


def _serenade_parameters(rounds: str, extra: tuple[str, ...], faithful_extra: tuple[str, ...]
                         ) -> dict[str, tuple[str, ...]]:
    body = ("init_pairs", rounds, "steepness", "budget_init", "budget_ext") + extra + \
        ("max_attributes",)
    return {STRICT: ("epsilon", "mode") + body + _CONSTRAINTS + ("noise",),
            FAITHFUL: ("epsilon", "mode") + body + faithful_extra + _CONSTRAINTS}


_TREES = "dpcore.redescriptions.params"
_MINING = "dpcore.redescriptions.mining"
_RESULT = "dpcore.redescriptions.results:RunResult"

ALGORITHM_SPECS: Mapping[str, AlgorithmSpec] = MappingProxyType({s.key: s for s in (
    AlgorithmSpec(
        key=MCMCTREEPAIR, family=REDESCRIPTIONS, label="MCMCTreePair",
        blurb="samples a pair of trees jointly by MCMC, then extracts redescriptions from "
              "one noisy leaf×leaf table per trial",
        parameters=_tree_parameters(("omega", "in_tr"), chain=True),
        presets=(Preset(MCMCTREEPAIR, "MCMCTreePair (ω = 0.1)", {"omega": 0.1}),
                 Preset(f"{MCMCTREEPAIR}-w0.5", "MCMCTreePair (ω = 0.5)", {"omega": 0.5}),
                 Preset("paper", "MCMCTreePair (InTr 20)",
                        {"in_tr": 20, "rm_iter": 1, "mc_iter": 10_000, "depth": 4}),
                 Preset("interactive", "MCMCTreePair (InTr 4)",
                        {"in_tr": 4, "rm_iter": 1, "mc_iter": 10_000, "depth": 4})),
        params_type=f"{_TREES}:MiningParams", result_type=_RESULT,
        plan=f"{_TREES}:plan_budget",
        check=f"{_MINING}:check_runnable", miner=f"{_MINING}:mine",
        summary_fields=("in_tr", "omega", "depth", "mc_iter"),
        uses_chain=True, per_trial_progress=True),
    AlgorithmSpec(
        key=ALTMCMC, family=REDESCRIPTIONS, label="AltMCMC",
        blurb="alternates trees on the two views, each sampled by MCMC",
        parameters=_tree_parameters(("in_tr", "rm_iter"), chain=True),
        presets=(Preset(ALTMCMC, "AltMCMC (InTr = 1, RMIter = 4)", {"in_tr": 1, "rm_iter": 4}),
                 Preset(f"{ALTMCMC}-stable", "AltMCMC stable (InTr = 4, RMIter = 1)",
                        {"in_tr": 4, "rm_iter": 1}),
                 Preset("paper-stable", "AltMCMC stable (InTr 20, RMIter 1)",
                        {"in_tr": 20, "rm_iter": 1, "mc_iter": 10_000, "depth": 4}),
                 Preset("paper-default", "AltMCMC default (InTr 1, RMIter 20)",
                        {"in_tr": 1, "rm_iter": 20, "mc_iter": 10_000, "depth": 4}),
                 Preset("interactive", "AltMCMC (InTr 4)",
                        {"in_tr": 4, "rm_iter": 1, "mc_iter": 10_000, "depth": 4})),
        params_type=f"{_TREES}:MiningParams", result_type=_RESULT,
        plan=f"{_TREES}:plan_budget",
        check=f"{_MINING}:check_runnable", miner=f"{_MINING}:mine",
        summary_fields=("in_tr", "rm_iter", "depth", "mc_iter"),
        uses_chain=True, per_trial_progress=True),
    AlgorithmSpec(
        key=ALTEXPM, family=REDESCRIPTIONS, label="AltExpM",
        blurb="alternates trees on the two views, each split chosen by the exponential "
              "mechanism",
        parameters=_tree_parameters(("in_tr", "rm_iter"), chain=False),
        presets=(Preset(ALTEXPM, "AltExpM (InTr = 1, RMIter = 4)", {"in_tr": 1, "rm_iter": 4}),
                 Preset(f"{ALTEXPM}-stable", "AltExpM stable (InTr = 4, RMIter = 1)",
                        {"in_tr": 4, "rm_iter": 1}),
                 Preset("paper-stable", "AltExpM stable (InTr 20, RMIter 1)",
                        {"in_tr": 20, "rm_iter": 1, "mc_iter": 10_000, "depth": 4}),
                 Preset("paper-default", "AltExpM default (InTr 1, RMIter 20)",
                        {"in_tr": 1, "rm_iter": 20, "mc_iter": 10_000, "depth": 4}),
                 Preset("interactive", "AltExpM (InTr 4)",
                        {"in_tr": 4, "rm_iter": 1, "mc_iter": 10_000, "depth": 4})),
        params_type=f"{_TREES}:MiningParams", result_type=_RESULT,
        plan=f"{_TREES}:plan_budget",
        check=f"{_MINING}:check_runnable", miner=f"{_MINING}:mine",
        summary_fields=("in_tr", "rm_iter", "depth"),
        per_trial_progress=True),
    AlgorithmSpec(
        key=SERENADE_ES, family=REDESCRIPTIONS, label="SerenadeES",
        blurb="grows literal queries greedily: each round extends one redescription with "
              "one exponential-mechanism draw over all extensions",
        parameters=_serenade_parameters("es_rounds", (), ("memo_age",)),
        presets=(Preset(SERENADE_ES, "SerenadeES (I = 20, K = 80)", {}),
                 Preset("paper", "SerenadeES (I 20, K 80)",
                        {"init_pairs": 20, "es_rounds": 80, "steepness": 0.02,
                         "budget_init": 0.45, "budget_ext": 0.45}),
                 Preset("interactive", "SerenadeES (I 20, K 80)",
                        {"init_pairs": 20, "es_rounds": 80})),
        params_type=f"{_TREES}:MiningParams", result_type=_RESULT,
        plan=f"{_TREES}:plan_budget",
        check=f"{_MINING}:check_runnable", miner=f"{_MINING}:mine",
        summary_fields=("init_pairs", "es_rounds", "steepness",
                                                   "split")),
    AlgorithmSpec(
        key=SERENADE_CS, family=REDESCRIPTIONS, label="SerenadeCS",
        blurb="grows literal queries greedily: every redescription is extended each round "
              "until its noisy Jaccard drops",
        parameters=_serenade_parameters("cs_rounds", ("min_acc",), ()),
        presets=(Preset(SERENADE_CS, "SerenadeCS (I = 20, L = 4)", {}),
                 Preset("paper", "SerenadeCS (I 20, L 4)",
                        {"init_pairs": 20, "cs_rounds": 4, "steepness": 0.02,
                         "budget_init": 0.45, "budget_ext": 0.45}),
                 Preset("interactive", "SerenadeCS (I 20, L 4)",
                        {"init_pairs": 20, "cs_rounds": 4})),
        params_type=f"{_TREES}:MiningParams", result_type=_RESULT,
        plan=f"{_TREES}:plan_budget",
        check=f"{_MINING}:check_runnable", miner=f"{_MINING}:mine",
        summary_fields=("init_pairs", "cs_rounds", "steepness",
                                                   "split", "min_acc")),
)})

ALGORITHMS = tuple(ALGORITHM_SPECS)
ALGORITHM_LABELS = MappingProxyType({k: s.label for k, s in ALGORITHM_SPECS.items()})


def algorithm_spec(key: str) -> AlgorithmSpec:
    """The spec of ``key`` (ParameterError naming the known algorithms otherwise)."""
    try:
        return ALGORITHM_SPECS[key]
    except (KeyError, TypeError):
        raise ParameterError(f"algorithm must be one of {', '.join(ALGORITHMS)}; "
                             f"got {key!r}") from None


def presets(names: tuple[str, ...] | None = None) -> dict[str, tuple[AlgorithmSpec, Preset]]:
    """Every preset whose name is globally unique (the harness's ``--algorithms`` specs)."""
    out = {}
    for spec in ALGORITHM_SPECS.values():
        for p in spec.presets:
            if p.name.startswith(spec.key):
                out[p.name] = (spec, p)
    return out if names is None else {n: out[n] for n in names}


def preset(spec: AlgorithmSpec, name: str) -> Preset:
    """The preset ``name`` of ``spec`` (ParameterError otherwise)."""
    for p in spec.presets:
        if p.name == name:
            return p
    raise ParameterError(f"{spec.label} has no setting {name!r}; choose from "
                         f"{', '.join(p.name for p in spec.presets)}")


def by_mode(mode: str, *, strict, faithful):
    """Pick by privacy mode without spelling the mode names elsewhere."""
    if mode == STRICT:
        return strict
    if mode == FAITHFUL:
        return faithful
    raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")

