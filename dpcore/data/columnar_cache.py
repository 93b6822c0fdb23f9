"""Owner-side columnar cache of a two-view dataset read from files: NumPy only, no pandas.

Parsing and validating the CSV/Parquet files of a two-view dataset needs pandas, which alone
costs a command-line ``mine`` about half a second of start-up. The first read of a dataset
(its registration, or the first run after its files or schema change) goes through the one
loader, :func:`dpcore.data.loading.load_dataset`, and keeps the validated arrays in a NumPy
``.npz`` file next to the data: ``<dataset folder>/.dpcore_cache/<schema key>.npz``. Later
reads load that file with NumPy alone.

The cache is only ever used for exactly the data the loader would return:

* it is keyed by a SHA-256 of the cache format, the schema (its normalised dict form), the
  source code of the loader modules (a changed parser rebuilds every cache) and the bytes of
  every view file. Any change to a file or the schema gives another key: the cache is not
  used and is rewritten from the loader's result;
* the arrays carry their own SHA-256, checked on every read, and are checked again by
  :meth:`~dpcore.data.dataset.TwoViewDataset.from_arrays` (shapes, codes, domains). A cache
  file that is missing, truncated, corrupt, of another format or for another key is ignored
  and rebuilt, never used;
* a folder the process cannot write to only means no cache (the loader's result is returned).

The cache holds raw private data, like the files it is built from: it stays beside them, is
written with owner-only permissions (0600, in a 0700 folder) and is never shown, listed or
exported. Nothing here is a DP release. Package sources (``"source": {"package": ...}``) are
not cached.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.names import path_inside
from dpcore.data.schema import Schema, schema_to_dict, validate_schema

__all__ = ["CACHE_FOLDER", "load_two_view_cached", "cache_file"]

#: Folder, inside the dataset's folder, that holds the caches (one file per schema).
CACHE_FOLDER = ".dpcore_cache"
_FORMAT = b"dpcore-two-view-cache-v1"
#: Modules whose source decides what the loader returns: a change to any rebuilds the cache.
_LOADER_MODULES = ("dpcore.data.loading", "dpcore.data.schema", "dpcore.data.dataset",
                   "dpcore.data.columnar_cache")
_code_digest: bytes | None = None


def _loader_code_digest() -> bytes:
    """SHA-256 of the loader modules' source files (found without importing them)."""
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha256()
        for name in _LOADER_MODULES:
            origin = importlib.util.find_spec(name).origin
            h.update(name.encode() + b"\0" + Path(origin).read_bytes())
        _code_digest = h.digest()
    return _code_digest


def _schema_text(schema: Schema) -> bytes:
    return json.dumps(schema_to_dict(schema), sort_keys=True, ensure_ascii=False).encode()


def _view_files(source_path, schema: Schema) -> list[tuple[str, Path]] | None:
    """``(name in the schema, resolved path)`` of each distinct view file, or None when the
    dataset is not a pair of files in a folder (left to the loader and its messages)."""
    p = Path(source_path)
    base = p if p.is_dir() else p.parent if p.is_file() else None
    names = [v.file for v in schema.views]
    if base is None or schema.source is not None or None in names:
        return None
    return [(name, path_inside(base, name)) for name in dict.fromkeys(names)]


def cache_file(source_path, schema: Schema) -> Path | None:
    """Where the cache of ``schema``'s data at ``source_path`` lives (None: not cacheable)."""
    p = Path(source_path)
    base = p if p.is_dir() else p.parent
    if schema.source is not None:
        return None
    return base / CACHE_FOLDER / (hashlib.sha256(_schema_text(schema)).hexdigest()[:24] + ".npz")


def _key(schema: Schema, files: list[tuple[str, Path]]) -> str:
    h = hashlib.sha256(_FORMAT)
    h.update(_loader_code_digest())
    text = _schema_text(schema)
    h.update(len(text).to_bytes(8, "little") + text)
    for name, path in files:
        raw = path.read_bytes()
        h.update(name.encode() + b"\0" + len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.hexdigest()


def _arrays_digest(left: np.ndarray, right: np.ndarray, ids: np.ndarray) -> str:
    h = hashlib.sha256(_FORMAT)
    for a in (left, right, ids):
        h.update(a.dtype.str.encode() + b"\0" + np.asarray(a.shape, np.int64).tobytes())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _stored_ids(ids: np.ndarray) -> np.ndarray | None:
    """The ids as a pickle-free array (texts as fixed-width Unicode), or None if not storable."""
    ids = np.asarray(ids)
    if ids.dtype == object:
        if not all(type(x) is str for x in ids):
            return None
        return ids.astype(str) if ids.size else np.zeros(0, dtype="<U1")
    return ids if ids.dtype.kind in "iu" else None


def _read(path: Path, key: str, schema: Schema) -> TwoViewDataset | None:
    """The cached dataset, or None for a cache that is absent, stale or damaged."""
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return None
            left, right, ids = z["left"], z["right"], z["ids"]
            digest, text_ids = str(z["digest"]), bool(z["text_ids"])
        if _arrays_digest(left, right, ids) != digest:
            return None
        return TwoViewDataset.from_arrays(schema, left, right,
                                          ids=ids.astype(object) if text_ids else ids)
    except Exception:  # noqa: BLE001 - any unreadable cache is rebuilt from the files
        return None


def _write(path: Path, key: str, data: TwoViewDataset) -> None:
    """Write the cache atomically (owner-only permissions); any OS failure is ignored."""
    ids = _stored_ids(data.ids)
    if ids is None:
        return
    left, right = (np.ascontiguousarray(v.values, dtype=np.float64) for v in data.views)
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
        with os.fdopen(fd, "wb") as f:      # mkstemp creates the file with mode 0600
            np.savez(f, key=np.array(key), left=left, right=right, ids=ids,
                     digest=np.array(_arrays_digest(left, right, ids)),
                     text_ids=np.array(np.asarray(data.ids).dtype == object))
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def load_two_view_cached(source_path, schema: Schema) -> TwoViewDataset:
    """The two-view data at ``source_path`` read with ``schema``, from the cache when valid.

    Returns exactly what :func:`dpcore.data.loading.load_dataset` returns for
    ``(source_path, schema=schema)`` (private data); on a miss it calls that loader and
    stores its result.

    Raises
    ------
    DataError
        From the loader: the schema, the files or their values do not validate (file, line,
        reason). Nothing is cached then.
    """
    try:
        schema = validate_schema(schema)
        files = _view_files(source_path, schema)
        path = cache_file(source_path, schema) if files is not None else None
        key = _key(schema, files) if path is not None else None
    except Exception:  # noqa: BLE001 - the loader names whatever is wrong
        path = key = None
    if path is not None:
        cached = _read(path, key, schema)
        if cached is not None:
            return cached
    from dpcore.data.loading import load_dataset  # lazy: pandas, only to parse the files

    data = load_dataset(source_path, schema=schema)
    if path is not None:
        try:                      # store only if the files did not change while being read
            same = _key(schema, files) == key
        except OSError:
            same = False
        if same:
            _write(path, key, data)
    return data
