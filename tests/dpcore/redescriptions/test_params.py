"""Parameters per family: the form's MiningParams, the tree miners' TreeParams and
Serenade's SerenadeParams validate and plan alike, and the miners read the family type."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpcore.errors import ParameterError
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import (
    FIELDS,
    HELP,
    MiningParams,
    SerenadeParams,
    TreeParams,
    family_params,
    plan_budget,
)
from dpcore.registry import ALGORITHMS, MODES, SERENADE_ALGORITHMS, SERENADE_ES, TREE_ALGORITHMS
from tests.dpcore.redescriptions.test_mining import SEED, toy_dataset


def _names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_the_family_types_split_the_form_s_fields():
    shared = _names(TreeParams) & _names(SerenadeParams)
    assert shared == {"algorithm", "epsilon", "mode", "noise", "min_jaccard", "max_pvalue",
                      "min_support", "max_support"}
    assert _names(TreeParams) | _names(SerenadeParams) == _names(MiningParams)
    assert {"omega", "mc_iter", "depth"} <= _names(TreeParams) - shared
    assert {"init_pairs", "steepness", "budget_ext"} <= _names(SerenadeParams) - shared


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("mode", MODES)
def test_family_params_keeps_every_value_and_plans_the_same_budget(algorithm, mode):
    noise = "discrete" if mode == MODES[0] else "continuous"
    form = MiningParams(algorithm=algorithm, mode=mode, noise=noise, epsilon=1.7, in_tr=3,
                        init_pairs=7, min_jaccard=0.2)
    family = family_params(form)
    assert type(family) is (SerenadeParams if algorithm in SERENADE_ALGORITHMS else TreeParams)
    assert all(getattr(family, name) == getattr(form, name) for name in _names(type(family)))
    assert family.is_serenade == form.is_serenade
    assert family.validate() is family and family_params(family) is family
    assert plan_budget(family) == plan_budget(form)


def test_each_family_type_refuses_the_other_family_s_algorithms():
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        TreeParams(algorithm=SERENADE_ES).validate()
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        SerenadeParams(algorithm=TREE_ALGORITHMS[0]).validate()


def test_each_family_type_checks_its_own_fields():
    with pytest.raises(ParameterError, match="depth"):
        TreeParams(depth=0).validate()
    with pytest.raises(ParameterError, match="init_pairs"):
        SerenadeParams(init_pairs=0).validate()
    with pytest.raises(ParameterError, match="min_jaccard"):
        SerenadeParams(min_jaccard=2.0).validate()


def test_the_form_s_type_still_checks_every_field_whatever_the_algorithm():
    """Unchanged behaviour: a tree run with an out-of-range Serenade value is refused."""
    with pytest.raises(ParameterError, match="init_pairs"):
        MiningParams(algorithm=TREE_ALGORITHMS[0], init_pairs=0).validate()
    with pytest.raises(ParameterError, match="depth"):
        MiningParams(algorithm=SERENADE_ES, depth=0).validate()


@pytest.mark.parametrize("algorithm", [TREE_ALGORITHMS[1], SERENADE_ES])
def test_mining_with_the_family_type_releases_what_the_form_s_type_releases(algorithm):
    form = MiningParams(algorithm=algorithm, epsilon=2.0, in_tr=1, mc_iter=50, init_pairs=3,
                        es_rounds=5)
    ds = toy_dataset()
    a = mine(ds, form, rng=np.random.default_rng(SEED), seed=SEED)
    b = mine(ds, family_params(form), rng=np.random.default_rng(SEED), seed=SEED)
    assert a.redescriptions == b.redescriptions and a.trees == b.trees
    assert a.mechanism_calls == b.mechanism_calls
    assert a.params == form.to_dict() and b.params == family_params(form).to_dict()


# ------------------------------------------------ issue 34: the field table, declared once

def _outside(declared):
    """Values just outside each declared bound (the bound itself when it is open)."""
    step = 1 if declared.kind is int else 1e-9
    out = []
    if declared.low is not None:
        out.append(declared.low if declared.low_open else declared.low - step)
    if declared.high is not None:
        out.append(declared.high if declared.high_open else declared.high + step)
    return out


def _inside(declared):
    """Each closed bound, and a value just inside each open one."""
    step = 1 if declared.kind is int else 1e-9
    out = []
    if declared.low is not None:
        out.append(declared.low + step if declared.low_open else declared.low)
    if declared.high is not None:
        out.append(declared.high - step if declared.high_open else declared.high)
    return [declared.kind(v) for v in out]


NUMBERS = [n for n, f in FIELDS.items() if not f.choices]


def test_every_type_takes_its_fields_and_defaults_from_the_one_table():
    for cls in (MiningParams, TreeParams, SerenadeParams):
        defaults = cls().to_dict()
        assert list(defaults) == list(cls.FIELDS)
        for name in defaults:
            if name != "algorithm":
                assert cls.FIELDS[name] is FIELDS[name]
                assert defaults[name] == FIELDS[name].default
        assert cls().validate() == cls()
    assert set(MiningParams.FIELDS) == set(TreeParams.FIELDS) | set(SerenadeParams.FIELDS)
    assert HELP["in_tr"] == FIELDS["in_tr"].help and "algorithm" in HELP


@pytest.mark.parametrize("name", NUMBERS)
def test_validate_refuses_exactly_what_the_declaration_refuses(name):
    """Each bound of each number field: just outside is refused by name, the bound (or just
    inside an open one) passes, in every type that has the field."""
    declared = FIELDS[name]
    assert _outside(declared), f"{name} declares no range"
    # keep the Serenade split valid when one share moves to its bound
    other = {"budget_init": "budget_ext", "budget_ext": "budget_init"}.get(name)
    for cls in (MiningParams, TreeParams, SerenadeParams):
        if name not in cls.FIELDS:
            continue
        # AltMCMC: MCMCTreePair's own rule refuses ω = 0 and 1 (tested below)
        algorithm = SERENADE_ES if cls is SerenadeParams else TREE_ALGORITHMS[1]
        for value in _inside(declared):
            extra = {other: min(0.45, (1 - value) / 2)} if other else {}
            cls(algorithm=algorithm, **{name: value, **extra}).validate()
        for value in _outside(declared):
            with pytest.raises(ParameterError, match=rf"^{name}\b.*got"):
                cls(algorithm=algorithm, **{name: value}).validate()
    with pytest.raises(ParameterError, match=rf"^{name}\b.*must be"):
        MiningParams(**{name: "3"}).validate()


def test_the_declaration_says_its_range_as_the_message_does():
    assert FIELDS["in_tr"].bounds_text() == "[1, 10000]"
    assert FIELDS["max_pvalue"].bounds_text() == "(0, 1]"
    assert FIELDS["budget_init"].bounds_text() == "(0, 1)"
    assert FIELDS["epsilon"].bounds_text() == "> 0" and FIELDS["min_support"].bounds_text() \
        == "≥ 0"
    with pytest.raises(ParameterError, match=r"in_tr \(InTr\) must be an integer in "
                                             r"\[1, 10000\]; got 0"):
        MiningParams(in_tr=0).validate()
    with pytest.raises(ParameterError, match=r"tree_score must be one of count, paper"):
        MiningParams(tree_score="best").validate()
    with pytest.raises(ParameterError, match=r"steepness \(s\) must be finite"):
        SerenadeParams(steepness=float("nan")).validate()


def test_the_rules_across_fields_still_hold():
    with pytest.raises(ParameterError, match="strict mode draws integer"):
        TreeParams(noise="continuous").validate()
    TreeParams(mode=MODES[1], noise="continuous").validate()
    with pytest.raises(ParameterError, match="strictly between 0 and 1 for MCMCTreePair"):
        MiningParams(omega=1.0).validate()
    TreeParams(algorithm=TREE_ALGORITHMS[2], omega=1.0).validate()   # AltExpM ignores ω
    with pytest.raises(ParameterError, match="budget split needs"):
        SerenadeParams(budget_init=0.6, budget_ext=0.4).validate()
