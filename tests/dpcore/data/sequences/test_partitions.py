"""A sequence dataset's partitions: record files streamed line by line at registration,
event tables partitioned after loading, read back exactly as the loader reads them, with
the content digest the ledger recorded before sequences were partitioned."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

import dpcore.data.sequences.loading as loading
from dpcore.data import partitions as store
from dpcore.data.sequences import partitions as sp
from dpcore.data.sequences.loading import load_registered_sequences
from dpcore.data.sequences.schema import load_sequence_schema
from dpcore.errors import DataError
from dpcore.privacy.policy import content_digest
from dpcore.registry import KIND_SEQUENCES
from tests.support.content_digest_reference import whole_array_digest

ALPHABET = ["a", "b", "c", "d", "e"]


def _records(n: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [list(rng.choice(ALPHABET, int(rng.integers(1, 12)))) for _ in range(n)]


def _write_lines(folder, records, *, compressed=False, alphabet_file=True, crlf=False):
    folder.mkdir(exist_ok=True)
    end = "\r\n" if crlf else "\n"
    text = "".join(" ".join(r) + end for r in records).encode()
    name = "records.txt.gz" if compressed else "records.txt"
    (folder / name).write_bytes(gzip.compress(text) if compressed else text)
    files = {"format": "lines", "records": name}
    if alphabet_file:
        (folder / "alphabet.txt").write_text("\n".join(ALPHABET) + "\n")
        files["alphabet"] = "alphabet.txt"
    return _schema(folder, files)


def _schema(folder, files):
    raw = {"kind": "sequences", "name": "s", "l1": 6, "alphabet": ALPHABET, "files": files}
    (folder / "sequence_schema.json").write_text(json.dumps(raw))
    return load_sequence_schema(folder / "sequence_schema.json")


def _same(a, b) -> None:
    assert a.schema == b.schema
    assert a.indptr.dtype == b.indptr.dtype and a.items.dtype == b.items.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.items, b.items)


@pytest.fixture
def small_parts(monkeypatch):
    """Partitions of 70 records, blocks of 16 records."""
    monkeypatch.setattr(store, "ROWS_PER_PARTITION", 70)
    monkeypatch.setattr(sp, "BLOCK_RECORDS", 16)


@pytest.mark.parametrize("variant", ["plain", "gzip", "crlf, no alphabet file"])
def test_record_lines_stream_into_partitions_that_read_back_as_the_loader_reads(
        tmp_path, monkeypatch, small_parts, variant):
    folder = tmp_path / "d"
    schema = _write_lines(folder, _records(300), compressed=variant == "gzip",
                          alphabet_file=variant == "plain", crlf=variant.startswith("crlf"))
    reference = load_registered_sequences(folder, schema)
    with monkeypatch.context() as m:
        def refuse(*args, **kwargs):
            raise AssertionError("the whole-file loader was called")
        m.setattr(loading, "load_registered_sequences", refuse)
        manifest = sp.ensure_sequence_partitions(folder, schema)
        loaded = sp.load_sequences_partitioned(folder, schema)
    assert [p["rows"] for p in manifest.partitions] == [70, 70, 70, 70, 20]
    _same(loaded, reference)
    assert manifest.content_digest == whole_array_digest(reference, KIND_SEQUENCES) \
        == content_digest(reference)
    assert content_digest(loaded) == manifest.content_digest
    parts = list(sp.iter_partitions(manifest, schema))
    assert [p.n_records for p in parts] == [70, 70, 70, 70, 20]
    assert sum((p.to_lists() for p in parts), []) == reference.to_lists()


def test_an_event_table_is_partitioned_after_loading(tmp_path, small_parts):
    folder = tmp_path / "d"
    folder.mkdir()
    rng = np.random.default_rng(3)
    n = 900
    pd.DataFrame({"visit": rng.integers(0, 150, n), "t": rng.permutation(n),
                  "page": rng.choice(ALPHABET, n)}).to_csv(folder / "ev.csv", index=False)
    schema = _schema(folder, {"format": "events", "events": "ev.csv",
                              "record_column": "visit", "order_column": "t",
                              "item_column": "page"})
    reference = load_registered_sequences(folder, schema)
    manifest = sp.ensure_sequence_partitions(folder, schema)
    assert len(manifest.partitions) > 1
    _same(sp.load_sequences_partitioned(folder, schema), reference)
    assert manifest.content_digest == whole_array_digest(reference, KIND_SEQUENCES)


@pytest.mark.parametrize("bad, message", [("x", "not in the declared alphabet"),
                                          ("", "empty record")])
def test_a_bad_line_raises_the_loaders_message_and_writes_nothing(tmp_path, small_parts,
                                                                 bad, message):
    folder = tmp_path / "d"
    records = _records(200)
    records[130] = [bad] if bad else []
    schema = _write_lines(folder, records)
    with pytest.raises(DataError, match=message) as info:
        sp.ensure_sequence_partitions(folder, schema)
    assert info.value.row == 131                                    # the file's line
    root = folder / store.PARTS_FOLDER
    assert not root.exists() or not [p for p in root.iterdir() if p.is_dir()]


def test_an_empty_record_file_is_refused_and_writes_nothing(tmp_path):
    """A file without a line streams no block: it must still be refused, as the loader
    refuses it, not registered as a dataset of 0 records."""
    folder = tmp_path / "d"
    schema = _write_lines(folder, [])
    with pytest.raises(DataError, match="holds no records"):
        sp.ensure_sequence_partitions(folder, schema)
    root = folder / store.PARTS_FOLDER
    assert not root.exists() or not [p for p in root.iterdir() if p.is_dir()]


def test_an_alphabet_file_that_differs_from_the_schema_is_refused(tmp_path):
    folder = tmp_path / "d"
    schema = _write_lines(folder, _records(20))
    (folder / "alphabet.txt").write_text("\n".join(reversed(ALPHABET)) + "\n")
    with pytest.raises(DataError, match="alphabet file differs"):
        sp.ensure_sequence_partitions(folder, schema)


def test_a_damaged_partition_is_never_used_and_is_rebuilt(tmp_path, small_parts):
    folder = tmp_path / "d"
    schema = _write_lines(folder, _records(200))
    manifest = sp.ensure_sequence_partitions(folder, schema)
    reference = load_registered_sequences(folder, schema)
    part = manifest.folder / "part-00002.npz"
    raw = part.read_bytes()
    with np.load(part) as z:
        columns = {k: z[k].copy() for k in z.files}
    columns[sp.ITEMS][0] = (columns[sp.ITEMS][0] + 1) % len(ALPHABET)
    with open(part, "wb") as f:
        np.savez(f, **columns)
    with pytest.raises(store.Damaged):
        list(sp.iter_partitions(manifest, schema))
    _same(sp.load_sequences_partitioned(folder, schema), reference)
    assert part.read_bytes() == raw
