"""Sequence schemas and loaders: JSON round trip, record-per-line files, event tables (CSV
and Parquet), the shipped samples, and every bad file named with its file, line/row and
reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.loading import (
    load_event_table,
    load_record_lines,
    load_sequence_dataset,
    read_alphabet_file,
    write_alphabet_file,
    write_record_lines,
)
from dpcore.data.sequences.schema import (
    EVENTS,
    LINES,
    SCHEMA_FILE_NAME,
    SequenceSchema,
    load_sequence_schema,
    save_sequence_schema,
    schema_from_dict,
)
from dpcore.errors import DataError

SAMPLE_DATA = Path(__file__).resolve().parents[4] / "sample_data"
SCHEMA = SequenceSchema("web", ("home", "news", "sports"), l1=5)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- schema

def test_schema_json_round_trip(tmp_path):
    schema = SequenceSchema("web", ("home", "news"), l1=4, public_demo=True, description="d",
                            provenance="p", files={"format": LINES, "records": "r.txt"})
    save_sequence_schema(schema, tmp_path / "s.json")
    assert load_sequence_schema(tmp_path / "s.json") == schema
    assert json.loads((tmp_path / "s.json").read_text())["kind"] == "sequences"


@pytest.mark.parametrize("change, message", [
    ({"alphabet": []}, "non-empty 'alphabet'"),
    ({"alphabet": ["a", "a"]}, "declared twice"),
    ({"alphabet": ["a b"]}, "without spaces"),
    ({"l1": 0}, "'l1' must be an integer"),
    ({"public_demo": "yes"}, "'public_demo'"),
    ({"kind": "two_view"}, "'kind' must be"),
    ({"colour": 1}, "unknown schema key"),
    ({"files": {"format": "xml"}}, "'files.format'"),
    ({"files": {"format": EVENTS, "events": "e.csv"}}, "lacks"),
])
def test_bad_schemas_are_refused_naming_the_file(tmp_path, change, message):
    data = {"kind": "sequences", "name": "x", "alphabet": ["a", "b"], "l1": 3, **change}
    path = _write(tmp_path / "bad.json", json.dumps(data))
    with pytest.raises(DataError, match=message) as err:
        load_sequence_schema(path)
    assert err.value.file == str(path)


def test_invalid_json_names_the_line(tmp_path):
    path = _write(tmp_path / "bad.json", '{\n  "name": "x",\n  oops\n}')
    with pytest.raises(DataError, match="invalid JSON") as err:
        load_sequence_schema(path)
    assert err.value.row == 3


# --------------------------------------------------------------------------- lines

def test_record_lines_and_alphabet_file(tmp_path):
    _write(tmp_path / "alphabet.txt", "home\nnews\nsports\n")
    _write(tmp_path / "records.txt", "home news home\nsports\r\nnews  sports\thome\n")
    assert read_alphabet_file(tmp_path / "alphabet.txt") == SCHEMA.alphabet
    ds = load_record_lines(tmp_path / "records.txt", SCHEMA)
    assert ds.to_lists() == [[0, 1, 0], [2], [1, 2, 0]]
    assert ds.indptr.dtype == np.int64 and ds.items.dtype == np.int32
    assert ds.record_names(2) == ["news", "sports", "home"]


@pytest.mark.parametrize("text, line, reason", [
    ("home\nnews cricket\n", 2, "item 'cricket' is not in the declared alphabet"),
    ("home\n\nnews\n", 2, "empty record"),
    ("home\n   \n", 2, "empty record"),
])
def test_bad_record_lines_name_file_line_and_reason(tmp_path, text, line, reason):
    path = _write(tmp_path / "records.txt", text)
    with pytest.raises(DataError, match=reason) as err:
        load_record_lines(path, SCHEMA)
    assert err.value.file == str(path) and err.value.row == line
    assert f"line {line}" in str(err.value) and "records.txt" in str(err.value)


def test_non_utf8_records_name_the_line(tmp_path):
    path = tmp_path / "records.txt"
    path.write_bytes(b"home\nnews \xff\n")
    with pytest.raises(DataError, match="not UTF-8") as err:
        load_record_lines(path, SCHEMA)
    assert err.value.row == 2


def test_gzip_record_and_alphabet_files_are_read_like_plain_ones(tmp_path):
    import gzip

    (tmp_path / "records.seq.gz").write_bytes(gzip.compress(b"home news\nsports\n"))
    (tmp_path / "alphabet.gz").write_bytes(gzip.compress(b"home\nnews\nsports\n"))
    assert read_alphabet_file(tmp_path / "alphabet.gz") == SCHEMA.alphabet
    assert load_record_lines(tmp_path / "records.seq.gz", SCHEMA).to_lists() == [[0, 1], [2]]
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"home\nnews x\n"))
    with pytest.raises(DataError, match="line 2: item 'x' is not in the declared") as err:
        load_record_lines(tmp_path / "bad.gz", SCHEMA)
    assert err.value.file.endswith("bad.gz")
    (tmp_path / "cut.gz").write_bytes(gzip.compress(b"home\n" * 50)[:20])
    with pytest.raises(DataError, match="gzip file that cannot be decompressed"):
        load_record_lines(tmp_path / "cut.gz", SCHEMA)


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(DataError, match="no records"):
        load_record_lines(_write(tmp_path / "r.txt", ""), SCHEMA)
    with pytest.raises(DataError, match="cannot read"):
        load_record_lines(tmp_path / "absent.txt", SCHEMA)


@pytest.mark.parametrize("text, line, reason", [
    ("home\nnews\nhome\n", 3, "declared twice"),
    ("home\n\nnews\n", 2, "empty item name"),
    ("home page\n", 1, "contains a space"),
])
def test_bad_alphabet_files_name_file_line_and_reason(tmp_path, text, line, reason):
    path = _write(tmp_path / "alphabet.txt", text)
    with pytest.raises(DataError, match=reason) as err:
        read_alphabet_file(path)
    assert err.value.file == str(path) and err.value.row == line


def test_write_then_read_lines(tmp_path):
    ds = SequenceDataset.from_names(SCHEMA, [["home", "news"], ["sports"] * 3])
    write_record_lines(ds, tmp_path / "r.txt")
    write_alphabet_file(SCHEMA, tmp_path / "a.txt")
    assert read_alphabet_file(tmp_path / "a.txt") == SCHEMA.alphabet
    assert load_record_lines(tmp_path / "r.txt", SCHEMA).to_lists() == ds.to_lists()


# --------------------------------------------------------------------------- events

EVENTS_CSV = """user,time,page
u2,2024-01-01T10:05:00,news
u1,2024-01-01T09:00:00,home
u2,2024-01-01T10:00:00,home
u1,2024-01-01T09:30:00,sports
u1,2024-01-01T09:30:00,news
"""


def test_event_table_csv_orders_each_record_by_time(tmp_path):
    path = _write(tmp_path / "events.csv", EVENTS_CSV)
    ds = load_event_table(path, SCHEMA, record_column="user", order_column="time",
                          item_column="page")
    # records in order of first appearance (u2, u1); ties keep the file's order
    assert [ds.record_names(r) for r in range(ds.n_records)] == [
        ["home", "news"], ["home", "sports", "news"]]


def test_event_table_parquet_with_numeric_order(tmp_path):
    frame = pd.DataFrame({"rid": [7, 7, 3, 7], "pos": [2.0, 1.0, 5.0, 3.0],
                          "item": ["news", "home", "sports", "home"]})
    frame.to_parquet(tmp_path / "events.parquet")
    ds = load_event_table(tmp_path / "events.parquet", SCHEMA, record_column="rid",
                          order_column="pos", item_column="item")
    assert ds.to_lists() == [[0, 1, 0], [2]]


@pytest.mark.parametrize("text, column, row, reason", [
    ("user,time,page\nu1,1,home\nu1,2,cricket\n", "page", 2, "not in the declared alphabet"),
    ("user,time,page\nu1,1,home\n,2,news\n", "user", 2, "missing value"),
    ("user,time,page\nu1,1,home\nu1,soon,news\n", "time", 2, "neither a number nor"),
    ("user,time,page\nu1,1,home\nu1,2,\n", "page", 2, "missing value"),
])
def test_bad_event_tables_name_file_column_row_and_reason(tmp_path, text, column, row,
                                                          reason):
    path = _write(tmp_path / "events.csv", text)
    with pytest.raises(DataError, match=reason) as err:
        load_event_table(path, SCHEMA, record_column="user", order_column="time",
                         item_column="page")
    assert (err.value.file, err.value.column, err.value.row) == (str(path), column, row)


def test_event_table_without_a_column(tmp_path):
    path = _write(tmp_path / "events.csv", "user,when,page\nu1,1,home\n")
    with pytest.raises(DataError, match="column not found") as err:
        load_event_table(path, SCHEMA, record_column="user", order_column="time",
                         item_column="page")
    assert err.value.column == "time"
    with pytest.raises(DataError, match="unsupported file type"):
        load_event_table(_write(tmp_path / "e.json", "{}"), SCHEMA, record_column="a",
                         order_column="b", item_column="c")


# --------------------------------------------------------------------------- folders

def test_dataset_folder_with_an_event_table(tmp_path):
    _write(tmp_path / "events.csv", EVENTS_CSV)
    schema = SequenceSchema("web", SCHEMA.alphabet, files={
        "format": EVENTS, "events": "events.csv", "record_column": "user",
        "order_column": "time", "item_column": "page"})
    save_sequence_schema(schema, tmp_path / SCHEMA_FILE_NAME)
    assert load_sequence_dataset(tmp_path).n_records == 2


def test_dataset_folder_refuses_a_different_alphabet_file(tmp_path):
    _write(tmp_path / "records.txt", "home\n")
    _write(tmp_path / "alphabet.txt", "news\nhome\nsports\n")
    save_sequence_schema(SequenceSchema("web", SCHEMA.alphabet, files={
        "format": LINES, "records": "records.txt", "alphabet": "alphabet.txt"}),
        tmp_path / SCHEMA_FILE_NAME)
    with pytest.raises(DataError, match="differs from the schema") as err:
        load_sequence_dataset(tmp_path)
    assert err.value.file.endswith("alphabet.txt")


@pytest.mark.parametrize("name, public", [("clickstream", False), ("house_power", True)])
def test_shipped_samples_load(name, public):
    ds = load_sequence_dataset(SAMPLE_DATA / name)
    assert ds.schema.public_demo is public and ds.n_records >= 2000
    assert schema_from_dict(json.loads((SAMPLE_DATA / name / SCHEMA_FILE_NAME).read_text()))
    # Small enough for the repository, large enough that supports at the paper's θ = 0.02
    # stand above the noise at ε = 1 (clickstream: 50,000 visits, about 1.9 MB).
    assert sum(p.stat().st_size for p in (SAMPLE_DATA / name).iterdir()) < 2_500_000


def test_dataset_refuses_codes_outside_the_alphabet():
    with pytest.raises(DataError, match="declared alphabet"):
        SequenceDataset.from_lists(SCHEMA, [[0, 3]])
    with pytest.raises(DataError, match="not in the declared alphabet") as err:
        SequenceDataset.from_names(SCHEMA, [["home"], ["golf"]])
    assert err.value.row == 2


def test_a_semicolon_event_table_names_the_separator(tmp_path):
    from dpcore.data.sequences.loading import observed_items

    path = _write(tmp_path / "events.csv", "visit;t;page\n1;1;home\n")
    with pytest.raises(DataError, match="';'-separated") as err:
        observed_items(path, label="events.csv")
    assert err.value.file == "events.csv"
