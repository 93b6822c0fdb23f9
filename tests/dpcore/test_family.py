"""The family contract (dpcore.family): every built-in family object satisfies the
Protocols, the binding finds families, algorithms and kinds by name and refuses unknown
ones, and a Release serialises into the stored envelope without its diagnostics."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, dataclass

import numpy as np
import pytest

from dpcore import family
from dpcore.errors import ParameterError
from dpcore.registry import (
    ALGORITHM_SPECS,
    DATASET_KIND_SPECS,
    FAMILIES,
    REDESCRIPTIONS,
    algorithm_spec,
)


@pytest.mark.parametrize("key", FAMILIES)
def test_every_built_in_family_satisfies_the_protocols(key):
    fam = family.family(key)
    assert isinstance(fam, family.Family) and fam.key == key
    assert isinstance(fam.kind, family.DatasetKind)
    assert fam.kind.key in DATASET_KIND_SPECS
    assert fam.kind.schema_files == DATASET_KIND_SPECS[fam.kind.key].schema_files
    assert {s.key for s in fam.specs} == set(fam.algorithms)
    for name, algorithm in fam.algorithms.items():
        assert isinstance(algorithm, family.Algorithm), name
        assert algorithm_spec(name).family == key
        params = algorithm.params_type(**{**algorithm_spec(name).defaults(),
                                          "algorithm": name})
        assert isinstance(params, algorithm.params_type)
        assert issubclass(algorithm.result_type, family.Release)


def test_every_registered_algorithm_has_an_implementation():
    assert {k for f in family.families().values() for k in f.algorithms} == set(ALGORITHM_SPECS)
    assert family.algorithm(next(iter(ALGORITHM_SPECS))).key == next(iter(ALGORITHM_SPECS))


def test_the_binding_refuses_unknown_names():
    with pytest.raises(ParameterError, match="family must be one of"):
        family.family("astrology")
    with pytest.raises(ParameterError, match="dataset kind must be one of"):
        family.dataset_kind("spreadsheet")
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        family.algorithm("horoscope")


def test_the_registry_s_compatibility_resolve_goes_through_the_family_objects():
    spec = next(s for s in ALGORITHM_SPECS.values() if s.family == REDESCRIPTIONS)
    implementation = family.algorithm(spec.key)
    assert spec.resolve("params_type") is implementation.params_type
    assert spec.resolve("check") == implementation.prepare
    kind = DATASET_KIND_SPECS[spec.dataset_kind]
    assert kind.resolve("schema_type") is family.dataset_kind(kind.key).schema_type


@dataclass
class _Diagnostics:
    trace: object


@dataclass
class _Result(family.Release):
    dataset: str
    audience: str
    diagnostics: _Diagnostics

    def to_json(self) -> str:
        return json.dumps({"dataset": self.dataset, "audience": self.audience})


def test_a_release_is_stored_in_the_envelope_without_its_diagnostics():
    result = _Result("d", "everyone", _Diagnostics(np.arange(3)))
    stored = json.loads(result.stored_json("fam"))
    assert stored == {"result_format": family.RESULT_FORMAT, "family": "fam", "dataset": "d",
                      "audience": "everyone"}
    assert json.loads(result.diagnostics_json()) == {"trace": [0, 1, 2]}


def test_a_param_field_checks_its_declared_range_and_names_itself():
    """Issue 34: a ParamField is the one declaration its type's validate(), the CLI flag and
    the form box read; its messages name the field (with the registry's symbol) and say the
    range exactly as declared."""
    share = family.ParamField("budget_init", float, 0.45, "help", low=0.0, high=1.0,
                              low_open=True, high_open=True)
    assert share.flag == "--budget-init" and share.bounds_text() == "(0, 1)"
    share.check(0.5)
    for bad, message in ((0.0, r"budget_init \(ε_init share\) must lie in \(0, 1\); got 0.0"),
                         (1.0, r"must lie in \(0, 1\); got 1.0"), ("x", "must be a number"),
                         (True, "must be a number"), (float("inf"), "must be finite")):
        with pytest.raises(ParameterError, match=message):
            share.check(bad)
    count = family.ParamField("depth", int, 4, "help", low=1)
    count.check(10**9)
    with pytest.raises(ParameterError, match=r"depth \(d\) must be an integer ≥ 1; got 2.0"):
        count.check(2.0)
    choice = family.ParamField("noise", str, "a", "help", choices=("a", "b"))
    with pytest.raises(ParameterError, match="noise must be one of a, b; got 'c'"):
        choice.check("c")


def test_params_from_fields_builds_the_dataclass_from_the_table():
    table = {"epsilon": family.ParamField("epsilon", float, 1.0, "ε", low=0.0, low_open=True),
             "depth": family.ParamField("depth", int, 4, "d", low=1, high=8)}

    @family.params_from_fields(table, ("depth", "epsilon"))
    class Toy:
        pass

    assert [f for f in Toy.FIELDS] == ["depth", "epsilon"]
    assert Toy() == Toy(depth=4, epsilon=1.0) and Toy(depth=2).depth == 2
    with pytest.raises(FrozenInstanceError):
        Toy().depth = 3
