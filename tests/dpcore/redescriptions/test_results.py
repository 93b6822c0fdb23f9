"""RunResult's JSON: the current format round-trips, and results stored by earlier versions
(format 1: one query type with the fields of both families, no ``redescriptions_format``
key) are still
read, into the query type of their family."""

from __future__ import annotations

import json
from collections import OrderedDict, defaultdict, namedtuple
from dataclasses import asdict, dataclass, field

import numpy as np
import pytest

from dpcore.redescriptions.results import (
    REDESCRIPTIONS_FORMAT,
    AttributeTest,
    Literal,
    OwnerDiagnostics,
    RunResult,
    SerenadeQuery,
    TreeQuery,
    plain,
)

#: A tree run's result as version 0.2.0 stored it (format 1), trimmed to one redescription.
TREE_RUN_FORMAT_1 = (
    '{"run_id": "4dc4d320d7b54dbdacd24184ea1605b7", "dataset": "toy", "algorithm": "mcmctreep'
    'air", "mode": "strict", "params": {"algorithm": "mcmctreepair", "epsilon": 5.0, "omega":'
    ' 0.1, "mode": "strict", "in_tr": 1, "rm_iter": 1, "depth": 1, "mc_iter": 50, "sigma": 0.'
    '005, "sigma_window": 500, "min_jaccard": 0.0, "max_pvalue": 1.0, "min_support": 0.0, "ma'
    'x_support": 1.0, "max_clauses": 3, "noise": "discrete", "init_pairs": 20, "es_rounds": 8'
    '0, "cs_rounds": 4, "steepness": 0.02, "budget_init": 0.45, "budget_ext": 0.45, "min_acc"'
    ': 0.3, "memo_age": 40, "max_attributes": 4}, "version": "0.2.0", "created_at": "2026-11-'
    '26T10:38:59.522410+00:00", "epsilon_nano": 5000000000, "redescriptions": [{"id": 0, "lef'
    't": {"side": 0, "tree": 0, "literals": [{"leaf": 0, "negated": true}], "leaves": [1, 2],'
    ' "text": "[GROUP ≠ a]", "tests": [], "operators": []}, "right": {"side": 1, "tree": 1, "'
    'literals": [{"leaf": 1, "negated": false}], "leaves": [1], "text": "[L0 > 15.15]", "test'
    's": [], "operators": []}, "support_left": 203.0, "support_right": 259.0, "support_both":'
    ' 175.0, "jaccard": 0.6097560975609756, "pvalue": 0.5366029115651981, "trial": 0, "step":'
    ' 0, "extraction": 0}], "trees": [{"id": 0, "view": 0, "trial": 0, "step": 0, "nodes": [{'
    '"id": 0, "parent": -1, "depth": 0, "attribute": "GROUP", "split_type": "categorical", "t'
    'hreshold": null, "children": [1, 2, 3], "branch": null, "leaf": -1}, {"id": 1, "parent":'
    ' 0, "depth": 1, "attribute": null, "split_type": null, "threshold": null, "children": []'
    ', "branch": {"attribute": "GROUP", "op": "=", "value": "a"}, "leaf": 0}, {"id": 2, "pare'
    'nt": 0, "depth": 1, "attribute": null, "split_type": null, "threshold": null, "children"'
    ': [], "branch": {"attribute": "GROUP", "op": "=", "value": "b"}, "leaf": 1}, {"id": 3, "'
    'parent": 0, "depth": 1, "attribute": null, "split_type": null, "threshold": null, "child'
    'ren": [], "branch": {"attribute": "GROUP", "op": "=", "value": "c"}, "leaf": 2}], "leaf_'
    'conditions": [[{"attribute": "GROUP", "op": "=", "value": "a"}], [{"attribute": "GROUP",'
    ' "op": "=", "value": "b"}], [{"attribute": "GROUP", "op": "=", "value": "c"}]]}, {"id": '
    '1, "view": 1, "trial": 0, "step": 0, "nodes": [{"id": 0, "parent": -1, "depth": 0, "attr'
    'ibute": "L0", "split_type": "numeric", "threshold": 15.151515151515152, "children": [1, '
    '2], "branch": null, "leaf": -1}, {"id": 1, "parent": 0, "depth": 1, "attribute": null, "'
    'split_type": null, "threshold": null, "children": [], "branch": {"attribute": "L0", "op"'
    ': "<=", "value": 15.151515151515152}, "leaf": 0}, {"id": 2, "parent": 0, "depth": 1, "at'
    'tribute": null, "split_type": null, "threshold": null, "children": [], "branch": {"attri'
    'bute": "L0", "op": ">", "value": 15.151515151515152}, "leaf": 1}], "leaf_conditions": [['
    '{"attribute": "L0", "op": "<=", "value": 15.151515151515152}], [{"attribute": "L0", "op"'
    ': ">", "value": 15.151515151515152}]]}], "extractions": [{"id": 0, "left_tree": 0, "righ'
    't_tree": 1, "trial": 0, "step": 0, "noisy_table": [[13.0, 84.0], [16.0, 81.0], [12.0, 94'
    '.0]], "noisy_left": [97.0, 97.0, 106.0], "noisy_right": [41.0, 259.0], "noisy_n": 300.0}'
    '], "mechanism_calls": [{"mechanism": "mcmc", "label": "trial 0 tree pair", "epsilon_nano'
    '": 500000000, "sensitivity": 1.0, "parallel": 1}, {"mechanism": "discrete_laplace", "lab'
    'el": "trial 0 step 0 extraction", "epsilon_nano": 4500000000, "sensitivity": 1.0, "paral'
    'lel": 1}], "seed": 3, "neighbouring": "add/remove one row (datasets differ by one entity'
    '\'s row); under replace-one-row neighbours every ε doubles", "audience": "everyone"}'
)

#: A SerenadeCS run's result as version 0.2.0 stored it (format 1).
SERENADE_RUN_FORMAT_1 = (
    '{"run_id": "04019dd2df374837899265e05536baa2", "dataset": "toy", "algorithm": "serenade_'
    'cs", "mode": "strict", "params": {"algorithm": "serenade_cs", "epsilon": 5.0, "omega": 0'
    '.1, "mode": "strict", "in_tr": 4, "rm_iter": 1, "depth": 4, "mc_iter": 10000, "sigma": 0'
    '.005, "sigma_window": 500, "min_jaccard": 0.0, "max_pvalue": 1.0, "min_support": 0.0, "m'
    'ax_support": 1.0, "max_clauses": 3, "noise": "discrete", "init_pairs": 1, "es_rounds": 8'
    '0, "cs_rounds": 1, "steepness": 0.02, "budget_init": 0.45, "budget_ext": 0.45, "min_acc"'
    ': 0.3, "memo_age": 40, "max_attributes": 2}, "version": "0.2.0", "created_at": "2026-11-'
    '26T10:38:59.723056+00:00", "epsilon_nano": 2525000000, "redescriptions": [{"id": 0, "lef'
    't": {"side": 0, "tree": -1, "literals": [], "leaves": [], "text": "[D4]", "tests": [{"at'
    'tribute": "D4", "kind": "is", "low": null, "high": null, "value": true}], "operators": ['
    ']}, "right": {"side": 1, "tree": -1, "literals": [], "leaves": [], "text": "[30.3 < L2 ≤'
    ' 42.42]", "tests": [{"attribute": "L2", "kind": "interval", "low": 30.303030303030305, "'
    'high": 42.42424242424242, "value": null}], "operators": []}, "support_left": 74.0, "supp'
    'ort_right": 34.0, "support_both": 5.0, "jaccard": 0.04854368932038835, "pvalue": 0.92723'
    '27613922879, "trial": 0, "step": 0, "extraction": -1}], "trees": [], "extractions": [], '
    '"mechanism_calls": [{"mechanism": "discrete_laplace", "label": "row count N̂", "epsilon_'
    'nano": 50000000, "sensitivity": 1.0, "parallel": 1}, {"mechanism": "exponential", "label'
    '": "initial pair 0", "epsilon_nano": 2250000000, "sensitivity": 0.36123682485115804, "pa'
    'rallel": 1}], "seed": 3, "neighbouring": "add/remove one row (datasets differ by one ent'
    'ity\'s row); under replace-one-row neighbours every ε doubles", "audience": "everyone"}'
)


def test_a_stored_tree_run_of_format_1_is_read_into_tree_queries():
    result = RunResult.from_json(TREE_RUN_FORMAT_1)
    red = result.redescriptions[0]
    assert isinstance(red.left, TreeQuery) and isinstance(red.right, TreeQuery)
    assert red.left == TreeQuery(0, 0, (Literal(0, True),), (1, 2), "[GROUP ≠ a]")
    assert red.right.tree == 1 and red.right.leaves == (1,)
    assert red.left.tests == () and red.left.operators == ()
    assert red.text == "[GROUP ≠ a]  ⇔  [L0 > 15.15]"
    assert result.trees[1].leaf_text(1) == "[L0 > 15.15]"
    assert result.extractions[0].noisy_table[0] == (13.0, 84.0)
    assert result.params["mc_iter"] == 50 and result.epsilon_nano == 5 * 10**9


def test_a_stored_serenade_run_of_format_1_is_read_into_serenade_queries():
    result = RunResult.from_json(SERENADE_RUN_FORMAT_1)
    red = result.redescriptions[0]
    assert isinstance(red.left, SerenadeQuery) and isinstance(red.right, SerenadeQuery)
    assert red.left == SerenadeQuery(0, "[D4]", (AttributeTest("D4", "is", value=True),), ())
    assert red.right.tests[0].kind == "interval" and red.right.tests[0].high > 42.4
    assert red.left.tree == -1 and red.left.leaves == () and red.left.literals == ()
    assert result.trees == [] and red.extraction == -1


@pytest.mark.parametrize("stored", [TREE_RUN_FORMAT_1, SERENADE_RUN_FORMAT_1])
def test_the_current_format_round_trips_and_keeps_each_family_s_fields(stored):
    result = RunResult.from_json(stored)
    data = json.loads(result.to_json())
    assert data["redescriptions_format"] == REDESCRIPTIONS_FORMAT == 2
    query = data["redescriptions"][0]["left"]
    if isinstance(result.redescriptions[0].left, TreeQuery):
        assert set(query) == {"side", "tree", "literals", "leaves", "text"}
    else:
        assert set(query) == {"side", "text", "tests", "operators"}
    again = RunResult.from_json(result.to_json())
    assert again == result
    assert again.to_json() == result.to_json()


def test_a_result_of_an_unknown_format_is_refused_by_name():
    data = json.loads(TREE_RUN_FORMAT_1)
    data["redescriptions_format"] = REDESCRIPTIONS_FORMAT + 1
    with pytest.raises(ValueError, match="format 3"):
        RunResult.from_dict(data)


@pytest.mark.parametrize("stored", [TREE_RUN_FORMAT_1, SERENADE_RUN_FORMAT_1])
def test_plain_is_asdict_on_results_of_both_families(stored):
    """``to_dict`` builds its dict with :func:`plain` (issue 19: ``asdict`` was a tenth of a
    command-line mine); it must be ``asdict`` exactly: same values, same key order, same
    JSON, diagnostics included."""
    result = RunResult.from_json(stored)
    result.diagnostics = OwnerDiagnostics(score_traces={"trial 0": [0.5, 0.25]},
                                          phase_seconds={"trees": 0.1})
    fast, slow = plain(result), asdict(result)
    assert fast == slow
    assert json.dumps(fast, ensure_ascii=False) == json.dumps(slow, ensure_ascii=False)
    assert list(fast["redescriptions"][0]) == list(slow["redescriptions"][0])
    assert result.to_dict(include_diagnostics=True) == {
        "redescriptions_format": REDESCRIPTIONS_FORMAT, **slow}


Pair = namedtuple("Pair", "a b")


@dataclass
class _Inner:
    values: list
    when: np.float64 = np.float64(0.5)


@dataclass
class _Outer:
    inner: _Inner
    pairs: tuple
    table: dict
    ordered: OrderedDict
    array: np.ndarray
    extra: dict = field(default_factory=dict)


def test_plain_matches_asdict_on_every_container_kind_and_copies_what_is_mutable():
    inner = _Inner([1, (2.5, "x"), {"k": [None, True]}])
    obj = _Outer(inner, (Pair(1, [2]), Pair("p", inner)), {1: inner, "s": (3,)},
                 OrderedDict([("z", 1), ("a", 2)]), np.arange(3), {"nested": {"deep": [inner]}})
    fast, slow = plain(obj), asdict(obj)
    assert repr(fast) == repr(slow)          # types too: tuples, named tuples, OrderedDict
    assert type(fast["pairs"][0]) is Pair
    assert type(fast["ordered"]) is OrderedDict and list(fast["ordered"]) == ["z", "a"]
    assert type(fast["inner"]["when"]) is np.float64
    fast["inner"]["values"][2]["k"].append("changed")
    fast["array"][0] = 99
    assert inner.values[2]["k"] == [None, True]          # deep copies, as asdict makes
    assert obj.array[0] == 0
    counts = defaultdict(list, {"a": [1]})   # (asdict of Python 3.11 fails on these)
    copied = plain(counts)
    assert type(copied) is defaultdict and copied.default_factory is list
    copied["a"].append(2)
    assert copied == {"a": [1, 2]} and counts == {"a": [1]}
    assert plain(3) == 3 and plain("s") == "s" and plain(None) is None
