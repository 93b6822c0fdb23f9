"""The algorithm registry is the one place that names algorithms, modes and families."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dpcore import registry
from dpcore.errors import ParameterError

REPO = Path(__file__).resolve().parent.parent
SCANNED = ["dpcore", "components", "pages", "bench", "app.py"]
NAMES = set(registry.ALGORITHMS) | set(registry.MODES)


def _python_files():
    for entry in SCANNED:
        path = REPO / entry
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def test_no_algorithm_or_mode_name_is_a_literal_outside_the_registry():
    found = []
    for path in _python_files():
        if path == REPO / "dpcore" / "registry.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in NAMES:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    assert not found, "spell these through dpcore.registry:\n" + "\n".join(found)


def test_every_algorithm_declares_its_family_parameters_and_presets():
    for key, spec in registry.ALGORITHM_SPECS.items():
        assert spec.key == key and spec.family == registry.REDESCRIPTIONS
        params_type = spec.resolve("params_type")
        fields = set(params_type.__dataclass_fields__)
        for mode in registry.MODES:
            used = spec.parameters_used(mode)
            assert used[:2] == ("epsilon", "mode")
            assert set(used) <= fields, (key, mode, set(used) - fields)
            assert all(name in registry.PARAMETER_SYMBOLS for name in used)
        assert spec.presets and all(set(p.overrides) <= fields for p in spec.presets)
        assert callable(spec.resolve("plan")) and callable(spec.resolve("miner"))


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(ParameterError, match="mcmctreepair"):
        registry.algorithm_spec("bogus")
    with pytest.raises(ParameterError, match="strict"):
        registry.algorithm_spec(registry.ALTEXPM).parameters_used("lenient")
