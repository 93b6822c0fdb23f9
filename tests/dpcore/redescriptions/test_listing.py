"""dpcore.redescriptions.listing: entries, the noisy 2×2 table, filters, sorting and
near-duplicates of released redescriptions (post-processing, 0 ε)."""

from __future__ import annotations

import math

import pytest

from dpcore.errors import ParameterError
from dpcore.redescriptions.listing import (
    ListFilter,
    collapse_near_duplicates,
    contingency_cells,
    entry_key,
    filter_entries,
    list_entries,
    near_duplicates,
    sort_entries,
)
from dpcore.redescriptions.results import (
    AttributeTest,
    Condition,
    ExtractionRecord,
    Literal,
    Redescription,
    RunResult,
    SerenadeQuery,
    TreeQuery,
    TreeRecord,
)

NAN = math.nan


def _tree(tid: int, view: int, leaves) -> TreeRecord:
    return TreeRecord(tid, view, 0, 0, (), tuple(tuple(leaf) for leaf in leaves))


#: Left tree: leaf 0 = AGE ≤ 50 ∧ CHF, leaf 1 = AGE > 50, leaf 2 = AGE ≤ 50 ∧ ¬CHF.
LEFT = _tree(0, 0, [[Condition("AGE", "<=", 50.0), Condition("CHF", "is", True)],
                    [Condition("AGE", ">", 50.0)],
                    [Condition("AGE", "<=", 50.0), Condition("CHF", "is", False)]])
#: Right tree: leaf 0 = BNP > 400, leaf 1 = BNP ≤ 400 ∧ BNP > 100, leaf 2 = BNP ≤ 100.
RIGHT = _tree(1, 1, [[Condition("BNP", ">", 400.0)],
                     [Condition("BNP", "<=", 400.0), Condition("BNP", ">", 100.0)],
                     [Condition("BNP", "<=", 100.0)]])


def _tq(side, tree, leaves, text, negated=()):
    return TreeQuery(side, tree, tuple(Literal(i, i in negated) for i in leaves),
                     tuple(leaves), text)


def _red(i, left, right, sl, sr, sb, j, p, extraction=0):
    return Redescription(i, left, right, sl, sr, sb, j, p, 0, 0, extraction)


def tree_result(run_id="a" * 32) -> RunResult:
    reds = [
        _red(0, _tq(0, 0, [0], "[AGE ≤ 50 ∧ CHF]"), _tq(1, 1, [0], "[BNP > 400]"),
             120.0, 150.0, 100.0, 100 / 170, 1e-9),
        _red(1, _tq(0, 0, [0], "[AGE ≤ 50 ∧ CHF]"), _tq(1, 1, [0, 1], "[BNP > 100]"),
             120.0, 300.0, 110.0, 110 / 310, 1e-4),
        _red(2, _tq(0, 0, [1], "[AGE > 50]"), _tq(1, 1, [2], "[BNP ≤ 100]"),
             400.0, 500.0, 50.0, 50 / 850, 0.5),
    ]
    ext = ExtractionRecord(0, 0, 1, 0, 0, ((100.0, 10.0, 10.0), (20.0, 100.0, 280.0),
                                           (30.0, 190.0, 260.0)),
                           (), (), 1000.0)
    return RunResult(run_id=run_id, dataset="clinic", algorithm="altexpm", mode="strict",
                     params={"epsilon": 1.0}, version="t", created_at="2026-01-01",
                     epsilon_nano=10**9, redescriptions=reds, trees=[LEFT, RIGHT],
                     extractions=[ext], mechanism_calls=[])


def serenade_result(run_id="b" * 32, faithful=False) -> RunResult:
    chf = AttributeTest("CHF", "is", value=True)
    bnp = AttributeTest("BNP", "interval", low=300.0, high=None)
    bnp2 = AttributeTest("BNP", "interval", low=None, high=350.0)
    sex = AttributeTest("SEX", "equals", value="F")
    reds = [
        _red(0, SerenadeQuery(0, "[CHF]", (chf,)), SerenadeQuery(1, "[BNP > 300]", (bnp,)),
             NAN if faithful else 130.0, NAN if faithful else 160.0, 90.0, 0.45,
             NAN if faithful else 1e-6, extraction=-1),
        _red(1, SerenadeQuery(0, "[CHF] ∧ [SEX = F]", (chf, sex), ("and",)),
             SerenadeQuery(1, "[BNP ≤ 350]", (bnp2,)),
             NAN if faithful else 70.0, NAN if faithful else 600.0, 60.0, 0.1,
             NAN if faithful else 0.2, extraction=-1),
    ]
    return RunResult(run_id=run_id, dataset="clinic", algorithm="serenade_es",
                     mode="faithful" if faithful else "strict", params={}, version="t",
                     created_at="2026-01-01", epsilon_nano=10**9, redescriptions=reds,
                     trees=[], extractions=[], mechanism_calls=[])


def test_entries_name_attributes_lengths_and_keys():
    entries = list_entries([tree_result(), serenade_result()], {"a" * 32: "run A"})
    assert [e.key for e in entries] == [entry_key("a" * 32, i) for i in range(3)] + [
        entry_key("b" * 32, i) for i in range(2)]
    first = entries[0]
    assert first.run == "run A" and entries[3].run == "bbbbbbbb"
    assert first.left_attributes == ("AGE", "CHF") and first.right_attributes == ("BNP",)
    assert first.attributes == ("AGE", "BNP", "CHF")
    assert [e.length for e in entries] == [2, 3, 2, 2, 3]
    assert entries[4].left_attributes == ("CHF", "SEX")


def test_negated_leaf_uses_its_path_attributes_with_any_value():
    result = tree_result()
    red = _red(9, _tq(0, 0, [1], "¬[AGE > 50]", negated=(1,)), _tq(1, 1, [0], "[BNP > 400]"),
               1.0, 1.0, 1.0, 1.0, 1.0)
    result.redescriptions.append(red)
    entry = list_entries([result])[-1]
    assert entry.constraints[0]["AGE"] == ("num", -math.inf, math.inf)


def test_contingency_of_a_tree_redescription_uses_released_supports_and_n():
    result = tree_result()
    e11, e10, e01, e00 = contingency_cells(result, result.redescriptions[0])
    assert (e11, e10, e01) == (100.0, 20.0, 50.0)
    assert e00 == 1000.0 - (120.0 + 150.0 - 100.0)
    assert e11 + e10 + e01 + e00 == 1000.0          # sums to the released Ñ


def test_contingency_clips_derived_cells_and_marks_what_was_not_released():
    result = tree_result()
    odd = _red(5, result.redescriptions[0].left, result.redescriptions[0].right,
               90.0, 95.0, 100.0, 1.0, 1.0)                  # noise: |E11| > |q_L|
    assert contingency_cells(result, odd)[1:3] == (0.0, 0.0)
    strict = serenade_result()
    cells = contingency_cells(strict, strict.redescriptions[0])
    assert cells[:3] == (90.0, 40.0, 70.0) and math.isnan(cells[3])   # Serenade keeps no Ñ
    faithful = serenade_result(faithful=True)
    cells = contingency_cells(faithful, faithful.redescriptions[0])
    assert cells[0] == 90.0 and all(math.isnan(c) for c in cells[1:])


def test_contingency_of_a_custom_query_uses_its_own_four_cell_table():
    result = serenade_result()
    table = ExtractionRecord(0, -1, -1, 0, 0, ((90.0, 40.0), (70.0, 800.0)),
                             (130.0, 870.0), (160.0, 840.0), 1000.0)
    result.extractions.append(table)
    assert contingency_cells(result, result.redescriptions[0]) == (90.0, 40.0, 70.0, 800.0)


def test_filters_each_condition_and_not_released_values():
    entries = list_entries([tree_result(), serenade_result(faithful=True)])
    keys = lambda flt, **kw: [e.key[-3:] for e in filter_entries(entries, flt, **kw)]  # noqa: E731
    a, b = "a" * 32, "b" * 32
    assert len(filter_entries(entries, ListFilter())) == 5
    assert keys(ListFilter(min_support=95)) == ["a:0", "a:1"]
    assert keys(ListFilter(min_jaccard=0.4)) == ["a:0", "b:0"]
    # faithful Serenade released no p-value: a p-value bound leaves it out
    assert keys(ListFilter(max_pvalue=1e-3)) == ["a:0", "a:1"]
    assert keys(ListFilter(min_length=3)) == ["a:1", "b:1"]
    assert keys(ListFilter(max_length=2)) == ["a:0", "a:2", "b:0"]
    assert keys(ListFilter(runs=(b,))) == ["b:0", "b:1"]
    assert keys(ListFilter(attributes=("AGE", "BNP"))) == ["a:0", "a:1", "a:2"]
    assert keys(ListFilter(search="se")) == ["b:1"]          # SEX, case-insensitive
    assert keys(ListFilter(search="chf", min_jaccard=0.4)) == ["a:0", "b:0"]
    decided = {entry_key(a, 0): "keep", entry_key(a, 2): "reject"}
    assert keys(ListFilter(decisions="reject"), decisions=decided) == ["a:2"]
    assert keys(ListFilter(decisions="keep"), decisions=decided) == ["a:0"]
    assert keys(ListFilter(decisions="not_rejected"), decisions=decided) == [
        "a:0", "a:1", "b:0", "b:1"]
    assert keys(ListFilter(decisions="undecided"), decisions=decided) == ["a:1", "b:0", "b:1"]
    with pytest.raises(ParameterError, match="decisions must be one of"):
        ListFilter(decisions="maybe")


def test_sorting_by_every_key_with_not_released_last():
    entries = list_entries([tree_result(), serenade_result(faithful=True)],
                           {"a" * 32: "A", "b" * 32: "B"})
    ids = lambda es: [e.key[-3:] for e in es]  # noqa: E731
    assert ids(sort_entries(entries, "jaccard")) == ["a:0", "b:0", "a:1", "b:1", "a:2"]
    assert ids(sort_entries(entries, "support", descending=False)) == [
        "a:2", "b:1", "b:0", "a:0", "a:1"]
    by_p = ids(sort_entries(entries, "pvalue", descending=False))
    assert by_p[:3] == ["a:0", "a:1", "a:2"] and set(by_p[3:]) == {"b:0", "b:1"}
    assert ids(sort_entries(entries, "pvalue", descending=True))[3:] == ["b:0", "b:1"]
    assert ids(sort_entries(entries, "length"))[:2] == ["a:1", "b:1"]   # ties by key
    assert ids(sort_entries(entries, "run", descending=False))[:3] == ["a:0", "a:1", "a:2"]
    assert ids(sort_entries(entries, "attributes", descending=False))[-1] == "b:1"
    with pytest.raises(ParameterError, match="sort key"):
        sort_entries(entries, "magic")


def test_near_duplicates_need_the_same_attributes_and_overlapping_thresholds():
    e = {x.key[-3:]: x for x in list_entries([tree_result(), serenade_result()])}
    # same attributes (AGE, CHF | BNP), BNP > 400 overlaps BNP > 100
    assert near_duplicates(e["a:0"], e["a:1"])
    # AGE > 50 vs AGE ≤ 50: the same attributes? no — a:2 uses AGE only on the left
    assert not near_duplicates(e["a:0"], e["a:2"])
    # Serenade: CHF | BNP > 300 and CHF ∧ SEX | BNP ≤ 350 use different attributes
    assert not near_duplicates(e["b:0"], e["b:1"])
    assert near_duplicates(e["b:0"], e["b:0"])


def test_disjoint_thresholds_are_not_near_duplicates():
    low = AttributeTest("BNP", "interval", low=None, high=100.0)
    high = AttributeTest("BNP", "interval", low=100.0, high=None)
    chf = AttributeTest("CHF", "is", value=True)
    no_chf = AttributeTest("CHF", "is", value=False)
    reds = [_red(i, SerenadeQuery(0, "l", (c,)), SerenadeQuery(1, "r", (t,)),
                 10.0, 10.0, 10.0 + i, 0.5, 0.1, extraction=-1)
            for i, (c, t) in enumerate([(chf, low), (chf, high), (no_chf, low), (chf, low)])]
    result = serenade_result()
    result.redescriptions[:] = reds
    e = list_entries([result])
    assert not near_duplicates(e[0], e[1])          # (−∞, 100] and (100, ∞) do not meet
    assert not near_duplicates(e[0], e[2])          # CHF vs ¬CHF
    assert near_duplicates(e[0], e[3])              # identical


def test_collapse_groups_near_duplicates_and_keeps_the_best_with_a_count():
    entries = list_entries([tree_result(), serenade_result()])
    groups = collapse_near_duplicates(entries)
    assert sum(g.count for g in groups) == len(entries)
    assert sorted(k.key for g in groups for k in g.members) == sorted(e.key for e in entries)
    first = groups[0]
    assert first.count == 2 and [m.key[-3:] for m in first.members] == ["a:0", "a:1"]
    assert first.best.key.endswith("a:0")          # the higher noisy J
    assert [g.count for g in groups] == [2, 1, 1, 1]
    assert collapse_near_duplicates([]) == []
