"""The algorithm registry is the one place that names algorithms, modes and families."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dpcore import registry
from dpcore.errors import ParameterError

REPO = Path(__file__).resolve().parents[2]
SCANNED = ["dpcore", "components", "pages", "bench", "app.py"]
NAMES = set(registry.ALL_ALGORITHMS) | set(registry.MODES)


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


def test_the_scan_covers_every_family_s_algorithms():
    assert {registry.PFS2, registry.PFS2_BASELINE, registry.MCGEN, registry.FLOOR} <= NAMES
    assert set(registry.ALGORITHM_SPECS) == set(registry.ALL_ALGORITHMS)
    assert registry.ALGORITHMS == registry.REDESCRIPTION_ALGORITHMS
    for family in registry.FAMILIES:
        assert registry.family_algorithms(family)
    # the family packages re-export the registry's names instead of spelling them
    from dpcore.sequences import params as sequence_params
    from dpcore.synthesis import params as synthesis_params

    assert sequence_params.PFS2 is registry.PFS2
    assert synthesis_params.SYNTHESIS_ALGORITHMS is registry.SYNTHESIS_ALGORITHMS


def test_a_planted_literal_is_caught(tmp_path):
    """The scan finds a new algorithm name spelled as a literal (so it can fail)."""
    tree = ast.parse(f"x = {registry.MCGEN!r}\ny = {registry.PFS2_BASELINE!r}")
    hits = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in NAMES]
    assert hits == [registry.MCGEN, registry.PFS2_BASELINE]


@pytest.mark.parametrize("key", registry.ALL_ALGORITHMS)
def test_every_algorithm_declares_its_family_parameters_and_presets(key):
    spec = registry.ALGORITHM_SPECS[key]
    assert spec.key == key and spec.family in registry.FAMILIES
    assert spec.dataset_kind in registry.DATASET_KINDS
    assert registry.dataset_kind_spec(spec.dataset_kind).family == spec.family
    params_type = spec.resolve("params_type")
    fields = set(params_type.__dataclass_fields__)
    assert spec.modes and spec.modes[0] == registry.STRICT
    for mode in spec.modes:
        used = spec.parameters_used(mode)
        assert used[:2] == ("epsilon", "mode")
        assert set(used) <= fields, (key, mode, set(used) - fields)
        assert all(name in registry.PARAMETER_SYMBOLS for name in used)
        assert all(spec.help(name) for name in used), (key, mode)
        params = params_type(**{**spec.defaults(), "mode": mode})
        assert params.algorithm == key and params.validate() is params
        assert sum(s.epsilon_nano for s in spec.resolve("plan")(params)) > 0
    assert spec.presets and all(set(p.overrides) <= fields for p in spec.presets)
    for p in spec.presets:
        params_type(**{**spec.defaults(), **p.overrides}).validate()
    for what in ("plan", "check", "miner", "result_type"):
        assert callable(spec.resolve(what))
    assert set(spec.summary_fields) <= fields | {"split"}


def test_the_floor_has_no_faithful_mode_and_says_so():
    spec = registry.algorithm_spec(registry.FLOOR)
    assert spec.modes == (registry.STRICT,)
    with pytest.raises(ParameterError, match="no faithful mode"):
        spec.parameters_used(registry.FAITHFUL)


def test_dataset_kinds_name_their_schema_and_data_types():
    for kind in registry.DATASET_KINDS:
        spec = registry.dataset_kind_spec(kind)
        for what in ("schema_type", "data_type", "schema_to_dict", "schema_from_dict",
                     "load_schema", "load_data"):
            assert spec.resolve(what) is not None
    with pytest.raises(ParameterError, match="two_view"):
        registry.dataset_kind_spec("graph")


def test_harness_presets_stay_redescriptions_and_families_have_their_own():
    assert all(spec.family == registry.REDESCRIPTIONS for spec, _ in registry.presets().values())
    seq = registry.presets(family=registry.SEQUENCES)
    assert set(seq) == {registry.PFS2, registry.PFS2_BASELINE}


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(ParameterError, match="mcmctreepair.*pfs2.*mcgen"):
        registry.algorithm_spec("bogus")
    with pytest.raises(ParameterError, match="sequences"):
        registry.family_algorithms("graphs")
    with pytest.raises(ParameterError, match="strict"):
        registry.algorithm_spec(registry.ALTEXPM).parameters_used("lenient")
