"""Names: dataset names (path traversal), display names (invisible characters), view file paths,
and schema checks that stay linear in the number of categorical levels (dpcore.data.names,
dpcore.data.schema, dpcore.data.loading, dpcore.privacy.ledger)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

import dpcore.data.loading as loading
from dpcore.data.loading import load_dataset
from dpcore.data.names import (
    DATASET_NAME_PATTERN,
    check_dataset_name,
    check_display_name,
    path_inside,
)
from dpcore.data.schema import (
    Attribute,
    Schema,
    ViewSpec,
    clear_schema_cache,
    schema_from_dict,
    schema_from_json_text,
    schema_to_dict,
)
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger

RLO, LRI, ZWSP, ALM = "\u202e", "\u2066", "\u200b", "\u061c"

SCHEMA = {
    "name": "tiny", "id_column": "id",
    "views": {"left": {"name": "L", "file": "left.csv"},
              "right": {"name": "R", "file": "right.csv"}},
    "attributes": [
        {"name": "flag", "view": "left", "type": "boolean"},
        {"name": "cat", "view": "left", "type": "categorical", "categories": ["a", "b", "c"]},
        {"name": "x", "view": "right", "type": "numeric", "domain": [0, 100]},
    ],
}
LEFT = "id,flag,cat\n1,1,a\n2,0,b\n3,1,c\n4,0,a\n"
RIGHT = "id,x\n1,10\n2,20\n3,30\n4,40\n"


def schema_dict(**changes) -> dict:
    d = copy.deepcopy(SCHEMA)
    d.update(changes)
    return d


# --------------------------------------------------------------------------- dataset names

@pytest.mark.parametrize("name, fragment", [
    ("../../x", "must not contain '/'"),
    ("../x", "must not contain '/'"),
    ("/abs", "must not contain '/'"),
    ("a/b", "must not contain '/'"),
    ("a\\b", "must not contain '\\\\'"),
    (".hidden", "must not start with '.'"),
    ("..", "must not start with '.'"),
    ("a b", "U+0020"),
    (" lead", "whitespace"),
    ("trail\n", "whitespace"),
    ("x" + RLO + "y", "U+202E"),
    ("x\x07y", "U+0007"),
    ("café", "'é'"),
    ("a:b", "':'"),
    ("-x", "must start with a letter or a digit"),
    ("~x", "must start with a letter or a digit"),
    ("x" * 129, "at most 128 characters"),
    ("", "non-empty"),
    (None, "non-empty"),
    (3, "non-empty"),
])
def test_bad_dataset_names_are_refused_naming_the_rule(name, fragment):
    with pytest.raises(ParameterError) as info:
        check_dataset_name(name)
    assert fragment in str(info.value)
    assert info.value.args[0].startswith("dataset name")


@pytest.mark.parametrize("name", ["ok-name_1.v2", "clinic", "clinic~sandbox-0a1b2c3d", "A",
                                  "7", "x" * 128, "v1.0.tar"])
def test_good_dataset_names_pass_unchanged(name):
    assert check_dataset_name(name) == name
    assert DATASET_NAME_PATTERN.fullmatch(name)


def test_what_names_the_kind_of_name():
    with pytest.raises(ParameterError, match="^sandbox name '../x' must not contain '/'"):
        check_dataset_name("../x", "sandbox name")


def test_the_ledger_refuses_path_names_and_changes_nothing(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    schema = schema_from_dict(SCHEMA)
    ledger.register_dataset("tiny", schema, None, 1.0, actor="owner", confirmed=True)
    for bad in ("../../x", "/abs", ".hidden", "a b"):
        with pytest.raises(ParameterError):
            ledger.register_dataset(bad, schema, None, 1.0, actor="owner")
        with pytest.raises(ParameterError):
            ledger.create_sandbox("tiny", bad, 1.0, actor="owner")
    sandbox = ledger.create_sandbox("tiny", "tiny~sandbox-0a1b2c3d", 1.0, actor="owner")
    assert sandbox.sandbox_of == "tiny"
    assert [d.name for d in ledger._dataset_records()] == ["tiny", "tiny~sandbox-0a1b2c3d"]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("ledger")) == []


# --------------------------------------------------------------------------- display names

@pytest.mark.parametrize("ch", [RLO, "\u202a", "\u202d", LRI, "\u2069", "\u200e", "\u200f",
                                ALM, ZWSP, "\u200d", "\ufeff", "\x00", "\x07", "\t", "\n",
                                "\x1b", "\x7f", "\x85", "\u2028", "\u2029"])
def test_display_names_refuse_control_and_format_characters(ch):
    with pytest.raises(DataError) as info:
        check_display_name(f"pay{ch}ment", "attribute name", file="s.json", column="c")
    assert f"U+{ord(ch):04X}" in str(info.value)
    assert info.value.file == "s.json" and info.value.column == "c"


def test_every_refused_character_is_named():
    with pytest.raises(DataError) as info:
        check_display_name(f"a{RLO}b{ZWSP}c{RLO}", "category")
    msg = str(info.value)
    assert "U+202E (RIGHT-TO-LEFT OVERRIDE)" in msg and "U+200B (ZERO WIDTH SPACE)" in msg
    assert msg.count("U+202E") == 1


@pytest.mark.parametrize("name", ["LAB_BNP", "age group", "Größe", "血压", "80+", "a\u00a0b",
                                  "Ωμέγα"])
def test_ordinary_display_names_pass(name):
    assert check_display_name(name, "attribute name") == name


def test_schema_refuses_rlo_in_an_attribute_name():
    d = schema_dict()
    d["attributes"][0]["name"] = f"flag{RLO}gnp"
    with pytest.raises(DataError) as info:
        schema_from_dict(d, file="schema.json")
    assert "U+202E" in str(info.value) and "attribute name" in str(info.value)
    assert info.value.file == "schema.json"


@pytest.mark.parametrize("level", [f"b{RLO}", "b\x07", f"{LRI}b", f"b{ZWSP}"])
def test_schema_refuses_control_characters_in_category_levels(level):
    d = schema_dict()
    d["attributes"][1]["categories"] = ["a", level, "c"]
    with pytest.raises(DataError) as info:
        schema_from_dict(d, file="schema.json")
    assert info.value.column == "cat"
    assert f"U+{ord(level.strip('b')):04X}" in str(info.value)


def test_schema_refuses_control_characters_in_view_names_and_the_id_column():
    d = schema_dict()
    d["views"]["right"]["name"] = f"R{RLO}"
    with pytest.raises(DataError, match="views.right.name.*U\\+202E"):
        schema_from_dict(d)
    d = schema_dict(id_column=f"i{ZWSP}d")
    with pytest.raises(DataError, match="id_column.*U\\+200B"):
        schema_from_dict(d)


def test_validate_schema_checks_programmatic_schemas_too(tmp_path):
    bad = Schema(name="t", attributes=(Attribute(f"a{RLO}", 0, "boolean"),
                                       Attribute("b", 1, "boolean")),
                 views=(ViewSpec("L", "d.csv"), ViewSpec("R", "d.csv")))
    with pytest.raises(DataError, match="U\\+202E"):
        Ledger(tmp_path / "l.sqlite").register_dataset("t", bad, None, 1.0, actor="owner")


# --------------------------------------------------------------------------- paths

def test_path_inside_joins_and_resolves(tmp_path):
    assert path_inside(tmp_path, "a.csv") == tmp_path.resolve() / "a.csv"
    assert path_inside(tmp_path, "sub/../a.csv") == tmp_path.resolve() / "a.csv"
    assert path_inside(str(tmp_path), Path("sub") / "b.csv") == tmp_path.resolve() / "sub/b.csv"


@pytest.mark.parametrize("relative, fragment", [
    ("../outside.csv", "must stay inside"),
    ("sub/../../outside.csv", "must stay inside"),
    ("/etc/passwd", "absolute path"),
    (".", "must stay inside"),
    ("", "non-empty"),
    ("a\x00b", "NUL"),
])
def test_path_inside_refuses_paths_leaving_the_folder(tmp_path, relative, fragment):
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(DataError) as info:
        path_inside(root, relative)
    assert fragment in str(info.value)
    assert info.value.file == relative
    with pytest.raises(ParameterError, match=fragment):
        path_inside(root, relative, what="dataset name", error=ParameterError)


def test_path_inside_refuses_a_symlink_pointing_out(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").mkdir()
    os.symlink(tmp_path / "secret", root / "link")
    with pytest.raises(DataError, match="must stay inside"):
        path_inside(root, "link/data.csv")
    os.symlink(root, tmp_path / "alias")              # a link *to* the folder is fine
    assert path_inside(tmp_path / "alias", "a.csv") == root.resolve() / "a.csv"


def _dataset(tmp_path: Path, left_file: str, right_file: str = "right.csv") -> Path:
    d = tmp_path / "ds"
    d.mkdir(parents=True)
    schema = schema_dict()
    schema["views"]["left"]["file"] = left_file
    schema["views"]["right"]["file"] = right_file
    (d / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    (d / "left.csv").write_text(LEFT, encoding="utf-8")
    (d / "right.csv").write_text(RIGHT, encoding="utf-8")
    (tmp_path / "outside.csv").write_text(LEFT, encoding="utf-8")   # would load if reached
    return d


@pytest.mark.parametrize("view", ["left", "right"])
def test_load_dataset_refuses_a_view_file_outside_the_folder_and_reads_nothing(
        tmp_path, monkeypatch, view):
    read = []
    real_read_table = loading.read_table

    def spy(path, **kwargs):
        read.append(Path(path))
        return real_read_table(path, **kwargs)

    monkeypatch.setattr(loading, "read_table", spy)
    assert load_dataset(_dataset(tmp_path / "ok", "left.csv")).n_rows == 4    # control
    read.clear()
    files = {"left": "left.csv", "right": "right.csv"}
    files[view] = "../outside.csv"
    d = _dataset(tmp_path / "bad", files["left"], files["right"])
    with pytest.raises(DataError) as info:
        load_dataset(d)
    assert "must stay inside" in str(info.value) and f"the {view} view's file" in str(info.value)
    assert read == []
    absolute = str(tmp_path / "bad" / "outside.csv")
    with pytest.raises(DataError, match="absolute path"):
        load_dataset(d, schema=schema_from_dict(schema_dict(views={
            "left": {"name": "L", "file": absolute}, "right": {"name": "R", "file": absolute}})))
    assert read == []


def test_load_dataset_refuses_a_view_file_behind_a_symlink_out(tmp_path):
    d = _dataset(tmp_path, "link/left.csv")
    os.symlink(tmp_path, d / "link")
    with pytest.raises(DataError, match="must stay inside"):
        load_dataset(d)


# --------------------------------------------------------------------------- many levels

def levels_schema(levels) -> dict:
    d = schema_dict()
    d["attributes"].append({"name": "code", "view": "left", "type": "categorical",
                            "categories": list(levels)})
    return d


def test_a_hundred_thousand_distinct_levels_are_accepted(tmp_path):
    levels = [f"C{i:06d}" for i in range(100_000)]
    schema = schema_from_dict(levels_schema(levels))
    assert schema.attributes[-1].categories == tuple(levels)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    record = ledger.register_dataset("many", schema, None, 1.0, actor="owner")
    assert record.schema == schema
    clear_schema_cache()                        # parse from the stored JSON again
    assert ledger._dataset_record("many").schema == schema
    assert [d.schema for d in ledger._dataset_records()] == [schema]


def test_a_duplicate_among_a_hundred_thousand_levels_is_named():
    levels = [f"C{i:06d}" for i in range(100_000)]
    levels[99_998] = "C054321"
    with pytest.raises(DataError) as info:
        schema_from_dict(levels_schema(levels), file="big.json")
    assert "duplicate category 'C054321'" in str(info.value)
    assert info.value.column == "code" and info.value.file == "big.json"


def test_the_first_duplicate_is_named():
    with pytest.raises(DataError, match="duplicate category 'b'"):
        schema_from_dict(levels_schema(["a", "b", "c", "b", "a"]))
    with pytest.raises(DataError, match="duplicate category 'a'"):
        schema_from_dict(levels_schema(["a", "b", "a", "b"]))


def test_a_control_character_among_many_levels_is_named():
    levels = [f"C{i:06d}" for i in range(20_000)]
    levels[12_345] = f"C{RLO}12345"
    with pytest.raises(DataError) as info:
        schema_from_dict(levels_schema(levels))
    assert "U+202E" in str(info.value) and info.value.column == "code"


def test_schema_from_json_text_is_cached_and_equal_to_a_fresh_parse():
    text = json.dumps(schema_to_dict(schema_from_dict(SCHEMA)))
    clear_schema_cache()
    first = schema_from_json_text(text)
    assert schema_from_json_text(text) is first             # shared: Schema is frozen
    assert first == schema_from_dict(json.loads(text))
    with pytest.raises(DataError):
        schema_from_json_text(text.replace('"flag"', f'"fl{RLO}ag"'))   # errors not cached
    with pytest.raises(json.JSONDecodeError):
        schema_from_json_text("{not json")


def test_a_cached_schemas_source_dict_is_not_shared():
    d = {"name": "diabetes", "source": {"package": "sklearn", "loader": "load_diabetes"},
         "views": {"left": {"name": "L"}, "right": {"name": "R"}},
         "attributes": [{"name": "age", "view": "left", "type": "numeric", "domain": [-1, 1]},
                        {"name": "target", "view": "right", "type": "numeric",
                         "domain": [0, 400]}]}
    text = json.dumps(d)
    clear_schema_cache()
    one = schema_from_json_text(text)
    one.source["loader"] = "load_iris"
    assert schema_from_json_text(text).source["loader"] == "load_diabetes"
