"""The Mine page's parameter form, and the configured run read from session state.

The widgets keep their values in session state under the ``mine_*`` keys of
:data:`DEFAULT_STATE`. :func:`persist_state` (called by ``app.py`` on every rerun)
re-assigns those keys so they survive page switches: the budget meter in the
sidebar prices the configured run from them on every page
(:func:`params_from_state`), and the form comes back as it was left.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping

import streamlit as st

from dpcore.ledger import DatasetRecord
from dpcore.params import ALGORITHM_LABELS, ALGORITHMS, HELP, MiningParams

__all__ = ["EPSILON_GRID", "DEFAULT_STATE", "ALGORITHM_GUIDE", "persist_state",
           "params_from_state", "demo_seed_from_state", "nearest_grid_epsilon",
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
_MODE_LABELS = {"strict": "strict (default): every step is ε-DP",
                "faithful": "faithful — not strictly ε-DP: reproduces the paper's code"}

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
    "mine_demo_seed_on": False,
    "mine_demo_seed": 20231,
}

ALGORITHM_GUIDE = """
**Which algorithm when** (from the paper's experiments):

* **MCMCTreePair** samples the left and right trees jointly. It tends to do better at
  **small ε** and on **small data**, where splitting the budget over many separate
  trees leaves too little for each.
* **AltMCMC** and **AltExpM** alternate between views, one tree at a time. At **ε = 1 on
  larger data** they tend to find more and better redescriptions.
* Privacy guarantee: **AltExpM is exactly ε-DP in strict mode**. The MCMC-based
  algorithms (AltMCMC, MCMCTreePair) are ε-DP only **upon convergence of the chain**
  (a longer MCIter brings the sample closer to the intended distribution).
"""


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
    if algorithm == "mcmctreepair":
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
        max_clauses=int(get("mine_max_clauses")), noise=str(get("mine_noise")))


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

    left, right = st.columns([3, 1])
    left.select_slider("ε (log scale)", options=EPSILON_GRID, key="mine_epsilon_slider",
                       format_func=lambda v: f"{v:g}", on_change=_slider_moved,
                       help=HELP["epsilon"])
    right.number_input("ε (exact)", min_value=EPSILON_MIN, max_value=EPSILON_MAX, step=0.01,
                       format="%.3f", key="mine_epsilon", on_change=_number_typed,
                       help="Type any ε in [0.01, 10]; the slider follows to the nearest "
                            "grid value. The run uses this exact number.")

    if algorithm == "mcmctreepair":
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
                    help=HELP["mc_iter"] + (" Not used by AltExpM." if algorithm == "altexpm"
                                            else ""))

    st.radio("Privacy mode", ("strict", "faithful"), key="mine_mode",
             format_func=_MODE_LABELS.get, help=HELP["mode"])
    if st.session_state["mine_mode"] == "faithful":
        st.warning("**faithful mode is not strictly ε-DP**: it reproduces the paper's code, "
                   "which reads raw data unpaid at several steps (data-derived split "
                   "thresholds and targets, a data-dependent stopping rule). It also "
                   "charges **1.5×** for each extraction (three noisy histograms at "
                   "scale 2/ε each), so the run costs more than ε. Use it only to compare "
                   "with the paper.")
    strict = st.session_state["mine_mode"] != "faithful"
    c1, c2 = st.columns(2)
    c1.number_input("σ (stopping variance; faithful only)", min_value=1e-9, max_value=1e6,
                    step=0.001, format="%.4f", key="mine_sigma", help=HELP["sigma"],
                    disabled=strict)
    c2.number_input("σ window k (faithful only)", min_value=2, max_value=10_000_000, step=50,
                    key="mine_sigma_window", help=HELP["sigma_window"], disabled=strict)
    if strict:
        st.caption("Strict mode runs exactly MCIter iterations: a data-dependent stopping "
                   "rule (σ) would leak, so σ applies in faithful mode only.")

    with st.expander("Constraints Γ and noise"):
        c1, c2 = st.columns(2)
        c1.number_input("Γ.minJ", min_value=0.0, max_value=1.0, step=0.05, format="%.2f",
                        key="mine_min_jaccard", help=HELP["min_jaccard"])
        c2.number_input("Γ.pval", min_value=1e-12, max_value=1.0, step=0.005, format="%.3f",
                        key="mine_max_pvalue", help=HELP["max_pvalue"])
        c1.number_input("Γ.minSupp (rows)", min_value=0.0, step=10.0, format="%.0f",
                        key="mine_min_support", help=HELP["min_support"])
        c2.number_input("Γ.maxSupp (share)", min_value=0.01, max_value=1.0, step=0.05,
                        format="%.2f", key="mine_max_support", help=HELP["max_support"])
        c1.number_input("maxClauses", min_value=1, max_value=10, step=1,
                        key="mine_max_clauses", help=HELP["max_clauses"])
        c2.radio("Noise on counts", ("discrete", "continuous"), key="mine_noise",
                 horizontal=True, help=HELP["noise"])

    if record.public_demo:
        c1, c2 = st.columns([3, 1])
        c1.checkbox("Demo seed — public demo data only: fixed noise for tests and "
                    "reproducible demos, never for real releases", key="mine_demo_seed_on")
        c2.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="mine_demo_seed",
                        disabled=not st.session_state["mine_demo_seed_on"])
