"""Owner-side columnar partitions of datasets read from files (raw private data): the store
every dataset kind uses, and a two-view dataset's columns.

The store (kind-independent): :func:`write_build` writes a build's partitions as they are
produced, then its manifest, into a temporary folder renamed into place; :func:`read_manifest`,
:func:`iter_column` (each column checked against its SHA-256), :func:`build_key` and pruning
serve every format in :data:`FORMATS`. A labelled table's columns are in
:mod:`dpcore.data.table.partitions`, a sequence dataset's in
:mod:`dpcore.data.sequences.partitions`; the rest of this docstring is about two-view data.

Registration reads a dataset's view files once, in blocks, and keeps what the loader would
return as **row partitions** of a fixed number of rows (:data:`ROWS_PER_PARTITION`), each
partition one uncompressed NumPy ``.npz`` file with one array per column:

* Boolean attributes as ``uint8`` (0/1, 255 = missing), categorical attributes as the
  smallest unsigned integer type holding their codes plus a missing code, numeric attributes
  as ``float64`` (NaN = missing; strict mode codes them on the public grid, faithful mode
  needs the values), and the row ids (text) when the schema has an id column;
* each column of each partition carries the SHA-256 of its dtype, shape and bytes;
* ``manifest.json`` lists the partitions (file, rows, column digests), the columns' types,
  the view files' SHA-256 and the dataset's **content digest**
  (:func:`dpcore.data.dataset.content_digest_of_columns`, the digest the ledger records:
  computed from the coded columns as they are written, equal to the digest of the loaded
  dataset, so any changed value gives another digest and digests recorded before
  partitions existed stay valid).

Reading (every run) needs NumPy only — no pandas, no pyarrow: a ``mine`` starts without them.
It reads the manifest, then only the columns it is asked for (``np.load`` of an ``.npz``
reads one member at a time), checks each column against its digest and decodes it into the
float64 arrays the miners take. A partition that does not read or does not match its digest
is never used: the files are read again and the partitions rebuilt.

Which partitions belong to which data: a build lives in
``<dataset folder>/.dpcore_parts/<key>/``, ``key`` a SHA-256 of the format, the loader's
source code, the schema and every view file's bytes (a changed file, schema or parser gives
another key). Builds are written in a temporary folder and renamed into place (a build that
fails — bad data, a full disk — leaves nothing behind); when a build is written, the builds
that can never be used again (files gone or changed, other loader code, damaged) are removed
and at most :data:`MAX_ENTRIES` are kept, under an exclusive ``flock`` of
``.dpcore_parts/.lock``. Readers take no lock: a build removed while read is a miss.

Memory at registration: the files are read in blocks of at most :data:`BLOCK_ROWS` rows and
:data:`BLOCK_CELLS` cells (pyarrow's streaming CSV reader, Parquet row batches), held as Arrow
tables; each column of a block becomes Python objects only while the one loader's cell parser
(:func:`dpcore.data.loading.parse_cells`) validates it, and is kept only in its coded form, so
no float64 copy of a whole Boolean or categorical view and no table of all cells as text ever
exists. A file the stream cannot read exactly as the loader reads it (a compressed CSV, a
duplicated column name) and every refusal go through the whole-file loader
(:func:`dpcore.data.loading.load_dataset`), whose message names the file, line and reason.

The partitions hold raw private data, like the files they are built from: they stay beside
them, owner-only (0600 files in 0700 folders), never shown, listed or exported. Nothing here
is a DP release. Package sources (``"source": {"package": ...}``) are not partitioned.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:        # not POSIX: builds are written but never pruned
    fcntl = None

import numpy as np

from dpcore.data.dataset import (
    TwoViewDataset,
    check_column_codes,
    content_digest_of_columns,
    remember_digest,
)
from dpcore.data.names import path_inside
from dpcore.data.schema import (
    BOOLEAN,
    CATEGORICAL,
    Attribute,
    Schema,
    schema_to_dict,
    validate_schema,
)
from dpcore.errors import DataError

__all__ = ["PARTS_FOLDER", "MAX_ENTRIES", "ROWS_PER_PARTITION", "BLOCK_ROWS", "Manifest",
           "BLOCK_CELLS", "load_two_view_partitioned", "ensure_partitions", "read_columns",
           "build_folder", "prune_parts_folder", "FORMATS", "build_key", "file_digests",
           "read_manifest", "iter_column", "write_build", "rechunk_rows", "blocks",
           "Damaged", "array_digest", "smallest_uint", "streamable", "intact"]

#: Folder, inside the dataset's folder, that holds the builds (one folder per key).
PARTS_FOLDER = ".dpcore_parts"
_FORMAT = "dpcore-two-view-parts-v1"
#: Every kind's build format → the modules whose source decides what its builds hold (a
#: change to any rebuilds). Named, not imported: pruning recognises every kind's builds.
FORMATS = {
    _FORMAT: ("dpcore.data.loading", "dpcore.data.schema", "dpcore.data.dataset",
              "dpcore.data.partitions"),
    "dpcore-table-parts-v1": ("dpcore.data.loading", "dpcore.data.table.schema",
                              "dpcore.data.table.table", "dpcore.data.table.partitions",
                              "dpcore.data.partitions"),
    "dpcore-sequence-parts-v1": ("dpcore.data.sequences.loading",
                                 "dpcore.data.sequences.schema",
                                 "dpcore.data.sequences.dataset",
                                 "dpcore.data.sequences.partitions",
                                 "dpcore.data.partitions"),
}
#: Rows per partition (the last partition holds the rest).
ROWS_PER_PARTITION = 1 << 20
#: Most rows per block read from a view file at registration.
BLOCK_ROWS = 1 << 16
#: Most cells per block (a wide file is read in fewer rows at a time).
BLOCK_CELLS = 1 << 22
#: Most builds kept in one dataset's folder (the most recently used; stale ones always go).
MAX_ENTRIES = 8
#: A writer's temporary folder older than this (seconds) belongs to a writer that died.
_TMP_MAX_AGE = 3600.0
_TMP_PREFIX = ".tmp-"
_LOCK_NAME = ".lock"
_MANIFEST = "manifest.json"
_IDS = "ids"
_code_digests: dict[str, str] = {}


def _loader_code_digest(fmt: str = _FORMAT) -> str:
    """SHA-256 (hex) of the source files of ``fmt``'s loader modules (:data:`FORMATS`, found
    without importing them)."""
    if fmt not in _code_digests:
        h = hashlib.sha256()
        for name in FORMATS[fmt]:
            origin = importlib.util.find_spec(name).origin
            h.update(name.encode() + b"\0" + Path(origin).read_bytes())
        _code_digests[fmt] = h.hexdigest()
    return _code_digests[fmt]


# ---------------------------------------------------------------------------
# Column coding: stored dtype per attribute, and back to the loader's float64
# ---------------------------------------------------------------------------

def smallest_uint(largest: int) -> np.dtype:
    """The smallest unsigned integer dtype whose range holds ``largest`` (≥ 0)."""
    for t in (np.uint8, np.uint16, np.uint32):
        if largest <= np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.uint64)


def stored_dtype(attr: Attribute) -> np.dtype:
    """The dtype an attribute's column is stored in (codes in the smallest type that also
    holds the missing code, its largest value)."""
    if attr.type == BOOLEAN:
        return np.dtype(np.uint8)
    if attr.type == CATEGORICAL:
        return smallest_uint(len(attr.categories))
    return np.dtype(np.float64)


def encode(attr: Attribute, values: np.ndarray) -> np.ndarray:
    """The loader's float64 column (NaN = missing) in its stored dtype."""
    dtype = stored_dtype(attr)
    if dtype.kind == "f":
        return np.asarray(values, dtype=np.float64)
    missing = np.isnan(values)
    out = np.where(missing, 0.0, values).astype(dtype)
    out[missing] = np.iinfo(dtype).max
    return out


def decode(stored: np.ndarray, out: np.ndarray) -> None:
    """Write a stored column into ``out`` (float64) as the loader returns it."""
    if stored.dtype.kind == "f":
        out[:] = stored
        return
    out[:] = stored
    out[stored == np.iinfo(stored.dtype).max] = np.nan


def array_digest(array: np.ndarray) -> str:
    """SHA-256 (hex) of an array's dtype, shape and bytes (one stored column's digest)."""
    h = hashlib.sha256(array.dtype.str.encode() + b"\0")
    h.update(np.asarray(array.shape, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()




def _column_name(view: int, a: int) -> str:
    return f"v{view}_{a}"


# ---------------------------------------------------------------------------
# Where a build lives
# ---------------------------------------------------------------------------

def _schema_text(schema: Schema) -> bytes:
    return json.dumps(schema_to_dict(schema), sort_keys=True, ensure_ascii=False).encode()


def _base(source_path) -> Path:
    p = Path(source_path)
    return p if p.is_dir() else p.parent


def _view_files(source_path, schema: Schema) -> list[tuple[str, Path]] | None:
    """``(name in the schema, resolved path)`` of each distinct view file, or None when the
    dataset is not a pair of files in a folder (left to the loader and its messages)."""
    p = Path(source_path)
    if not (p.is_dir() or p.is_file()) or schema.source is not None:
        return None
    names = [v.file for v in schema.views]
    if None in names:
        return None
    base = _base(p)
    return [(name, path_inside(base, name)) for name in dict.fromkeys(names)]


def _file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def build_key(fmt: str, schema_text: bytes, digests: dict[str, str]) -> str:
    """The key of a build of format ``fmt``: a SHA-256 (hex) of the format, its loader's
    source code, the schema's canonical text and every source file's SHA-256."""
    h = hashlib.sha256(fmt.encode())
    h.update(_loader_code_digest(fmt).encode())
    h.update(len(schema_text).to_bytes(8, "little") + schema_text)
    for name, digest in digests.items():
        h.update(name.encode() + b"\0" + bytes.fromhex(digest))
    return h.hexdigest()


def _key(schema: Schema, digests: dict[str, str]) -> str:
    return build_key(_FORMAT, _schema_text(schema), digests)


def build_folder(source_path, schema: Schema) -> Path | None:
    """The folder the current build of ``schema``'s data at ``source_path`` lives in (None:
    not partitioned — a package source, or files the loader will refuse). Hashes the view
    files (read in blocks: no data kept)."""
    try:
        schema = validate_schema(schema)
        files = _view_files(source_path, schema)
        if files is None:
            return None
        return _parts_root(source_path) / _key(schema, file_digests(files))[:40]
    except Exception:  # noqa: BLE001 - the loader names whatever is wrong
        return None


def _parts_root(source_path) -> Path:
    return _base(source_path) / PARTS_FOLDER


def file_digests(files: list[tuple[str, Path]]) -> dict[str, str]:
    """``{name: SHA-256}`` of each ``(name, path)`` source file (read in blocks)."""
    return {name: _file_digest(path) for name, path in files}




# ---------------------------------------------------------------------------
# The manifest and reading
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Manifest:
    """A build's manifest (owner metadata about private data; never shown).

    Attributes
    ----------
    folder : Path
        The build's folder.
    rows : int
        Rows of the dataset (private unless the dataset is a public demo).
    content_digest : str
        :func:`dpcore.data.dataset.content_digest_of_columns` of the data: what the ledger
        records for the dataset.
    partitions : tuple of dict
        ``{"file", "rows", "digests": {column: SHA-256}}`` in row order.
    text_ids : bool
        Whether the rows carry id texts (the schema has an id column).
    extra : dict
        What the kind records beside its partitions (e.g. a table's clip counts; owner-only).
    """

    folder: Path
    rows: int
    content_digest: str
    partitions: tuple[dict, ...]
    text_ids: bool
    extra: dict = field(default_factory=dict)


def read_manifest(folder: Path, key: str, fmt: str = _FORMAT) -> Manifest | None:
    """The manifest of the build of format ``fmt`` and ``key`` in ``folder`` (None: missing,
    unreadable, of another format or key, or its rows do not add up)."""
    try:
        raw = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        if raw.get("format") != fmt or raw.get("key") != key:
            return None
        parts = tuple(raw["partitions"])
        if sum(int(p["rows"]) for p in parts) != int(raw["rows"]):
            return None
        return Manifest(folder, int(raw["rows"]), str(raw["content_digest"]), parts,
                        bool(raw.get("text_ids", False)), dict(raw.get("extra", {})))
    except Exception:  # noqa: BLE001 - a manifest that does not read is a miss
        return None




class Damaged(Exception):
    """A partition does not read or does not match its digest."""


_Damaged = Damaged


def iter_column(manifest: Manifest, column: str) -> Iterator[np.ndarray]:
    """Each partition's stored ``column``, checked against the manifest's digest and length
    (the partition's rows, or the size a partition records for a column not one per row).

    Raises
    ------
    Damaged
        A partition does not read, lacks the column or does not match.
    """
    for part in manifest.partitions:
        try:
            with open(manifest.folder / part["file"], "rb") as f, \
                    np.load(f, allow_pickle=False) as z:
                array = z[column]
            size = int(part.get("sizes", {}).get(column, part["rows"]))
            expected = part["digests"][column]
        except Exception as e:  # noqa: BLE001 - unreadable: the caller rebuilds
            raise Damaged(str(e)) from None
        if array.shape != (size,) or array_digest(array) != expected:
            raise Damaged(f"{part['file']}:{column}")
        yield array




def intact(manifest: Manifest | None) -> bool:
    """Whether a build reads and every column of every partition matches its digest."""
    if manifest is None or not manifest.partitions:
        return False
    try:
        for column in manifest.partitions[0]["digests"]:
            for _ in iter_column(manifest, column):
                pass
    except _Damaged:
        return False
    return True


def read_columns(manifest: Manifest, columns: list[str]) -> dict[str, np.ndarray]:
    """The stored ``columns`` (names ``v<view>_<index>`` or ``"ids"``) over all rows, each as
    its stored dtype, every partition checked against its digest.

    Raises
    ------
    DataError
        A partition does not read or does not match the manifest (the build is damaged).
    """
    out = {}
    try:
        for column in columns:
            out[column] = np.concatenate(list(iter_column(manifest, column)))
    except _Damaged as e:
        raise DataError(f"a partition of the dataset is damaged ({e}); register it again") \
            from None
    return out


def _read_dataset(manifest: Manifest, schema: Schema) -> TwoViewDataset:
    """The dataset from a build: each column decoded into preallocated float64 views."""
    arrays = []
    for v in (0, 1):
        attrs = schema.view_attributes(v)
        arr = np.empty((len(attrs), manifest.rows), dtype=np.float64)
        for a in range(len(attrs)):
            start = 0
            for stored in iter_column(manifest, _column_name(v, a)):
                decode(stored, arr[a, start:start + stored.size])
                start += stored.size
        arrays.append(arr)
    if manifest.text_ids:
        ids = np.empty(manifest.rows, dtype=object)
        start = 0
        for stored in iter_column(manifest, _IDS):
            ids[start:start + stored.size] = stored.tolist()
            start += stored.size
    else:
        ids = None
    data = TwoViewDataset.from_arrays(schema, arrays[0], arrays[1], ids=ids)
    remember_digest(data, manifest.content_digest)
    return data


# ---------------------------------------------------------------------------
# Writing a build
# ---------------------------------------------------------------------------

def write_build(root: Path, key: str, fmt: str, files: dict[str, str], parts, finish
                ) -> Manifest:
    """Write a build of format ``fmt`` into a temporary folder, partition by partition as
    ``parts`` yields them, then its manifest; rename the folder to ``root/<key[:40]>`` and
    prune the others (under the folder's lock).

    Parameters
    ----------
    parts : iterable of (int, dict of str → ndarray)
        Each partition's rows and its columns (1-D arrays; a column whose length is not the
        rows, such as a sequence partition's items, is recorded with its size).
    finish : callable
        ``finish(partial)`` gets the :class:`Manifest` of the written partitions (in the
        temporary folder, ``content_digest`` empty) and returns ``(content digest, fields)``,
        ``fields`` added to the manifest (``"extra"``: what :attr:`Manifest.extra` gives).

    Raises
    ------
    Whatever ``parts`` or ``finish`` raise (a refusal of the data), or OSError: nothing is
    left behind then.
    """
    root.mkdir(mode=0o700, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=root))       # mode 0700
    try:
        written = []
        for p, (rows, columns) in enumerate(parts):
            name = f"part-{p:05d}.npz"
            fd = os.open(tmp / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **columns)
            entry = {"file": name, "rows": int(rows),
                     "digests": {c: array_digest(a) for c, a in columns.items()}}
            sizes = {c: int(a.size) for c, a in columns.items() if a.size != rows}
            if sizes:
                entry["sizes"] = sizes
            written.append(entry)
        n = sum(e["rows"] for e in written)
        digest, fields = finish(Manifest(tmp, n, "", tuple(written), False))
        manifest = {"format": fmt, "key": key, "code": _loader_code_digest(fmt),
                    "files": files, "rows": n, "rows_per_partition": ROWS_PER_PARTITION,
                    "content_digest": digest, **fields, "partitions": written}
        fd = os.open(tmp / _MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
        final = root / key[:40]
        with _folder_lock(root) as locked:
            if final.exists() and not intact(read_manifest(final, key, fmt)):
                shutil.rmtree(final)       # a damaged build of the same key: replaced
            try:
                os.rename(tmp, final)
            except OSError:          # another writer put the same build there first
                if read_manifest(final, key, fmt) is None:
                    raise
            else:
                tmp = None
            if locked:
                _prune_locked(root, keep=final)
        return Manifest(final, n, digest, tuple(written), bool(fields.get("text_ids", False)),
                        dict(fields.get("extra", {})))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def rechunk_rows(blocks, rows_per_part: int | None = None):
    """Blocks of row-aligned columns (dicts of equal-length arrays) regrouped into
    partitions of ``rows_per_part`` rows (default :data:`ROWS_PER_PARTITION`; the last holds
    the rest): yields ``(rows, columns)``, holding at most one partition and one block."""
    size = ROWS_PER_PARTITION if rows_per_part is None else rows_per_part
    pending: list[dict] = []
    held = 0
    for block in blocks:
        n = len(next(iter(block.values())))
        if n == 0:
            continue
        pending.append(block)
        held += n
        while held >= size:
            joined = {c: np.concatenate([b[c] for b in pending]) for c in pending[0]}
            yield size, {c: a[:size] for c, a in joined.items()}
            held -= size
            pending = [{c: a[size:] for c, a in joined.items()}] if held else []
    if held:
        yield held, {c: np.concatenate([b[c] for b in pending]) for c in pending[0]}


def _write_build(root: Path, key: str, schema: Schema, digests: dict[str, str],
                 views: list[list[np.ndarray]], ids: np.ndarray | None) -> Manifest:
    """Write the coded columns as partitions + manifest into a temporary folder, rename it
    to ``root/<key>`` and prune the others. Raises OSError (nothing left behind then)."""
    n = int(views[0][0].size)

    def parts():
        for start in range(0, n, ROWS_PER_PARTITION):
            stop = min(start + ROWS_PER_PARTITION, n)
            columns = {_column_name(v, a): col[start:stop]
                       for v, cols in enumerate(views) for a, col in enumerate(cols)}
            if ids is not None:
                columns[_IDS] = np.asarray(ids[start:stop]).astype(str)
            yield stop - start, columns

    def finish(_partial):
        attrs = [schema.view_attributes(v) for v in (0, 1)]
        digest = content_digest_of_columns(
            (len(attrs[v]), n, (_decoded(col) for col in views[v])) for v in (0, 1))
        return digest, {"text_ids": ids is not None,
                        "columns": {_column_name(v, a): str(col.dtype)
                                    for v, cols in enumerate(views)
                                    for a, col in enumerate(cols)}}

    return write_build(root, key, _FORMAT, digests, parts(), finish)


def _decoded(stored: np.ndarray) -> np.ndarray:
    out = np.empty(stored.size, dtype=np.float64)
    decode(stored, out)
    return out


# ---------------------------------------------------------------------------
# Streaming the view files
# ---------------------------------------------------------------------------

_PLAIN_TEXT_EXT = (".csv", ".tsv", ".txt")
_PARQUET_EXT = (".parquet", ".pq")


def _streamable(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(_PLAIN_TEXT_EXT) or name.endswith(_PARQUET_EXT)


def blocks(path: Path, wanted: list[str]) -> Iterator:
    """The view file's ``wanted`` columns (stripped header names) as pandas blocks of at
    most :data:`BLOCK_ROWS` rows: CSV cells as text, Parquet as stored.

    Raises _Unstreamable when the stream cannot read the file exactly as the loader does
    (the caller then uses the loader).
    """
    import pyarrow as pa

    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        import pyarrow.parquet as pq

        f = pq.ParquetFile(path)
        raw = _raw_names([str(c) for c in f.schema_arrow.names], wanted)
        for batch in f.iter_batches(batch_size=_block_rows(len(raw)), columns=raw):
            yield _frame(batch, wanted)
        return
    import pyarrow.csv as pcsv

    sep = "\t" if name.endswith(".tsv") else ","
    parse = pcsv.ParseOptions(delimiter=sep, newlines_in_values=True)
    with pcsv.open_csv(path, parse_options=parse) as reader:
        header = [str(c) for c in reader.schema.names]
    raw = _raw_names(header, wanted)
    convert = pcsv.ConvertOptions(column_types=dict.fromkeys(header, pa.string()),
                                  include_columns=raw, strings_can_be_null=False,
                                  quoted_strings_can_be_null=False, null_values=[])
    reader = pcsv.open_csv(path, parse_options=parse, convert_options=convert,
                           read_options=pcsv.ReadOptions(block_size=1 << 22))
    rows = _block_rows(len(raw))
    with reader:
        pending = []
        size = 0
        for batch in reader:
            pending.append(batch)
            size += batch.num_rows
            if size >= rows:
                table = pa.Table.from_batches(pending)
                for start in range(0, size, rows):
                    yield _frame(table.slice(start, rows), wanted)
                pending, size = [], 0
        if pending:
            yield _frame(pa.Table.from_batches(pending), wanted)


def streamable(path: Path) -> bool:
    """Whether :func:`blocks` may read ``path`` (plain-text CSV/TSV or Parquet)."""
    return _streamable(path)


def _block_rows(n_columns: int) -> int:
    """Rows per block: at most :data:`BLOCK_CELLS` cells, between 1,024 and
    :data:`BLOCK_ROWS` rows."""
    return max(min(1024, BLOCK_ROWS), min(BLOCK_ROWS, BLOCK_CELLS // max(n_columns, 1)))


class _Unstreamable(Exception):
    """The file cannot be streamed exactly as the loader reads it."""


def _raw_names(header: list[str], wanted: list[str]) -> list[str]:
    stripped = [c.strip() for c in header]
    if len(set(stripped)) != len(stripped):
        raise _Unstreamable("duplicate column names")     # the loader's pandas renames them
    by_name = dict(zip(stripped, header, strict=True))
    if any(w not in by_name for w in wanted):
        raise _Unstreamable("a column is missing")          # the loader's message names it
    return [by_name[w] for w in wanted]


class _Block:
    """A block of rows as an Arrow table; a column becomes a pandas Series (Python strings
    for CSV cells) only when asked for, so one column of cells at a time exists as objects."""

    def __init__(self, table, wanted: list[str]):
        self.table = table
        self.index = {name: i for i, name in enumerate(wanted)}

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, name: str):
        return self.table.column(self.index[name]).to_pandas()

    def to_frame(self):
        """The block's wanted columns as a pandas DataFrame (named as stripped)."""
        import pandas as pd

        return pd.DataFrame({name: self[name] for name in self.index})


def _frame(table, wanted: list[str]) -> _Block:
    return _Block(table, wanted)


class _ViewStream:
    """Coded columns of one file's views, accumulated block by block."""

    def __init__(self, schema: Schema, views: tuple[int, ...], label: str):
        self.attrs = {v: schema.view_attributes(v) for v in views}
        self.coded = {v: [[] for _ in self.attrs[v]] for v in views}
        self.spread = {v: [[0, None, None] for _ in self.attrs[v]] for v in views}
        self.ids: list = []
        self.label = label
        self.missing = frozenset(schema.missing_values)

    def add(self, frame, id_column: str | None) -> None:
        from dpcore.data.loading import parse_cells

        for v, attrs in self.attrs.items():
            for a, attr in enumerate(attrs):
                vals = parse_cells(frame[attr.name], attr, self.missing, self.label)
                present = vals[~np.isnan(vals)]
                s = self.spread[v][a]
                if present.size:
                    lo, hi = float(present.min()), float(present.max())
                    s[0] += present.size
                    s[1] = lo if s[1] is None else min(s[1], lo)
                    s[2] = hi if s[2] is None else max(s[2], hi)
                self.coded[v][a].append(encode(attr, vals))
        if id_column is not None:
            self.ids.append(frame[id_column])

    def finish(self) -> dict[int, list[np.ndarray]]:
        from dpcore.data.loading import check_spread

        out = {}
        for v, attrs in self.attrs.items():
            for a, attr in enumerate(attrs):
                check_spread(attr, *self.spread[v][a], self.label)
            out[v] = [np.concatenate(chunks) if chunks else np.zeros(0, stored_dtype(attr))
                      for chunks, attr in zip(self.coded[v], attrs, strict=True)]
        return out


def _stream_file(path: Path, label: str, schema: Schema, views: tuple[int, ...]) -> _ViewStream:
    stream = _ViewStream(schema, views, label)
    id_column = schema.id_column
    wanted = [a.name for v in views for a in schema.view_attributes(v)]
    if id_column is not None:
        wanted.append(id_column)
    wanted = list(dict.fromkeys(wanted))
    n = 0
    for frame in blocks(path, wanted):
        stream.add(frame, id_column)
        n += len(frame)
    if n == 0:
        raise DataError("the file has no data rows", file=label)
    return stream


def _stream_columns(source_path, schema: Schema):
    """Both views' coded columns in the dataset's row order, and the id texts (or None)."""
    import pandas as pd

    from dpcore.data.loading import check_ids, join_view_ids, view_paths

    (left_label, left_path), (right_label, right_path) = view_paths(_base(source_path), schema)
    if not (_streamable(left_path) and _streamable(right_path)):
        raise _Unstreamable("compressed CSV")
    id_column = schema.id_column
    if left_path == right_path:
        s = _stream_file(left_path, str(left_label), schema, (0, 1))
        coded = s.finish()
        ids = None
        if id_column is not None:
            ids = check_ids(pd.DataFrame({id_column: pd.concat(s.ids, ignore_index=True)}),
                            id_column, str(left_label))
        return [coded[0], coded[1]], ids
    sl = _stream_file(left_path, str(left_label), schema, (0,))
    sr = _stream_file(right_path, str(right_label), schema, (1,))
    left, right = sl.finish()[0], sr.finish()[1]
    if id_column is None:
        if left[0].size != right[0].size:
            raise DataError("the views have different numbers of rows")  # loader says which
        return [left, right], None
    ids, order = join_view_ids(
        pd.DataFrame({id_column: pd.concat(sl.ids, ignore_index=True)}),
        pd.DataFrame({id_column: pd.concat(sr.ids, ignore_index=True)}),
        id_column, left_file=str(left_label), right_file=str(right_label))
    if not np.array_equal(order, np.arange(order.size)):
        right = [col[order] for col in right]
    return [left, right], ids


def _loaded_columns(source_path, schema: Schema):
    """Both views' coded columns and ids through the whole-file loader (its messages)."""
    from dpcore.data.loading import load_dataset

    data = load_dataset(source_path, schema=schema)
    views = [[encode(attr, col) for attr, col in zip(v.attributes, v.values, strict=True)]
             for v in data.views]
    ids = None if schema.id_column is None else data.ids
    return views, ids


def _build(source_path, schema: Schema, files, digests) -> Manifest:
    try:
        views, ids = _stream_columns(source_path, schema)
    except Exception:  # noqa: BLE001 - anything the stream cannot read exactly
        # The loader reads the files again: it names the file, line and reason of a
        # refusal, and reads what the stream does not (compressed CSV, renamed columns).
        views, ids = _loaded_columns(source_path, schema)
    # Coded columns are re-checked as the loader checks them (codes, domains).
    for v in (0, 1):
        for attr, col in zip(schema.view_attributes(v), views[v], strict=True):
            check_column_codes(attr, _decoded(col))
    if file_digests(files) != digests:
        raise DataError("the dataset's files changed while they were read; register again")
    return _write_build(_parts_root(source_path), _key(schema, digests), schema, digests,
                        views, ids)


def ensure_partitions(source_path, schema: Schema) -> Manifest | None:
    """The manifest of the current build of the data at ``source_path``, building it first
    when there is none (registration's path: the data are never held as float64 views).

    Returns None for data that are not partitioned (a package source).

    Raises
    ------
    DataError
        The schema or the files do not validate (file, line or row, reason): nothing is
        written. OSError when the build cannot be written.
    """
    schema = validate_schema(schema)
    files = _view_files(source_path, schema)
    if files is None:
        return None
    digests = file_digests(files)
    key = _key(schema, digests)
    manifest = read_manifest(_parts_root(source_path) / key[:40], key)
    if intact(manifest):
        return manifest
    return _build(source_path, schema, files, digests)


def load_two_view_partitioned(source_path, schema: Schema) -> TwoViewDataset:
    """The two-view data at ``source_path`` read with ``schema``, from its partitions.

    Returns exactly what :func:`dpcore.data.loading.load_dataset` returns for
    ``(source_path, schema=schema)`` (private data); its content digest is the manifest's
    (:func:`dpcore.data.dataset.two_view_digest` does not hash the rows again). Builds the
    partitions when there are none for these files, this schema and this loader, or when
    one is damaged; a folder that cannot be written to gives the loader's result.

    Raises
    ------
    DataError
        From the loader: the schema, the files or their values do not validate (file,
        line, reason). Nothing is written then.
    """
    try:
        schema = validate_schema(schema)
        files = _view_files(source_path, schema)
        digests = file_digests(files) if files is not None else None
    except Exception:  # noqa: BLE001 - the loader names whatever is wrong
        files = None
    if files is None:
        from dpcore.data.loading import load_dataset

        return load_dataset(source_path, schema=schema)
    key = _key(schema, digests)
    manifest = read_manifest(_parts_root(source_path) / key[:40], key)
    if manifest is not None:
        try:
            os.utime(manifest.folder / _MANIFEST)       # pruning keeps the most recently used
        except OSError:
            pass
    # A build may be damaged, or pruned by another process between its writing and this
    # read (readers take no lock): then it is built again, a bounded number of times.
    for _ in range(3):
        if manifest is None:
            try:
                manifest = _build(source_path, schema, files, digests)
            except OSError:
                break
        try:
            return _read_dataset(manifest, schema)
        except (_Damaged, DataError):
            manifest = None
    from dpcore.data.loading import load_dataset

    return load_dataset(source_path, schema=schema)


# ---------------------------------------------------------------------------
# Pruning
# ---------------------------------------------------------------------------

@contextmanager
def _folder_lock(folder: Path):
    """Exclusive ``flock`` of the parts folder's lock file, for writers and pruners; yields
    False when it cannot be taken (then nothing is pruned)."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)             # closing the descriptor releases the lock


def _entry_sources(folder: Path) -> tuple[str, dict[str, str], str] | None:
    """(loader-code digest, {source file: SHA-256}, format) a build records, or None if
    unreadable or of no known format."""
    try:
        raw = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        if raw.get("format") not in FORMATS:
            return None
        files = raw["files"]
        if not all(isinstance(n, str) and isinstance(d, str) for n, d in files.items()):
            return None
        return str(raw["code"]), dict(files), raw["format"]
    except Exception:  # noqa: BLE001 - whatever does not read is stale
        return None


def _prune_locked(root: Path, *, keep: Path) -> list[Path]:
    """Remove the stale builds of ``root`` and the least recently used beyond
    :data:`MAX_ENTRIES`, never ``keep``; the caller holds the folder's lock."""
    base = root.parent
    current: dict[str, str | None] = {}

    def now_digest(name: str) -> str | None:
        if name not in current:
            try:
                current[name] = _file_digest(path_inside(base, name))
            except Exception:  # noqa: BLE001 - gone, unreadable or outside the folder
                current[name] = None
        return current[name]

    removed, fresh = [], []
    for entry in root.iterdir():
        if not entry.is_dir() or entry == keep:
            continue
        if entry.name.startswith(_TMP_PREFIX):
            try:
                if time.time() - entry.stat().st_mtime > _TMP_MAX_AGE:
                    shutil.rmtree(entry)
                    removed.append(entry)
            except OSError:
                pass
            continue
        sources = _entry_sources(entry)
        stale = (sources is None or sources[0] != _loader_code_digest(sources[2])
                 or any(now_digest(name) != digest for name, digest in sources[1].items()))
        if not stale:
            try:
                fresh.append(((entry / _MANIFEST).stat().st_mtime, entry))
                continue
            except OSError:
                pass
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    fresh.sort(reverse=True)
    for _, entry in fresh[max(MAX_ENTRIES - 1, 0):]:
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def prune_parts_folder(source_path, schema: Schema) -> list[Path]:
    """Prune the dataset's builds as a write does: every stale build (unreadable, another
    format or loader code, built from view files that are gone or changed) and the least
    recently used beyond :data:`MAX_ENTRIES`; the current build of ``schema`` is kept.

    Returns
    -------
    list of Path
        The build folders removed (none when the folder or its lock cannot be used).
    """
    keep = build_folder(source_path, schema)
    root = _parts_root(source_path)
    if keep is None or not root.is_dir():
        return []
    try:
        with _folder_lock(root) as locked:
            return _prune_locked(root, keep=keep) if locked else []
    except OSError:
        return []
