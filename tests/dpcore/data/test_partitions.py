"""The owner-side columnar partitions of two-view data (dpcore.data.partitions).

A read from partitions must give exactly what the whole-file loader gives, with the same
content digest; registration must stream the files (never the loader on good files); a build
that no longer fits its files or schema, or is damaged, must be rebuilt — never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore.data.loading as loading
from dpcore.data import partitions
from dpcore.data.dataset import two_view_digest
from dpcore.data.kinds import load_two_view
from dpcore.data.loading import load_dataset, sample_data_dir
from dpcore.data.partitions import (
    PARTS_FOLDER,
    build_folder,
    ensure_partitions,
    load_two_view_partitioned,
    read_columns,
)
from dpcore.data.schema import load_schema, schema_from_dict
from dpcore.errors import DataError


def _copy(tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(sample_data_dir() / name, folder,
                    ignore=shutil.ignore_patterns(PARTS_FOLDER, ".dpcore_cache"))
    return folder, load_schema(folder / "schema.json")


@pytest.fixture
def sites(tmp_path):
    """A private copy of the sample ``sites`` (two files joined on ``site_id``)."""
    return _copy(tmp_path, "sites")


def _same(a, b) -> None:
    assert a.schema == b.schema
    for va, vb in zip(a.views, b.views):
        assert va.attributes == vb.attributes
        assert va.values.dtype == vb.values.dtype == np.float64
        assert va.values.flags.c_contiguous
        np.testing.assert_array_equal(va.values, vb.values)     # NaN == NaN here
    assert a.ids.dtype == b.ids.dtype and a.ids.tolist() == b.ids.tolist()
    assert all(type(x) is type(y) for x, y in zip(a.ids.tolist(), b.ids.tolist()))


def _old_digest(data) -> str:
    """The content digest as it was computed before partitions (whole views at once)."""
    h = hashlib.sha256(b"dpcore-content-v1")
    for view in data.views:
        values = np.where(np.isnan(view.values), np.nan, view.values)
        h.update(np.asarray(values.shape, dtype=np.int64).tobytes())
        h.update(values.tobytes())
    return h.hexdigest()


def _no_loader(monkeypatch):
    """Make any call of the whole-file loader fail: what succeeds was streamed or read."""
    def refuse(*args, **kwargs):
        raise AssertionError("the whole-file loader was called")
    monkeypatch.setattr(loading, "load_dataset", refuse)


@pytest.mark.parametrize("name", ["sites", "cms_small", "clinic"])
def test_registration_streams_the_files_and_a_run_reads_what_the_loader_gives(
        tmp_path, monkeypatch, name):
    folder, schema = _copy(tmp_path, name)
    direct = load_dataset(folder, schema=schema)
    with monkeypatch.context() as m:
        _no_loader(m)
        manifest = ensure_partitions(folder, schema)             # streamed, not loaded
        got = load_two_view(folder, schema)                      # the registry's loader
    _same(got, direct)
    assert manifest.content_digest == _old_digest(direct) == two_view_digest(got)
    assert manifest.rows == direct.n_rows
    assert manifest.folder.parent == folder / PARTS_FOLDER
    assert manifest.folder.stat().st_mode & 0o777 == 0o700
    assert manifest.folder.parent.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in manifest.folder.iterdir())


def test_codes_are_stored_in_the_smallest_type(tmp_path):
    folder, schema = _copy(tmp_path, "cms_small")
    manifest = ensure_partitions(folder, schema)
    types = json.loads((manifest.folder / "manifest.json").read_text())["columns"]
    for v in (0, 1):
        for a, attr in enumerate(schema.view_attributes(v)):
            want = {"boolean": "uint8", "numeric": "float64"}.get(attr.type, "uint8")
            assert types[f"v{v}_{a}"] == want, attr


def _write_views(folder, left: str, right: str | None, schema: dict) -> object:
    folder.mkdir()
    (folder / "l.csv").write_bytes(left.encode("utf-8"))
    if right is not None:
        (folder / "r.csv").write_bytes(right.encode("utf-8"))
    (folder / "schema.json").write_text(json.dumps(schema))
    return schema_from_dict(schema)


def _schema(right_file="r.csv", id_column="id"):
    return {"name": "t", "id_column": id_column,
            "views": {"left": {"name": "L", "file": "l.csv"},
                      "right": {"name": "R", "file": right_file}},
            "missing_values": ["", "NA"],
            "attributes": [
                {"name": "b", "view": "left", "type": "boolean"},
                {"name": "c", "view": "left", "type": "categorical",
                 "categories": ["x", "y", "z"]},
                {"name": "n", "view": "right", "type": "numeric", "domain": [0, 100]},
                {"name": "m", "view": "right", "type": "numeric", "domain": [-9, 9]}]}


def test_small_partitions_and_blocks_quoted_lines_bom_and_a_shuffled_right_view(
        tmp_path, monkeypatch):
    """Many partitions and blocks; a BOM, CRLF, a quoted line break, blank lines, missing
    markers, spaces; the right view in another row order (joined on the ids)."""
    monkeypatch.setattr(partitions, "ROWS_PER_PARTITION", 7)
    monkeypatch.setattr(partitions, "BLOCK_ROWS", 5)
    rng = np.random.default_rng(3)
    n = 40
    ids = [f"r{i}" for i in range(n)]
    left_rows = [f'{ids[i]},{"yes" if rng.random() < .5 else "no"},'
                 f'{"NA" if i % 9 == 0 else " " + "xyz"[i % 3]}' for i in range(n)]
    left_rows[3] = f'"{ids[3]}",1,"y"'
    left = "\ufeffid,b,c,extra\r\n" + "\r\n".join(r + ',"a\nb"' for r in left_rows) + "\r\n\r\n"
    order = rng.permutation(n)
    right = "id,n,m\n" + "\n".join(f"{ids[i]},{'' if i == 5 else rng.integers(0, 100)},"
                                   f"{rng.normal():.6f}" for i in order) + "\n\n"
    schema = _write_views(tmp_path / "t", left, right, _schema())
    direct = load_dataset(tmp_path / "t", schema=schema)
    with monkeypatch.context() as m:
        _no_loader(m)
        manifest = ensure_partitions(tmp_path / "t", schema)
        got = load_two_view_partitioned(tmp_path / "t", schema)
    assert len(manifest.partitions) == 6 and manifest.rows == n
    _same(got, direct)
    assert manifest.content_digest == _old_digest(direct)
    columns = read_columns(manifest, ["v0_1", "ids"])              # only what is asked for
    assert set(columns) == {"v0_1", "ids"} and columns["v0_1"].dtype == np.uint8
    assert columns["ids"].tolist() == ids
    assert (columns["v0_1"] == 255).sum() == np.isnan(direct.views[0].values[1]).sum()


def test_a_parquet_view_and_one_file_for_both_views_stream_too(tmp_path, monkeypatch):
    folder = tmp_path / "pq"
    folder.mkdir()
    frame = pd.DataFrame({"id": [f"k{i}" for i in range(30)], "b": [i % 2 for i in range(30)],
                          "c": ["x", "y", "z"] * 10, "n": np.arange(30.0),
                          "m": np.linspace(-1, 1, 30)})
    frame.loc[4, "n"] = np.nan
    frame.to_parquet(folder / "both.parquet")
    raw = _schema(right_file="both.parquet")
    raw["views"]["left"]["file"] = "both.parquet"
    (folder / "schema.json").write_text(json.dumps(raw))
    schema = schema_from_dict(raw)
    direct = load_dataset(folder, schema=schema)
    with monkeypatch.context() as m:
        _no_loader(m)
        got = load_two_view_partitioned(folder, schema)
    _same(got, direct)


def test_a_compressed_csv_goes_through_the_loader(tmp_path):
    folder, schema = _copy(tmp_path, "sites")
    for v in schema.views:
        path = folder / v.file
        import gzip
        (folder / (v.file + ".gz")).write_bytes(gzip.compress(path.read_bytes()))
    raw = json.loads((folder / "schema.json").read_text())
    for v in raw["views"].values():
        v["file"] += ".gz"
    schema = schema_from_dict(raw)
    _same(load_two_view_partitioned(folder, schema), load_dataset(folder, schema=schema))


@pytest.mark.parametrize("edit", ["abc", "constant", "duplicate id", "unknown id"])
def test_bad_data_raise_the_loaders_message_and_write_nothing(sites, edit):
    folder, schema = sites
    traits = folder / "traits.csv"
    lines = traits.read_text().splitlines()
    if edit == "abc":
        lines[5] = lines[5].replace(",", ",abc,", 1)
    elif edit == "constant":
        lines[1:] = [",".join([line.split(",")[0], "1.0", *line.split(",")[2:]])
                     for line in lines[1:]]
    elif edit == "duplicate id":
        lines[7] = lines[3]
    else:
        lines[9] = "nowhere" + lines[9][lines[9].index(","):]
    traits.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as streamed:
        ensure_partitions(folder, schema)
    with pytest.raises(DataError) as loader:
        load_dataset(folder, schema=schema)
    assert str(streamed.value) == str(loader.value)
    assert not list((folder / PARTS_FOLDER).glob("*")) if (folder / PARTS_FOLDER).exists() \
        else True


def test_a_changed_source_file_is_read_again(sites, monkeypatch):
    folder, schema = sites
    before = load_two_view_partitioned(folder, schema)
    _edit_first_value(folder, "0.5")
    after = load_two_view_partitioned(folder, schema)
    _same(after, load_dataset(folder, schema=schema))
    assert after.views[0].values[0, 0] == 0.5 != before.views[0].values[0, 0]
    assert two_view_digest(after) != two_view_digest(before)
    _no_loader(monkeypatch)
    assert load_two_view_partitioned(folder, schema).views[0].values[0, 0] == 0.5


def _damage_column(folder, schema, value: float) -> None:
    """Rewrite HYP of the first partition (valid npz, other bytes than recorded)."""
    path = build_folder(folder, schema) / "part-00000.npz"
    with np.load(path, allow_pickle=False) as z:
        stored = {k: z[k] for k in z.files}
    stored["v0_0"] = stored["v0_0"].copy()
    stored["v0_0"][0] = value
    np.savez(path, **stored)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "edited column", "manifest"])
def test_a_damaged_build_is_never_used_and_is_rebuilt(sites, damage):
    folder, schema = sites
    direct = load_two_view_partitioned(folder, schema)
    build = build_folder(folder, schema)
    part = build / "part-00000.npz"
    raw = part.read_bytes()
    if damage == "truncate":
        part.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        part.write_bytes(b"\0" * 1000)
    elif damage == "edited column":
        _damage_column(folder, schema, 3.0)          # inside HYP's domain: only the digest
    else:
        (build / "manifest.json").write_text("{")
    key = partitions._key(schema, partitions.file_digests(
        partitions._view_files(folder, schema)))
    manifest = partitions.read_manifest(build, key)
    if damage == "manifest":
        assert manifest is None
    else:
        with pytest.raises(DataError, match="damaged"):
            read_columns(manifest, ["v0_0"])
    _same(load_two_view_partitioned(folder, schema), direct)
    assert part.read_bytes() == raw                       # rebuilt, byte for byte


def test_a_folder_that_cannot_hold_the_partitions_still_loads(sites):
    folder, schema = sites
    (folder / PARTS_FOLDER).write_text("not a folder")
    _same(load_two_view_partitioned(folder, schema), load_dataset(folder, schema=schema))
    assert (folder / PARTS_FOLDER).read_text() == "not a folder"


def test_a_missing_folder_raises_the_loaders_message(tmp_path):
    schema = load_schema(sample_data_dir() / "sites" / "schema.json")
    with pytest.raises(DataError, match="no such dataset directory"):
        load_two_view_partitioned(tmp_path / "nowhere", schema)


# --- the folder keeps a bounded set: stale builds go when another is written ---------------


def _variant(schema, i: int):
    """Another schema of the same files (another build, the same data)."""
    return replace(schema, description=f"variant {i}")


def _entries(folder) -> set:
    root = folder / PARTS_FOLDER
    return {p.name for p in root.iterdir() if p.is_dir() and p.name[0] != "."}


def _name(folder, schema) -> str:
    return build_folder(folder, schema).name


def _edit_first_value(folder, value: str) -> None:
    traits = folder / "traits.csv"
    lines = traits.read_text().splitlines()
    cells = lines[1].split(",")
    cells[1] = value
    traits.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")


def test_builds_of_current_files_are_kept_and_a_stale_one_is_removed(sites):
    folder, schema = sites
    a, b, c = (_variant(schema, i) for i in range(3))
    load_two_view_partitioned(folder, a)
    load_two_view_partitioned(folder, b)
    assert _entries(folder) == {_name(folder, a), _name(folder, b)}
    _edit_first_value(folder, "0.5")          # a's and b's builds now describe old bytes
    load_two_view_partitioned(folder, a)      # a is rebuilt; both old builds are stale
    assert _entries(folder) == {_name(folder, a)}
    load_two_view_partitioned(folder, c)
    assert _entries(folder) == {_name(folder, a), _name(folder, c)}


def test_builds_of_other_loader_code_or_format_are_removed(sites, monkeypatch):
    folder, schema = sites
    load_two_view_partitioned(folder, _variant(schema, 0))
    root = folder / PARTS_FOLDER
    (root / "0123456789abcdef").mkdir()
    (root / "0123456789abcdef" / "manifest.json").write_text("an old format")
    monkeypatch.setattr(partitions, "_code_digests",
                        dict.fromkeys(partitions.FORMATS, "another loader version"))
    load_two_view_partitioned(folder, _variant(schema, 1))
    assert _entries(folder) == {_name(folder, _variant(schema, 1))}


def test_at_most_max_entries_are_kept_the_most_recently_used(sites, monkeypatch):
    folder, schema = sites
    monkeypatch.setattr(partitions, "MAX_ENTRIES", 3)
    first = _variant(schema, 0)
    load_two_view_partitioned(folder, first)
    for i in range(1, 6):
        manifest = build_folder(folder, first) / "manifest.json"
        old = manifest.stat().st_mtime - 100
        os.utime(manifest, (old, old))
        load_two_view_partitioned(folder, first)   # a hit: now the most recently used
        assert manifest.stat().st_mtime > old + 50
        load_two_view_partitioned(folder, _variant(schema, i))
        assert len(_entries(folder)) == min(i + 1, 3)
    assert _entries(folder) == {_name(folder, _variant(schema, i)) for i in (0, 4, 5)}


def test_a_writers_temporary_folder_is_removed_only_when_old(sites):
    folder, schema = sites
    load_two_view_partitioned(folder, _variant(schema, 0))
    root = folder / PARTS_FOLDER
    young, old = root / ".tmp-young", root / ".tmp-old"
    young.mkdir()
    old.mkdir()
    os.utime(old, (time.time() - 7200,) * 2)
    assert partitions.prune_parts_folder(folder, _variant(schema, 0)) == [old]
    assert young.exists() and not old.exists()


_WORKER = """
import sys
from dataclasses import replace
import numpy as np
from dpcore.data import partitions
from dpcore.data.loading import load_dataset
from dpcore.data.schema import load_schema

folder, start, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
partitions.MAX_ENTRIES = 2                 # 4 variants: every write evicts another's build
schema = load_schema(folder + "/schema.json")
variants = [replace(schema, description=f"variant {i}") for i in range(4)]
left = load_dataset(folder, schema=schema).views[0].values
for r in range(rounds):
    got = partitions.load_two_view_partitioned(folder, variants[(start + r) % 4])
    np.testing.assert_array_equal(got.views[0].values, left)
print("ok")
"""


def test_two_processes_reading_writing_and_pruning_at_once_always_read_the_data(sites):
    """Two processes read four schema variants with room for two builds: each write prunes
    builds the other may be reading or writing. Every read must give the loader's data."""
    folder, _ = sites
    script = folder.parent / "worker.py"
    script.write_text(_WORKER)
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, str(script), str(folder), str(s), "25"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for s in (0, 1)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err[-2000:]
    assert len(_entries(folder)) <= 2
    assert not list((folder / PARTS_FOLDER).glob(".tmp-*"))


def test_a_wide_file_is_read_in_blocks_of_bounded_cells(tmp_path, monkeypatch):
    """Blocks hold at most BLOCK_CELLS cells: the parser sees several blocks of a small
    file when the bound is small, and the result is still the loader's."""
    folder, schema = _copy(tmp_path, "cms_small")
    monkeypatch.setattr(partitions, "BLOCK_CELLS", 81 * 300)     # 80 attributes + the id
    seen = []
    real = partitions._ViewStream.add

    def add(self, frame, id_column):
        seen.append(len(frame))
        return real(self, frame, id_column)

    monkeypatch.setattr(partitions._ViewStream, "add", add)
    with monkeypatch.context() as m:
        _no_loader(m)
        manifest = ensure_partitions(folder, schema)
    assert max(seen) <= 1024 and sum(seen) == manifest.rows == 3000 and len(seen) >= 3
    _same(load_two_view_partitioned(folder, schema), load_dataset(folder, schema=schema))
