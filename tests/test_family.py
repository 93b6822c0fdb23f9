"""The family contract (dpcore.family): every built-in family object satisfies the
Protocols, the binding finds families, algorithms and kinds by name and refuses unknown
ones, and a Release serialises into the stored envelope without its diagnostics."""

from __future__ import annotations

import json
from dataclasses import dataclass

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
