"""The Sequences page's parameter form, derived from the algorithm registry.

The fields are the parameters the chosen frequent-sequence algorithm uses in the chosen
mode (:meth:`dpcore.registry.AlgorithmSpec.parameters_used`), labelled with their
symbols (:data:`dpcore.registry.PARAMETER_SYMBOLS`) and their one-line help
(:meth:`~dpcore.registry.AlgorithmSpec.help`), starting from the parameter type's
defaults (:meth:`~dpcore.registry.AlgorithmSpec.defaults`). Nothing here names an
algorithm or a parameter: a parameter the family adds shows up by itself.

A refused number stays in its box, and the reason is shown under it: each field is
checked alone against the parameter type's own validation and budget plan (the other
fields at their defaults), so the message names that field. Launch stays disabled while
any field, or the combination, is refused; nothing is charged meanwhile.

The values live in session state under ``seq_<parameter>`` and are copied to a plain
(non-widget) entry after every render, so they survive a visit to another page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from dataclasses import dataclass

import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import DatasetRecord
from dpcore.privacy.policy import allowed_modes
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALGORITHM_SPECS,
    FAITHFUL,
    MODE_LABELS,
    PARAMETER_SYMBOLS,
    SEQUENCES,
    STRICT,
    AlgorithmSpec,
    family_algorithms,
)
from dpcore.runs import run_cost
from dpcore.sequences.miner import NOT_DP_STEPS

from ..common.session import current_role

__all__ = ["PREFIX", "ALGORITHM_KEY", "MODE_KEY", "SAVED_KEY", "state_key", "FormReading",
           "read_form", "field_label", "render_sequence_form", "FAITHFUL_WARNING"]

#: Session-state prefix of the form's widgets.
PREFIX = "seq_"
ALGORITHM_KEY, MODE_KEY = PREFIX + "algorithm", PREFIX + "mode"
#: Plain session-state entry holding the last values (widgets forget theirs off-page).
SAVED_KEY = "_seq_form_saved"
#: Parameters that are chosen by a select box, not typed.
_CHOSEN = ("algorithm", "mode")

FAITHFUL_WARNING = ("**faithful mode is not ε-DP**: it runs the paper as written, for "
                    "reproducing it on owner or public demo data. Where it differs from "
                    "strict mode:")


def state_key(name: str) -> str:
    """The session-state key of parameter ``name``."""
    return PREFIX + name


def _specs() -> list[AlgorithmSpec]:
    return [ALGORITHM_SPECS[k] for k in family_algorithms(SEQUENCES)]


def _value(state: MutableMapping, key: str, default=None):
    """A form value: the widget's, else the one saved when the page was last drawn."""
    if key in state:
        return state[key]
    return state.get(SAVED_KEY, {}).get(key, default)


def _spec(state: MutableMapping) -> AlgorithmSpec:
    keys = family_algorithms(SEQUENCES)
    key = _value(state, ALGORITHM_KEY)
    return ALGORITHM_SPECS[key if key in keys else keys[0]]


def field_label(name: str) -> str:
    """A parameter's box label: its symbol and, when that differs, its name."""
    symbol = PARAMETER_SYMBOLS.get(name, name)
    return symbol if symbol == name else f"{symbol} ({name})"


@dataclass(frozen=True)
class FormReading:
    """The configured run as the form holds it.

    Attributes
    ----------
    spec : AlgorithmSpec
        The chosen algorithm.
    values : dict
        Every parameter of the run (defaults for the fields not shown).
    fields : tuple of str
        The parameters shown in this mode (without algorithm and mode).
    problems : dict of str → str
        Refused fields → why (their own check, the others at defaults).
    combined : str or None
        Why the fields, each accepted alone, are refused together.
    params : object or None
        The validated parameters (None while anything is refused).
    cost_nano : int or None
        What launching them charges, in nano-ε.
    """

    spec: AlgorithmSpec
    values: dict
    fields: tuple[str, ...]
    problems: dict
    combined: str | None
    params: object
    cost_nano: int | None

    @property
    def messages(self) -> list[str]:
        """Every refusal, field by field, then the combined one."""
        out = [f"{field_label(n)}: {m}" for n, m in self.problems.items()]
        return out + ([self.combined] if self.combined else [])


def _check(spec: AlgorithmSpec, values: dict):
    """(params, cost) of ``values``, or raise what refuses them."""
    params = spec.resolve("params_type").from_dict(values)
    return params, run_cost(params)


def read_form(state: MutableMapping, record: DatasetRecord | None = None,
              role: str | None = None) -> FormReading:
    """Read and check the configured run from ``state`` (pure: draws nothing).

    A value is the widget's, or, off the page (widgets forget their values there), the
    one saved when the form was last drawn; else the default.

    ``record`` and ``role`` restrict the mode to what the policy allows
    (:func:`dpcore.privacy.policy.allowed_modes`); a mode not allowed reads as strict.
    """
    spec = _spec(state)
    defaults = spec.defaults()
    mode = _value(state, MODE_KEY, defaults["mode"])
    allowed = spec.modes if record is None or role is None else tuple(
        m for m in spec.modes if m in allowed_modes(record, role))
    if mode not in allowed:
        mode = STRICT
    fields = tuple(n for n in spec.parameters_used(mode) if n not in _CHOSEN)
    values = {**defaults, "algorithm": spec.key, "mode": mode}
    for name in fields:
        values[name] = _value(state, state_key(name), values[name])
    problems = {}
    for name in fields:
        try:
            _check(spec, {**defaults, "algorithm": spec.key, "mode": mode,
                          name: values[name]})
        except (DpcoreError, TypeError, ValueError) as exc:
            problems[name] = str(exc)
    params = cost = combined = None
    if not problems:
        try:
            params, cost = _check(spec, values)
        except (DpcoreError, TypeError, ValueError) as exc:
            combined = f"Together these numbers are refused: {exc}"
    return FormReading(spec, values, fields, problems, combined, params, cost)


def _is_integer(spec: AlgorithmSpec, name: str) -> bool:
    """Whether parameter ``name`` takes whole numbers (its annotation names int, not float)."""
    annotation = str(next(f.type for f in dataclasses.fields(spec.resolve("params_type"))
                          if f.name == name))
    return "int" in annotation and "float" not in annotation


def _restore(keys: list[str], defaults: dict) -> None:
    saved = st.session_state.setdefault(SAVED_KEY, {})
    for key in keys:
        if key not in st.session_state:
            st.session_state[key] = saved.get(key, defaults[key])


def _save(keys: list[str]) -> None:
    saved = st.session_state.setdefault(SAVED_KEY, {})
    for key in keys:
        if key in st.session_state:
            saved[key] = st.session_state[key]


def render_sequence_form(record: DatasetRecord) -> FormReading:
    """Draw the algorithm, mode and parameter boxes; return the checked reading."""
    specs = _specs()
    first = specs[0].defaults()
    role = current_role()
    keys = [ALGORITHM_KEY, MODE_KEY]
    _restore(keys, {ALGORITHM_KEY: specs[0].key, MODE_KEY: first["mode"]})
    c1, c2 = st.columns(2)
    c1.selectbox("Algorithm", [s.key for s in specs], key=ALGORITHM_KEY,
                 format_func=lambda k: ALGORITHM_LABELS[k],
                 help=" ".join(f"{s.label}: {s.blurb}." for s in specs))
    spec = _spec(st.session_state)
    modes = [m for m in spec.modes if m in allowed_modes(record, role)]
    if st.session_state.get(MODE_KEY) not in modes:
        st.session_state[MODE_KEY] = STRICT
    c2.selectbox("Privacy mode", modes, key=MODE_KEY, format_func=lambda m: MODE_LABELS[m],
                 help=spec.help("mode") or None)
    if len(modes) == 1:
        c2.caption("Faithful mode (the paper as written, not ε-DP) is for the data owner or "
                   "public demo data only.")
    mode = st.session_state[MODE_KEY]
    if mode == FAITHFUL:
        st.warning(FAITHFUL_WARNING + "\n\n" + "\n".join(f"* {text}" for text in
                                                         NOT_DP_STEPS.values()))

    defaults = spec.defaults()
    fields = [n for n in spec.parameters_used(mode) if n not in _CHOSEN]
    field_keys = [state_key(n) for n in fields]
    _restore(field_keys, {state_key(n): defaults[n] for n in fields})
    reading = read_form(st.session_state, record, role)
    cols = st.columns(3)
    for i, name in enumerate(fields):
        col = cols[i % 3]
        integer = _is_integer(spec, name)
        blank_ok = defaults[name] is None
        # value=None keeps a blank-able box's own default blank: without it, once a number
        # is typed, Streamlit makes 0 the box's default and clearing it shows 0 again
        # (issue 32, point 8: l1 could not be blanked).
        col.number_input(field_label(name), key=state_key(name), step=1 if integer else None,
                         format=None if integer else "%g", help=spec.help(name) or None,
                         placeholder="blank: the dataset's declared value" if blank_ok
                         else None, **({"value": None} if blank_ok else {}))
        if name in reading.problems:
            col.error(reading.problems[name])
    if reading.combined:
        st.error(reading.combined)
    _save(keys + field_keys)
    return reading
