"""The owner-side columnar cache of two-view data (dpcore.data.columnar_cache).

A cached read must give exactly what the loader gives, and a cache that no longer fits its
files or schema, or is damaged, must be ignored and rebuilt — never used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import dpcore.data.loading as loading
from dpcore.data import columnar_cache
from dpcore.data.columnar_cache import CACHE_FOLDER, cache_file, load_two_view_cached
from dpcore.data.kinds import load_two_view
from dpcore.data.loading import load_dataset, sample_data_dir
from dpcore.data.schema import load_schema
from dpcore.errors import DataError


@pytest.fixture
def sites(tmp_path):
    """A private copy of the sample ``sites`` (two files joined on ``site_id``)."""
    folder = tmp_path / "sites"
    shutil.copytree(sample_data_dir() / "sites", folder,
                    ignore=shutil.ignore_patterns(CACHE_FOLDER))   # another test's cache
    return folder, load_schema(folder / "schema.json")


def _same(a, b) -> None:
    assert a.schema == b.schema
    for va, vb in zip(a.views, b.views):
        assert va.attributes == vb.attributes
        assert va.values.dtype == vb.values.dtype == np.float64
        assert va.values.flags.c_contiguous
        np.testing.assert_array_equal(va.values, vb.values)     # NaN == NaN here
    assert a.ids.dtype == b.ids.dtype and a.ids.tolist() == b.ids.tolist()
    assert all(type(x) is type(y) for x, y in zip(a.ids.tolist(), b.ids.tolist()))


def _no_loader(monkeypatch):
    """Make any call of the pandas loader fail: a read that succeeds came from the cache."""
    def refuse(*args, **kwargs):
        raise AssertionError("the loader was called")
    monkeypatch.setattr(loading, "load_dataset", refuse)


def test_the_first_read_writes_a_cache_that_the_next_read_uses(sites, monkeypatch):
    folder, schema = sites
    direct = load_dataset(folder, schema=schema)
    first = load_two_view(folder, schema)           # the registry's loader goes through it
    _same(first, direct)
    path = cache_file(folder, schema)
    assert path.is_file() and path.parent == folder / CACHE_FOLDER
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    _no_loader(monkeypatch)
    _same(load_two_view_cached(folder, schema), direct)


def test_a_changed_source_file_is_read_again(sites, monkeypatch):
    folder, schema = sites
    before = load_two_view_cached(folder, schema)
    traits = folder / "traits.csv"
    lines = traits.read_text().splitlines()
    cells = lines[1].split(",")
    assert cells[1] != "0.5"
    cells[1] = "0.5"                                   # HYP of the first site
    traits.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    after = load_two_view_cached(folder, schema)
    _same(after, load_dataset(folder, schema=schema))
    assert after.views[0].values[0, 0] == 0.5 != before.views[0].values[0, 0]
    _no_loader(monkeypatch)                            # and the rewritten cache holds it
    assert load_two_view_cached(folder, schema).views[0].values[0, 0] == 0.5


def test_another_schema_of_the_same_files_gets_its_own_cache(sites):
    folder, schema = sites
    load_two_view_cached(folder, schema)
    fewer = replace(schema, attributes=tuple(a for a in schema.attributes if a.name != "NSPEC"))
    got = load_two_view_cached(folder, fewer)
    assert [a.name for a in got.views[0].attributes] == ["HYP", "LOP"]
    _same(got, load_dataset(folder, schema=fewer))
    assert cache_file(folder, fewer) != cache_file(folder, schema)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_cache_is_rebuilt(sites, damage):
    folder, schema = sites
    direct = load_two_view_cached(folder, schema)
    path = cache_file(folder, schema)
    raw = path.read_bytes()
    path.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x00" * 1000,
                      "empty": b""}[damage])
    _same(load_two_view_cached(folder, schema), direct)
    assert path.read_bytes() == raw                  # rebuilt, byte for byte


def test_altered_arrays_under_the_right_key_are_not_used(sites):
    """A cache whose arrays do not match their stored digest (bit rot, an edit) is ignored;
    so is one with a correct digest but values the schema refuses."""
    folder, schema = sites
    direct = load_two_view_cached(folder, schema)
    path = cache_file(folder, schema)
    with np.load(path, allow_pickle=False) as z:
        stored = {k: z[k] for k in z.files}
    left = stored["left"].copy()
    left[0, 0] += 1.0
    np.savez(path, **{**stored, "left": left})         # stale digest
    _same(load_two_view_cached(folder, schema), direct)
    left[0, 0] = 99.0                                  # outside HYP's domain [0, 3.3]
    ids = stored["ids"]
    np.savez(path, **{**stored, "left": left,
                      "digest": np.array(columnar_cache._arrays_digest(left, stored["right"],
                                                                      ids))})
    _same(load_two_view_cached(folder, schema), direct)


def test_a_folder_that_cannot_hold_the_cache_still_loads(sites):
    folder, schema = sites
    (folder / CACHE_FOLDER).write_text("not a folder")
    _same(load_two_view_cached(folder, schema), load_dataset(folder, schema=schema))
    assert (folder / CACHE_FOLDER).read_text() == "not a folder"


def test_bad_data_raise_the_loaders_message_and_cache_nothing(sites):
    folder, schema = sites
    traits = folder / "traits.csv"
    lines = traits.read_text().splitlines()
    traits.write_text("\n".join([lines[0], lines[1].replace(",", ",abc,", 1), *lines[2:]]))
    with pytest.raises(DataError) as cached_error:
        load_two_view_cached(folder, schema)
    with pytest.raises(DataError) as loader_error:
        load_dataset(folder, schema=schema)
    assert str(cached_error.value) == str(loader_error.value)
    assert not (folder / CACHE_FOLDER).exists()


def test_a_missing_folder_raises_the_loaders_message(tmp_path):
    schema = load_schema(sample_data_dir() / "sites" / "schema.json")
    with pytest.raises(DataError, match="no such dataset directory"):
        load_two_view_cached(tmp_path / "nowhere", schema)


# --- the folder keeps a bounded set: stale caches go when another is written ---------------


def _variant(schema, i: int):
    """Another schema of the same files (another cache file, the same data)."""
    return replace(schema, description=f"variant {i}")


def _entries(folder) -> set:
    return {p.name for p in (folder / CACHE_FOLDER).glob("*.npz") if p.name[0] != "."}


def _edit_first_value(folder, value: str) -> None:
    traits = folder / "traits.csv"
    lines = traits.read_text().splitlines()
    cells = lines[1].split(",")
    cells[1] = value
    traits.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")


def test_caches_of_current_files_are_kept_and_a_stale_one_is_removed(sites):
    folder, schema = sites
    a, b, c = (_variant(schema, i) for i in range(3))
    load_two_view_cached(folder, a)
    load_two_view_cached(folder, b)
    assert _entries(folder) == {cache_file(folder, a).name, cache_file(folder, b).name}
    _edit_first_value(folder, "0.5")          # a's and b's caches now describe old bytes
    load_two_view_cached(folder, a)           # a is rewritten in place; b is stale: removed
    assert _entries(folder) == {cache_file(folder, a).name}
    load_two_view_cached(folder, c)           # a is current: kept beside c
    assert _entries(folder) == {cache_file(folder, a).name, cache_file(folder, c).name}
    got = load_two_view_cached(folder, a)
    assert got.views[0].values[0, 0] == 0.5


def test_caches_of_other_loader_code_or_format_are_removed(sites, monkeypatch):
    folder, schema = sites
    load_two_view_cached(folder, _variant(schema, 0))
    cache = folder / CACHE_FOLDER
    (cache / "0123456789abcdef01234567.npz").write_bytes(b"an old format")
    np.savez(cache / "fedcba9876543210fedcba98.npz", key=np.array("k"))   # no sources
    monkeypatch.setattr(columnar_cache, "_code_digest", b"another loader version")
    load_two_view_cached(folder, _variant(schema, 1))
    assert _entries(folder) == {cache_file(folder, _variant(schema, 1)).name}


def test_at_most_max_entries_are_kept_the_most_recently_used(sites, monkeypatch):
    folder, schema = sites
    monkeypatch.setattr(columnar_cache, "MAX_ENTRIES", 3)
    first = _variant(schema, 0)
    load_two_view_cached(folder, first)
    for i in range(1, 6):
        path = cache_file(folder, first)
        old = path.stat().st_mtime - 100
        os.utime(path, (old, old))
        load_two_view_cached(folder, first)   # a hit: now the most recently used
        assert path.stat().st_mtime > old + 50
        load_two_view_cached(folder, _variant(schema, i))
        assert len(_entries(folder)) == min(i + 1, 3)
    assert _entries(folder) == {cache_file(folder, _variant(schema, i)).name
                                for i in (0, 4, 5)}


def test_a_writers_temporary_file_is_removed_only_when_old(sites):
    folder, schema = sites
    load_two_view_cached(folder, _variant(schema, 0))
    cache = folder / CACHE_FOLDER
    young, old = cache / ".tmp-young.npz", cache / ".tmp-old.npz"
    young.write_bytes(b"being written")
    old.write_bytes(b"left by a writer that died")
    os.utime(old, (time.time() - 7200,) * 2)
    assert columnar_cache.prune_cache_folder(folder, _variant(schema, 0)) == [old]
    assert young.exists() and not old.exists()
    assert _entries(folder) == {cache_file(folder, _variant(schema, 0)).name}


def test_a_reader_with_the_file_open_finishes_while_it_is_removed(sites):
    folder, schema = sites
    a = _variant(schema, 0)
    direct = load_two_view_cached(folder, a)
    path = cache_file(folder, a)
    with open(path, "rb") as f:                # a reader between open and read
        _edit_first_value(folder, "0.5")
        load_two_view_cached(folder, _variant(schema, 1))   # prunes a's stale cache
        assert not path.exists()
        with np.load(f, allow_pickle=False) as z:
            np.testing.assert_array_equal(z["left"], direct.views[0].values)


_WORKER = """
import sys
from dataclasses import replace
import numpy as np
from dpcore.data import columnar_cache
from dpcore.data.loading import load_dataset
from dpcore.data.schema import load_schema

folder, start, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
columnar_cache.MAX_ENTRIES = 2              # 4 variants: every write evicts another's cache
schema = load_schema(folder + "/schema.json")
variants = [replace(schema, description=f"variant {i}") for i in range(4)]
left = load_dataset(folder, schema=schema).views[0].values
for r in range(rounds):
    got = columnar_cache.load_two_view_cached(folder, variants[(start + r) % 4])
    np.testing.assert_array_equal(got.views[0].values, left)
print("ok")
"""


def _workers(folder, *starts_and_rounds) -> list[subprocess.Popen]:
    script = folder.parent / "worker.py"
    script.write_text(_WORKER)
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return [subprocess.Popen([sys.executable, str(script), str(folder), str(s), str(r)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for s, r in starts_and_rounds]


def test_two_processes_reading_writing_and_pruning_at_once_always_read_the_data(sites):
    """Two processes read four schema variants with room for two caches: each write prunes
    caches the other may be reading or writing. Every read must give the loader's data."""
    folder, _ = sites
    procs = _workers(folder, (0, 40), (1, 40))
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.strip() == "ok", err[-2000:]
    cache = folder / CACHE_FOLDER
    assert len(_entries(folder)) <= 2
    assert not list(cache.glob(".tmp-*"))      # no writer left a temporary file


def test_a_writer_renames_and_prunes_only_under_the_folder_lock(sites):
    """While another process holds the lock (pruning), a writer's new cache waits as a
    temporary file: a pruner never sees a cache renamed into place under its feet."""
    folder, schema = sites
    load_two_view_cached(folder, _variant(schema, 0))
    cache = folder / CACHE_FOLDER
    target = cache_file(folder, _variant(schema, 3))
    with columnar_cache._folder_lock(cache) as locked:
        assert locked
        (proc,) = _workers(folder, (3, 1))
        deadline = time.time() + 120
        while not list(cache.glob(".tmp-*")) and proc.poll() is None \
                and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None and not target.exists()   # waits for the lock
        assert list(cache.glob(".tmp-*"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip() == "ok", err[-2000:]
    assert target.exists() and not list(cache.glob(".tmp-*"))


def test_a_late_writer_of_old_bytes_never_removes_a_cache_of_the_files_as_they_are(sites):
    """A writer that parsed the files before they changed stores its (stale) cache; its
    pruning judges the others against the files now, so the current cache stays."""
    folder, schema = sites
    a, b = _variant(schema, 0), _variant(schema, 1)
    old_data = load_two_view_cached(folder, a)
    old_digests = columnar_cache._file_digests(columnar_cache._view_files(folder, a))
    old_key = columnar_cache._key(a, old_digests)
    _edit_first_value(folder, "0.5")
    load_two_view_cached(folder, b)                       # current: built from the new bytes
    columnar_cache._write(cache_file(folder, a), old_key, old_data, old_digests)
    assert _entries(folder) == {cache_file(folder, a).name, cache_file(folder, b).name}
    assert load_two_view_cached(folder, a).views[0].values[0, 0] == 0.5   # stale: not used
