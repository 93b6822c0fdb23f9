"""What a mining family is, as types: the contract every family package fulfils, and the
binding from registered names to the family objects that implement them.

A **family** (:class:`Family`) mines one kind of dataset (:class:`DatasetKind`) with one or
more **algorithms** (:class:`Algorithm`). An algorithm is five things:

* ``params_type`` — its parameter dataclass (``validate()``, ``to_dict()``, ``algorithm``,
  ``mode``, ``epsilon`` fields);
* ``plan(params) -> list[BudgetSlot]`` — how its ε is divided (the ledger charges the sum,
  in nano-ε, before any noise is drawn);
* ``prepare(data, params) -> prepared`` — everything that can fail, done before the charge
  (public grids, coded views); what it returns is exactly what ``mine`` consumes, so no state
  travels from the check to the miner in any other way;
* ``mine(prepared, *, rng, accountant, run_id, seed, progress) -> Release`` — spends at most
  the accountant's cap, every draw through :mod:`dpcore.privacy.mechanisms`;
* ``result_type`` — a :class:`Release` with ``to_json`` / ``from_dict`` (and, to record
  charged / spent / returned, a ``budget`` field the executor fills);
* optionally a ``FIELDS`` table on ``params_type`` (:class:`ParamField`: type, default,
  range, help, unit of each field, built into the dataclass by :func:`params_from_fields`):
  its ``validate()``, the command line's flags and the forms' number boxes read it;
* optionally ``refundable(params) -> bool`` — true when the algorithm's spending stops on
  released values only, so the unspent part of its charge is returned
  (:func:`dpcore.executor.refundable`).

The built-in families live in ``dpcore.redescriptions``, ``dpcore.sequences`` and
``dpcore.synthesis``; each package exports one ``FAMILY``. Further families are registered at
run time with :func:`dpcore.registry.register_family` (the test suite's toy family is the
worked example: ``tests/dpcore/test_toy_family.py``). :func:`family`, :func:`algorithm` and
:func:`dataset_kind` are the only way the run path (:mod:`dpcore.executor`,
:mod:`dpcore.runs`, :mod:`dpcore.distributed`) reaches family code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpcore.errors import ParameterError
from dpcore.privacy.units import BudgetSlot
from dpcore.registry import (
    PARAMETER_SYMBOLS,
    REDESCRIPTIONS,
    SEQUENCES,
    SYNTHESIS,
    AlgorithmSpec,
    algorithm_spec,
    registered_families,
)

__all__ = ["RESULT_FORMAT", "Progress", "Release", "DatasetKind", "Algorithm", "Family",
           "Checked", "AlgorithmBase", "ParamField", "params_from_fields", "families", "family",
           "algorithm", "dataset_kind", "kinds", "spec_and_algorithm"]

#: progress(fraction in [0, 1], message), called by miners between kernel calls.
Progress = Callable[[float, str], None]

#: Version of the stored result envelope (``result_format`` and ``family`` keys). Format 1
#: (no envelope) is every redescription result stored before other families existed.
RESULT_FORMAT = 2


def _json_default(value):
    """numpy scalars and arrays in diagnostics → plain JSON values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


class Release:
    """Shared plumbing of every family's result type (a mixin of the result dataclasses).

    A result has ``dataset`` (the registered name), ``audience`` (who may read it: the
    policy's ``everyone`` or ``owner``) and ``diagnostics`` (a dataclass computed from the
    true data: owner-only, NOT private, never part of the release), plus ``to_json()`` (the
    DP release, without diagnostics) and a ``from_dict`` class method.
    """

    dataset: str
    audience: str
    diagnostics: Any

    def run_budget(self):
        """The run's :class:`~dpcore.privacy.accountant.RunBudget` (charged, spent, returned),
        or None for a result stored before it was recorded (or a type without ``budget``)."""
        from dpcore.privacy.accountant import RunBudget

        return RunBudget.from_dict(getattr(self, "budget", None))

    def budget_columns(self) -> dict[str, float]:
        """``epsilon_charged``, ``epsilon_spent``, ``epsilon_returned`` (ε) for exports.

        From the recorded budget; a result stored before it was recorded reports what it
        knows: its ``epsilon_nano`` (and ``spent_nano`` where the type has one), nothing
        returned.
        """
        budget = self.run_budget()
        if budget is not None:
            return {"epsilon_charged": budget.charged, "epsilon_spent": budget.spent,
                    "epsilon_returned": budget.refunded}
        charged = getattr(self, "epsilon_nano", 0)
        spent = getattr(self, "spent_nano", charged)
        return {"epsilon_charged": charged / 10**9, "epsilon_spent": spent / 10**9,
                "epsilon_returned": 0.0}

    def attach_intervals(self) -> None:
        """Store the release's 90 % intervals in the result before it is stored (0 ε:
        post-processing of released values), so a result fetched again shows the intervals
        it was first shown with. Default: nothing to do — PFS2 attaches its intervals when
        it mines, and synthesis derives its exact closed-form ones from stored values on
        output."""

    def stored_json(self, family: str) -> str:
        """The release (no diagnostics) in the versioned envelope the ledger stores."""
        release = json.loads(self.to_json())
        return json.dumps({"result_format": RESULT_FORMAT, "family": family, **release},
                          ensure_ascii=False)

    def diagnostics_json(self) -> str:
        """The owner diagnostics as JSON (stored apart from the release)."""
        return json.dumps(asdict(self.diagnostics), default=_json_default)

    def to_json(self) -> str:  # pragma: no cover - every result type defines it
        raise NotImplementedError


def _bound(x: float, integer: bool) -> str:
    return str(int(x)) if integer else f"{x:g}"


@dataclass(frozen=True)
class ParamField:
    """One parameter, declared once: the parameter type's field and default, its
    validation, the command line's flag and the app's number box all read it.

    Attributes
    ----------
    name : str
        The field (and stored key); the flag is ``--name-with-dashes``.
    kind : type
        ``int``, ``float`` or ``str`` (``str`` fields take one of ``choices``).
    default : object
        The algorithm's default (the parameter type's field default).
    help : str
        One-line help (the form's tooltip, the flag's help).
    unit : str
        What the number counts (``"ε"``, ``"rows"``, ``"share of ε"``, ...); "" if none.
    low, high : float or None
        Accepted range (None: unbounded on that side); ``low_open`` / ``high_open``
        exclude the bound itself.
    choices : tuple of str
        The accepted values of a ``str`` field.
    """

    name: str
    kind: type
    default: object
    help: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The name errors use: ``omega (ω)`` (the registry's symbol, when it differs)."""
        symbol = PARAMETER_SYMBOLS.get(self.name, self.name)
        if symbol.lower() in (self.name, self.name.replace("_", " "), *self.name.split("_")):
            return self.name
        return f"{self.name} ({symbol})"

    @property
    def flag(self) -> str:
        """The command line's flag, ``--in-tr`` for ``in_tr``."""
        return "--" + self.name.replace("_", "-")

    def bounds_text(self) -> str:
        """The accepted values as a range: ``[1, 10000]``, ``(0, 1]``, ``> 0``, ``a, b``."""
        if self.choices:
            return ", ".join(self.choices)
        integer = self.kind is int
        lo, hi = self.low, self.high
        if lo is not None and hi is not None:
            return (("(" if self.low_open else "[") + _bound(lo, integer) + ", "
                    + _bound(hi, integer) + (")" if self.high_open else "]"))
        if lo is not None:
            return ("> " if self.low_open else "≥ ") + _bound(lo, integer)
        if hi is not None:
            return ("< " if self.high_open else "≤ ") + _bound(hi, integer)
        return "any number"

    def check(self, value) -> None:
        """Raise :class:`~dpcore.errors.ParameterError` naming the field unless ``value``
        is of its kind and in its range."""
        label = self.label
        if self.choices:
            if value not in self.choices:
                raise ParameterError(f"{label} must be one of {', '.join(self.choices)}; "
                                     f"got {value!r}")
            return
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or not self._inside(value):
                raise ParameterError(f"{label} must be an integer "
                                     f"{self._range_phrase()}; got {value!r}")
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"{label} must be a number; got {value!r}")
        if not math.isfinite(value):
            raise ParameterError(f"{label} must be finite; got {value!r}")
        if not self._inside(value):
            raise ParameterError(f"{label} must {self._range_phrase(verb=True)}; "
                                 f"got {value!r}")

    def _inside(self, x) -> bool:
        lo, hi = self.low, self.high
        return ((lo is None or (x > lo if self.low_open else x >= lo))
                and (hi is None or (x < hi if self.high_open else x <= hi)))

    def _range_phrase(self, verb: bool = False) -> str:
        text = self.bounds_text()
        if text[0] in "[(":
            return ("lie in " if verb else "in ") + text
        return ("be " if verb else "") + text


def params_from_fields(table: Mapping[str, ParamField], names: tuple[str, ...]):
    """Class decorator: a frozen dataclass whose fields are ``names`` of ``table``, in that
    order, with the table's types and defaults; ``FIELDS`` (name → :class:`ParamField`)
    is what its validation, the command line and the forms read."""
    def build(cls):
        cls.__annotations__ = {n: table[n].kind for n in names}
        for n in names:
            setattr(cls, n, table[n].default)
        cls = dataclass(frozen=True)(cls)
        cls.FIELDS = MappingProxyType({n: table[n] for n in names})
        return cls
    return build


@runtime_checkable
class DatasetKind(Protocol):
    """One kind of dataset: its public schema type, its private data type, its files."""

    key: str
    label: str
    schema_files: tuple[str, ...]
    schema_type: type
    data_type: type

    def schema_to_dict(self, schema) -> dict: ...

    def schema_from_dict(self, raw: dict): ...

    def load_schema(self, path): ...

    def load_data(self, source_path, schema): ...


@runtime_checkable
class Algorithm(Protocol):
    """One algorithm of a family (see the module docstring)."""

    key: str
    params_type: type
    result_type: type
    help_texts: Mapping[str, str]

    def plan(self, params) -> list[BudgetSlot]: ...

    def prepare(self, data, params): ...

    def mine(self, prepared, *, rng: np.random.Generator, accountant, run_id: str | None,
             seed: int | None, progress: Progress | None) -> Release: ...


@runtime_checkable
class Family(Protocol):
    """A mining family: its key, the kind of dataset it mines, its algorithms and their
    declarations (the registry's :class:`~dpcore.registry.AlgorithmSpec`)."""

    key: str
    kind: DatasetKind
    specs: tuple[AlgorithmSpec, ...]
    algorithms: Mapping[str, Algorithm]


@dataclass(frozen=True)
class Checked:
    """What ``prepare`` returns when its check builds nothing beyond validating: the data
    (private) and the validated parameters, handed to ``mine`` as they are."""

    data: Any
    params: Any


class AlgorithmBase:
    """Convenience base of :class:`Algorithm` implementations: ``run`` = prepare, then mine
    (what callers that hold the data and want a result in one call use: the warm-up, the
    experiment harnesses through :mod:`dpcore.executor`)."""

    def run(self, data, params, *, rng: np.random.Generator | None = None, accountant=None,
            run_id: str | None = None, seed: int | None = None,
            progress: Progress | None = None) -> Release:
        from dpcore.privacy.accountant import PrivacyAccountant

        prepared = self.prepare(data, params)
        if accountant is None:
            accountant = PrivacyAccountant(sum(s.epsilon_nano for s in self.plan(params)))
        return self.mine(prepared, rng=rng, accountant=accountant, run_id=run_id, seed=seed,
                         progress=progress)


def _builtin() -> dict[str, Family]:
    # Imported on first use: the family packages import this module (Release), and a
    # process that mines one family need not import the others' code.
    from dpcore.redescriptions import FAMILY as redescriptions
    from dpcore.sequences import FAMILY as sequences
    from dpcore.synthesis import FAMILY as synthesis

    return {REDESCRIPTIONS: redescriptions, SEQUENCES: sequences, SYNTHESIS: synthesis}


def families() -> dict[str, Family]:
    """Every family: the three built-in ones, then those registered at run time."""
    return {**_builtin(), **registered_families()}


def family(key: str) -> Family:
    """The family ``key`` (ParameterError naming the known families otherwise)."""
    known = families()
    try:
        return known[key]
    except (KeyError, TypeError):
        raise ParameterError(f"family must be one of {', '.join(known)}; got {key!r}") from None


def algorithm(key: str) -> Algorithm:
    """The implementation of registered algorithm ``key`` (ParameterError otherwise)."""
    spec = algorithm_spec(key)
    return family(spec.family).algorithms[spec.key]


def kinds() -> dict[str, DatasetKind]:
    """Every dataset kind a registered family mines, by key (registry order)."""
    out: dict[str, DatasetKind] = {}
    for fam in families().values():
        out.setdefault(fam.kind.key, fam.kind)
    return out


def dataset_kind(key: str) -> DatasetKind:
    """The dataset kind ``key`` (ParameterError naming the known kinds otherwise)."""
    known = kinds()
    try:
        return known[key]
    except (KeyError, TypeError):
        raise ParameterError(f"dataset kind must be one of {', '.join(known)}; got {key!r}"
                             ) from None


def spec_and_algorithm(params) -> tuple[AlgorithmSpec, Algorithm]:
    """The registry spec and the implementation of ``params.algorithm``."""
    key = getattr(params, "algorithm", None)
    return algorithm_spec(key), algorithm(key)

