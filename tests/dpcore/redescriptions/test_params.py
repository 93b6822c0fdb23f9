"""Parameters per family: the tree miners' TreeParams and Serenade's SerenadeParams are each
algorithm's parameter type, and :func:`read_params` reads every ``params`` dict a run ever
stored (the 26-key dicts of both families' fields included) into that type."""

from __future__ import annotations

import dataclasses

import pytest

from dpcore.errors import ParameterError
from dpcore.family import algorithm as implementation
from dpcore.redescriptions.params import (
    FIELDS,
    HELP,
    SerenadeParams,
    TreeParams,
    family_type,
    plan_budget,
    read_params,
)
from dpcore.registry import (
    ALGORITHMS,
    COUNT_SCORE,
    MODES,
    PAPER_SCORE,
    SERENADE_ALGORITHMS,
    SERENADE_ES,
    TREE_ALGORITHMS,
)


def _names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


#: A stored run's params as every run stored them before the family types were the
#: boundary: all 26 keys, both families' fields (written out, not built from today's types).
OLD_KEYS = ("algorithm", "epsilon", "omega", "mode", "in_tr", "rm_iter", "depth", "mc_iter",
            "sigma", "sigma_window", "min_jaccard", "max_pvalue", "min_support",
            "max_support", "max_clauses", "noise", "tree_score", "init_pairs", "es_rounds",
            "cs_rounds", "steepness", "budget_init", "budget_ext", "min_acc", "memo_age",
            "max_attributes")


def _old_dict(algorithm: str, **values) -> dict:
    return {"algorithm": algorithm, **{k: FIELDS[k].default for k in OLD_KEYS[1:]}, **values}


def test_the_family_types_split_the_declared_fields():
    shared = _names(TreeParams) & _names(SerenadeParams)
    assert shared == {"algorithm", "epsilon", "mode", "noise", "min_jaccard", "max_pvalue",
                      "min_support", "max_support"}
    assert _names(TreeParams) | _names(SerenadeParams) == {"algorithm", *FIELDS} == set(OLD_KEYS)
    assert {"omega", "mc_iter", "depth"} <= _names(TreeParams) - shared
    assert {"init_pairs", "steepness", "budget_ext"} <= _names(SerenadeParams) - shared


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_each_algorithm_s_registered_type_is_its_family_type(algorithm):
    family = SerenadeParams if algorithm in SERENADE_ALGORITHMS else TreeParams
    assert implementation(algorithm).params_type is family is family_type(algorithm)
    assert set(family(algorithm=algorithm).to_dict()) == set(family.FIELDS)


def test_family_type_names_an_unknown_algorithm():
    with pytest.raises(ParameterError, match="algorithm must be one of .*got 'pfs2'"):
        family_type("pfs2")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("mode", MODES)
def test_read_params_reads_today_s_per_family_dicts_back(algorithm, mode):
    noise = "discrete" if mode == MODES[0] else "continuous"
    params = family_type(algorithm)(algorithm=algorithm, mode=mode, noise=noise, epsilon=1.7,
                                    min_jaccard=0.2)
    assert read_params(params.to_dict()) == params
    assert type(params).from_dict(params.to_dict()) == params


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_read_params_reads_the_old_26_key_dicts_into_the_family_type(algorithm):
    """The other family's keys (whatever the form held) are dropped; the own family's
    values are kept, and so is the budget plan that was charged."""
    stored = _old_dict(algorithm, epsilon=1.7, in_tr=3, init_pairs=7, min_jaccard=0.2,
                       depth=3, steepness=0.03, tree_score=COUNT_SCORE)
    params = read_params(stored)
    family = family_type(algorithm)
    assert type(params) is family
    assert params.to_dict() == {k: stored[k] for k in family.FIELDS}
    assert params.validate() is params
    assert plan_budget(params) == plan_budget(family.from_dict(stored))


def test_a_stored_tree_run_without_tree_score_ran_the_paper_s_score():
    old = {k: v for k, v in _old_dict(TREE_ALGORITHMS[0]).items() if k != "tree_score"}
    assert read_params(old).tree_score == PAPER_SCORE
    assert read_params({"algorithm": TREE_ALGORITHMS[0]}).tree_score == PAPER_SCORE
    assert TreeParams().tree_score == COUNT_SCORE           # a new run's default is unchanged
    # Serenade has no tree score: a 26-key Serenade dict reads without one
    assert "tree_score" not in read_params(_old_dict(SERENADE_ES)).to_dict()


def test_read_params_refuses_unknown_keys_and_another_family_s_type():
    with pytest.raises(ParameterError, match="unknown parameter.*bogus, theta: not a parameter "
                                             "of any redescription miner"):
        read_params({**_old_dict(TREE_ALGORITHMS[0]), "theta": 0.1, "bogus": 1})
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        read_params({"algorithm": "mcgen", "epsilon": 1.0})
    with pytest.raises(ParameterError, match="must be a mapping"):
        read_params([("algorithm", SERENADE_ES)])
    with pytest.raises(ParameterError, match="serenade_es is not an algorithm of TreeParams"):
        TreeParams.from_dict(_old_dict(SERENADE_ES))
    with pytest.raises(ParameterError, match="is not an algorithm of SerenadeParams"):
        SerenadeParams.from_dict(TreeParams().to_dict())


def test_each_family_type_refuses_the_other_family_s_algorithms():
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        TreeParams(algorithm=SERENADE_ES).validate()
    with pytest.raises(ParameterError, match="algorithm must be one of"):
        SerenadeParams(algorithm=TREE_ALGORITHMS[0]).validate()


def test_each_family_type_checks_its_own_fields_and_has_no_other():
    with pytest.raises(ParameterError, match="depth"):
        TreeParams(depth=0).validate()
    with pytest.raises(ParameterError, match="init_pairs"):
        SerenadeParams(init_pairs=0).validate()
    with pytest.raises(ParameterError, match="min_jaccard"):
        SerenadeParams(min_jaccard=2.0).validate()
    with pytest.raises(TypeError, match="init_pairs"):
        TreeParams(init_pairs=3)
    with pytest.raises(TypeError, match="depth"):
        SerenadeParams(depth=3)


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
    for cls in (TreeParams, SerenadeParams):
        defaults = cls().to_dict()
        assert list(defaults) == list(cls.FIELDS)
        for name in defaults:
            if name != "algorithm":
                assert cls.FIELDS[name] is FIELDS[name]
                assert defaults[name] == FIELDS[name].default
        assert cls().validate() == cls()
    assert {"algorithm", *FIELDS} == set(TreeParams.FIELDS) | set(SerenadeParams.FIELDS)
    assert HELP["in_tr"] == FIELDS["in_tr"].help and "algorithm" in HELP


@pytest.mark.parametrize("name", NUMBERS)
def test_validate_refuses_exactly_what_the_declaration_refuses(name):
    """Each bound of each number field: just outside is refused by name, the bound (or just
    inside an open one) passes, in every type that has the field."""
    declared = FIELDS[name]
    assert _outside(declared), f"{name} declares no range"
    # keep the Serenade split valid when one share moves to its bound
    other = {"budget_init": "budget_ext", "budget_ext": "budget_init"}.get(name)
    for cls in (TreeParams, SerenadeParams):
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
        (TreeParams if name in TreeParams.FIELDS else SerenadeParams)(**{name: "3"}).validate()


def test_the_declaration_says_its_range_as_the_message_does():
    assert FIELDS["in_tr"].bounds_text() == "[1, 10000]"
    assert FIELDS["max_pvalue"].bounds_text() == "(0, 1]"
    assert FIELDS["budget_init"].bounds_text() == "(0, 1)"
    assert FIELDS["epsilon"].bounds_text() == "> 0" and FIELDS["min_support"].bounds_text() \
        == "≥ 0"
    with pytest.raises(ParameterError, match=r"in_tr \(InTr\) must be an integer in "
                                             r"\[1, 10000\]; got 0"):
        TreeParams(in_tr=0).validate()
    with pytest.raises(ParameterError, match=r"tree_score must be one of count, paper"):
        TreeParams(tree_score="best").validate()
    with pytest.raises(ParameterError, match=r"steepness \(s\) must be finite"):
        SerenadeParams(steepness=float("nan")).validate()


def test_the_rules_across_fields_still_hold():
    with pytest.raises(ParameterError, match="strict mode draws integer"):
        TreeParams(noise="continuous").validate()
    TreeParams(mode=MODES[1], noise="continuous").validate()
    with pytest.raises(ParameterError, match="strictly between 0 and 1 for MCMCTreePair"):
        TreeParams(omega=1.0).validate()
    TreeParams(algorithm=TREE_ALGORITHMS[2], omega=1.0).validate()   # AltExpM ignores ω
    with pytest.raises(ParameterError, match="budget split needs"):
        SerenadeParams(budget_init=0.6, budget_ext=0.4).validate()
