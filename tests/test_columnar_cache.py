"""The owner-side columnar cache of two-view data (dpcore.data.columnar_cache).

A cached read must give exactly what the loader gives, and a cache that no longer fits its
files or schema, or is damaged, must be ignored and rebuilt — never used.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

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
