"""Owner-side columnar partitions of a labelled table (raw private data).

The same store as a two-view dataset's (:mod:`dpcore.data.partitions`: owner-only ``.npz``
row partitions of :data:`~dpcore.data.partitions.ROWS_PER_PARTITION` rows beside the files,
a SHA-256 per column, a manifest, written in a temporary folder and renamed, pruned under a
lock), with a table's columns:

* ``num_<j>``: numeric feature j's values clipped to its public bounds (``float64``);
* ``cat_<j>``: categorical feature j's level codes, ``labels``: the class codes (each in the
  smallest unsigned type holding its declared values);

and the per-feature clip counts in the manifest. The table file is read in blocks
(:func:`dpcore.data.partitions.blocks`), each block validated and coded by the one loader
(:func:`dpcore.data.table.table.table_from_frame`) and written as soon as a partition is
full, so at most one partition and one block are held (no encoded float64 matrix, no frame
of the whole table). A file the stream cannot read, and every refusal, go through the
whole-file loader (:func:`dpcore.data.table.table.load_table`), whose message names the file,
column and row; nothing is written then.

The manifest's content digest is :func:`dpcore.privacy.policy.content_digest` of the loaded
table, computed from the written columns partition by partition (the same bytes in the
same order: digests recorded before tables were partitioned stay valid). A run reads only
the columns it asks for, each checked against its digest, with NumPy alone. Nothing here is
a DP release.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from dpcore.data import partitions as store
from dpcore.data.names import path_inside
from dpcore.data.table.schema import SCHEMA_FILE_NAME, TableSchema
from dpcore.errors import DataError

__all__ = ["FORMAT", "LABELS", "table_files", "ensure_table_partitions",
           "load_table_partitioned", "read_table_columns", "column_names"]

FORMAT = "dpcore-table-parts-v1"
#: The class codes' column.
LABELS = "labels"


def column_names(schema: TableSchema) -> tuple[list[str], list[str]]:
    """``(numeric columns, categorical columns)`` in schema order (``num_<j>``, ``cat_<j>``)."""
    n_num = sum(f.is_numeric for f in schema.features)
    return ([f"num_{j}" for j in range(n_num)],
            [f"cat_{j}" for j in range(schema.n_features - n_num)])


def table_files(source_path, schema: TableSchema) -> tuple[str, Path] | None:
    """``(label, path)`` of the table file :func:`~dpcore.data.table.table.load_registered_table`
    reads (its label is how messages name it), or None when there is none to read."""
    path = Path(source_path)
    if path.is_file() and path.name != SCHEMA_FILE_NAME:
        return path.name, path
    folder = path if path.is_dir() else path.parent
    if schema.file is None or not folder.is_dir():
        return None
    try:
        return schema.file, path_inside(folder, schema.file)
    except Exception:  # noqa: BLE001 - the loader names what is wrong
        return None


def _schema_text(schema: TableSchema) -> bytes:
    from dpcore.data.table.schema import schema_to_dict

    return json.dumps(schema_to_dict(schema), sort_keys=True, ensure_ascii=False).encode()


def _coded_block(table, schema: TableSchema) -> dict[str, np.ndarray]:
    nums, cats = column_names(schema)
    out = {c: np.ascontiguousarray(table.numeric[:, j]) for j, c in enumerate(nums)}
    for j, c in enumerate(cats):
        n_levels = len(schema.features[_categorical_features(schema)[j]].levels)
        out[c] = table.categorical[:, j].astype(store.smallest_uint(n_levels))
    out[LABELS] = table.labels.astype(store.smallest_uint(schema.n_classes))
    return out


def _categorical_features(schema: TableSchema) -> list[int]:
    return [i for i, f in enumerate(schema.features) if not f.is_numeric]


def _streamed_blocks(path: Path, label: str, schema: TableSchema, clipped: dict):
    """The table file's coded blocks, each validated by the loader's
    :func:`~dpcore.data.table.table.table_from_frame`; clip counts added into ``clipped``."""
    from dpcore.data.table.table import table_from_frame

    if not store.streamable(path):
        raise ValueError("not a plain-text or Parquet file")
    wanted = list(dict.fromkeys([schema.label, *schema.feature_names]))
    for block in store.blocks(path, wanted):
        table = table_from_frame(block.to_frame(), schema, file=label)
        for name, count in table.clipped.items():
            clipped[name] = clipped.get(name, 0) + count
        yield _coded_block(table, schema)


def _loaded_blocks(path: Path, label: str, schema: TableSchema, clipped: dict):
    """The whole-file loader's table, as one block (its messages; unstreamable files)."""
    from dpcore.data.table.table import load_table

    table = load_table(path, schema, label=label)
    clipped.update(table.clipped)
    yield _coded_block(table, schema)


def _parts(blocks, schema: TableSchema):
    nums, cats = column_names(schema)
    empty = True
    for rows, columns in store.rechunk_rows(blocks):
        empty = False
        yield rows, columns
    if empty:       # a table without data rows still has its (empty) columns
        dtypes = {**dict.fromkeys(nums, np.float64), **{c: np.uint8 for c in cats},
                  LABELS: np.uint8}
        yield 0, {c: np.zeros(0, t) for c, t in dtypes.items()}


def _finish(schema: TableSchema, clipped: dict):
    """The manifest's content digest (hashed as :func:`dpcore.privacy.policy.content_digest`
    hashes the loaded table's ``content_arrays()``, one partition at a time) and extra."""
    nums, cats = column_names(schema)
    numeric_names = [f.name for f in schema.features if f.is_numeric]

    def finish(partial: store.Manifest):
        n = partial.rows
        h = hashlib.sha256(b"dpcore-content-v1/" + _kind().encode())

        def array(name: str, dtype, shape, chunks) -> None:
            h.update(name.encode() + b"\0" + np.dtype(dtype).str.encode() + b"\0")
            h.update(np.asarray(shape, dtype=np.int64).tobytes())
            for chunk in chunks:
                h.update(np.ascontiguousarray(chunk, dtype=dtype).tobytes())

        array("numeric", np.float64, (n, len(nums)), _row_major(partial, nums, np.float64))
        array("categorical", np.int32, (n, len(cats)), _row_major(partial, cats, np.int32))
        array("labels", np.int32, (n,), store.iter_column(partial, LABELS))
        counts = np.asarray([clipped.get(name, 0) for name in numeric_names], dtype=np.int64)
        array("clipped", np.int64, counts.shape, [counts])
        return h.hexdigest(), {"extra": {"clipped": {k: int(clipped.get(k, 0))
                                                     for k in numeric_names}}}
    return finish


def _kind() -> str:
    from dpcore.registry import KIND_TABLE

    return KIND_TABLE


def _row_major(manifest: store.Manifest, columns: list[str], dtype):
    """Each partition's ``columns`` as one (rows, len(columns)) C-order block of ``dtype``."""
    iters = [store.iter_column(manifest, c) for c in columns]
    for part in manifest.partitions:
        block = np.empty((int(part["rows"]), len(columns)), dtype=dtype)
        for j, it in enumerate(iters):
            block[:, j] = next(it)
        yield block


def _key_of(source_path, schema: TableSchema):
    found = table_files(source_path, schema)
    if found is None:
        return None
    label, path = found
    digests = store.file_digests([(label, path)])
    return label, path, digests, store.build_key(FORMAT, _schema_text(schema), digests)


def _root(path: Path) -> Path:
    return path.parent / store.PARTS_FOLDER


def _build(label: str, path: Path, schema: TableSchema, digests, key) -> store.Manifest:
    clipped: dict[str, int] = {}
    try:
        return store.write_build(_root(path), key, FORMAT, digests,
                                 _parts(_streamed_blocks(path, label, schema, clipped), schema),
                                 _finish(schema, clipped))
    except Exception:  # noqa: BLE001 - the loader reads it, or names file, column, row, reason
        pass
    clipped = {}
    return store.write_build(_root(path), key, FORMAT, digests,
                             _parts(_loaded_blocks(path, label, schema, clipped), schema),
                             _finish(schema, clipped))


def ensure_table_partitions(source_path, schema: TableSchema) -> store.Manifest | None:
    """The manifest of the current build of the table at ``source_path``, building it first
    when there is none or it is damaged (registration's path).

    Returns None when the schema names no file to read (the loader's message then).

    Raises
    ------
    DataError
        The file does not validate against the schema (file, column, row, reason): nothing
        is written. OSError when the build cannot be written.
    """
    found = _key_of(source_path, schema)
    if found is None:
        return None
    label, path, digests, key = found
    manifest = store.read_manifest(_root(path) / key[:40], key, FORMAT)
    if manifest is not None and store.intact(manifest):
        return manifest
    manifest = _build(label, path, schema, digests, key)
    if store.file_digests([(label, path)]) != digests:
        raise DataError("the table file changed while it was read; register again", file=label)
    return manifest


def read_table_columns(manifest: store.Manifest, columns: list[str]) -> dict[str, np.ndarray]:
    """The stored ``columns`` over all rows (stored dtypes), every partition checked.

    Raises
    ------
    DataError
        A partition does not read or does not match the manifest (the build is damaged).
    """
    return store.read_columns(manifest, columns)


def _table_from(manifest: store.Manifest, schema: TableSchema, label: str):
    from dpcore.data.dataset import remember_digest
    from dpcore.data.table.table import SynthesisTable

    nums, cats = column_names(schema)
    n = manifest.rows
    numeric = np.empty((n, len(nums)), dtype=np.float64)
    categorical = np.empty((n, len(cats)), dtype=np.int32)
    for j, c in enumerate(nums):
        start = 0
        for stored in store.iter_column(manifest, c):
            numeric[start:start + stored.size, j] = stored
            start += stored.size
    for j, c in enumerate(cats):
        start = 0
        for stored in store.iter_column(manifest, c):
            categorical[start:start + stored.size, j] = stored
            start += stored.size
    labels = np.concatenate([s.astype(np.int32) for s in store.iter_column(manifest, LABELS)])
    clipped = {k: int(v) for k, v in manifest.extra.get("clipped", {}).items()}
    table = SynthesisTable(schema, numeric, categorical, labels, clipped, label)
    remember_digest(table, manifest.content_digest)
    return table


def load_table_partitioned(source_path, schema: TableSchema):
    """The table at ``source_path`` read with ``schema``, from its partitions.

    Returns exactly what :func:`dpcore.data.table.table.load_registered_table` returns
    (private data), its content digest the manifest's (not hashed again). Builds the
    partitions when there are none for this file, schema and loader, or one is damaged; a
    folder that cannot be written to gives the loader's result.

    Raises
    ------
    DataError
        From the loader: the schema or the file do not validate (file, column, row).
    """
    found = _key_of(source_path, schema)
    if found is not None:
        label, path, digests, key = found
        manifest = store.read_manifest(_root(path) / key[:40], key, FORMAT)
        for _ in range(3):
            if manifest is None:
                try:
                    manifest = _build(label, path, schema, digests, key)
                except OSError:
                    break
            try:
                return _table_from(manifest, schema, label)
            except (store.Damaged, DataError):
                manifest = None
    from dpcore.data.table.table import load_registered_table

    return load_registered_table(source_path, schema)
