"""AppTests of the Explore list and the analyst's workspace: sort, filter, search, collapse,
the noisy 2×2 table, keep/reject, tags and notes saved in the ledger and restored in a new
session, export with the workspace, import back (checked; 0 ε)."""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components.redescriptions.export import export_csv, export_json
from components.redescriptions.scatter import redescription_rows
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.redescriptions.listing import list_entries
from dpcore.redescriptions.params import TreeParams
from dpcore.redescriptions.workspace import workspace_from_json
from dpcore.runs import charge_and_mine, load_result
from tests.support.apptest_support import APP

pytestmark = pytest.mark.usefixtures("apptest_workarounds")


def run_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def editor(at: AppTest):
    """The list's editor (the only data editor on Explore) and its key."""
    (found,) = at.data_editor
    return found, found.key


def edit(at: AppTest, row: int, **change) -> AppTest:
    """Edit one row of the list as the browser would (the editor's edit state)."""
    _, key = editor(at)
    at.session_state[key] = {"edited_rows": {row: change}, "added_rows": [],
                             "deleted_rows": []}
    return rerun(at)


def stored(ledger_path, name: str = "analyst"):
    record = Ledger(ledger_path).get_workspace("clinic", "~anonymous", name)
    return None if record is None else workspace_from_json(record.workspace_json,
                                                           dataset="clinic")


@pytest.fixture
def explore(app, ledger_path, clinic_dataset):
    """The app on Explore after one seeded MCMCTreePair run on clinic, threshold 0."""
    ledger = Ledger(ledger_path)
    params = TreeParams(algorithm="mcmctreepair", epsilon=1.0, in_tr=2, mc_iter=200,
                          tree_score="paper")   # the seeded run these tests were written on
    result = charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id="r" * 32,
                             seed=11, requester=Requester())
    assert len(result.redescriptions) >= 3
    run_page(app, "pages/redescriptions/explore.py")
    # Typed by the user (so the workspace stores it): when the suggestion would prune
    # everything the box already shows 0, and setting the same value is no change.
    app.number_input(key="explore_threshold").set_value(1.0)
    rerun(app)
    app.number_input(key="explore_threshold").set_value(0.0)
    rerun(app)
    return app


def test_the_list_shows_every_kept_redescription_with_its_noisy_table(explore, ledger_path):
    result = load_result(Ledger(ledger_path), "r" * 32, requester=Requester())
    frame = editor(explore)[0].value
    assert len(frame) == len(result.redescriptions)
    assert {"decision", "tags", "note", "length", "attributes", "table", "cells"} <= set(
        frame.columns)
    entries = {f"{e.run_id[:8]}:{e.red_id}": e for e in list_entries([result])}
    reds = {r.id: r for r in result.redescriptions}
    for _, row in frame.iterrows():
        entry = entries[row["row_id"]]
        e11, e10, e01, e00 = entry.cells
        assert row["cells"] == f"{e11:.0f} · {e10:.0f} · {e01:.0f} · {e00:.0f}"
        assert list(row["table"]) == [e11, e10, e01, e00]
        red = reds[entry.red_id]
        assert e11 == red.support_both
        noisy_n = result.extractions[red.extraction].noisy_n    # the released Ñ
        if min(e10, e01, e00) > 0:                              # nothing clipped
            assert math.isclose(e11 + e10 + e01 + e00, noisy_n)
    # default order: noisy J, highest first
    assert list(frame["jaccard"]) == sorted(frame["jaccard"], reverse=True)
    assert explore.get("plotly_chart")                     # scatter, 2×2 bar, tree pair


def test_sort_search_filter_and_collapse(explore):
    explore.selectbox(key="explore_list_sort").set_value("support")
    explore.toggle(key="explore_list_desc").set_value(False)
    frame = editor(rerun(explore))[0].value
    assert list(frame["support"]) == sorted(frame["support"])
    everything = len(frame)
    attribute = frame["attributes"].iloc[0].split(", ")[0]
    explore.text_input(key="explore_list_search").set_value(attribute[1:4].lower())
    frame = editor(rerun(explore))[0].value
    assert 0 < len(frame) <= everything
    assert all(attribute[1:4].lower() in a.lower() for a in frame["attributes"])
    explore.text_input(key="explore_list_search").set_value("")
    explore.multiselect(key="explore_list_attributes").set_value([attribute])
    frame = editor(rerun(explore))[0].value
    assert all(attribute in a.split(", ") for a in frame["attributes"])
    explore.multiselect(key="explore_list_attributes").set_value([])
    frame = editor(rerun(explore))[0].value
    assert len(frame) == everything
    cut = float(sorted(frame["jaccard"])[len(frame) // 2])          # the median noisy J
    explore.number_input(key="explore_list_min_jaccard").set_value(cut)
    frame = editor(rerun(explore))[0].value
    assert 0 < len(frame) <= everything and (frame["jaccard"] >= cut).all()
    explore.number_input(key="explore_list_min_jaccard").set_value(None)
    explore.number_input(key="explore_list_min_length").set_value(3)
    frame = editor(rerun(explore))[0].value
    assert (frame["length"] >= 3).all()
    explore.number_input(key="explore_list_min_length").set_value(None)
    explore.toggle(key="explore_list_collapse").set_value(True)
    frame = editor(rerun(explore))[0].value
    assert frame["count"].sum() == everything and len(frame) <= everything


def test_decisions_tags_and_notes_are_saved_and_restored_in_a_new_session(explore,
                                                                         ledger_path):
    first = editor(explore)[0].value["row_id"].iloc[0]
    edit(explore, 0, decision="reject", tags="heart, check ,heart", note="looks odd")
    ws = stored(ledger_path)
    (key,) = [k for k in ws.annotations if k.endswith(first.split(":")[1])
              and k.startswith(first.split(":")[0])]
    assert ws.annotations[key].decision == "reject"
    assert ws.annotations[key].tags == ("heart", "check")
    assert ws.annotations[key].note == "looks odd"
    assert ws.threshold == 0.0
    frame = editor(explore)[0].value
    row = frame[frame["row_id"] == first].iloc[0]
    assert (row["decision"], row["tags"], row["note"]) == ("reject", "heart, check",
                                                           "looks odd")
    explore.selectbox(key="explore_list_decisions").set_value("not_rejected")
    frame = editor(rerun(explore))[0].value
    assert first not in set(frame["row_id"])
    assert stored(ledger_path).view["decisions"] == "not_rejected"
    spent = Ledger(ledger_path).budget("clinic").spent_nano

    again = AppTest.from_file(APP, default_timeout=120)    # a new visit: a new session
    rerun(again)
    run_page(again, "pages/redescriptions/explore.py")
    assert again.number_input(key="explore_threshold").value == 0.0
    assert again.selectbox(key="explore_list_decisions").value == "not_rejected"
    assert first not in set(editor(again)[0].value["row_id"])
    again.selectbox(key="explore_list_decisions").set_value("reject")
    frame = editor(rerun(again))[0].value
    assert list(frame["row_id"]) == [first] and frame["tags"].iloc[0] == "heart, check"
    assert Ledger(ledger_path).budget("clinic").spent_nano == spent        # 0 ε


def test_a_bad_tag_is_refused_and_keeps_the_rest(explore, ledger_path):
    edit(explore, 0, decision="keep", tags="x" * 41)
    assert any("at most 40" in e.value for e in explore.error)
    assert stored(ledger_path) is None or not any(
        a.tags for a in stored(ledger_path).annotations.values())


def test_workspaces_are_per_name(explore, ledger_path):
    edit(explore, 0, decision="keep")
    explore.text_input(key="explore_workspace_name").set_value("bob")
    rerun(explore)
    assert set(editor(explore)[0].value["decision"].dropna()) == set()
    edit(explore, 1, decision="reject")
    assert list(stored(ledger_path, "bob").decisions().values()) == ["reject"]
    assert list(stored(ledger_path, "analyst").decisions().values()) == ["keep"]


def _visit_by_link(workspace: str) -> AppTest:
    """A new session whose first page is Explore with ``?workspace=…`` in the address."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["workspace"] = workspace
    rerun(at)
    return run_page(at, "pages/redescriptions/explore.py")


def _link_notes(at: AppTest) -> list[str]:
    return [i.value for i in at.info if "The page address names workspace" in i.value]


def test_a_link_to_a_workspace_this_visitor_has_not_says_why_it_opens_empty(explore,
                                                                            ledger_path):
    """Issue 32, point 9: ``?workspace=owner`` opened as another account (here a visitor
    who is not signed in) showed an empty workspace with no word why."""
    edit(explore, 0, decision="keep")
    explore.text_input(key="explore_workspace_name").set_value("bob")
    edit(rerun(explore), 1, decision="reject")                      # "bob" is saved

    at = _visit_by_link("owner")
    (note,) = _link_notes(at)
    assert "**owner**" in note and "visitors who are not signed in" in note
    assert "`clinic`" in note and "colleague/name" in note
    assert stored(ledger_path, "owner") is None
    edit(at, 0, decision="reject")                   # saved under that name, for this visitor
    assert list(stored(ledger_path, "owner").decisions().values()) == ["reject"]
    assert _link_notes(_visit_by_link("owner")) == []        # now it is saved: no note
    assert _link_notes(_visit_by_link("bob")) == []


def test_export_carries_the_workspace_and_imports_back(explore, ledger_path):
    ledger = Ledger(ledger_path)
    edit(explore, 0, decision="reject", tags="t1")
    ws = stored(ledger_path)
    result = load_result(ledger, "r" * 32, requester=Requester())
    rows = redescription_rows([result])
    doc = json.loads(export_json("clinic", rows, {result.run_id: result}, 0.0,
                                 workspace=ws.to_dict()))
    assert doc["workspace"]["annotations"] == ws.to_dict()["annotations"]
    assert sum("workspace" in r for r in doc["redescriptions"]) == 1
    table = pd.read_csv(io.StringIO(export_csv(rows, {result.run_id: result}, 0.0,
                                               ws.to_dict())), keep_default_na=False)
    assert len(table) == len(rows)
    assert list(table.columns[4:7]) == ["decision", "tags", "note"]
    decided = table[table["decision"] != "undecided"]
    (key,) = ws.annotations
    assert [f"{r}:{i}" for r, i in zip(decided["run_id"], decided["id"])] == [key]
    assert list(decided[["decision", "tags", "note"]].iloc[0]) == ["rejected", "t1", ""]
    assert (table.loc[table.index.difference(decided.index), "tags"] == "").all()
    # start afresh under another name, then import the export: the decisions come back
    explore.text_input(key="explore_workspace_name").set_value("carol")
    rerun(explore)
    before = ledger.list_workspaces("clinic")
    spent = ledger.budget("clinic").spent_nano
    for bad, message in [(b"{not json", "not valid JSON"),
                         (json.dumps({**doc, "dataset": "cms_small"}).encode(),
                          "exported from dataset 'cms_small'"),
                         (json.dumps({**doc, "workspace": {**doc["workspace"],
                                                           "runs": ["f" * 32]}}).encode(),
                          "names runs")]:
        explore.file_uploader(key="explore_workspace_import").upload("ws.json", bad,
                                                                    "application/json")
        rerun(explore)
        explore.button(key="explore_workspace_import_button").click()
        rerun(explore)
        assert any(message in e.value and "Nothing changed" in e.value
                   for e in explore.error), [e.value for e in explore.error]
        assert ledger.list_workspaces("clinic") == before
    good = json.dumps(doc).encode()
    explore.file_uploader(key="explore_workspace_import").upload("ws.json", good,
                                                                "application/json")
    rerun(explore)
    explore.button(key="explore_workspace_import_button").click()
    rerun(explore)
    assert any("Imported" in s.value for s in explore.success)
    carol = stored(ledger_path, "carol")
    assert carol.annotations == ws.annotations
    assert ledger.budget("clinic").spent_nano == spent                      # 0 ε


def _other_tab_saves(ledger_path, change) -> None:
    """Another tab (or session) of the same analyst saves the workspace meanwhile."""
    ledger = Ledger(ledger_path)
    record = ledger.get_workspace("clinic", "~anonymous", "analyst")
    ws = change(workspace_from_json(record.workspace_json, dataset="clinic"))
    ledger.save_workspace("clinic", "~anonymous", "analyst", ws.to_json(),
                          expected_revision=record.revision)


def _row_key(at: AppTest, row: int) -> str:
    """The workspace key (run_id:red_id) of the list's row ``row``."""
    short, red = editor(at)[0].value["row_id"].iloc[row].split(":")
    assert short == "r" * 8
    return f"{'r' * 32}:{red}"


@pytest.mark.parametrize("choice", ["overwrite", "reload"])
def test_a_change_from_another_tab_is_never_overwritten_silently(explore, ledger_path, choice):
    first, second = _row_key(explore, 0), _row_key(explore, 1)
    edit(explore, 0, decision="keep")
    _other_tab_saves(ledger_path, lambda ws: ws.annotate(first, note="from the other tab"))
    edit(explore, 1, decision="reject")                  # this tab, on the old revision
    (warning,) = [w.value for w in explore.warning if "another tab" in w.value]
    assert "was changed in another tab at" in warning and "reload to see it" in warning
    theirs = stored(ledger_path)
    assert theirs.annotation(first).note == "from the other tab"       # not overwritten
    assert theirs.annotation(second).decision is None
    mine = explore.session_state["_explore_workspaces"][("clinic", "~anonymous", "analyst")]
    assert mine.annotation(second).decision == "reject"                # kept in the tab
    edit(explore, 2, decision="keep")                    # still editing: kept, not saved
    assert stored(ledger_path) == theirs
    assert any("another tab" in w.value for w in explore.warning)
    if choice == "overwrite":
        explore.button(key="explore_workspace_overwrite").click()
        rerun(explore)
        saved = stored(ledger_path)
        assert saved.annotation(second).decision == "reject"
        assert saved.annotation(_row_key(explore, 2)).decision == "keep"
        assert saved.annotation(first).note == ""                      # theirs, overwritten
        assert any("Saved this tab's version" in s.value for s in explore.success)
    else:
        explore.button(key="explore_workspace_reload").click()
        rerun(explore)
        assert stored(ledger_path) == theirs
        frame = editor(explore)[0].value.set_index("row_id")
        assert frame.loc[first.replace("r" * 32, "r" * 8), "note"] == "from the other tab"
        assert pd.isna(frame.loc[second.replace("r" * 32, "r" * 8), "decision"])
        assert any("Reloaded" in s.value for s in explore.success)
    assert not any("another tab" in w.value for w in explore.warning)
    # saving goes on normally afterwards (on the new revision)
    edit(explore, 0, decision="reject")
    assert stored(ledger_path).annotation(first).decision == "reject"


def _revision(ledger_path) -> int | None:
    record = Ledger(ledger_path).get_workspace("clinic", "~anonymous", "analyst")
    return None if record is None else record.revision


@pytest.mark.parametrize("choice", ["reload", "overwrite"])
def test_another_tabs_save_is_noticed_on_the_next_rerun_without_a_write(explore, ledger_path,
                                                                        choice):
    first = _row_key(explore, 0)
    edit(explore, 0, decision="keep")
    rerun(explore)
    mine = _revision(ledger_path)
    rerun(explore)                                     # nothing changed: no warning, no write
    assert _revision(ledger_path) == mine
    assert not any("another tab" in w.value for w in explore.warning)
    _other_tab_saves(ledger_path, lambda ws: ws.annotate(first, note="from the other tab"))
    theirs, revision = stored(ledger_path), _revision(ledger_path)
    rerun(explore)                                     # this tab edits nothing
    (warning,) = [w.value for w in explore.warning if "another tab" in w.value]
    assert "was changed in another tab at" in warning and "reload to see it" in warning
    assert "shows the version it last loaded or saved" in warning
    assert explore.button(key="explore_workspace_reload")
    assert explore.button(key="explore_workspace_overwrite")
    rerun(explore)
    assert _revision(ledger_path) == revision and stored(ledger_path) == theirs   # no write
    if choice == "reload":
        explore.button(key="explore_workspace_reload").click()
        rerun(explore)
        frame = editor(explore)[0].value.set_index("row_id")
        assert frame.loc[first.replace("r" * 32, "r" * 8), "note"] == "from the other tab"
        assert stored(ledger_path) == theirs and _revision(ledger_path) == revision
    else:
        explore.button(key="explore_workspace_overwrite").click()
        rerun(explore)
        assert stored(ledger_path).annotation(first).note == ""      # this tab's version
        assert _revision(ledger_path) == revision + 1
    assert not any("another tab" in w.value for w in explore.warning)
    rerun(explore)
    assert not any("another tab" in w.value for w in explore.warning)


def test_a_workspace_deleted_elsewhere_is_noticed_on_the_next_rerun(explore, ledger_path):
    edit(explore, 0, decision="keep")
    assert Ledger(ledger_path).delete_workspace("clinic", "~anonymous", "analyst")
    rerun(explore)
    (warning,) = [w.value for w in explore.warning if "another tab" in w.value]
    assert "was deleted in another tab or session" in warning
    assert _revision(ledger_path) is None                          # nothing written back
    explore.button(key="explore_workspace_overwrite").click()
    rerun(explore)
    assert stored(ledger_path).annotation(_row_key(explore, 0)).decision == "keep"
