"""The Synthesis page's parameter form, and the configured run read from session state.

The algorithms offered are the registry's synthesis family (MC-GEN and the floor baseline);
the fields shown are what the chosen algorithm uses in the chosen mode
(:meth:`dpcore.registry.AlgorithmSpec.parameters_used`), each with its one-line help from
:meth:`dpcore.registry.AlgorithmSpec.help`. Widgets keep their values under ``syn_<field>`` keys;
a copy (:data:`SAVED_KEY`) brings the form back as it was left after a page switch.

A refused value is explained under its box: the message is what
:meth:`~dpcore.synthesis.params.SynthesisParams.validate` says of the default parameters
with only that value changed, so the form never re-states the core's ranges. Feature groups
are typed as ``glucose, insulin; skin_thickness, bmi`` and checked against the public
schema; blank means the run builds them from DP correlations (strict) — at a cost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping

import streamlit as st

from dpcore.errors import DpcoreError, ParameterError
from dpcore.family import algorithm as algorithm_impl
from dpcore.privacy.ledger import DatasetRecord
from dpcore.privacy.policy import allowed_modes, seed_allowed
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALGORITHM_SPECS,
    FAITHFUL,
    MODE_LABELS,
    PARAMETER_SYMBOLS,
    STRICT,
    SYNTHESIS,
    family_algorithms,
)
from dpcore.synthesis.params import CELL_KINDS, GROUPINGS, STRUCTURES, SynthesisParams

from ..common.number_fields import Bounds, number_field
from ..common.session import current_role

__all__ = ["PREFIX", "SAVED_KEY", "SEED_ON_KEY", "SEED_KEY", "FAITHFUL_WARNING",
           "synthesis_algorithms", "fields_used", "parse_groups", "format_groups",
           "field_problem", "form_problems", "params_from_state", "demo_seed_from_state",
           "render_synthesis_form"]

PREFIX = "syn_"
SAVED_KEY = "_syn_saved"
SEED_ON_KEY, SEED_KEY = "syn_demo_seed_on", "syn_demo_seed"
_DEFAULT_SEED = 20231

#: Choices of the text-valued parameters (the core's own tuples).
_CHOICES = {"cells": CELL_KINDS, "grouping": GROUPINGS, "structure": STRUCTURES}
#: Shown above the "More parameters" expander (the rest go inside it).
_MAIN_FIELDS = ("epsilon", "k", "cells", "max_cells", "marginal_bins")
#: Parameters that are not plain number/choice boxes.
_SPECIAL = ("algorithm", "mode", "epsilon", "feature_groups")

FAITHFUL_WARNING = (
    "**Faithful MC-GEN is NOT ε-DP**: it reproduces the published pipeline, which clusters "
    "the features on raw correlations, forms MDAV clusters from the raw records and "
    "generates exactly the true number of rows per class. It still charges the ε you choose, "
    "but that ε does not bound what it reveals. For the data owner, or public demo data, "
    "to compare with the paper.")


def synthesis_algorithms() -> tuple[str, ...]:
    """The registry's synthesis algorithms, in registry order (MC-GEN first)."""
    return family_algorithms(SYNTHESIS)


def _modes_of(algorithm: str) -> tuple[str, ...]:
    return ALGORITHM_SPECS[algorithm].modes


def _defaults() -> SynthesisParams:
    """The first synthesis algorithm's parameter type with its defaults (the registry's)."""
    spec = ALGORITHM_SPECS[synthesis_algorithms()[0]]
    return algorithm_impl(spec.key).params_type(algorithm=spec.key)


def _help(name: str) -> str:
    """The one-line help of parameter ``name`` (the synthesis family's, from the registry)."""
    return ALGORITHM_SPECS[synthesis_algorithms()[0]].help(name) or None


def _get(state: MutableMapping, name: str):
    """The configured value of parameter ``name`` (widget, saved copy, or default)."""
    key = PREFIX + name
    if key in state:
        return state[key]
    saved = state.get(SAVED_KEY, {})
    if key in saved:
        return saved[key]
    default = getattr(_defaults(), name)
    return format_groups(default) if name == "feature_groups" else default


def fields_used(state: MutableMapping) -> tuple[str, ...]:
    """The parameters the configured algorithm uses in the configured mode (registry order,
    ε and mode first); an unknown algorithm or mode falls back to MC-GEN strict."""
    algorithm = str(_get(state, "algorithm"))
    mode = str(_get(state, "mode"))
    if algorithm not in synthesis_algorithms():
        algorithm = synthesis_algorithms()[0]
    spec = ALGORITHM_SPECS[algorithm]
    try:
        return spec.parameters_used(mode)
    except DpcoreError:
        return spec.parameters_used(STRICT)


def format_groups(groups) -> str:
    """Feature groups as the form writes them: ``a, b; c`` (blank: none given)."""
    if not groups:
        return ""
    return "; ".join(", ".join(g) for g in groups)


def parse_groups(text: str, feature_names) -> list[list[str]] | None:
    """Parse ``a, b; c`` into groups of feature names (None for a blank text).

    Raises
    ------
    ParameterError
        An unknown feature, a feature named twice, an empty group, or features left out,
        each named.
    """
    text = (text or "").strip()
    if not text:
        return None
    names = list(feature_names)
    groups = []
    for part in text.split(";"):
        group = [x.strip() for x in part.split(",") if x.strip()]
        if not group:
            raise ParameterError("feature groups: an empty group (two ';' in a row, or a "
                                 "trailing ';')")
        groups.append(group)
    listed = [x for g in groups for x in g]
    unknown = [x for x in listed if x not in names]
    if unknown:
        raise ParameterError(f"feature groups: unknown feature(s) {', '.join(unknown)}; the "
                             f"schema declares {', '.join(names)}")
    twice = sorted({x for x in listed if listed.count(x) > 1})
    if twice:
        raise ParameterError(f"feature groups: {', '.join(twice)} named more than once")
    missing = [x for x in names if x not in listed]
    if missing:
        raise ParameterError("feature groups must cover every feature once; missing: "
                             + ", ".join(missing))
    return groups


def field_problem(name: str, value, state: MutableMapping | None = None) -> str | None:
    """Why the core refuses ``value`` for parameter ``name`` (None when it accepts it): the
    default parameters of the configured algorithm and mode, with only this value changed,
    validated."""
    state = st.session_state if state is None else state
    base = dataclasses.replace(_defaults(), algorithm=str(_get(state, "algorithm")),
                               mode=str(_get(state, "mode")))
    try:
        dataclasses.replace(base, **{name: value}).validate()
    except ParameterError as exc:
        return str(exc)
    except (TypeError, ValueError) as exc:
        return f"{name}: {exc}"
    return None


def form_problems(record: DatasetRecord | None = None,
                  state: MutableMapping | None = None) -> list[str]:
    """Why fields of the configured run are refused, one message per field (pure)."""
    state = st.session_state if state is None else state
    out = []
    for name in fields_used(state):
        if name in ("algorithm", "mode"):
            continue
        value = _get(state, name)
        if name == "feature_groups":
            if record is None:
                continue
            try:
                parse_groups(str(value), record.schema.feature_names)
            except ParameterError as exc:
                out.append(str(exc))
            continue
        problem = field_problem(name, value, state)
        if problem:
            out.append(problem)
    seed_problem = field_problem_seed(state.get(SEED_KEY, _DEFAULT_SEED))
    if record is not None and seed_allowed(record) and state.get(SEED_ON_KEY) and seed_problem:
        out.append(seed_problem)
    return out


def field_problem_seed(value) -> str | None:
    """Why a demo seed is refused (None when accepted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) \
            or not 0 <= value < 2**31:
        return f"Seed: {value!r} is refused — it must be a whole number in [0, 2³¹)."
    return None


def params_from_state(record: DatasetRecord | None = None,
                      state: MutableMapping | None = None) -> SynthesisParams:
    """The run configured on the Synthesis page (not validated: call ``.validate()``).

    Raises
    ------
    ParameterError
        The feature groups text does not parse against ``record``'s schema.
    """
    state = st.session_state if state is None else state
    values = {}
    for name in fields_used(state):
        value = _get(state, name)
        if name == "feature_groups":
            names = record.schema.feature_names if record is not None else ()
            value = parse_groups(str(value), names)
        values[name] = value
    values["algorithm"] = str(_get(state, "algorithm"))
    return dataclasses.replace(_defaults(), **values)


def demo_seed_from_state(record: DatasetRecord | None,
                         state: MutableMapping | None = None) -> int | None:
    """The labelled demo seed: on a public-demo dataset with the option on; else None."""
    state = st.session_state if state is None else state
    if record is None or not seed_allowed(record) or not state.get(SEED_ON_KEY):
        return None
    return int(state.get(SEED_KEY, _DEFAULT_SEED))


# --------------------------------------------------------------------------- widgets

def _restore(keys) -> None:
    """Give each widget key its saved (or default) value before its widget is drawn."""
    state = st.session_state
    saved = state.get(SAVED_KEY, {})
    for key in keys:
        if key not in state:
            name = key[len(PREFIX):]
            if key in saved:
                state[key] = saved[key]
            elif key == SEED_ON_KEY:
                state[key] = False
            elif key == SEED_KEY:
                state[key] = _DEFAULT_SEED
            else:
                state[key] = _get(state, name)


def _save() -> None:
    """Copy the form's values to :data:`SAVED_KEY` (widget keys vanish on other pages)."""
    state = st.session_state
    keys = {PREFIX + f.name for f in dataclasses.fields(_defaults())} | {SEED_ON_KEY, SEED_KEY}
    saved = dict(state.get(SAVED_KEY, {}))
    saved.update({k: state[k] for k in keys if k in state})
    state[SAVED_KEY] = saved


def _label(name: str) -> str:
    symbol = PARAMETER_SYMBOLS.get(name, name)
    return symbol if symbol == name else f"{symbol} ({name})"


def _number_box(container, name: str) -> None:
    key = PREFIX + name
    value = st.session_state[key]
    integer = isinstance(getattr(_defaults(), name), int)
    container.number_input(_label(name), key=key, help=_help(name),
                           step=1 if integer else None,
                           format=None if integer else "%.4g")
    problem = field_problem(name, st.session_state.get(key))
    if problem is None and integer and value != int(value):
        problem = f"{name}: {value:g} is not a whole number"
    if problem:
        container.error(problem)


def _choice_box(container, name: str) -> None:
    choices = _CHOICES.get(name)
    if choices is None:
        container.text_input(_label(name), key=PREFIX + name, help=_help(name))
        return
    container.selectbox(_label(name), choices, key=PREFIX + name, help=_help(name))


def _field(container, name: str) -> None:
    default = getattr(_defaults(), name)
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        _number_box(container, name)
    else:
        _choice_box(container, name)


def render_synthesis_form(record: DatasetRecord, remaining: float | None = None) -> None:
    """Draw the parameter widgets (values in the ``syn_*`` session keys).

    ``remaining``: the dataset's remaining ε (read from the ledger by the caller), so an ε
    above it is explained next to the ε box.
    """
    algorithms = synthesis_algorithms()
    _restore([PREFIX + "algorithm", PREFIX + "mode"])
    if st.session_state[PREFIX + "algorithm"] not in algorithms:
        st.session_state[PREFIX + "algorithm"] = algorithms[0]
    st.selectbox("Synthesizer", algorithms, key=PREFIX + "algorithm",
                 format_func=ALGORITHM_LABELS.get, help=_help("algorithm"))
    algorithm = st.session_state[PREFIX + "algorithm"]
    st.caption(ALGORITHM_SPECS[algorithm].blurb)

    modes = [m for m in allowed_modes(record, current_role()) if m in _modes_of(algorithm)]
    if st.session_state[PREFIX + "mode"] not in modes:
        st.session_state[PREFIX + "mode"] = modes[0]
    st.selectbox("Privacy mode", modes, key=PREFIX + "mode", format_func=MODE_LABELS.get,
                 help=_help("mode"), disabled=len(modes) == 1)
    if FAITHFUL in _modes_of(algorithm) and FAITHFUL not in modes:
        st.caption("Faithful mode (not ε-DP: it reads the raw data unpaid) is for the data "
                   "owner only on private datasets.")
    if st.session_state[PREFIX + "mode"] == FAITHFUL:
        st.warning(FAITHFUL_WARNING)

    used = [n for n in fields_used(st.session_state) if n not in ("algorithm", "mode")]
    _restore([PREFIX + n for n in used])
    if "epsilon" in used:
        key = PREFIX + "epsilon"
        number_field(st, "ε (privacy budget of this run)", key,
                     Bounds(0.0, None, low_open=True, why="a run must spend some budget"),
                     step=0.1, format="%.4g", help=_help("epsilon"))
        eps = st.session_state.get(key)
        if (remaining is not None and isinstance(eps, (int, float)) and eps > 0
                and eps > remaining + 1e-9):
            st.error(f"ε = {eps:g} is more than the ε = {remaining:.6g} that remains on "
                     f"`{record.name}`: the ledger would refuse the run.")
    main = [n for n in used if n in _MAIN_FIELDS and n not in _SPECIAL]
    rest = [n for n in used if n not in _MAIN_FIELDS and n not in _SPECIAL]
    if main:
        cols = st.columns(len(main))
        for col, name in zip(cols, main):
            _field(col, name)
    if "feature_groups" in used:
        key = PREFIX + "feature_groups"
        st.text_input("Feature groups (optional): features separated by ',', groups by ';'",
                      key=key, help=_help("feature_groups"),
                      placeholder="blank = built from DP correlations, e.g. "
                                  + "; ".join(record.schema.feature_names[:2]))
        try:
            parse_groups(st.session_state[key], record.schema.feature_names)
        except ParameterError as exc:
            st.error(str(exc))
    if rest:
        with st.expander("More parameters (budget shares, grid, grouping)"):
            cols = st.columns(2)
            for i, name in enumerate(rest):
                _field(cols[i % 2], name)
    if seed_allowed(record):
        _restore([SEED_ON_KEY, SEED_KEY])
        c1, c2 = st.columns([3, 1])
        c1.checkbox("Demo seed — public demo data only: fixed noise for tests and "
                    "reproducible demos, never for real releases", key=SEED_ON_KEY)
        c2.number_input("Seed", key=SEED_KEY, step=1, disabled=not st.session_state[SEED_ON_KEY])
        if st.session_state[SEED_ON_KEY] and field_problem_seed(st.session_state[SEED_KEY]):
            c2.error(field_problem_seed(st.session_state[SEED_KEY]))
    _save()
