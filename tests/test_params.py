"""Parameters per family: the form's MiningParams, the tree miners' TreeParams and
Serenade's SerenadeParams validate and plan alike, and the miners read the family type."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_mining import SEED, toy_dataset

from dpcore.errors import ParameterError
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import (
    MiningParams,
    SerenadeParams,
    TreeParams,
    family_params,
    plan_budget,
)
from dpcore.registry import ALGORITHMS, MODES, SERENADE_ALGORITHMS, SERENADE_ES, TREE_ALGORITHMS


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
