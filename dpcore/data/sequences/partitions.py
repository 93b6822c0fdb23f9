"""Owner-side columnar partitions of a sequence dataset (raw private data).

The same store as a two-view dataset's (:mod:`dpcore.data.partitions`: owner-only ``.npz``
partitions beside the files, a SHA-256 per column, a manifest, written in a temporary folder
and renamed, pruned under a lock). A partition holds
:data:`~dpcore.data.partitions.ROWS_PER_PARTITION` **records** in file order:

* ``lengths``: each record's number of items (``int64``);
* ``items``: the records' item codes one after another (the smallest unsigned type holding
  the declared alphabet), its length recorded in the partition's ``sizes``.

A record-per-line file is read line by line (plain or gzip-compressed), each line checked
as the loader checks it, and a partition is written as soon as it is full: at most one
partition and one block of records are held, never the file's text or a Python list of
every item. An event table, and every refusal, go through the whole-file loader
(:func:`dpcore.data.sequences.loading.load_registered_sequences`), whose message names the
file, line or row and reason; nothing is written then. (Event tables are sorted within each
record by their order keys, which needs the whole table: they are partitioned after
loading, not streamed.)

The manifest's content digest is :func:`dpcore.privacy.policy.content_digest` of the loaded
dataset, computed from the written partitions one at a time (the same bytes in the same
order: digests recorded before sequences were partitioned stay valid). A run reads the
records with NumPy alone, each column checked against its digest. Nothing here is a DP
release.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from dpcore.data import partitions as store
from dpcore.data.names import path_inside
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import EVENTS, LINES, SequenceSchema
from dpcore.errors import DataError

__all__ = ["FORMAT", "LENGTHS", "ITEMS", "sequence_files", "ensure_sequence_partitions",
           "load_sequences_partitioned", "iter_partitions", "read_partition",
           "PartitionedSequences", "LOAD_WHOLE_UP_TO_RECORDS"]

FORMAT = "dpcore-sequence-parts-v1"
LENGTHS, ITEMS = "lengths", "items"

#: A dataset of at most this many records (8 partitions) is read whole when loaded — one
#: pass that reads, checks and assembles — and a strict run counts it whole; a larger one is
#: checked one partition at a time and counted per partition (dpcore.sequences.counting).
#: Counting per partition re-reads and re-checks every partition on each pass: 2.4–2.7×
#: the wall time of whole counting at 2–5 M clickstream records, whose whole records take
#: 0.2–0.5 GB (docs/SCALING.md).
LOAD_WHOLE_UP_TO_RECORDS = 8 * 1_048_576
#: Records per block read from a record file (a partition gathers blocks).
BLOCK_RECORDS = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"


def sequence_files(source_path, schema: SequenceSchema) -> list[tuple[str, Path]] | None:
    """``(name in the schema, path)`` of each file the loader reads, or None (no files named:
    the loader's message then)."""
    path = Path(source_path)
    folder = path if path.is_dir() else path.parent
    files = schema.files
    if not files or not folder.is_dir():
        return None
    names = {LINES: ("records", "alphabet"), EVENTS: ("events",)}.get(files.get("format"))
    if names is None:
        return None
    try:
        return [(files[n], path_inside(folder, files[n])) for n in names if n in files]
    except Exception:  # noqa: BLE001 - the loader names what is wrong
        return None


def _schema_text(schema: SequenceSchema) -> bytes:
    from dpcore.data.sequences.schema import schema_to_dict

    return json.dumps(schema_to_dict(schema), sort_keys=True, ensure_ascii=False).encode()


def _line_blocks(path: Path, schema: SequenceSchema):
    """A record-per-line file's ``{lengths, items}`` blocks, each line checked as
    :func:`~dpcore.data.sequences.loading.load_record_lines` checks it (any refusal raises;
    the caller lets the loader name it)."""
    codes = schema.item_codes()
    item_dtype = store.smallest_uint(max(schema.n_items - 1, 0))
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
    opener = gzip.open if compressed else open
    with opener(path, "rb") as f:
        lengths: list[int] = []
        items: list[int] = []
        seen = 0
        for line in f:
            line = line[:-1] if line.endswith(b"\n") else line
            line = line[:-1] if line.endswith(b"\r") else line
            tokens = line.decode("utf-8").split()
            if not tokens:
                raise ValueError("empty record")
            items.extend([codes[t] for t in tokens])     # KeyError: not in the alphabet
            lengths.append(len(tokens))
            seen += 1
            if len(lengths) == BLOCK_RECORDS:
                yield _block(lengths, items, item_dtype)
                lengths, items = [], []
        if lengths:
            yield _block(lengths, items, item_dtype)
        if not seen:
            raise ValueError("no records")      # the loader refuses an empty record file


def _block(lengths: list[int], items: list[int], item_dtype) -> dict[str, np.ndarray]:
    return {LENGTHS: np.asarray(lengths, dtype=np.int64),
            ITEMS: np.asarray(items, dtype=item_dtype)}


def _loaded_blocks(source_path, schema: SequenceSchema):
    """The whole-file loader's dataset in blocks (its messages; event tables)."""
    from dpcore.data.sequences.loading import load_registered_sequences

    data = load_registered_sequences(source_path, schema)
    item_dtype = store.smallest_uint(max(schema.n_items - 1, 0))
    n = data.n_records
    for start in range(0, n, BLOCK_RECORDS):
        stop = min(start + BLOCK_RECORDS, n)
        yield {LENGTHS: np.diff(data.indptr[start:stop + 1]),
               ITEMS: data.items[data.indptr[start]:data.indptr[stop]].astype(item_dtype)}


def _parts(blocks, records_per_part: int | None = None):
    """Blocks regrouped into partitions of ``records_per_part`` records: ``(records,
    {lengths, items})``; holds at most one partition and one block."""
    size = store.ROWS_PER_PARTITION if records_per_part is None else records_per_part
    lengths: list[np.ndarray] = []
    items: list[np.ndarray] = []
    held = 0
    for block in blocks:
        lengths.append(block[LENGTHS])
        items.append(block[ITEMS])
        held += block[LENGTHS].size
        while held >= size:
            all_lengths, all_items = np.concatenate(lengths), np.concatenate(items)
            cut = int(all_lengths[:size].sum())
            yield size, {LENGTHS: all_lengths[:size], ITEMS: all_items[:cut]}
            held -= size
            lengths, items = [all_lengths[size:]], [all_items[cut:]]
    if held:
        yield held, {LENGTHS: np.concatenate(lengths), ITEMS: np.concatenate(items)}


def _finish(partial: store.Manifest):
    """The content digest, hashed as :func:`dpcore.privacy.policy.content_digest` hashes the
    loaded dataset's ``content_arrays()`` (indptr int64, items int32), a partition at a
    time; the manifest records the number of items."""
    from dpcore.registry import KIND_SEQUENCES

    n_items = sum(int(p.get("sizes", {}).get(ITEMS, p["rows"])) for p in partial.partitions)
    h = hashlib.sha256(b"dpcore-content-v1/" + KIND_SEQUENCES.encode())
    h.update(b"indptr\0" + np.dtype(np.int64).str.encode() + b"\0")
    h.update(np.asarray((partial.rows + 1,), dtype=np.int64).tobytes())
    h.update(np.zeros(1, dtype=np.int64).tobytes())
    offset = 0
    for lengths in store.iter_column(partial, LENGTHS):
        ends = np.cumsum(lengths, dtype=np.int64) + offset
        h.update(ends.tobytes())
        offset = int(ends[-1]) if ends.size else offset
    h.update(b"items\0" + np.dtype(np.int32).str.encode() + b"\0")
    h.update(np.asarray((n_items,), dtype=np.int64).tobytes())
    for items in store.iter_column(partial, ITEMS):
        h.update(items.astype(np.int32).tobytes())
    return h.hexdigest(), {"extra": {"items": n_items}}


def _key_of(source_path, schema: SequenceSchema):
    files = sequence_files(source_path, schema)
    if files is None:
        return None
    digests = store.file_digests(files)
    return files, digests, store.build_key(FORMAT, _schema_text(schema), digests)


def _root(source_path) -> Path:
    path = Path(source_path)
    return (path if path.is_dir() else path.parent) / store.PARTS_FOLDER


def _streamed_blocks(files, schema: SequenceSchema):
    from dpcore.data.sequences.loading import read_alphabet_file

    if len(files) > 1 and read_alphabet_file(files[1][1]) != schema.alphabet:
        raise ValueError("the alphabet file differs from the schema")   # the loader says so
    yield from _line_blocks(files[0][1], schema)


def _build(source_path, schema: SequenceSchema, files, digests, key) -> store.Manifest:
    if schema.files["format"] == LINES:
        try:
            return store.write_build(_root(source_path), key, FORMAT, digests,
                                     _parts(_streamed_blocks(files, schema)), _finish)
        except Exception:  # noqa: BLE001 - the loader names the file, line and reason
            pass
    # Event tables are sorted within each record by their order keys: loaded whole.
    return store.write_build(_root(source_path), key, FORMAT, digests,
                             _parts(_loaded_blocks(source_path, schema)), _finish)


def ensure_sequence_partitions(source_path, schema: SequenceSchema) -> store.Manifest | None:
    """The manifest of the current build of the records at ``source_path``, building it first
    when there is none or it is damaged (registration's path).

    Returns None when the schema names no files (the loader's message then).

    Raises
    ------
    DataError
        The files do not validate against the schema (file, line or row, reason): nothing is
        written. OSError when the build cannot be written.
    """
    schema = schema.validate()
    found = _key_of(source_path, schema)
    if found is None:
        return None
    files, digests, key = found
    manifest = store.read_manifest(_root(source_path) / key[:40], key, FORMAT)
    if manifest is not None and store.intact(manifest):
        return manifest
    manifest = _build(source_path, schema, files, digests, key)
    if store.file_digests(files) != digests:
        raise DataError("the record files changed while they were read; register again",
                        file=files[0][0])
    return manifest


def _dataset_from(manifest: store.Manifest, schema: SequenceSchema) -> SequenceDataset:
    from dpcore.data.dataset import remember_digest

    indptr = np.zeros(manifest.rows + 1, dtype=np.int64)
    start = 0
    for lengths in store.iter_column(manifest, LENGTHS):
        np.cumsum(lengths, out=indptr[start + 1:start + 1 + lengths.size])
        indptr[start + 1:start + 1 + lengths.size] += indptr[start]
        start += lengths.size
    items = np.empty(int(manifest.extra["items"]), dtype=np.int32)
    at = 0
    for stored in store.iter_column(manifest, ITEMS):
        items[at:at + stored.size] = stored
        at += stored.size
    if at != items.size or indptr[-1] != items.size:
        raise store.Damaged("the partitions' items do not add up")
    data = SequenceDataset(schema, indptr, items)
    remember_digest(data, manifest.content_digest)
    return data


def iter_partitions(manifest: store.Manifest, schema: SequenceSchema):
    """Each partition's records as a :class:`SequenceDataset` (in record order; every column
    checked against its digest): what per-partition counting reads, one partition at a time.

    Raises
    ------
    Damaged
        A partition does not read or does not match the manifest.
    """
    for lengths, stored in zip(store.iter_column(manifest, LENGTHS),
                               store.iter_column(manifest, ITEMS), strict=True):
        indptr = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        yield SequenceDataset(schema, indptr, stored.astype(np.int32))


def read_partition(manifest: store.Manifest, schema: SequenceSchema, index: int
                   ) -> SequenceDataset:
    """Partition ``index``'s records alone (its columns checked against their digests): what
    a worker reads to count one partition, never the other partitions.

    Raises
    ------
    Damaged
        The partition does not read or does not match the manifest.
    """
    one = replace(manifest, partitions=(manifest.partitions[index],))
    return next(iter_partitions(one, schema))


class PartitionedSequences(SequenceDataset):
    """A sequence dataset read from its partitions (private), its records loaded only when
    a caller asks for ``indptr`` or ``items`` (then whole, once).

    Per-partition counting (:mod:`dpcore.sequences.counting`) reads ``manifest`` one
    partition at a time and never loads the whole; every other reader sees an ordinary
    :class:`SequenceDataset`. ``n_records`` is the manifest's (no load). Pickled, it is the
    whole :class:`SequenceDataset` (what a whole run sent to a worker carries).

    Attributes
    ----------
    manifest : Manifest
        The intact build the records are read from (checked when loaded).
    count_backend : object or None
        Where per-partition counts run (:mod:`dpcore.sequences.counting`); None: in this
        process.
    """

    def __init__(self, schema: SequenceSchema, manifest: store.Manifest, count_backend=None,
                 whole: SequenceDataset | None = None):
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "manifest", manifest)
        object.__setattr__(self, "count_backend", count_backend)
        object.__setattr__(self, "_whole", whole)

    @property
    def in_memory(self) -> bool:
        """Whether the records are loaded (then a run in this process counts them whole)."""
        return self._whole is not None

    def _load(self) -> SequenceDataset:
        if self._whole is None:
            try:
                whole = _dataset_from(self.manifest, self.schema)
            except (store.Damaged, KeyError) as e:
                raise DataError(f"a partition of the dataset is damaged ({e}); register it "
                                "again") from None
            object.__setattr__(self, "_whole", whole)
        return self._whole

    @property
    def indptr(self) -> np.ndarray:
        return self._load().indptr

    @property
    def items(self) -> np.ndarray:
        return self._load().items

    @property
    def n_records(self) -> int:
        return int(self.manifest.rows)

    def with_backend(self, count_backend) -> PartitionedSequences:
        """The same records counted by ``count_backend`` (e.g. a
        :class:`~dpcore.sequences.counting.DaskCounting`); the content digest carried over."""
        from dpcore.data.dataset import remember_digest

        other = PartitionedSequences(self.schema, self.manifest, count_backend)
        remember_digest(other, self.manifest.content_digest)
        return other

    def __reduce__(self):
        return (SequenceDataset, (self.schema, self.indptr, self.items))


def _manifest_for_load(source_path, schema: SequenceSchema):
    found = _key_of(source_path, schema)
    if found is None:
        return None
    files, digests, key = found
    return files, digests, key, store.read_manifest(_root(source_path) / key[:40], key, FORMAT)


def _checked(manifest: store.Manifest) -> bool:
    """Whether every partition reads, matches its digests and the items add up (one
    partition held at a time): a damaged build is found here, before any charge."""
    if not store.intact(manifest):
        return False
    n_items = sum(int(p.get("sizes", {}).get(ITEMS, p["rows"])) for p in manifest.partitions)
    return n_items == int(manifest.extra.get("items", -1))


def _checked_dataset(manifest: store.Manifest, schema: SequenceSchema
                     ) -> PartitionedSequences | None:
    """The records of an intact build, or None when it is damaged: read whole (and checked
    while read) up to :data:`LOAD_WHOLE_UP_TO_RECORDS`, else checked one partition at a time
    and left on disk — either way a damaged build is found here, before any charge."""
    from dpcore.data.dataset import remember_digest

    whole = None
    if int(manifest.rows) <= LOAD_WHOLE_UP_TO_RECORDS:
        try:
            whole = _dataset_from(manifest, schema)
        except (store.Damaged, DataError, KeyError):
            return None
    elif not _checked(manifest):
        return None
    data = PartitionedSequences(schema, manifest, whole=whole)
    remember_digest(data, manifest.content_digest)
    return data


def load_sequences_partitioned(source_path, schema: SequenceSchema) -> SequenceDataset:
    """The records at ``source_path`` read with ``schema``, from their partitions.

    Returns the records :func:`dpcore.data.sequences.loading.load_registered_sequences`
    returns (private data), as a :class:`PartitionedSequences` once every partition has been
    checked against its digests (above :data:`LOAD_WHOLE_UP_TO_RECORDS` records, loaded
    whole only if a reader asks for them),
    its content digest the manifest's (not hashed again). Builds the
    partitions when there are none for these files, this schema and this loader, or one is
    damaged; a folder that cannot be written to gives the loader's result.

    Raises
    ------
    DataError
        From the loader: the schema or the files do not validate (file, line, reason).
    """
    try:
        schema = schema.validate()
        found = _manifest_for_load(source_path, schema)
    except Exception:  # noqa: BLE001 - the loader names whatever is wrong
        found = None
    if found is not None:
        files, digests, key, manifest = found
        for _ in range(3):
            if manifest is None:
                try:
                    manifest = _build(source_path, schema, files, digests, key)
                except OSError:
                    break
            data = _checked_dataset(manifest, schema)
            if data is not None:
                return data
            manifest = None
    from dpcore.data.sequences.loading import load_registered_sequences

    return load_registered_sequences(source_path, schema)
