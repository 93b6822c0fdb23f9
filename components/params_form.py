"""The Mine page's parameter form, and the configured run read from session state.

The widgets keep their values in session state under the ``mine_*`` keys of
:data:`DEFAULT_STATE`. :func:`persist_state` (called by ``app.py`` on every rerun)
re-assigns those keys so they survive page switches: the budget meter in the
sidebar prices the configured run from them on every page
(:func:`params_from_state`), and the form comes back as it was left.

The form shows only the parameters the chosen algorithm uses
(:func:`parameters_used`): the tree miners' trials, depth and MCMC settings, or
Serenade's I, K / L, steepness and budget split. Parameters of the other family
keep their values in session state meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping

import streamlit as st

from dpcore.ledger import DatasetRecord
from dpcore.privacy.policy import allowed_modes
from dpcore.redescriptions.params import HELP, MiningParams
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALGORITHMS,
    FAITHFUL,
    MODE_LABELS,
    SERENADE_ALGORITHMS,
    STRICT,
    algorithm_spec,
)

from .session import current_role

__all__ = ["EPSILON_GRID", "DEFAULT_STATE", "ALGORITHM_GUIDE", "FAITHFUL_TREE_WARNING",
           "FAITHFUL_SERENADE_WARNING", "persist_state", "params_from_state",
           "demo_seed_from_state", "nearest_grid_epsilon", "quality_share",
           "render_params_form"]

_D = MiningParams()

#: The ε slider's log grid (1-2-3-5 per decade, 0.01 … 10).
EPSILON_GRID = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
EPSILON_MIN, EPSILON_MAX = EPSILON_GRID[0], EPSILON_GRID[-1]

#: Alt* settings of the paper: "stable" (InTr = k, RMIter = 1), "default" (InTr = 1, RMIter = k).
SETTINGS = ("stable", "default", "custom")
_SETTING_LABELS = {"stable": "stable: InTr = k, RMIter = 1",
                   "default": "default: InTr = 1, RMIter = k",
                   "custom": "custom InTr and RMIter"}

#: Widget keys and their starting values (the paper's defaults, from MiningParams).
DEFAULT_STATE: dict[str, object] = {
    "mine_algorithm": _D.algorithm,
    "mine_epsilon": _D.epsilon,
    "mine_epsilon_slider": _D.epsilon,
    "mine_omega": _D.omega,
    "mine_mode": _D.mode,
    "mine_setting": "stable",
    "mine_k": _D.in_tr,
    "mine_in_tr": _D.in_tr,
    "mine_rm_iter": _D.rm_iter,
    "mine_depth": _D.depth,
    "mine_mc_iter": _D.mc_iter,
    "mine_sigma": _D.sigma,
    "mine_sigma_window": _D.sigma_window,
    "mine_min_jaccard": _D.min_jaccard,
    "mine_max_pvalue": _D.max_pvalue,
    "mine_min_support": _D.min_support,
    "mine_max_support": _D.max_support,
    "mine_max_clauses": _D.max_clauses,
    "mine_noise": _D.noise,
    "mine_init_pairs": _D.init_pairs,
    "mine_es_rounds": _D.es_rounds,
    "mine_cs_rounds": _D.cs_rounds,
    "mine_steepness": _D.steepness,
    "mine_budget_init": _D.budget_init,
    "mine_budget_ext": _D.budget_ext,
    "mine_min_acc": _D.min_acc,
    "mine_memo_age": _D.memo_age,
    "mine_max_attributes": _D.max_attributes,
    "mine_demo_seed_on": False,
    "mine_demo_seed": 20231,
}

ALGORITHM_GUIDE = """
**Which algorithm when** (from the papers' experiments):

* **MCMCTreePair** samples the left and right trees jointly. It tends to do better at
  **small ε** and on **small data**, where splitting the budget over many separate
  trees leaves too little for each.
* **AltMCMC** and **AltExpM** alternate between views, one tree at a time. At **ε = 1 on
  larger data** they tend to find more and better redescriptions.
* **SerenadeES** and **SerenadeCS** (Karjalainen, Galbrun & Miettinen 2022) build no
  trees: they draw I initial literal pairs, then grow the queries greedily with ∧ / ∨, one
  exponential-mechanism draw per step. ES spends each of its K rounds on the one best
  extension among all redescriptions; CS extends every redescription in each of its L
  rounds and stops one whose noisy Jaccard falls below min_acc. They return at most I
  redescriptions, with short readable queries.
* Privacy guarantee: **AltExpM, SerenadeES and SerenadeCS are exactly ε-DP in strict
  mode**. The MCMC-based algorithms (AltMCMC, MCMCTreePair) are ε-DP only **upon
  convergence of the chain** (a longer MCIter brings the sample closer to the intended
  distribution).
"""

FAITHFUL_TREE_WARNING = (
    "**faithful mode is not strictly ε-DP**: it reproduces the paper's code, which reads raw "
    "data unpaid at several steps (data-derived split thresholds and targets, a "
    "data-dependent stopping rule). It also charges **1.5×** for each extraction (three "
    "noisy histograms at scale 2/ε each), so the run costs more than ε. Use it only to "
    "compare with the paper.")

FAITHFUL_SERENADE_WARNING = (
    "**faithful mode is not strictly ε-DP**: it reproduces the original Serenade code, which "
    "reads raw data unpaid (the true row count, literal bins cut at data quantiles and, for "
    "SerenadeES, the exact quality of the memoised extensions to choose among them). It "
    "costs exactly ε but releases only the noisy |E11| and |E10|+|E01| of each "
    "redescription: its supports |q_L|, |q_R| and p-values are **not released**. Use it "
    "only to compare with the original.")

def quality_share(budget_init: float, budget_ext: float) -> float:
    """Serenade's ε_qual share, 1 − budget_init − budget_ext: what pays the noisy counts."""
    return 1.0 - float(budget_init) - float(budget_ext)


def nearest_grid_epsilon(value: float) -> float:
    """The grid ε closest to ``value`` on a log scale (for the slider)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return _D.epsilon
    if not math.isfinite(v) or v <= 0:
        return EPSILON_MIN
    return min(EPSILON_GRID, key=lambda g: abs(math.log(g) - math.log(v)))


def persist_state(state: MutableMapping | None = None) -> None:
    """Give every ``mine_*`` key its default once, and re-assign it so it survives page switches."""
    state = st.session_state if state is None else state
    for key, default in DEFAULT_STATE.items():
        state[key] = state[key] if key in state else default
    if state["mine_epsilon_slider"] not in EPSILON_GRID:
        state["mine_epsilon_slider"] = nearest_grid_epsilon(state["mine_epsilon"])


def params_from_state(state: MutableMapping | None = None) -> MiningParams:
    """The run configured on the Mine page (not validated: call ``.validate()``).

    Missing keys take the paper's defaults, so the meter can price a run before the
    Mine page was ever opened.
    """
    state = st.session_state if state is None else state

    def get(key):
        return state[key] if key in state else DEFAULT_STATE[key]

    algorithm = str(get("mine_algorithm"))
    if "rm_iter" not in algorithm_spec(algorithm).parameters_used(STRICT):
        in_tr, rm_iter = int(get("mine_in_tr")), 1
    else:
        setting = get("mine_setting")
        if setting == "stable":
            in_tr, rm_iter = int(get("mine_k")), 1
        elif setting == "default":
            in_tr, rm_iter = 1, int(get("mine_k"))
        else:
            in_tr, rm_iter = int(get("mine_in_tr")), int(get("mine_rm_iter"))
    return MiningParams(
        algorithm=algorithm, epsilon=float(get("mine_epsilon")), omega=float(get("mine_omega")),
        mode=str(get("mine_mode")), in_tr=in_tr, rm_iter=rm_iter, depth=int(get("mine_depth")),
        mc_iter=int(get("mine_mc_iter")), sigma=float(get("mine_sigma")),
        sigma_window=int(get("mine_sigma_window")),
        min_jaccard=float(get("mine_min_jaccard")), max_pvalue=float(get("mine_max_pvalue")),
        min_support=float(get("mine_min_support")), max_support=float(get("mine_max_support")),
        max_clauses=int(get("mine_max_clauses")), noise=str(get("mine_noise")),
        init_pairs=int(get("mine_init_pairs")), es_rounds=int(get("mine_es_rounds")),
        cs_rounds=int(get("mine_cs_rounds")), steepness=float(get("mine_steepness")),
        budget_init=float(get("mine_budget_init")), budget_ext=float(get("mine_budget_ext")),
        min_acc=float(get("mine_min_acc")), memo_age=int(get("mine_memo_age")),
        max_attributes=int(get("mine_max_attributes")))


def demo_seed_from_state(record: DatasetRecord | None,
                         state: MutableMapping | None = None) -> int | None:
    """The labelled demo seed, only on a public-demo dataset with the option on; else None."""
    state = st.session_state if state is None else state
    if record is None or not record.public_demo or not state.get("mine_demo_seed_on"):
        return None
    return int(state.get("mine_demo_seed", DEFAULT_STATE["mine_demo_seed"]))


def _slider_moved() -> None:
    st.session_state["mine_epsilon"] = float(st.session_state["mine_epsilon_slider"])


def _number_typed() -> None:
    st.session_state["mine_epsilon_slider"] = nearest_grid_epsilon(st.session_state["mine_epsilon"])


def render_params_form(record: DatasetRecord) -> None:
    """Draw the parameter widgets (values live in the ``mine_*`` session keys)."""
    st.selectbox("Algorithm", ALGORITHMS, key="mine_algorithm",
                 format_func=ALGORITHM_LABELS.get, help=HELP["algorithm"])
    with st.expander("Which algorithm when?"):
        st.markdown(ALGORITHM_GUIDE)
    algorithm = st.session_state["mine_algorithm"]
    serenade = algorithm in SERENADE_ALGORITHMS

    left, right = st.columns([3, 1])
    left.select_slider("ε (log scale)", options=EPSILON_GRID, key="mine_epsilon_slider",
                       format_func=lambda v: f"{v:g}", on_change=_slider_moved,
                       help=HELP["epsilon"])
    right.number_input("ε (exact)", min_value=EPSILON_MIN, max_value=EPSILON_MAX, step=0.01,
                       format="%.3f", key="mine_epsilon", on_change=_number_typed,
                       help="Type any ε in [0.01, 10]; the slider follows to the nearest "
                            "grid value. The run uses this exact number.")

    spec = algorithm_spec(algorithm)
    if serenade:
        _serenade_widgets(spec.parameters_used(STRICT))
    else:
        _tree_widgets(spec.parameters_used(STRICT))

    modes = allowed_modes(record, current_role())
    if st.session_state.get("mine_mode") not in modes:
        st.session_state["mine_mode"] = modes[0]
    st.radio("Privacy mode", modes, key="mine_mode", format_func=MODE_LABELS.get,
             help=HELP["mode"])
    if len(modes) == 1:
        st.caption("Faithful mode (not ε-DP: it releases values read from the raw data) is "
                   "for the data owner only on private datasets.")
    faithful = st.session_state["mine_mode"] == FAITHFUL
    if serenade:
        if faithful:
            st.warning(FAITHFUL_SERENADE_WARNING)
            if "memo_age" in spec.parameters_used(FAITHFUL):
                st.number_input("memo_age (rounds a memoised extension lives; faithful only)",
                                min_value=1, max_value=100_000, step=5, key="mine_memo_age",
                                help=HELP["memo_age"])
    else:
        if faithful:
            st.warning(FAITHFUL_TREE_WARNING)
        _sigma_widgets(strict=not faithful)

    with st.expander("Constraints Γ"):
        c1, c2 = st.columns(2)
        c1.number_input("Γ.minJ", min_value=0.0, max_value=1.0, step=0.05, format="%.2f",
                        key="mine_min_jaccard", help=HELP["min_jaccard"])
        c2.number_input("Γ.pval", min_value=1e-12, max_value=1.0, step=0.005, format="%.3f",
                        key="mine_max_pvalue", help=HELP["max_pvalue"]
                        + (" Faithful Serenade releases no p-value, so this filter does "
                           "not apply there." if serenade else ""))
        c1.number_input("Γ.minSupp (rows)", min_value=0.0, step=10.0, format="%.0f",
                        key="mine_min_support", help=HELP["min_support"])
        c2.number_input("Γ.maxSupp (share)", min_value=0.01, max_value=1.0, step=0.05,
                        format="%.2f", key="mine_max_support", help=HELP["max_support"])
        if not serenade:
            c1.number_input("maxClauses", min_value=1, max_value=10, step=1,
                            key="mine_max_clauses", help=HELP["max_clauses"])

    if record.public_demo:
        c1, c2 = st.columns([3, 1])
        c1.checkbox("Demo seed — public demo data only: fixed noise for tests and "
                    "reproducible demos, never for real releases", key="mine_demo_seed_on")
        c2.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="mine_demo_seed",
                        disabled=not st.session_state["mine_demo_seed_on"])


def _tree_widgets(used: tuple[str, ...]) -> None:
    """Trials (and ω or alternations), depth and MCIter of the tree miners (``used``:
    the algorithm's strict-mode parameters, from the registry)."""
    if "omega" in used:
        c1, c2 = st.columns(2)
        c1.slider("ω (share of each trial's ε for the tree pair)", min_value=0.01,
                  max_value=0.99, step=0.01, key="mine_omega", help=HELP["omega"])
        c2.number_input("InTr (trials)", min_value=1, max_value=10_000, step=1,
                        key="mine_in_tr", help=HELP["in_tr"])
    else:
        st.radio("Setting", SETTINGS, key="mine_setting", horizontal=True,
                 format_func=_SETTING_LABELS.get,
                 help="The paper's two settings for the alternating algorithms: 'stable' "
                      "runs k independent trials of one alternation; 'default' runs one "
                      "trial of k alternations. " + HELP["rm_iter"])
        if st.session_state["mine_setting"] == "custom":
            c1, c2 = st.columns(2)
            c1.number_input("InTr (initial targets)", min_value=1, max_value=10_000, step=1,
                            key="mine_in_tr", help=HELP["in_tr"])
            c2.number_input("RMIter (alternations)", min_value=1, max_value=1_000, step=1,
                            key="mine_rm_iter", help=HELP["rm_iter"])
        else:
            st.number_input("k", min_value=1, max_value=1_000, step=1, key="mine_k",
                            help="InTr = k (stable) or RMIter = k (default).")

    c1, c2 = st.columns(2)
    c1.slider("Depth d", min_value=1, max_value=8, step=1, key="mine_depth", help=HELP["depth"])
    c2.number_input("MCIter", min_value=1, max_value=10_000_000, step=1000, key="mine_mc_iter",
                    help=HELP["mc_iter"] + ("" if "mc_iter" in used
                                            else " Not used by this algorithm (no chain)."))


def _sigma_widgets(strict: bool) -> None:
    """σ and its window: the faithful chains' stopping rule (shown disabled in strict mode)."""
    c1, c2 = st.columns(2)
    c1.number_input("σ (stopping variance; faithful only)", min_value=1e-9, max_value=1e6,
                    step=0.001, format="%.4f", key="mine_sigma", help=HELP["sigma"],
                    disabled=strict)
    c2.number_input("σ window k (faithful only)", min_value=2, max_value=10_000_000, step=50,
                    key="mine_sigma_window", help=HELP["sigma_window"], disabled=strict)
    if strict:
        st.caption("Strict mode runs exactly MCIter iterations: a data-dependent stopping "
                   "rule (σ) would leak, so σ applies in faithful mode only.")


def _serenade_widgets(used: tuple[str, ...]) -> None:
    """I, K (ES) or L (CS), s, the budget split, min_acc (CS) and the query size (``used``:
    the algorithm's strict-mode parameters, from the registry)."""
    c1, c2, c3 = st.columns(3)
    c1.number_input("I (initial pairs)", min_value=1, max_value=1_000, step=1,
                    key="mine_init_pairs", help=HELP["init_pairs"])
    if "es_rounds" in used:
        c2.number_input("K (extension rounds)", min_value=1, max_value=100_000, step=10,
                        key="mine_es_rounds", help=HELP["es_rounds"])
    else:
        c2.number_input("L (extension rounds)", min_value=1, max_value=1_000, step=1,
                        key="mine_cs_rounds", help=HELP["cs_rounds"])
    c3.number_input("s (sigmoid steepness)", min_value=0.001, max_value=1.0, step=0.005,
                    format="%.3f", key="mine_steepness", help=HELP["steepness"])

    c1, c2, c3 = st.columns(3)
    c1.number_input("budget_init: share of ε for the initial pairs", min_value=0.01,
                    max_value=0.98, step=0.05, format="%.2f", key="mine_budget_init",
                    help=HELP["budget_init"])
    c2.number_input("budget_ext: share of ε for the extensions", min_value=0.01,
                    max_value=0.98, step=0.05, format="%.2f", key="mine_budget_ext",
                    help=HELP["budget_ext"])
    init, ext = st.session_state["mine_budget_init"], st.session_state["mine_budget_ext"]
    rest = quality_share(init, ext)
    c3.metric("ε_qual share (noisy counts)", f"{rest:.2f}",
              help="1 − budget_init − budget_ext: pays the noisy counts of the results "
                   "(and, in strict mode, a noisy row count).")
    if rest <= 0:
        st.error(f"budget_init + budget_ext must be below 1: {init:g} + {ext:g} leaves no "
                 "ε_qual for the noisy counts. Lower budget_init or budget_ext.")

    c1, c2 = st.columns(2)
    if "min_acc" in used:
        c1.number_input("min_acc (smallest noisy J that keeps extending)", min_value=0.0,
                        max_value=1.0, step=0.05, format="%.2f", key="mine_min_acc",
                        help=HELP["min_acc"])
    c2.number_input("max_attributes (per query)", min_value=1, max_value=16, step=1,
                    key="mine_max_attributes", help=HELP["max_attributes"])
