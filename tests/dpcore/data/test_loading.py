"""Loading and validating datasets and schema files (dpcore.data.loading, dpcore.data.schema)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.data.loading import (
    LINE_INDEX_NAME,
    frames_to_dataset,
    join_view_ids,
    list_sample_datasets,
    load_dataset,
    location,
    location_text,
    read_table,
    sample_data_dir,
)
from dpcore.data.prefill import prefill, prefill_schema
from dpcore.data.schema import (
    BOOLEAN,
    CATEGORICAL,
    NUMERIC,
    load_schema,
    save_schema,
    schema_from_dict,
    schema_to_dict,
)
from dpcore.errors import DataError

# ---------------------------------------------------------------------------
# A tiny two-file dataset, mutated per test
# ---------------------------------------------------------------------------

SCHEMA = {
    "name": "tiny", "description": "test", "provenance": "handmade", "public_demo": True,
    "id_column": "id",
    "views": {"left": {"name": "L", "file": "left.csv"},
              "right": {"name": "R", "file": "right.csv"}},
    "attributes": [
        {"name": "flag", "view": "left", "type": "boolean"},
        {"name": "cat", "view": "left", "type": "categorical", "categories": ["a", "b", "c"]},
        {"name": "x", "view": "right", "type": "numeric", "domain": [0, 100], "unit": "mg"},
        {"name": "y", "view": "right", "type": "numeric", "domain": [0, 10]},
    ],
}
LEFT = ["id,flag,cat,extra", "1,1,a,zz", "2,0,b,zz", "3,yes,c,zz", "4,no,a,zz", "5,,b,zz",
        "6,TRUE,a,zz"]
# right rows in another order, with a missing value
RIGHT = ["id,y,x", "3,1.5,30", "1,2,10", "2,3,20", "6,4.25,", "5,5,50", "4,6,40"]


def write(tmp_path: Path, schema=None, left=None, right=None) -> Path:
    d = tmp_path / "ds"
    d.mkdir(exist_ok=True)
    (d / "schema.json").write_text(json.dumps(schema or SCHEMA), encoding="utf-8")
    if left is not False:
        (d / "left.csv").write_text("\n".join(left or LEFT) + "\n", encoding="utf-8")
    if right is not False:
        (d / "right.csv").write_text("\n".join(right or RIGHT) + "\n", encoding="utf-8")
    return d


def replace_cell(lines, row, col, value):
    """Copy of CSV lines with data row `row` (1-based), column `col` set to value."""
    lines = list(lines)
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(col)] = value
    lines[row] = ",".join(cells)
    return lines


def expect_error(d, *parts):
    with pytest.raises(DataError) as info:
        load_dataset(d)
    msg = str(info.value)
    for p in parts:
        assert p in msg, f"{p!r} not in {msg!r}"
    return info.value


# ---------------------------------------------------------------------------
# Good inputs
# ---------------------------------------------------------------------------

def test_tiny_dataset_loads_and_aligns_by_id(tmp_path):
    ds = load_dataset(write(tmp_path))
    assert ds.n_rows == 6
    assert list(ds.ids) == ["1", "2", "3", "4", "5", "6"]  # left file order
    flag, cat = ds.views[0].values
    np.testing.assert_array_equal(flag, [1, 0, 1, 0, np.nan, 1])
    np.testing.assert_array_equal(cat, [0, 1, 2, 0, 1, 0])
    x, y = ds.views[1].values  # schema order, not file order
    np.testing.assert_array_equal(x, [10, 20, 30, 40, 50, np.nan])
    np.testing.assert_array_equal(y, [2, 3, 1.5, 6, 5, 4.25])
    assert [a.name for a in ds.views[0].attributes] == ["flag", "cat"]  # 'extra' ignored


def test_schema_file_path_and_explicit_schema(tmp_path):
    d = write(tmp_path)
    a = load_dataset(d / "schema.json")
    b = load_dataset(d, schema=schema_from_dict(SCHEMA))
    np.testing.assert_array_equal(a.views[1].values, b.views[1].values)


@pytest.mark.parametrize("name", ["clinic", "cms_small", "diabetes"])
def test_sample_datasets_load(name):
    dirs = {p.name: p for p in list_sample_datasets()}
    assert name in dirs
    ds = load_dataset(dirs[name])
    assert ds.n_rows > 100
    for view in ds.views:
        assert view.values.dtype == np.float64 and view.values.flags.c_contiguous
    assert ds.schema.public_demo == (name != "diabetes")


def test_list_sample_datasets_is_repo_relative():
    assert sample_data_dir() == Path(__file__).resolve().parents[3] / "sample_data"
    assert [p.name for p in list_sample_datasets()] == sorted(p.name for p in
                                                             list_sample_datasets())


def test_clinic_right_view_is_joined_by_id(clinic_dataset):
    d = sample_data_dir() / "clinic"
    labs = pd.read_csv(d / "labs.csv", dtype={"patient_id": str}).set_index("patient_id")
    diags = pd.read_csv(d / "diagnoses.csv", dtype={"patient_id": str})
    assert list(labs.index[:5]) != list(diags.patient_id[:5])  # the file is shuffled
    assert list(clinic_dataset.ids) == list(diags.patient_id)
    names = [a.name for a in clinic_dataset.views[1].attributes]
    bnp = clinic_dataset.views[1].values[names.index("LAB_BNP")]
    np.testing.assert_array_equal(bnp, labs.loc[clinic_dataset.ids, "LAB_BNP"].to_numpy())
    sex = clinic_dataset.views[0].values[0]
    np.testing.assert_array_equal(sex, (diags.SEX == "M").to_numpy(float))


def test_diabetes_from_sklearn_matches_package():
    from sklearn.datasets import load_diabetes

    ds = load_dataset(sample_data_dir() / "diabetes")
    frame = load_diabetes(scaled=False, as_frame=True).frame
    assert ds.n_rows == len(frame) == 442
    left = {a.name: ds.views[0].values[i] for i, a in enumerate(ds.views[0].attributes)}
    right = {a.name: ds.views[1].values[i] for i, a in enumerate(ds.views[1].attributes)}
    np.testing.assert_array_equal(left["age"], frame.age)
    np.testing.assert_array_equal(left["sex"], frame.sex - 1)  # codes 1/2 → categories 0/1
    np.testing.assert_array_equal(right["target"], frame.target)
    assert set(right) == {"s1", "s2", "s3", "s4", "s5", "s6", "target"}
    assert "Efron" in ds.schema.provenance and "BSD" in ds.schema.provenance


def test_one_file_with_column_view_mapping(tmp_path):
    schema = copy.deepcopy(SCHEMA)
    schema["views"] = {"left": {"name": "L", "file": "all.csv"},
                       "right": {"name": "R", "file": "all.csv"}}
    d = write(tmp_path, schema, left=False, right=False)
    (d / "all.csv").write_text("id,x,flag,y,cat\n1,10,1,2,a\n2,20,0,3,b\n3,30,1,1.5,c\n",
                               encoding="utf-8")
    ds = load_dataset(d)
    assert [a.name for a in ds.views[0].attributes] == ["flag", "cat"]
    np.testing.assert_array_equal(ds.views[1].values, [[10, 20, 30], [2, 3, 1.5]])
    # without an id column the rows are their positions
    schema.pop("id_column")
    (d / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    assert list(load_dataset(d).ids) == [0, 1, 2]


def test_parquet_views(tmp_path):
    d = write(tmp_path)
    schema = copy.deepcopy(SCHEMA)
    schema["views"]["left"]["file"] = "left.parquet"
    schema["views"]["right"]["file"] = "right.parquet"
    (d / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    left = pd.DataFrame({"id": [1, 2, 3], "flag": [True, False, True], "cat": ["a", "b", "a"]})
    right = pd.DataFrame({"id": [3, 2, 1], "x": [30.0, np.nan, 10.0], "y": [1.0, 2.0, 3.0]})
    left.to_parquet(d / "left.parquet")
    right.to_parquet(d / "right.parquet")
    ds = load_dataset(d)
    np.testing.assert_array_equal(ds.views[0].values, [[1, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(ds.views[1].values, [[10, np.nan, 30], [3, 2, 1]])


def test_nan_text_listed_as_missing_is_missing(tmp_path):
    d = write(tmp_path, right=replace_cell(RIGHT, 2, "x", "NaN"))
    x = load_dataset(d).views[1].values[0]
    assert np.isnan(x[0]) and np.isnan(x[5])


def test_custom_boolean_spelling(tmp_path):
    schema = copy.deepcopy(SCHEMA)
    schema["attributes"][0].update(true_value="1", false_value="2")
    left = ["id,flag,cat", "1,1,a", "2,2,b", "3,2,c", "4,1,a", "5,,b", "6,2,a"]
    ds = load_dataset(write(tmp_path, schema, left=left))
    np.testing.assert_array_equal(ds.views[0].values[0], [1, 0, 0, 1, np.nan, 0])
    left[2] = "2,0,b"
    expect_error(write(tmp_path, schema, left=left), "left.csv", "'flag'", "line 3 of file", "'0'")


def test_frames_to_dataset_names_uploaded_files():
    left = pd.DataFrame({"id": ["1", "2"], "flag": ["1", "0"], "cat": ["a", "b"]})
    right = pd.DataFrame({"id": ["2", "1"], "x": ["5", "oops"], "y": ["1", "2"]})
    with pytest.raises(DataError) as info:
        frames_to_dataset(schema_from_dict(SCHEMA), left, right, left_file="up_left.csv",
                          right_file="up_right.csv")
    assert str(info.value).startswith("file 'up_right.csv', column 'x', row 2:")
    right.loc[1, "x"] = "7"
    ds = frames_to_dataset(schema_from_dict(SCHEMA), left, right)
    np.testing.assert_array_equal(ds.views[1].values[0], [7, 5])
    assert list(left.columns) == ["id", "flag", "cat"]  # inputs untouched


# ---------------------------------------------------------------------------
# Bad data: every message names file, column and row
# ---------------------------------------------------------------------------

def test_missing_file(tmp_path):
    d = write(tmp_path, right=False)
    expect_error(d, "right.csv", "not found")


def test_missing_dataset_dir_and_schema(tmp_path):
    expect_error(tmp_path / "nope", "nope", "no such")
    (tmp_path / "empty").mkdir()
    expect_error(tmp_path / "empty", "no schema.json or schema.toml")


def test_malformed_csv(tmp_path):
    right = list(RIGHT)
    right[3] = "2,3,20,99"
    e = expect_error(write(tmp_path, right=right), "right.csv", "line 4 of file", "malformed CSV")
    assert (e.row, e.line) == (3, 4)


def test_empty_and_header_only_files(tmp_path):
    d = write(tmp_path, left=["id,flag,cat"])
    expect_error(d, "left.csv", "no data rows")
    (d / "left.csv").write_text("", encoding="utf-8")
    expect_error(d, "left.csv", "empty")


def test_utf8_bom_and_crlf_are_accepted(tmp_path):
    d = write(tmp_path)
    (d / "left.csv").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(LEFT).encode() + b"\r\n")
    assert load_dataset(d).n_rows == 6


def test_not_utf8(tmp_path):
    d = write(tmp_path)
    (d / "left.csv").write_bytes(b"id,flag,cat\n1,1,\xff\xfe\n")
    expect_error(d, "left.csv", "UTF-8")


def test_missing_id_column(tmp_path):
    right = [RIGHT[0].replace("id", "ident")] + RIGHT[1:]
    expect_error(write(tmp_path, right=right), "right.csv", "column 'id'", "id column is missing")


def test_duplicate_ids(tmp_path):
    left = replace_cell(LEFT, 4, "id", "2")
    e = expect_error(write(tmp_path, left=left), "left.csv", "column 'id'", "line 5 of file",
                     "duplicate id '2'", "first seen on line 3")
    assert (e.column, e.row, e.line) == ("id", 4, 5)


def test_empty_id(tmp_path):
    expect_error(write(tmp_path, left=replace_cell(LEFT, 3, "id", "")), "left.csv",
                 "line 4 of file", "empty id")


def test_mismatched_ids(tmp_path):
    right = replace_cell(RIGHT, 2, "id", "99")  # id 1 only left, 99 only right
    expect_error(write(tmp_path, right=right), "1 id(s) of", "left.csv", "right.csv",
                 "e.g. '1'", "e.g. '99'")


def test_attribute_missing_from_file(tmp_path):
    right = [",".join(r.split(",")[:2]) for r in RIGHT]  # drop column x
    expect_error(write(tmp_path, right=right), "right.csv", "column 'x'", "not in the file")


@pytest.mark.parametrize("col,value,fragment", [
    ("x", "abc", "non-numeric value 'abc'"),
    ("x", "inf", "infinite value 'inf'"),
    ("x", "-Infinity", "infinite"),
    ("x", "1e999", "infinite"),
    ("x", "150", "outside the declared domain [0, 100]"),
    ("y", "-0.5", "outside the declared domain [0, 10]"),
])
def test_bad_numeric_cells(tmp_path, col, value, fragment):
    right = replace_cell(RIGHT, 4, col, value)
    e = expect_error(write(tmp_path, right=right), "right.csv", f"column '{col}'", "line 5 of file",
                     fragment)
    assert (e.column, e.row, e.line) == (col, 4, 5)


def test_nan_text_not_declared_missing(tmp_path):
    schema = copy.deepcopy(SCHEMA)
    schema["missing_values"] = [""]
    right = replace_cell(RIGHT, 5, "y", "nan")
    expect_error(write(tmp_path, schema, right=right), "right.csv", "column 'y'", "line 6 of file",
                 "NaN text 'nan'", "missing_values")


def test_bad_boolean(tmp_path):
    left = replace_cell(LEFT, 2, "flag", "maybe")
    expect_error(write(tmp_path, left=left), "left.csv", "column 'flag'", "line 3 of file",
                 "Boolean value 'maybe' not recognised")


def test_unknown_category(tmp_path):
    left = replace_cell(LEFT, 5, "cat", "d")
    expect_error(write(tmp_path, left=left), "left.csv", "column 'cat'", "line 6 of file",
                 "unknown category 'd'", "'a', 'b', 'c'")


def test_constant_and_all_missing_columns(tmp_path):
    right = [RIGHT[0]] + [",".join(r.split(",")[:1] + ["7"] + r.split(",")[2:])
                          for r in RIGHT[1:]]
    expect_error(write(tmp_path, right=right), "right.csv", "column 'y'", "constant column",
                 "7")
    left = [LEFT[0]] + [",".join(r.split(",")[:1] + [""] + r.split(",")[2:]) for r in LEFT[1:]]
    expect_error(write(tmp_path, left=left), "left.csv", "column 'flag'", "every value is missing")


# ---------------------------------------------------------------------------
# Bad schema files: messages name the schema file and the attribute
# ---------------------------------------------------------------------------

def _mut(path, value):
    def f(s):
        target = s
        for key in path[:-1]:
            target = target[key]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return s
    return f


@pytest.mark.parametrize("mutate,fragments", [
    (_mut(["attributes", 2, "type"], "float"), ["'x'", "unknown attribute type 'float'"]),
    (_mut(["attributes", 2, "domain"], KeyError), ["'x'", "needs a public \"domain\""]),
    (_mut(["attributes", 2, "domain"], [5, 5]), ["'x'", "lo < hi"]),
    (_mut(["attributes", 2, "domain"], [9, 1]), ["'x'", "lo < hi"]),
    (_mut(["attributes", 2, "domain"], ["0", 1]), ["'x'", "two numbers"]),
    (_mut(["attributes", 2, "thresholds"], [50, 200]), ["'x'", "outside the declared domain"]),
    (_mut(["attributes", 1, "categories"], []), ["'cat'", "categories"]),
    (_mut(["attributes", 1, "categories"], ["a", "a"]), ["'cat'", "duplicate category"]),
    (_mut(["attributes", 3, "name"], "x"), ["'x'", "duplicate attribute name"]),
    (_mut(["attributes", 0, "view"], "middle"), ["'flag'", "\"left\" or \"right\""]),
    (_mut(["attributes", 0, "domian"], [0, 1]), ["'flag'", "unknown key(s) 'domian'"]),
    (_mut(["attributes", 0, "domain"], [0, 1]), ["'flag'", "not allowed on a boolean"]),
    (_mut(["attributes", 0, "true_value"], "Y"), ["'flag'", "both"]),
    (_mut(["attributes", 3, "name"], "id"), ["'id'", "id column cannot also be an attribute"]),
    (_mut(["attributes"], SCHEMA["attributes"][:2]), ["right view 'R' has no attributes"]),
    (_mut(["attributes"], []), ["non-empty list \"attributes\""]),
    (_mut(["grid_bins"], 0), ["grid_bins", "≥ 1"]),
    (_mut(["target_bins"], 1), ["target_bins"]),
    (_mut(["id_column"], KeyError), ["different files", "id_column"]),
    (_mut(["views", "left"], KeyError), ["\"left\""]),
    (_mut(["views", "left", "file"], KeyError), ["views.left needs a \"file\""]),
    (_mut(["public_demo"], "yes"), ["public_demo"]),
    (_mut(["sauce"], 1), ["unknown key(s) 'sauce'"]),
    (_mut(["source"], {"package": "os", "loader": "system"}), ["unsupported package source"]),
])
def test_bad_schema(tmp_path, mutate, fragments):
    schema = mutate(copy.deepcopy(SCHEMA))
    d = write(tmp_path, schema)
    e = expect_error(d, "schema.json", *fragments)
    assert e.file.endswith("schema.json")


def test_bad_schema_syntax(tmp_path):
    d = write(tmp_path)
    (d / "schema.json").write_text('{"name": "x",\n "views": }', encoding="utf-8")
    expect_error(d, "schema.json", "invalid JSON at line 2")
    (d / "schema.json").unlink()
    (d / "schema.toml").write_text('name = "x"\nviews = [\n', encoding="utf-8")
    expect_error(d, "schema.toml", "invalid TOML")
    with pytest.raises(DataError, match="must end in .json or .toml"):
        load_schema(d / "schema.yaml")


# ---------------------------------------------------------------------------
# Schema round trips
# ---------------------------------------------------------------------------

def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(d: dict) -> str:
    """Minimal TOML writer for schema dicts (tests only)."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items()
             if k not in ("views", "attributes")]
    for key, view in d["views"].items():
        lines += ["", f"[views.{key}]"] + [f"{k} = {_toml_value(v)}" for k, v in view.items()]
    for a in d["attributes"]:
        lines += ["", "[[attributes]]"] + [f"{k} = {_toml_value(v)}" for k, v in a.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", ["clinic", "cms_small", "diabetes"])
def test_schema_round_trip_json_and_toml(tmp_path, name):
    schema = load_schema(sample_data_dir() / name / "schema.json")
    save_schema(schema, tmp_path / "s.json")
    assert load_schema(tmp_path / "s.json") == schema
    (tmp_path / "s.toml").write_text(to_toml(schema_to_dict(schema)), encoding="utf-8")
    assert load_schema(tmp_path / "s.toml") == schema
    assert schema_from_dict(schema_to_dict(schema)) == schema


def test_toml_dataset_directory(tmp_path):
    d = write(tmp_path)
    (d / "schema.toml").write_text(to_toml(SCHEMA), encoding="utf-8")
    expect_error(d, "both schema.json and schema.toml")
    (d / "schema.json").unlink()
    ds = load_dataset(d)
    assert ds.schema.views[0].file == "left.csv" and ds.n_rows == 6


def test_schema_fields_and_grid():
    s = schema_from_dict(SCHEMA, file="x.json")
    x = s.view_attributes(1)[0]
    assert (x.type, x.domain, x.unit) == (NUMERIC, (0.0, 100.0), "mg")
    assert s.view_attributes(0)[1].categories == ("a", "b", "c")
    assert len(s.split_grid(x)) == 32 and s.missing_values == ("", "NA", "NaN", "nan", "?")


# ---------------------------------------------------------------------------
# Owner-only prefill
# ---------------------------------------------------------------------------

def test_prefill_schema_guesses_and_loads(tmp_path):
    d = write(tmp_path)
    left, right = read_table(d / "left.csv"), read_table(d / "right.csv")
    s = prefill_schema(left, right, "tiny", "id", files=("left.csv", "right.csv"))
    types = {a.name: a.type for a in s.attributes}
    assert types == {"flag": BOOLEAN, "cat": CATEGORICAL, "x": NUMERIC, "y": NUMERIC}
    assert "extra" in s.description and "PREFILLED" in s.description  # constant: left out
    x = next(a for a in s.attributes if a.name == "x")
    assert x.domain[0] <= 10 and x.domain[1] >= 50
    grid = s.split_grid(x)
    np.testing.assert_allclose(grid, np.round(grid, 6))  # round thresholds
    assert not s.public_demo
    save_schema(s, d / "schema.json")
    assert load_dataset(d).n_rows == 6


def test_prefill_on_desynpuf(shared_data_dir, tmp_path):
    src = shared_data_dir / "desynpuf" / \
        "DE1_0_2008_Beneficiary_Summary_File_Sample_1_subset10k.csv"
    frame = read_table(src)
    left_cols = ["DESYNPUF_ID"] + [c for c in frame.columns if c.startswith("SP_")
                                   and c != "SP_STATE_CODE"] + ["BENE_SEX_IDENT_CD"]
    right_cols = ["DESYNPUF_ID"] + [c for c in frame.columns if c.startswith(
        ("MEDREIMB", "BENRES", "PPPYMT"))]
    s = prefill_schema(frame[left_cols], frame[right_cols], "desynpuf", "DESYNPUF_ID",
                       files=(src.name, src.name))
    ds = load_dataset(src.parent, schema=s)
    assert ds.n_rows == len(frame)
    assert ds.views[0].n_attributes == 12 and ds.views[1].n_attributes == 9


# ---------------------------------------------------------------------------
# Where a message points: "line N of file F", as a text editor counts lines
# ---------------------------------------------------------------------------

def test_malformed_csv_names_one_location_the_editor_line(tmp_path):
    """One place, one name: before, the message said "row 3" and pandas' "line 4"."""
    right = list(RIGHT)
    right[3] = "2,3,20,99"                      # editor line 4
    e = expect_error(write(tmp_path, right=right), "line 4 of file", "right.csv",
                     "malformed CSV", "4 fields where the header has 3")
    assert "row" not in str(e) and str(e).count("line") == 1


def test_malformed_csv_after_a_quoted_line_break_names_the_editor_line(tmp_path):
    """pandas counts a quoted line break as no line (it would say line 4); an editor shows
    the bad record on line 5."""
    d = write(tmp_path)
    (d / "right.csv").write_text('id,y,x\n"3",1.5,30\n"1\nb",2,10\n2,3,20,99\n',
                                 encoding="utf-8")
    e = expect_error(d, "line 5 of file", "right.csv")
    assert e.line == 5


def test_errors_after_blank_lines_name_the_editor_line(tmp_path):
    right = RIGHT[:3] + ["", ""] + [RIGHT[3].replace(",20", ",abc")] + RIGHT[4:]
    e = expect_error(write(tmp_path, right=right), "line 6 of file", "right.csv",
                     "column 'x'", "non-numeric value 'abc'")
    assert (e.row, e.line) == (3, 6)


def test_read_table_indexes_plain_text_rows_by_line_and_parquet_by_position(tmp_path):
    d = write(tmp_path, right=RIGHT[:2] + [""] + RIGHT[2:])
    right = read_table(d / "right.csv")
    assert right.index.name == LINE_INDEX_NAME
    assert list(right.index) == [2, 4, 5, 6, 7, 8]
    assert location_text(right, 1) == "line 4" and location(right, 1) == {"row": 2, "line": 4}
    right.reset_index(drop=True).to_parquet(d / "right.parquet")
    parquet = read_table(d / "right.parquet")
    assert parquet.index.name is None and location_text(parquet, 1) == "row 2"


def test_messages_about_tables_in_memory_name_the_row():
    left = pd.DataFrame({"id": ["1", "2", "2"], "flag": ["1", "0", "1"]})
    with pytest.raises(DataError) as info:
        join_view_ids(left, left, "id", left_file="up_left.csv", right_file="up_right.csv")
    assert str(info.value).startswith("file 'up_left.csv', column 'id', row 3:")
    assert "first seen on row 2" in str(info.value)


def test_join_view_ids_reports_ids_in_one_view_only(tmp_path):
    d = write(tmp_path, right=RIGHT[:-1] + ["9,6,40"])
    left, right = read_table(d / "left.csv"), read_table(d / "right.csv")
    with pytest.raises(DataError) as info:
        join_view_ids(left, right, "id", left_file="left.csv", right_file="right.csv")
    msg = str(info.value)
    assert "do not cover the same ids" in msg
    assert "1 id(s) of 'left.csv' are not in 'right.csv' (e.g. '4', line 5)" in msg
    assert "1 id(s) of 'right.csv' are not in 'left.csv' (e.g. '9', line 7)" in msg
    ids, order = join_view_ids(left, read_table(write(tmp_path) / "right.csv"), "id")
    assert list(ids) == ["1", "2", "3", "4", "5", "6"] and list(order) == [1, 2, 0, 5, 4, 3]


def test_boolean_spellings_have_one_definition():
    import dpcore.data.loading as loading
    import dpcore.data.prefill as prefill_module
    import dpcore.data.schema as schema_module

    assert loading.TRUE_TEXTS is schema_module.TRUE_TEXTS
    assert prefill_module.FALSE_TEXTS is schema_module.FALSE_TEXTS
    assert not hasattr(schema_module, "_TRUE_TEXTS") and not hasattr(schema_module,
                                                                     "_FALSE_TEXTS")


# ---------------------------------------------------------------------------
# The prefill reports every column it leaves out
# ---------------------------------------------------------------------------

def _prefill_two(tmp_path, right_lines):
    d = write(tmp_path, right=right_lines)
    return prefill(read_table(d / "left.csv"), read_table(d / "right.csv"), "tiny", "id",
                   files=("left.csv", "right.csv"))


def test_numbers_with_a_stray_text_are_reported_with_their_lines_not_dropped(tmp_path):
    """Before, x (numbers plus one 'abc') silently became categorical or was dropped."""
    right = ["id,y,x"] + [f"{i},{i % 7},{10 * i + 1}" for i in range(1, 41)]
    right[8] = "8,1,abc"                        # editor line 9
    right[30] = "30,2,n/a?"                     # editor line 31
    result = _prefill_two(tmp_path, right)
    assert "x" not in {a.name for a in result.schema.attributes}
    (note,) = [n for n in result.notes if n.column == "x"]
    assert note.file == "right.csv" and note.view == 1
    assert "2 of its 40 values are not numbers" in note.reason
    assert "line 9: 'abc'" in note.reason and "line 31: 'n/a?'" in note.reason
    assert note.proposal is not None and note.proposal.type == NUMERIC     # 40 distinct
    assert note.proposal.domain[0] <= 11 and note.proposal.domain[1] >= 401
    assert "Columns left out: " in result.schema.description


def test_few_distinct_numbers_with_a_stray_text_are_offered_as_categorical(tmp_path):
    right = ["id,y,x"] + [f"{i},{i % 7},{i % 3}" for i in range(1, 21)]
    right[5] = "5,1,unknown"
    (note,) = [n for n in _prefill_two(tmp_path, right).notes if n.column == "x"]
    assert "line 6: 'unknown'" in note.reason
    assert note.proposal.type == CATEGORICAL
    assert note.proposal.categories == ("0", "1", "2", "unknown")


def test_many_stray_texts_list_the_first_three_and_the_count(tmp_path):
    right = ["id,y,x"] + [f"{i},{i % 7},{i}" for i in range(1, 41)]
    for k in (3, 5, 7, 9):
        right[k] = f"{k},1,bad{k}"
    (note,) = [n for n in _prefill_two(tmp_path, right).notes if n.column == "x"]
    assert "line 4: 'bad3', line 6: 'bad5', line 8: 'bad7', … (4 in all)" in note.reason


def test_constant_missing_and_free_text_columns_are_reported(tmp_path):
    right = ["id,y,x,const,empty,words"] + [
        f"{i},{i % 7},{i},same,,word{i}" for i in range(1, 31)]
    notes = {n.column: n for n in _prefill_two(tmp_path, right).notes}
    assert "constant" in notes["const"].reason and notes["const"].proposal is None
    assert "every value is missing" in notes["empty"].reason and notes["empty"].proposal is None
    assert "30 distinct texts" in notes["words"].reason
    assert notes["words"].proposal.type == CATEGORICAL
    assert "extra" in notes and "constant" in notes["extra"].reason      # the left file's


@pytest.mark.parametrize("name, content, words", [
    ("view.csv", b"id;age;city\n1;30,5;Oslo\n2;41;Bergen\n", "';'-separated"),
    ("view.csv", b"id\tage\n1\t30\n", "a tab-separated"),
    ("view.tsv", b"id;age\n1;30\n", "';'-separated"),
])
def test_a_table_with_another_separator_is_refused_naming_it(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=f"line 1 \\(the header\\).*{words}") as err:
        read_table(path, label=name)
    assert f"file '{name}'" in str(err.value)


def test_a_gzip_csv_with_semicolons_is_refused_and_a_one_column_csv_is_read(tmp_path):
    import gzip

    path = tmp_path / "view.csv.gz"
    path.write_bytes(gzip.compress(b"id;age\n1;30\n"))
    with pytest.raises(DataError, match="';'-separated; save it again with ','"):
        read_table(path)
    single = tmp_path / "ids.csv"
    single.write_bytes(b"id\n1\n2\n")
    assert list(read_table(single).columns) == ["id"]
