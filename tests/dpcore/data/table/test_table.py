"""Labelled tables for synthesis: schema validation, loading, clipping, encoding, errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.data.table.schema import (
    SCHEMA_FILE_NAME,
    load_table_schema,
    save_table_schema,
    schema_from_dict,
    schema_to_dict,
)
from dpcore.data.table.table import (
    decode_columns,
    frame_from_encoded,
    load_synthesis_dataset,
    load_table,
    table_from_frame,
)
from dpcore.errors import DataError
from dpcore.synthesis.samples import (
    adult_like_schema,
    generate_adult_like,
    generate_pima_like,
    pima_like_schema,
)

SCHEMA = {
    "name": "toy", "public_demo": True,
    "label": {"name": "y", "classes": ["no", "yes"]},
    "features": [
        {"name": "age", "type": "numeric", "bounds": [0, 100], "decimals": 0},
        {"name": "sex", "type": "categorical", "levels": ["F", "M"]},
        {"name": "score", "type": "numeric", "bounds": [-1, 1]},
    ],
}


def toy_schema():
    return schema_from_dict(SCHEMA)


def write_csv(tmp_path, text: str, name: str = "t.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_schema_layout_and_round_trip(tmp_path):
    schema = toy_schema()
    assert schema.width == 4 and schema.n_features == 3 and schema.n_classes == 2
    assert schema.encoded_names() == ["age", "sex=F", "sex=M", "score"]
    assert list(schema.columns_of(1)) == [1, 2]
    assert schema.columns == ("y", "age", "sex", "score")
    save_table_schema(schema, tmp_path / SCHEMA_FILE_NAME)
    again = load_table_schema(tmp_path)
    assert schema_to_dict(again) == schema_to_dict(schema)


@pytest.mark.parametrize("change, match", [
    (lambda d: d["features"][0].update(bounds=[5, 5]), "lo < hi"),
    (lambda d: d["features"][0].pop("bounds"), "bounds"),
    (lambda d: d["features"][1].update(levels=["F"]), "two declared"),
    (lambda d: d["features"][1].update(levels=["F", "F"]), "twice"),
    (lambda d: d["features"].append({"name": "age", "type": "numeric", "bounds": [0, 1]}),
     "declared twice"),
    (lambda d: d["label"].update(classes=[]), "class"),
    (lambda d: d["features"][2].update(type="date"), "type"),
])
def test_bad_schemas_are_refused_by_name(change, match):
    d = json.loads(json.dumps(SCHEMA))
    change(d)
    with pytest.raises(DataError, match=match):
        schema_from_dict(d)


def test_values_outside_bounds_are_clipped_and_counted(tmp_path):
    path = write_csv(tmp_path, "y,age,sex,score\nno,-3,F,0.5\nyes,140,M,2\nyes,50,F,-0.25\n")
    table = load_table(path, toy_schema())
    assert table.clipped == {"age": 2, "score": 1}
    np.testing.assert_array_equal(table.numeric[:, 0], [0, 100, 50])
    np.testing.assert_array_equal(table.numeric[:, 1], [0.5, 1.0, -0.25])
    np.testing.assert_array_equal(table.labels, [0, 1, 1])
    enc = table.encoded()
    assert enc.min() >= -1 and enc.max() <= 1
    np.testing.assert_allclose(enc[:, 0], [-1, 1, 0])
    np.testing.assert_array_equal(enc[:, 1:3], [[1, 0], [0, 1], [1, 0]])


def test_missing_label_column_names_file_and_column(tmp_path):
    path = write_csv(tmp_path, "age,sex,score\n3,F,0\n")
    with pytest.raises(DataError, match="label column 'y' is missing") as err:
        load_table(path, toy_schema(), label="t.csv")
    assert err.value.file == "t.csv" and err.value.column == "y"


def test_undeclared_level_names_file_column_and_row(tmp_path):
    path = write_csv(tmp_path, "y,age,sex,score\nno,3,F,0\nyes,4,M,0\nno,5,X,0\n")
    with pytest.raises(DataError, match="'X' is not a declared level") as err:
        load_table(path, toy_schema(), label="t.csv")
    assert (err.value.file, err.value.column, err.value.row) == ("t.csv", "sex", 3)
    assert "row 3" in str(err.value)


def test_undeclared_class_and_bad_numbers_name_the_row(tmp_path):
    path = write_csv(tmp_path, "y,age,sex,score\nno,3,F,0\nmaybe,4,M,0\n")
    with pytest.raises(DataError, match="'maybe' is not a declared class") as err:
        load_table(path, toy_schema())
    assert (err.value.column, err.value.row) == ("y", 2)
    path = write_csv(tmp_path, "y,age,sex,score\nno,3,F,0\nyes,,M,0\n")
    with pytest.raises(DataError, match="not a finite number") as err:
        load_table(path, toy_schema())
    assert (err.value.column, err.value.row) == ("age", 2)
    path = write_csv(tmp_path, "y,age,sex,score\nno,3,F,abc\n")
    with pytest.raises(DataError, match="not a finite number") as err:
        load_table(path, toy_schema())
    assert (err.value.column, err.value.row) == ("score", 1)


def test_missing_feature_column_and_file(tmp_path):
    path = write_csv(tmp_path, "y,age,score\nno,3,0\n")
    with pytest.raises(DataError, match="missing: sex"):
        load_table(path, toy_schema())
    with pytest.raises(DataError, match="not found"):
        load_table(tmp_path / "absent.csv", toy_schema())


def test_parquet_and_numeric_classes_match_by_text(tmp_path):
    schema = schema_from_dict({**SCHEMA, "label": {"name": "y", "classes": [-1, 1]}})
    frame = pd.DataFrame({"y": [1.0, -1.0], "age": [20, 30], "sex": ["M", "F"],
                          "score": [0.1, 0.2], "extra": [1, 2]})
    frame.to_parquet(tmp_path / "t.parquet")
    table = load_table(tmp_path / "t.parquet", schema)
    np.testing.assert_array_equal(table.labels, [1, 0])
    out = table.to_frame()
    assert list(out.columns) == ["y", "age", "sex", "score"]
    assert out["y"].tolist() == [1, -1] and out["sex"].tolist() == ["M", "F"]


def test_decoding_rounds_clips_and_takes_the_argmax_level():
    schema = toy_schema()
    enc = np.array([[1.7, 0.2, 0.9, -0.3], [-0.013, 0.6, -0.4, 0.5]])
    numeric, categorical = decode_columns(schema, enc)
    np.testing.assert_array_equal(numeric[:, 0], [100, 49])
    np.testing.assert_array_equal(categorical[:, 0], [1, 0])
    raw, _ = decode_columns(schema, enc, clip=False)
    assert raw[0, 0] == 135
    frame = frame_from_encoded(schema, enc, np.array([1, 0]))
    assert frame["y"].tolist() == ["yes", "no"] and frame["sex"].tolist() == ["M", "F"]


def test_pima_like_sample_ships_and_regenerates_identically(tmp_path):
    from pathlib import Path

    folder = Path(__file__).resolve().parents[4] / "sample_data" / "pima_like"
    table = load_synthesis_dataset(folder)
    assert table.n_rows == 768 and table.schema.public_demo
    np.testing.assert_array_equal(table.class_counts(), [500, 268])
    assert sum(table.clipped.values()) == 0
    shipped = pd.read_csv(folder / "pima_like.csv")
    pd.testing.assert_frame_equal(shipped, generate_pima_like(), check_dtype=False)
    assert load_table_schema(folder) == pima_like_schema()


def test_adult_like_has_the_adult_shape():
    frame = generate_adult_like(2_000, seed=3)
    schema = adult_like_schema()
    table = table_from_frame(frame, schema)
    assert schema.n_features == 14 and schema.width == 105
    assert sum(f.is_numeric for f in schema.features) == 6
    share = table.class_counts()[1] / table.n_rows
    assert 0.15 < share < 0.35
    assert sum(table.clipped.values()) == 0
