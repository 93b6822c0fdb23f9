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

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import DatasetRecord
from dpcore.privacy.policy import allowed_modes
from dpcore.redescriptions.params import FIELDS as DECLARED
from dpcore.redescriptions.params import HELP, RedescriptionParams, family_type
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALGORITHMS,
    FAITHFUL,
    MODE_LABELS,
    SERENADE_ALGORITHMS,
    STRICT,
    TREE_SCORE_LABELS,
    TREE_SCORES,
    algorithm_spec,
)

from ..common.number_fields import Bounds, bounds_of, number_field, number_problem
from ..common.session import current_role

__all__ = ["EPSILON_GRID", "DEFAULT_STATE", "ALGORITHM_GUIDE", "FAITHFUL_TREE_WARNING",
           "FAITHFUL_SERENADE_WARNING", "FIELDS", "persist_state", "params_from_state",
           "demo_seed_from_state", "nearest_grid_epsilon", "quality_share", "fields_in_use",
           "form_problems", "render_params_form"]


#: The ε slider's log grid (1-2-3-5 per decade, 0.01 … 10).
EPSILON_GRID = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
EPSILON_MIN, EPSILON_MAX = EPSILON_GRID[0], EPSILON_GRID[-1]

#: Alt* settings of the paper: "stable" (InTr = k, RMIter = 1), "default" (InTr = 1, RMIter = k).
SETTINGS = ("stable", "default", "custom")
_SETTING_LABELS = {"stable": "stable: InTr = k, RMIter = 1",
                   "default": "default: InTr = 1, RMIter = k",
                   "custom": "custom InTr and RMIter"}

#: Widget keys and their starting values: the paper's defaults, from the declared fields
#: of both families (:data:`dpcore.redescriptions.params.FIELDS`). Session state holds
#: both families' values; the run reads its own family's (:func:`params_from_state`).
DEFAULT_STATE: dict[str, object] = {
    **{f"mine_{name}": declared.default for name, declared in DECLARED.items()},
    "mine_algorithm": ALGORITHMS[0],
    "mine_epsilon_slider": DECLARED["epsilon"].default,
    "mine_setting": "stable",
    "mine_k": DECLARED["in_tr"].default,
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

_SHARE = "a share of ε: the three shares sum to 1"
_DECLARED = DECLARED


def _box(label: str, name: str, why: str = "") -> tuple[str, Bounds, str]:
    return label, bounds_of(_DECLARED[name], why), name


#: The Mine form's number boxes: session key → (label, accepted range, parameter field).
#: The boxes have no hard bounds (a refused number stays visible, explained under it); a
#: parameter's range is its declaration's (:data:`dpcore.redescriptions.params.FIELDS`, what
#: ``validate()`` checks), so the form refuses exactly what the run would.
FIELDS: dict[str, tuple[str, Bounds, str]] = {
    "mine_epsilon": _box("ε (exact)", "epsilon", "ε is the privacy budget the run spends; "
                                                 "a run must spend some"),
    "mine_in_tr": _box("InTr (trials)", "in_tr", "independent trials of the miner"),
    # k is InTr or RMIter: the tighter range of the two
    "mine_k": ("k", bounds_of(_DECLARED["rm_iter"], "InTr or RMIter"), "k"),
    "mine_rm_iter": _box("RMIter (alternations)", "rm_iter"),
    "mine_mc_iter": _box("MCIter", "mc_iter", "MCMC iterations per tree"),
    "mine_sigma": _box("σ (stopping variance; faithful only)", "sigma"),
    "mine_sigma_window": _box("σ window k (faithful only)", "sigma_window"),
    "mine_min_jaccard": _box("Γ.minJ", "min_jaccard", "a Jaccard lies in [0, 1]"),
    "mine_max_pvalue": _box("Γ.pval", "max_pvalue", "a p-value lies in (0, 1]"),
    "mine_min_support": _box("Γ.minSupp (rows)", "min_support", "a number of rows"),
    "mine_max_support": _box("Γ.maxSupp (share)", "max_support", "a share of the rows"),
    "mine_max_clauses": _box("maxClauses", "max_clauses"),
    "mine_init_pairs": _box("I (initial pairs)", "init_pairs"),
    "mine_es_rounds": _box("K (extension rounds)", "es_rounds"),
    "mine_cs_rounds": _box("L (extension rounds)", "cs_rounds"),
    "mine_steepness": _box("s (sigmoid steepness)", "steepness"),
    "mine_budget_init": _box("budget_init: share of ε for the initial pairs", "budget_init",
                             _SHARE),
    "mine_budget_ext": _box("budget_ext: share of ε for the extensions", "budget_ext", _SHARE),
    "mine_min_acc": _box("min_acc (smallest noisy J that keeps extending)", "min_acc",
                         "a Jaccard lies in [0, 1]"),
    "mine_memo_age": _box("memo_age (rounds a memoised extension lives; faithful only)",
                          "memo_age"),
    "mine_max_attributes": _box("max_attributes (per query)", "max_attributes"),
    "mine_demo_seed": ("Seed", Bounds(0, 2**31 - 1, integer=True), "seed"),
}


def _field(container, key: str, **kwargs) -> str | None:
    label, bounds, _ = FIELDS[key]
    return number_field(container, label, key, bounds, **kwargs)


def fields_in_use(state: MutableMapping, record: DatasetRecord | None = None) -> list[str]:
    """The keys of :data:`FIELDS` the configured run reads (the form shows them)."""
    def get(key):
        return state[key] if key in state else DEFAULT_STATE[key]

    algorithm, mode = str(get("mine_algorithm")), str(get("mine_mode"))
    try:
        used = set(algorithm_spec(algorithm).parameters_used(mode))
    except DpcoreError:
        return ["mine_epsilon"]
    keys = [k for k, (_, _, name) in FIELDS.items() if name in used]
    if "rm_iter" in used:                      # the alternating miners: k, or InTr + RMIter
        custom = get("mine_setting") == "custom"
        keys = [k for k in keys if k not in ("mine_in_tr", "mine_rm_iter")]
        keys += ["mine_in_tr", "mine_rm_iter"] if custom else ["mine_k"]
    if (record is not None and record.public_demo and get("mine_demo_seed_on")):
        keys.append("mine_demo_seed")
    return keys


def form_problems(state: MutableMapping | None = None,
                  record: DatasetRecord | None = None) -> list[str]:
    """Why numbers of the configured run are refused (one message per field; pure)."""
    state = st.session_state if state is None else state
    out = []
    for key in fields_in_use(state, record):
        label, bounds, _ = FIELDS[key]
        value = state[key] if key in state else DEFAULT_STATE[key]
        problem = number_problem(label, value, bounds)
        if problem:
            out.append(problem)
    return out


def quality_share(budget_init: float, budget_ext: float) -> float:
    """Serenade's ε_qual share, 1 − budget_init − budget_ext: what pays the noisy counts."""
    return 1.0 - float(budget_init) - float(budget_ext)


def nearest_grid_epsilon(value: float) -> float:
    """The grid ε closest to ``value`` on a log scale (for the slider)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return float(DECLARED["epsilon"].default)
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


def params_from_state(state: MutableMapping | None = None) -> RedescriptionParams:
    """The run configured on the Mine page, in its algorithm's family type (not
    validated: call ``.validate()``).

    Each field of the family type is read from its ``mine_<field>`` key, converted to the
    field's declared kind; InTr and RMIter of the alternating miners come from the
    setting (stable / default / custom). Missing keys take the paper's defaults, so the
    meter can price a run before the Mine page was ever opened.
    """
    state = st.session_state if state is None else state

    def get(key):
        return state[key] if key in state else DEFAULT_STATE[key]

    algorithm = str(get("mine_algorithm"))
    family = family_type(algorithm)
    values = {name: declared.kind(get(f"mine_{name}"))
              for name, declared in family.FIELDS.items() if name != "algorithm"}
    if "rm_iter" in values:
        values["in_tr"], values["rm_iter"] = _trials(algorithm, get)
    return family(algorithm=algorithm, **values)


def _trials(algorithm: str, get) -> tuple[int, int]:
    """InTr and RMIter of a tree miner from the form's setting."""
    if "rm_iter" not in algorithm_spec(algorithm).parameters_used(STRICT):
        return int(get("mine_in_tr")), 1
    setting = get("mine_setting")
    if setting == "stable":
        return int(get("mine_k")), 1
    if setting == "default":
        return 1, int(get("mine_k"))
    return int(get("mine_in_tr")), int(get("mine_rm_iter"))


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


def render_params_form(record: DatasetRecord, remaining: float | None = None) -> None:
    """Draw the parameter widgets (values live in the ``mine_*`` session keys).

    ``remaining``: the dataset's remaining budget (read from the ledger by the page),
    so an ε above it is explained next to the ε box.
    """
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
    _field(right, "mine_epsilon", step=0.01, format="%.4g", on_change=_number_typed,
           help="Type any ε > 0 (at most what remains of the budget); the slider follows "
                "to the nearest grid value in [0.01, 10]. The run uses this exact number.")
    typed = st.session_state.get("mine_epsilon")
    if (remaining is not None and not number_problem("", typed, FIELDS["mine_epsilon"][1])
            and float(typed) > remaining):
        right.error(f"ε = {float(typed):g} is more than the ε = {remaining:.6g} left on "
                    f"`{record.name}`: the ledger would refuse this run.")

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
                _field(st, "mine_memo_age", step=5, help=HELP["memo_age"])
    else:
        if faithful:
            st.warning(FAITHFUL_TREE_WARNING)
        _sigma_widgets(strict=not faithful)

    with st.expander("Constraints Γ"):
        c1, c2 = st.columns(2)
        _field(c1, "mine_min_jaccard", step=0.05, format="%.2f", help=HELP["min_jaccard"])
        _field(c2, "mine_max_pvalue", step=0.005, format="%.3g", help=HELP["max_pvalue"]
               + (" Faithful Serenade releases no p-value, so this filter does not apply "
                  "there." if serenade else ""))
        _field(c1, "mine_min_support", step=10.0, format="%.0f", help=HELP["min_support"])
        _field(c2, "mine_max_support", step=0.05, format="%.2f", help=HELP["max_support"])
        if not serenade:
            _field(c1, "mine_max_clauses", step=1, help=HELP["max_clauses"])

    if record.public_demo:
        c1, c2 = st.columns([3, 1])
        c1.checkbox("Demo seed — public demo data only: fixed noise for tests and "
                    "reproducible demos, never for real releases", key="mine_demo_seed_on")
        _field(c2, "mine_demo_seed", step=1, disabled=not st.session_state["mine_demo_seed_on"])


def _tree_widgets(used: tuple[str, ...]) -> None:
    """Trials (and ω or alternations), depth and MCIter of the tree miners (``used``:
    the algorithm's strict-mode parameters, from the registry)."""
    if "omega" in used:
        c1, c2 = st.columns(2)
        c1.slider("ω (share of each trial's ε for the tree pair)", min_value=0.01,
                  max_value=0.99, step=0.01, key="mine_omega", help=HELP["omega"])
        _field(c2, "mine_in_tr", step=1, help=HELP["in_tr"])
    else:
        st.radio("Setting", SETTINGS, key="mine_setting", horizontal=True,
                 format_func=_SETTING_LABELS.get,
                 help="The paper's two settings for the alternating algorithms: 'stable' "
                      "runs k independent trials of one alternation; 'default' runs one "
                      "trial of k alternations. " + HELP["rm_iter"])
        if st.session_state["mine_setting"] == "custom":
            c1, c2 = st.columns(2)
            _field(c1, "mine_in_tr", step=1, help=HELP["in_tr"])
            _field(c2, "mine_rm_iter", step=1, help=HELP["rm_iter"])
        else:
            _field(st, "mine_k", step=1, help="InTr = k (stable) or RMIter = k (default).")

    if "tree_score" in used:
        st.radio("Tree-pair score", TREE_SCORES, key="mine_tree_score", horizontal=True,
                 format_func=TREE_SCORE_LABELS.get, help=HELP["tree_score"],
                 disabled=st.session_state.get("mine_mode") == FAITHFUL)

    c1, c2 = st.columns(2)
    depth = _DECLARED["depth"]
    c1.slider("Depth d", min_value=int(depth.low), max_value=int(depth.high), step=1,
              key="mine_depth", help=depth.help)
    _field(c2, "mine_mc_iter", step=1000,
           help=HELP["mc_iter"] + ("" if "mc_iter" in used
                                   else " Not used by this algorithm (no chain)."))


def _sigma_widgets(strict: bool) -> None:
    """σ and its window: the faithful chains' stopping rule (shown disabled in strict mode)."""
    c1, c2 = st.columns(2)
    _field(c1, "mine_sigma", step=0.001, format="%.4f", help=HELP["sigma"], disabled=strict)
    _field(c2, "mine_sigma_window", step=50, help=HELP["sigma_window"], disabled=strict)
    if strict:
        st.caption("Strict mode runs exactly MCIter iterations: a data-dependent stopping "
                   "rule (σ) would leak, so σ applies in faithful mode only.")


def _serenade_widgets(used: tuple[str, ...]) -> None:
    """I, K (ES) or L (CS), s, the budget split, min_acc (CS) and the query size (``used``:
    the algorithm's strict-mode parameters, from the registry)."""
    c1, c2, c3 = st.columns(3)
    _field(c1, "mine_init_pairs", step=1, help=HELP["init_pairs"])
    if "es_rounds" in used:
        _field(c2, "mine_es_rounds", step=10, help=HELP["es_rounds"])
    else:
        _field(c2, "mine_cs_rounds", step=1, help=HELP["cs_rounds"])
    _field(c3, "mine_steepness", step=0.005, format="%.3f", help=HELP["steepness"])

    c1, c2, c3 = st.columns(3)
    _field(c1, "mine_budget_init", step=0.05, format="%.2f", help=HELP["budget_init"])
    _field(c2, "mine_budget_ext", step=0.05, format="%.2f", help=HELP["budget_ext"])
    init, ext = st.session_state["mine_budget_init"], st.session_state["mine_budget_ext"]
    if any(number_problem("", v, Bounds()) for v in (init, ext)):
        return                                    # explained under the box itself
    rest = quality_share(init, ext)
    c3.metric("ε_qual share (noisy counts)", f"{rest:.2f}",
              help="1 − budget_init − budget_ext: pays the noisy counts of the results "
                   "(and, in strict mode, a noisy row count).")
    if rest <= 0:
        st.error(f"budget_init + budget_ext must be below 1: {init:g} + {ext:g} leaves no "
                 "ε_qual for the noisy counts. Lower budget_init or budget_ext.")

    c1, c2 = st.columns(2)
    if "min_acc" in used:
        _field(c1, "mine_min_acc", step=0.05, format="%.2f", help=HELP["min_acc"])
    _field(c2, "mine_max_attributes", step=1, help=HELP["max_attributes"])
