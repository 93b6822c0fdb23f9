"""dpcore.redescriptions.workspace: an analyst's Explore workspace — annotations, settings,
the full check of a saved or imported document — and its round trip through the ledger on
both backends."""

from __future__ import annotations

import json

import pytest

from dpcore.errors import ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.redescriptions.workspace import (
    ANNOTATION_COLUMNS,
    DEFAULT_VIEW,
    MAX_TAGS,
    Annotation,
    Workspace,
    annotation_columns,
    parse_tags,
    workspace_from_dict,
    workspace_from_json,
)

RUN = "a" * 32
KEYS = {f"{RUN}:0", f"{RUN}:1"}


def _ws() -> Workspace:
    ws = Workspace("clinic", runs=(RUN,), threshold=12.5, tolerance=0.2)
    ws = ws.annotate(f"{RUN}:0", decision="reject", tags=["heart", "check"], note="odd")
    ws = ws.annotate(f"{RUN}:1", decision="keep")
    return ws


def test_annotate_changes_one_annotation_and_drops_empty_ones():
    ws = _ws()
    assert ws.annotation(f"{RUN}:0") == Annotation("reject", ("heart", "check"), "odd")
    assert ws.decisions() == {f"{RUN}:0": "reject", f"{RUN}:1": "keep"}
    cleared = ws.annotate(f"{RUN}:1", decision=None)
    assert f"{RUN}:1" not in cleared.annotations and f"{RUN}:1" in ws.annotations
    assert cleared.annotate(f"{RUN}:0", tags=["x"]).annotation(f"{RUN}:0").decision == "reject"
    assert ws.annotate(f"{RUN}:0", tags="a, b ,a").annotation(f"{RUN}:0").tags == ("a", "b")
    with pytest.raises(ParameterError, match="at most 40"):
        ws.annotate(f"{RUN}:0", tags="y" * 41)


def test_round_trip_through_json_and_an_export_document():
    ws = _ws()
    back = workspace_from_json(ws.to_json(), dataset="clinic", known_runs={RUN},
                               known_keys=KEYS)
    assert back == ws
    export = {"dataset": "clinic", "redescriptions": [], "workspace": ws.to_dict()}
    assert workspace_from_dict(export, dataset="clinic") == ws
    assert workspace_from_json(ws.to_json().encode(), dataset="clinic") == ws


def test_tags_are_trimmed_unique_and_bounded():
    assert parse_tags(" heart ,  heart,, big   one ") == ("heart", "big one")
    assert parse_tags(["a", "a", " b "]) == ("a", "b")
    assert parse_tags(None) == ()
    with pytest.raises(ParameterError, match="at most 40"):
        parse_tags("x" * 41)
    with pytest.raises(ParameterError, match=f"at most {MAX_TAGS} tags"):
        parse_tags([str(i) for i in range(MAX_TAGS + 1)])
    with pytest.raises(ParameterError, match="must be text"):
        parse_tags([1])


@pytest.mark.parametrize("change, message", [
    ({"dataset": "other"}, "belongs to dataset 'other'"),
    ({"format": 2}, "format 1"),
    ({"secret": 1}, "unknown fields secret"),
    ({"runs": ["f" * 32]}, "names runs"),
    ({"runs": "x"}, "list of run ids"),
    ({"threshold": -1}, "threshold must be ≥ 0"),
    ({"threshold": "3"}, "threshold must be a number"),
    ({"tolerance": 0}, r"tolerance must be in \(0, 1\]"),
    ({"annotations": {"nokey": {}}}, "is not run_id:redescription_id"),
    ({"annotations": {f"{RUN}:7": {"decision": "keep"}}}, "names a redescription no run"),
    ({"annotations": {f"{RUN}:0": {"decision": "maybe"}}}, "decision must be keep"),
    ({"annotations": {f"{RUN}:0": {"note": "x" * 2001}}}, "at most 2000"),
    ({"annotations": {f"{RUN}:0": {"support": 5}}}, "unknown fields: support"),
    ({"annotations": [1]}, "annotations must be an object"),
    ({"view": {"sort": "magic"}}, "view.sort must be one of"),
    ({"view": {"colour": 1}}, "unknown settings: colour"),
    ({"view": {"min_jaccard": 2}}, r"min_jaccard must be in \[0, 1\]"),
    ({"view": {"collapse": "yes"}}, "view.collapse must be true or false"),
])
def test_every_bad_field_is_refused_with_its_reason(change, message):
    doc = {**_ws().to_dict(), **change}
    with pytest.raises(ParameterError, match=message):
        workspace_from_dict(doc, dataset="clinic", known_runs={RUN}, known_keys=KEYS)


def test_bad_files_are_refused_with_a_clear_message():
    for text, message in [("{not json", "not valid JSON"), (b"\xff\xfe", "not UTF-8"),
                          ("[1, 2]", "must be a JSON object"),
                          (json.dumps({"dataset": "cms_small", "workspace": {}}),
                           "exported from dataset 'cms_small'")]:
        with pytest.raises(ParameterError, match=message):
            workspace_from_json(text, dataset="clinic")


def test_defaults_fill_a_partial_view():
    doc = {**_ws().to_dict(), "view": {"sort": "support"}}
    ws = workspace_from_dict(doc, dataset="clinic")
    assert ws.view == {**DEFAULT_VIEW, "sort": "support"}


def test_saved_in_the_ledger_per_analyst_and_read_back(ledger_location):
    from dpcore.data.schema import Attribute, Schema, ViewSpec

    schema = Schema(name="clinic", attributes=(Attribute("DX_CHF", 0, "boolean"),
                                               Attribute("LAB", 1, "numeric", domain=(0.0, 9.0))),
                    views=(ViewSpec("d", "d.csv"), ViewSpec("l", "l.csv")), id_column="id")
    from tests.support.accounts_support import make_account

    led = Ledger(ledger_location)
    led.register_dataset("clinic", schema, None, 1.0, actor="owner", confirmed=True)
    make_account(led, "analyst", role="analyst")     # workspaces belong to an account
    make_account(led, "owner", role="owner")
    ws = _ws()
    led.save_workspace("clinic", "analyst", "alice", ws.to_json())
    led.save_workspace("clinic", "analyst", "bob", Workspace("clinic").to_json())
    stored = led.get_workspace("clinic", "analyst", "alice")
    assert workspace_from_json(stored.workspace_json, dataset="clinic") == ws
    bob = led.get_workspace("clinic", "analyst", "bob")
    assert workspace_from_json(bob.workspace_json, dataset="clinic").annotations == {}
    assert led.get_workspace("clinic", "owner", "alice") is None


def test_annotation_columns_for_a_tabular_export():
    ws = _ws().annotate(f"{RUN}:0", note="line one\nline two, with a comma")
    assert tuple(annotation_columns(ws, RUN, 0)) == ANNOTATION_COLUMNS
    assert annotation_columns(ws, RUN, 0) == {
        "decision": "rejected", "tags": "heart, check",
        "note": "line one\nline two, with a comma"}
    assert annotation_columns(ws, RUN, 1) == {"decision": "kept", "tags": "", "note": ""}
    tagged = ws.annotate(f"{RUN}:1", decision=None, tags=["x"])
    assert annotation_columns(tagged, RUN, 1) == {"decision": "undecided", "tags": "x",
                                                  "note": ""}
    assert annotation_columns(ws, RUN, 2)["decision"] == "undecided"      # not annotated
    assert annotation_columns(ws, "b" * 32, 0)["decision"] == "undecided"  # another run
    assert annotation_columns(None, RUN, 0) == {"decision": "undecided", "tags": "",
                                                "note": ""}


@pytest.mark.parametrize("typed", ["=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)"])
def test_annotation_columns_keep_spreadsheet_formulas_inert(typed):
    ws = _ws().annotate(f"{RUN}:0", note=typed, tags=[typed])
    columns = annotation_columns(ws, RUN, 0)
    assert columns["note"] == "'" + typed
    assert columns["tags"].startswith("'")
    # the workspace itself keeps exactly what was typed
    assert ws.annotation(f"{RUN}:0").note == typed
