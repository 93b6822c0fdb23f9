"""A labelled table's partitions: streamed at registration, read back exactly as the loader
reads the file, with the content digest the ledger recorded before tables were partitioned."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

import dpcore.data.table.table as table_module
from dpcore.data import partitions as store
from dpcore.data.table import partitions as tp
from dpcore.data.table.schema import load_table_schema
from dpcore.data.table.table import load_registered_table
from dpcore.errors import DataError
from dpcore.privacy.policy import content_digest
from dpcore.registry import KIND_TABLE
from tests.support.content_digest_reference import whole_array_digest

SCHEMA = {
    "kind": "labelled_table", "name": "t", "file": "t.csv",
    "label": {"name": "y", "classes": ["no", "yes", 3]},
    "features": [
        {"name": "age", "type": "numeric", "bounds": [0, 100]},
        {"name": "colour", "type": "categorical", "levels": ["red", "green", "blue"]},
        {"name": "score", "type": "numeric", "bounds": [-1.5, 2.5]},
        {"name": "size", "type": "categorical", "levels": [1, 2]},
    ],
}


def _write(folder, n: int, seed: int = 0, *, parquet: bool = False):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "y": rng.choice(["no", "yes", "3"], n),
        "extra": rng.integers(0, 9, n),                        # not in the schema: ignored
        "age": rng.uniform(-20, 130, n).round(2),              # some clipped to [0, 100]
        "colour": rng.choice(["red", "green", "blue"], n),
        "score": rng.normal(0.5, 1.5, n).round(3),
        "size": rng.choice(["1", "2"], n),
    })
    schema = dict(SCHEMA)
    folder.mkdir(exist_ok=True)
    if parquet:
        schema["file"] = "t.parquet"
        frame.to_parquet(folder / "t.parquet")
    else:
        frame.to_csv(folder / "t.csv", index=False)
    (folder / "synthesis_schema.json").write_text(json.dumps(schema))
    return load_table_schema(folder / "synthesis_schema.json")


def _same(a, b) -> None:
    assert a.schema == b.schema and a.source == b.source and a.clipped == b.clipped
    for (na, xa), (nb, xb) in zip(a.content_arrays(), b.content_arrays(), strict=True):
        assert na == nb and xa.dtype == xb.dtype and xa.shape == xb.shape
        np.testing.assert_array_equal(xa, xb)


@pytest.fixture
def small_parts(monkeypatch):
    """Partitions of 70 rows, blocks of 32 rows: many of each on a few hundred rows."""
    monkeypatch.setattr(store, "ROWS_PER_PARTITION", 70)
    monkeypatch.setattr(store, "BLOCK_ROWS", 32)


def _no_loader(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the whole-file loader was called")
    monkeypatch.setattr(table_module, "load_table", refuse)


@pytest.mark.parametrize("parquet", [False, True])
def test_registration_streams_the_file_and_a_run_reads_what_the_loader_gives(
        tmp_path, monkeypatch, small_parts, parquet):
    schema = _write(tmp_path / "d", 300, parquet=parquet)
    reference = load_registered_table(tmp_path / "d", schema)
    assert sum(reference.clipped.values()) > 0                 # clipping is exercised
    with monkeypatch.context() as m:
        _no_loader(m)
        manifest = tp.ensure_table_partitions(tmp_path / "d", schema)
        loaded = tp.load_table_partitioned(tmp_path / "d", schema)
    assert len(manifest.partitions) == 5 and manifest.rows == 300
    assert [p["rows"] for p in manifest.partitions] == [70, 70, 70, 70, 20]
    _same(loaded, reference)
    # the ledger's digest keeps its meaning: the manifest's digest is the old whole-array one
    assert manifest.content_digest == whole_array_digest(reference, KIND_TABLE) \
        == content_digest(reference)
    assert content_digest(loaded) == manifest.content_digest
    # categorical and class codes are stored in the smallest type
    columns = tp.read_table_columns(manifest, ["cat_0", tp.LABELS, "num_1"])
    assert columns["cat_0"].dtype == np.uint8 and columns[tp.LABELS].dtype == np.uint8
    np.testing.assert_array_equal(columns["num_1"], reference.numeric[:, 1])


def test_the_partitions_are_owner_only_and_hold_no_temporary_folder(tmp_path):
    schema = _write(tmp_path / "d", 50)
    manifest = tp.ensure_table_partitions(tmp_path / "d", schema)
    root = tmp_path / "d" / store.PARTS_FOLDER
    assert [p.name for p in root.iterdir() if p.is_dir()] == [manifest.folder.name]
    assert stat.S_IMODE(manifest.folder.stat().st_mode) == 0o700
    for f in manifest.folder.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600


@pytest.mark.parametrize("edit, message", [("level", "not a declared level"),
                                           ("class", "not a declared class"),
                                           ("number", "not a finite number"),
                                           ("column", "feature column")])
def test_bad_data_raise_the_loaders_message_and_write_nothing(tmp_path, small_parts, edit,
                                                              message):
    schema = _write(tmp_path / "d", 200)
    path = tmp_path / "d" / "t.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if edit == "level":
        frame.loc[150, "colour"] = "purple"
    elif edit == "class":
        frame.loc[150, "y"] = "maybe"
    elif edit == "number":
        frame.loc[150, "score"] = "n/a"
    else:
        frame = frame.drop(columns="size")
    frame.to_csv(path, index=False)
    with pytest.raises(DataError, match=message) as info:
        tp.ensure_table_partitions(tmp_path / "d", schema)
    if edit != "column":
        assert info.value.row == 151                      # the loader's 1-based data row
    root = tmp_path / "d" / store.PARTS_FOLDER
    assert not root.exists() or not [p for p in root.iterdir() if p.is_dir()]


def test_a_damaged_partition_is_never_used_and_is_rebuilt(tmp_path, small_parts):
    schema = _write(tmp_path / "d", 200)
    manifest = tp.ensure_table_partitions(tmp_path / "d", schema)
    reference = load_registered_table(tmp_path / "d", schema)
    part = manifest.folder / "part-00001.npz"
    raw = part.read_bytes()
    with np.load(part) as z:
        columns = {k: z[k] for k in z.files}
    columns["num_0"] = columns["num_0"].copy()
    columns["num_0"][3] = 50.0                     # inside the bounds: only the digest sees it
    with open(part, "wb") as f:
        np.savez(f, **columns)
    with pytest.raises(DataError, match="damaged"):
        tp.read_table_columns(manifest, ["num_0"])
    _same(tp.load_table_partitioned(tmp_path / "d", schema), reference)
    assert part.read_bytes() == raw


def test_a_changed_file_is_read_again(tmp_path):
    schema = _write(tmp_path / "d", 100, seed=1)
    first = tp.load_table_partitioned(tmp_path / "d", schema)
    _write(tmp_path / "d", 120, seed=2)
    second = tp.load_table_partitioned(tmp_path / "d", schema)
    assert second.n_rows == 120
    _same(second, load_registered_table(tmp_path / "d", schema))
    assert content_digest(first) != content_digest(second)


def test_a_compressed_csv_goes_through_the_loader(tmp_path):
    schema = _write(tmp_path / "d", 80)
    frame = pd.read_csv(tmp_path / "d" / "t.csv", dtype=str, keep_default_na=False)
    frame.to_csv(tmp_path / "d" / "t.csv.gz", index=False)
    os.remove(tmp_path / "d" / "t.csv")
    raw = json.loads((tmp_path / "d" / "synthesis_schema.json").read_text())
    raw["file"] = "t.csv.gz"
    (tmp_path / "d" / "synthesis_schema.json").write_text(json.dumps(raw))
    schema = load_table_schema(tmp_path / "d" / "synthesis_schema.json")
    manifest = tp.ensure_table_partitions(tmp_path / "d", schema)
    reference = load_registered_table(tmp_path / "d", schema)
    assert manifest.content_digest == whole_array_digest(reference, KIND_TABLE)
    _same(tp.load_table_partitioned(tmp_path / "d", schema), reference)
