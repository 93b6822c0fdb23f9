"""The algorithm registry: the one place that names every algorithm, mode and family.

Each :class:`AlgorithmSpec` declares an algorithm's family, key, label, the
parameters it uses (per privacy mode) with their symbols and help, its named
presets (the papers' settings, used by the experiment harness and the
benchmark). The Mine form, the command-line flags, the experiment harness, the
benchmark and the Runs page read it from here; no other module spells an
algorithm, mode or family name.

The registry is declarative: it imports no family code and names none by import path. The
code behind each name is its family's object (:mod:`dpcore.family`: ``Family``,
``Algorithm``, ``DatasetKind``); the mining packages import the names below without an
import cycle. :func:`register_family` adds a family at run time, and
:data:`ALGORITHM_SPECS` is a live view of every registered algorithm.

How to add a miner or a family: see ``docs/ARCHITECTURE.md`` (the worked example of a
family is ``tests/dpcore/test_toy_family.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from dpcore.errors import ParameterError

__all__ = [
    "STRICT", "FAITHFUL", "MODES", "REDESCRIPTIONS", "SEQUENCES", "SYNTHESIS", "FAMILIES",
    "MCMCTREEPAIR", "ALTMCMC", "ALTEXPM", "SERENADE_ES", "SERENADE_CS", "TREE_ALGORITHMS",
    "SERENADE_ALGORITHMS", "REDESCRIPTION_ALGORITHMS", "ALGORITHMS", "CUSTOM_QUERY", "REGION_MAP",
    "REDESCRIPTION_QUERIES", "LITERAL_QUERY_ALGORITHMS", "PFS2", "PFS2_BASELINE",
    "SEQUENCE_ALGORITHMS", "MCGEN", "FLOOR", "SYNTHESIS_ALGORITHMS", "ALL_ALGORITHMS",
    "ALGORITHM_LABELS", "MODE_LABELS", "PARAMETER_SYMBOLS", "KIND_TWO_VIEW", "KIND_SEQUENCES",
    "KIND_TABLE", "DATASET_KINDS", "DatasetKindSpec", "DATASET_KIND_SPECS", "dataset_kind_spec",
    "Preset", "AlgorithmSpec", "ALGORITHM_SPECS", "algorithm_spec", "family_algorithms",
    "presets", "preset", "by_mode", "register_family", "registered_families",
    "family_keys", "COUNT_SCORE", "PAPER_SCORE", "TREE_SCORES",
    "TREE_SCORE_LABELS", "tree_score_of",
]

# ----------------------------------------------------------------------------- names

#: Privacy modes. ``strict``: every step is ε-DP (the default). ``faithful``: reproduces
#: a paper's code, reads raw data unpaid, labelled not ε-DP (owner or public data only).
STRICT, FAITHFUL = "strict", "faithful"
MODES = (STRICT, FAITHFUL)
MODE_LABELS = MappingProxyType({STRICT: "strict (default): every step is ε-DP",
                                FAITHFUL: "faithful — not strictly ε-DP: reproduces the "
                                          "paper's code"})

#: MCMCTreePair's tree-pair score (strict mode; faithful mode always uses the paper's):
#: ``count`` — Q(T_L) + Q(T_R) − Q(root of T_R) in rows, Δ = 3, not divided by N;
#: ``paper`` — the paper's
#: normalised g(T_L)(1 + g(T_R))/2 ∈ [0, 1], Δ = 1 (docs/PRIVACY.md S2, S2c).
COUNT_SCORE, PAPER_SCORE = "count", "paper"
TREE_SCORES = (COUNT_SCORE, PAPER_SCORE)
TREE_SCORE_LABELS = MappingProxyType({
    COUNT_SCORE: "count-scale score (purities in rows, Δ = 3)",
    PAPER_SCORE: "paper score (purities normalised by N, Δ = 1)"})

#: Mining families (one package each): redescriptions of a two-view table, frequent
#: sequences (PFS2) of a sequence dataset, synthetic data (MC-GEN) of a labelled table.
REDESCRIPTIONS, SEQUENCES, SYNTHESIS = "redescriptions", "sequences", "synthesis"
FAMILIES = (REDESCRIPTIONS, SEQUENCES, SYNTHESIS)

MCMCTREEPAIR, ALTMCMC, ALTEXPM = "mcmctreepair", "altmcmc", "altexpm"
SERENADE_ES, SERENADE_CS = "serenade_es", "serenade_cs"
TREE_ALGORITHMS = (MCMCTREEPAIR, ALTMCMC, ALTEXPM)
SERENADE_ALGORITHMS = (SERENADE_ES, SERENADE_CS)
REDESCRIPTION_ALGORITHMS = TREE_ALGORITHMS + SERENADE_ALGORITHMS
#: The redescription algorithms: what the redescription Mine form, the redescription
#: experiment harness, the warm-up and the benchmark iterate over. Every family's
#: algorithms: :data:`ALL_ALGORITHMS`.
ALGORITHMS = REDESCRIPTION_ALGORITHMS

#: Paid queries of an analyst's own on a two-view table (not miners: the Mine form, the
#: harness and the warm-up do not iterate over them). ``custom_query`` releases the noisy
#: 4-cell table of one query pair; ``region_map`` the noisy E11/E10/E01 counts of one query
#: pair per cell of the schema's declared location grid.
CUSTOM_QUERY, REGION_MAP = "custom_query", "region_map"
REDESCRIPTION_QUERIES = (CUSTOM_QUERY, REGION_MAP)
#: Algorithms whose redescriptions have literal-test queries (no trees) and, in strict mode,
#: a noisy 4-cell quality table per redescription (Serenade's and the custom query's).
LITERAL_QUERY_ALGORITHMS = SERENADE_ALGORITHMS + (CUSTOM_QUERY,)

#: PFS2 (Xu et al. 2015; strict and faithful) and the paper's "straightforward approach"
#: (no sampling, no pruning), for teaching.
PFS2, PFS2_BASELINE = "pfs2", "pfs2_straightforward"
SEQUENCE_ALGORITHMS = (PFS2, PFS2_BASELINE)

#: MC-GEN (strict: MC-GEN-DP; faithful: the published pipeline, NOT DP) and the floor
#: baseline (class-conditional independent noisy marginals; strict only).
MCGEN, FLOOR = "mcgen", "class_marginals"
SYNTHESIS_ALGORITHMS = (MCGEN, FLOOR)

#: Every registered algorithm, family by family.
ALL_ALGORITHMS = (REDESCRIPTION_ALGORITHMS + REDESCRIPTION_QUERIES + SEQUENCE_ALGORITHMS
                  + SYNTHESIS_ALGORITHMS)

#: Dataset kinds (the ledger's ``datasets.kind``): a two-view table (redescriptions), a
#: sequence dataset (frequent sequences), a labelled table (synthesis).
KIND_TWO_VIEW, KIND_SEQUENCES, KIND_TABLE = "two_view", "sequences", "table"
DATASET_KINDS = (KIND_TWO_VIEW, KIND_SEQUENCES, KIND_TABLE)

#: Short names of the parameters, as the form and the Runs page show them.
PARAMETER_SYMBOLS = MappingProxyType({
    "epsilon": "ε", "mode": "mode", "omega": "ω", "in_tr": "InTr", "rm_iter": "RMIter",
    "depth": "d", "tree_score": "score", "mc_iter": "MCIter", "sigma": "σ",
    "sigma_window": "σ window",
    "min_jaccard": "Γ.minJ", "max_pvalue": "Γ.pval", "min_support": "Γ.minSupp",
    "max_support": "Γ.maxSupp", "max_clauses": "maxClauses", "noise": "noise",
    "init_pairs": "I", "es_rounds": "K", "cs_rounds": "L", "steepness": "s",
    "budget_init": "ε_init share", "budget_ext": "ε_ext share", "min_acc": "min_acc",
    "memo_age": "memo_age", "max_attributes": "max attributes",
    # frequent sequences (PFS2)
    "theta": "θ", "zeta": "ζ", "eta": "η", "l1": "l1", "budget_records": "ε1 share",
    "budget_lengths": "ε2 share", "budget_max_length": "ε3 share", "budget_prune": "ε4 share",
    # synthesis (MC-GEN, floor)
    "k": "k", "feature_groups": "groups", "grouping": "grouping",
    "group_threshold": "group threshold", "cells": "cells", "grid_bins": "grid bins",
    "max_cells": "max cells", "budget_classes": "ε_Y share", "budget_features": "ε_F share",
    "budget_cell_counts": "counts share", "budget_cell_sums": "sums share",
    "fixed_point_bits": "bits", "min_eigenvalue": "λ_min", "shrinkage": "shrinkage",
    "marginal_bins": "bins", "histogram_bins": "histogram bins",
    "max_correlation_noise": "max correlation noise", "structure": "structure",
    # paid queries of the analyst's own
    "left_query": "left query", "right_query": "right query"})

_CONSTRAINTS = ("min_jaccard", "max_pvalue", "min_support", "max_support")


# ----------------------------------------------------------------------------- specs

def _implementation(what: str, key: str, attribute: str):
    # The binding of names to code lives beside the run path (dpcore.family); this lazy
    # import only serves callers that still ask a spec for its code (the app's forms).
    from dpcore import family

    return getattr(family.algorithm(key) if what == "algorithm" else family.dataset_kind(key),
                   attribute)


@dataclass(frozen=True)
class DatasetKindSpec:
    """One kind of dataset, by name: the ledger's ``datasets.kind``, its label and the
    schema file names that mark a folder of this kind. Its code (schema and data types,
    loaders) is the family's :class:`dpcore.family.DatasetKind` object.

    Attributes
    ----------
    key : str
        The ledger's ``datasets.kind``.
    family : str
        The built-in mining family whose algorithms mine it.
    label : str
        Display name.
    schema_files : tuple of str
        Schema file names that mark a dataset folder of this kind (first match wins).
    """

    key: str
    family: str
    label: str
    schema_files: tuple[str, ...]

    def resolve(self, what: str):
        """The kind object's ``schema_type``, ``data_type``, ``schema_to_dict``,
        ``schema_from_dict``, ``load_schema`` or ``load_data`` (for callers written before
        :mod:`dpcore.family`; new code asks :func:`dpcore.family.dataset_kind`)."""
        return _implementation("kind", self.key, what)


DATASET_KIND_SPECS: Mapping[str, DatasetKindSpec] = MappingProxyType({s.key: s for s in (
    DatasetKindSpec(key=KIND_TWO_VIEW, family=REDESCRIPTIONS, label="two-view table",
                    schema_files=("schema.json", "schema.toml")),
    DatasetKindSpec(key=KIND_SEQUENCES, family=SEQUENCES, label="sequence dataset",
                    schema_files=("sequence_schema.json",)),
    DatasetKindSpec(key=KIND_TABLE, family=SYNTHESIS, label="labelled table",
                    schema_files=("synthesis_schema.json",)),
)})


def dataset_kind_spec(kind: str) -> DatasetKindSpec:
    """The spec of dataset kind ``kind`` (ParameterError naming the known kinds otherwise)."""
    try:
        return DATASET_KIND_SPECS[kind]
    except (KeyError, TypeError):
        raise ParameterError(f"dataset kind must be one of {', '.join(DATASET_KINDS)}; "
                             f"got {kind!r}") from None


@dataclass(frozen=True)
class Preset:
    """A named setting of an algorithm (a paper's setting, a benchmark case).

    ``overrides`` are parameter values applied over the parameter type's defaults.
    """

    name: str
    label: str
    overrides: Mapping[str, object] = field(default_factory=dict)


#: What :meth:`AlgorithmSpec.resolve` names differently from the Algorithm protocol.
_SPEC_ATTRIBUTES = {"check": "prepare", "miner": "run"}


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
    summary_fields : tuple of str
        The parameters of the one-line summary (Runs page), in order; ``"split"``
        stands for a Serenade budget split init/ext/qual.
    uses_chain : bool
        Runs MCMC chains (MCIter applies).
    per_trial_progress : bool
        Reports progress trial by trial (the app shows one bar per trial).
    dataset_kind : str
        The kind of dataset it mines (:data:`DATASET_KINDS`); a run on another kind is
        refused before anything is charged.

    The code behind a spec (parameter type, budget plan, prepare, mine, result type, help
    texts) is its family's :class:`dpcore.family.Algorithm` object.
    """

    key: str
    family: str
    label: str
    blurb: str
    parameters: Mapping[str, tuple[str, ...]]
    presets: tuple[Preset, ...]
    summary_fields: tuple[str, ...] = ()
    uses_chain: bool = False
    per_trial_progress: bool = False
    dataset_kind: str = KIND_TWO_VIEW

    @property
    def modes(self) -> tuple[str, ...]:
        """The privacy modes this algorithm has (strict first)."""
        return tuple(m for m in MODES if m in self.parameters)

    def parameters_used(self, mode: str) -> tuple[str, ...]:
        """Parameter fields that matter in ``mode`` (raises ParameterError for a bad mode)."""
        if mode not in self.parameters:
            if mode in MODES:
                raise ParameterError(f"{self.label} has no {mode} mode; its modes: "
                                     f"{', '.join(self.modes)}")
            raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        return self.parameters[mode]

    def defaults(self) -> dict:
        """The default value of every parameter (the parameter type's field defaults)."""
        return self.resolve("params_type")(algorithm=self.key).to_dict()

    def help(self, name: str) -> str:
        """The one-line help of parameter ``name`` ("" if the family has none for it)."""
        return self.resolve("help_texts").get(name, "")

    def resolve(self, what: str):
        """The implementation's ``params_type``, ``result_type``, ``plan``, ``check`` (its
        ``prepare``), ``miner`` (prepare then mine, as one call ``miner(data, params,
        **kwargs)``) or ``help_texts`` (for callers written before :mod:`dpcore.family`; new
        code asks :func:`dpcore.family.algorithm`)."""
        return _implementation("algorithm", self.key, _SPEC_ATTRIBUTES.get(what, what))

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


def _tree_parameters(head: tuple[str, ...], chain: bool, strict_only: tuple[str, ...] = ()
                     ) -> dict[str, tuple[str, ...]]:
    body = head + ("depth",) + (("mc_iter",) if chain else ())
    tail = _CONSTRAINTS + ("max_clauses",)
    faithful = body + (("sigma", "sigma_window") if chain else ()) + tail
    return {STRICT: ("epsilon", "mode") + body + strict_only + tail + ("noise",),
            FAITHFUL: ("epsilon", "mode") + faithful}


def _serenade_parameters(rounds: str, extra: tuple[str, ...], faithful_extra: tuple[str, ...]
                         ) -> dict[str, tuple[str, ...]]:
    body = ("init_pairs", rounds, "steepness", "budget_init", "budget_ext") + extra + \
        ("max_attributes",)
    return {STRICT: ("epsilon", "mode") + body + _CONSTRAINTS + ("noise",),
            FAITHFUL: ("epsilon", "mode") + body + faithful_extra + _CONSTRAINTS}


_PFS2_PARAMETERS = ("epsilon", "mode", "theta", "zeta", "eta", "l1", "budget_records",
                    "budget_lengths", "budget_max_length", "budget_prune")
_BASELINE_PARAMETERS = ("epsilon", "mode", "theta", "eta", "l1", "budget_records",
                        "budget_lengths", "budget_max_length")
_MCGEN_FAITHFUL = ("epsilon", "mode", "k", "feature_groups", "grouping", "group_threshold")
_MCGEN_STRICT = _MCGEN_FAITHFUL + ("cells", "grid_bins", "max_cells", "budget_classes",
                                   "budget_features", "budget_cell_counts", "budget_cell_sums",
                                   "fixed_point_bits", "min_eigenvalue", "shrinkage",
                                   "histogram_bins", "max_correlation_noise", "structure")


_SPECS: dict[str, AlgorithmSpec] = {s.key: s for s in (
    AlgorithmSpec(
        key=MCMCTREEPAIR, family=REDESCRIPTIONS, label="MCMCTreePair",
        blurb="samples a pair of trees jointly by MCMC, then extracts redescriptions from "
              "one noisy leaf×leaf table per trial",
        parameters=_tree_parameters(("omega", "in_tr"), chain=True,
                                    strict_only=("tree_score",)),
        presets=(Preset(MCMCTREEPAIR, "MCMCTreePair (ω = 0.1)", {"omega": 0.1}),
                 Preset(f"{MCMCTREEPAIR}-w0.3", "MCMCTreePair (ω = 0.3)", {"omega": 0.3}),
                 Preset(f"{MCMCTREEPAIR}-w0.5", "MCMCTreePair (ω = 0.5)", {"omega": 0.5}),
                 Preset(f"{MCMCTREEPAIR}-w0.7", "MCMCTreePair (ω = 0.7)", {"omega": 0.7}),
                 Preset(f"{MCMCTREEPAIR}-count", "MCMCTreePair, count-scale score (ω = 0.1)",
                        {"omega": 0.1, "tree_score": COUNT_SCORE}),
                 Preset(f"{MCMCTREEPAIR}-paper", "MCMCTreePair, paper score (ω = 0.1)",
                        {"omega": 0.1, "tree_score": PAPER_SCORE}),
                 Preset(f"{MCMCTREEPAIR}-paper-w0.5", "MCMCTreePair, paper score (ω = 0.5)",
                        {"omega": 0.5, "tree_score": PAPER_SCORE}),
                 Preset(f"{MCMCTREEPAIR}-count-w0.5",
                        "MCMCTreePair, count-scale score (ω = 0.5)",
                        {"omega": 0.5, "tree_score": COUNT_SCORE}),
                 Preset("paper", "MCMCTreePair (InTr 20)",
                        {"in_tr": 20, "rm_iter": 1, "mc_iter": 10_000, "depth": 4}),
                 Preset("interactive", "MCMCTreePair (InTr 4)",
                        {"in_tr": 4, "rm_iter": 1, "mc_iter": 10_000, "depth": 4})),
        summary_fields=("in_tr", "omega", "depth", "mc_iter"),
        uses_chain=True, per_trial_progress=True),
    AlgorithmSpec(
        key=ALTMCMC, family=REDESCRIPTIONS, label="AltMCMC",
        blurb="alternates trees on the two views, each sampled by MCMC",
        parameters=_tree_parameters(("in_tr", "rm_iter"), chain=True),
        presets=(Preset(ALTMCMC, "AltMCMC (InTr = 1, RMIter = 4)", {"in_tr": 1, "rm_iter": 4}),
                 Preset(f"{ALTMCMC}-stable", "AltMCMC stable (InTr = 4, RMIter = 1)",
                        {"in_tr": 4, "rm_iter": 1}),
                 Preset(f"{ALTMCMC}-2x2", "AltMCMC (InTr = 2, RMIter = 2)",
                        {"in_tr": 2, "rm_iter": 2}),
                 Preset("paper-stable", "AltMCMC stable (InTr 20, RMIter 1)",
                        {"in_tr": 20, "rm_iter": 1, "mc_iter": 10_000, "depth": 4}),
                 Preset("paper-default", "AltMCMC default (InTr 1, RMIter 20)",
                        {"in_tr": 1, "rm_iter": 20, "mc_iter": 10_000, "depth": 4}),
                 Preset("interactive", "AltMCMC (InTr 4)",
                        {"in_tr": 4, "rm_iter": 1, "mc_iter": 10_000, "depth": 4})),
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
                 Preset(f"{ALTEXPM}-2x2", "AltExpM (InTr = 2, RMIter = 2)",
                        {"in_tr": 2, "rm_iter": 2}),
                 Preset("paper-stable", "AltExpM stable (InTr 20, RMIter 1)",
                        {"in_tr": 20, "rm_iter": 1, "mc_iter": 10_000, "depth": 4}),
                 Preset("paper-default", "AltExpM default (InTr 1, RMIter 20)",
                        {"in_tr": 1, "rm_iter": 20, "mc_iter": 10_000, "depth": 4}),
                 Preset("interactive", "AltExpM (InTr 4)",
                        {"in_tr": 4, "rm_iter": 1, "mc_iter": 10_000, "depth": 4})),
        summary_fields=("in_tr", "rm_iter", "depth"),
        per_trial_progress=True),
    AlgorithmSpec(
        key=SERENADE_ES, family=REDESCRIPTIONS, label="SerenadeES",
        blurb="grows literal queries greedily: each round extends one redescription with "
              "one exponential-mechanism draw over all extensions",
        parameters=_serenade_parameters("es_rounds", (), ("memo_age",)),
        presets=(Preset(SERENADE_ES, "SerenadeES (I = 20, K = 80)", {}),
                 Preset(f"{SERENADE_ES}-i5", "SerenadeES (I = 5, K = 80)", {"init_pairs": 5}),
                 Preset(f"{SERENADE_ES}-i5-k20", "SerenadeES (I = 5, K = 20)",
                        {"init_pairs": 5, "es_rounds": 20}),
                 Preset("paper", "SerenadeES (I 20, K 80)",
                        {"init_pairs": 20, "es_rounds": 80, "steepness": 0.02,
                         "budget_init": 0.45, "budget_ext": 0.45}),
                 Preset("interactive", "SerenadeES (I 20, K 80)",
                        {"init_pairs": 20, "es_rounds": 80})),
        summary_fields=("init_pairs", "es_rounds", "steepness",
                                                   "split")),
    AlgorithmSpec(
        key=SERENADE_CS, family=REDESCRIPTIONS, label="SerenadeCS",
        blurb="grows literal queries greedily: every redescription is extended each round "
              "until its noisy Jaccard drops",
        parameters=_serenade_parameters("cs_rounds", ("min_acc",), ()),
        presets=(Preset(SERENADE_CS, "SerenadeCS (I = 20, L = 4)", {}),
                 Preset(f"{SERENADE_CS}-i5", "SerenadeCS (I = 5, L = 4)", {"init_pairs": 5}),
                 Preset("paper", "SerenadeCS (I 20, L 4)",
                        {"init_pairs": 20, "cs_rounds": 4, "steepness": 0.02,
                         "budget_init": 0.45, "budget_ext": 0.45}),
                 Preset("interactive", "SerenadeCS (I 20, L 4)",
                        {"init_pairs": 20, "cs_rounds": 4})),
        summary_fields=("init_pairs", "cs_rounds", "steepness",
                                                   "split", "min_acc")),

    # ------------------------------------------------------------ paid queries of one's own
    AlgorithmSpec(
        key=CUSTOM_QUERY, family=REDESCRIPTIONS, label="custom query",
        blurb="the noisy 4-cell table (|E11|, |E10|, |E01|, |E00|) of one query pair the "
              "analyst wrote, on public attributes and grid thresholds, with one ε",
        parameters={STRICT: ("epsilon", "mode", "left_query", "right_query")},
        presets=(Preset("interactive", "custom query (ε = 0.1)", {"epsilon": 0.1}),),
        summary_fields=("left_query", "right_query")),
    AlgorithmSpec(
        key=REGION_MAP, family=REDESCRIPTIONS, label="noisy map",
        blurb="noisy counts of E11, E10 and E01 of one query pair in every cell of the "
              "schema's declared location grid (one histogram, one ε)",
        parameters={STRICT: ("epsilon", "mode", "left_query", "right_query")},
        presets=(Preset("interactive", "noisy map (ε = 0.5)", {"epsilon": 0.5}),),
        summary_fields=("left_query", "right_query")),

    # ------------------------------------------------------------ frequent sequences
    AlgorithmSpec(
        key=PFS2, family=SEQUENCES, label="PFS2",
        blurb="frequent sequences level by level: a level's candidates are pruned before "
              "their noisy supports are paid for where that is less noisy (strict: on all "
              "records, decided from public and released values; faithful: on a disjoint "
              "sample of the records, as the paper)",
        parameters={STRICT: _PFS2_PARAMETERS, FAITHFUL: _PFS2_PARAMETERS},
        presets=(Preset(PFS2, "PFS2 (θ = 0.02, the paper's split)", {}),
                 Preset("interactive", "PFS2 (θ = 0.02)", {"theta": 0.02})),
        summary_fields=("theta", "zeta", "eta", "l1"),
        dataset_kind=KIND_SEQUENCES),
    AlgorithmSpec(
        key=PFS2_BASELINE, family=SEQUENCES, label="straightforward (baseline)",
        blurb="the paper's straightforward approach: noisy supports of every candidate on "
              "all records, no sampling and no pruning (teaching baseline)",
        parameters={STRICT: _BASELINE_PARAMETERS, FAITHFUL: _BASELINE_PARAMETERS},
        presets=(Preset(PFS2_BASELINE, "straightforward (θ = 0.02)", {}),
                 Preset("interactive", "straightforward (θ = 0.02)", {"theta": 0.02})),
        summary_fields=("theta", "eta", "l1"),
        dataset_kind=KIND_SEQUENCES),
    # ------------------------------------------------------------ synthetic data
    AlgorithmSpec(
        key=MCGEN, family=SYNTHESIS, label="MC-GEN",
        blurb="models each class as independent feature groups, each a mixture of Gaussians "
              "over cells of records, and samples a synthetic table from the noisy models",
        parameters={STRICT: _MCGEN_STRICT, FAITHFUL: _MCGEN_FAITHFUL},
        presets=(Preset(MCGEN, "MC-GEN-DP (k = 100, grid cells)", {}),
                 Preset("interactive", "MC-GEN-DP (k = 100)", {"k": 100}),
                 Preset(f"{MCGEN}-paper", "MC-GEN as published (k = 100, NOT DP)",
                        {"mode": FAITHFUL, "k": 100})),
        summary_fields=("k", "cells", "max_cells", "grouping"),
        dataset_kind=KIND_TABLE),
    AlgorithmSpec(
        key=FLOOR, family=SYNTHESIS, label="independent marginals per class (floor)",
        blurb="draws every feature independently from a noisy per-class histogram (no "
              "correlations): the floor any method that models correlations must beat",
        parameters={STRICT: ("epsilon", "mode", "budget_classes", "marginal_bins")},
        presets=(Preset(FLOOR, "floor (16 bins)", {}),
                 Preset("interactive", "floor (16 bins)", {"marginal_bins": 16})),
        summary_fields=("marginal_bins",),
        dataset_kind=KIND_TABLE),
)}

#: Every registered algorithm's spec, by key: the built-in ones above, then those of the
#: families registered at run time (:func:`register_family`). A live view: generic code
#: (the run path, the CLI, batch plans) reads it at use, never copies it at import.
ALGORITHM_SPECS: Mapping[str, AlgorithmSpec] = MappingProxyType(_SPECS)
#: Labels by key (a live view too).
ALGORITHM_LABELS: Mapping[str, str] = MappingProxyType(_LABELS := {k: s.label
                                                                  for k, s in _SPECS.items()})

#: Families registered at run time (beside the three built-in ones), by key.
_REGISTERED: dict[str, object] = {}


def registered_families() -> dict[str, object]:
    """The family objects registered at run time, by key (:func:`register_family`)."""
    return dict(_REGISTERED)


def family_keys() -> tuple[str, ...]:
    """Every family's key: :data:`FAMILIES`, then those registered at run time."""
    return FAMILIES + tuple(k for k in _REGISTERED if k not in FAMILIES)


def register_family(family) -> Callable[[], None]:
    """Register a mining family object (:class:`dpcore.family.Family`) at run time.

    Its algorithms join :data:`ALGORITHM_SPECS` and every generic path (the run path, the
    command line's ``mine``, batch plans, :func:`family_algorithms`) offers them. Its dataset
    kind must be one the ledger already stores (:data:`DATASET_KINDS`: a new kind needs a
    ledger migration first).

    Returns
    -------
    callable
        ``undo()``: removes the family and its algorithms again.

    Raises
    ------
    ParameterError
        A family or algorithm key that is taken, a spec of another family, or a kind the
        ledger does not know; nothing is registered.
    """
    key = family.key
    if key in FAMILIES or key in _REGISTERED:
        raise ParameterError(f"a family named {key!r} is registered already")
    if family.kind.key not in DATASET_KINDS:
        raise ParameterError(f"family {key!r} mines a {family.kind.key!r} dataset; the "
                             f"ledger stores {', '.join(DATASET_KINDS)} (a new kind needs a "
                             "ledger migration)")
    specs = tuple(family.specs)
    for spec in specs:
        if spec.key in _SPECS:
            raise ParameterError(f"algorithm {spec.key!r} is registered already")
        if spec.family != key or spec.dataset_kind != family.kind.key:
            raise ParameterError(f"algorithm {spec.key!r} must name family {key!r} and "
                                 f"kind {family.kind.key!r}")
        if spec.key not in family.algorithms:
            raise ParameterError(f"family {key!r} declares {spec.key!r} but implements "
                                 "no algorithm of that key")
    _REGISTERED[key] = family
    for spec in specs:
        _SPECS[spec.key] = spec
        _LABELS[spec.key] = spec.label

    def undo() -> None:
        _REGISTERED.pop(key, None)
        for spec in specs:
            _SPECS.pop(spec.key, None)
            _LABELS.pop(spec.key, None)

    return undo


def algorithm_spec(key: str) -> AlgorithmSpec:
    """The spec of ``key`` (ParameterError naming the known algorithms otherwise)."""
    try:
        return ALGORITHM_SPECS[key]
    except (KeyError, TypeError):
        raise ParameterError(f"algorithm must be one of {', '.join(ALGORITHM_SPECS)}; "
                             f"got {key!r}") from None


def family_algorithms(family: str) -> tuple[str, ...]:
    """The algorithms of one mining family, in registry order."""
    families = family_keys()
    if family not in families:
        raise ParameterError(f"family must be one of {', '.join(families)}; got {family!r}")
    return tuple(k for k, s in ALGORITHM_SPECS.items() if s.family == family)


def presets(names: tuple[str, ...] | None = None, *, family: str = REDESCRIPTIONS
            ) -> dict[str, tuple[AlgorithmSpec, Preset]]:
    """Every preset of ``family`` whose name is globally unique (the redescription
    harness's ``--algorithms`` specs by default)."""
    out = {}
    for spec in ALGORITHM_SPECS.values():
        if spec.family != family:
            continue
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


def tree_score_of(params: Mapping) -> str:
    """The pair score a stored tree run's chain used: results stored before the choice
    existed have no ``tree_score`` and used the paper's score; faithful mode always does."""
    if params.get("mode") == FAITHFUL:
        return PAPER_SCORE
    return str(params.get("tree_score", PAPER_SCORE))


def by_mode(mode: str, *, strict, faithful):
    """Pick by privacy mode without spelling the mode names elsewhere."""
    if mode == STRICT:
        return strict
    if mode == FAITHFUL:
        return faithful
    raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")

