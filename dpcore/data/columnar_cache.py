"""Owner-side columnar cache of a two-view dataset read from files: NumPy only, no pandas.

Parsing and validating the CSV/Parquet files of a two-view dataset needs pandas, which alone
costs a command-line ``mine`` about half a second of start-up. The first read of a dataset
(its registration, or the first run after its files or schema change) goes through the one
loader, :func:`dpcore.data.loading.load_dataset`, and keeps the validated arrays in a NumPy
``.npz`` file next to the data: ``<dataset folder>/.dpcore_cache/<schema key>.npz``. Later
reads load that file with NumPy alone.

The cache is only ever used for exactly the data the loader would return:

* it is keyed by a SHA-256 of the cache format, the schema (its normalised dict form), the
  source code of the loader modules (a changed parser rebuilds every cache) and the SHA-256
  of every view file's bytes. Any change to a file or the schema gives another key: the cache is not
  used and is rewritten from the loader's result;
* the arrays carry their own SHA-256, checked on every read, and are checked again by
  :meth:`~dpcore.data.dataset.TwoViewDataset.from_arrays` (shapes, codes, domains). A cache
  file that is missing, truncated, corrupt, of another format or for another key is ignored
  and rebuilt, never used;
* a folder the process cannot write to only means no cache (the loader's result is returned).

The folder holds a bounded set of caches. Each file records the loader-code digest and the
SHA-256 of every view file it was built from. Whenever a cache is written, the other caches
in the folder are pruned (:func:`prune_cache_folder`): a cache is **stale**, and removed,
when it does not read, is of another format, was built by other loader code, or names a view
file that is gone or whose bytes changed (it can never be used again); of the caches left,
at most :data:`MAX_ENTRIES` are kept, the most recently used first (a read refreshes its
file's modification time), so schema variants cannot pile up either. The one just written is
never removed. Pruning and the writer's atomic rename run under an exclusive ``flock`` of
``<dataset folder>/.dpcore_cache/.lock``, so a pruner never removes a cache another writer
has just renamed into place. Readers take no lock: on POSIX a file that is unlinked while a
reader has it open stays readable to that reader, and a reader that finds a file gone falls
back to the loader (a miss, never a wrong result). Temporary files of a writer that died are
removed once they are an hour old.

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
import time
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:        # not POSIX: caches are written but never pruned
    fcntl = None

import numpy as np

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.names import path_inside
from dpcore.data.schema import Schema, schema_to_dict, validate_schema

__all__ = ["CACHE_FOLDER", "MAX_ENTRIES", "load_two_view_cached", "cache_file",
           "prune_cache_folder"]

#: Folder, inside the dataset's folder, that holds the caches (one file per schema).
CACHE_FOLDER = ".dpcore_cache"
_FORMAT = b"dpcore-two-view-cache-v2"
#: Most caches kept in one dataset's folder (the most recently used; stale ones always go).
MAX_ENTRIES = 8
#: A writer's temporary file older than this (seconds) belongs to a writer that died.
_TMP_MAX_AGE = 3600.0
_TMP_PREFIX = ".tmp-"
_LOCK_NAME = ".lock"
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


def _file_digest(path: Path) -> str:
    """SHA-256 (hex) of one file's bytes, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_digests(files: list[tuple[str, Path]]) -> dict[str, str]:
    """``name in the schema → SHA-256 (hex)`` of each view file."""
    return {name: _file_digest(path) for name, path in files}


def _key(schema: Schema, digests: dict[str, str]) -> str:
    h = hashlib.sha256(_FORMAT)
    h.update(_loader_code_digest())
    text = _schema_text(schema)
    h.update(len(text).to_bytes(8, "little") + text)
    for name, digest in digests.items():
        h.update(name.encode() + b"\0" + bytes.fromhex(digest))
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
    """The cached dataset, or None for a cache that is absent, stale or damaged.

    A hit refreshes the file's modification time: pruning keeps the most recently used.
    """
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return None
            left, right, ids = z["left"], z["right"], z["ids"]
            digest, text_ids = str(z["digest"]), bool(z["text_ids"])
        if _arrays_digest(left, right, ids) != digest:
            return None
        data = TwoViewDataset.from_arrays(schema, left, right,
                                          ids=ids.astype(object) if text_ids else ids)
    except Exception:  # noqa: BLE001 - any unreadable cache is rebuilt from the files
        return None
    try:
        os.utime(path)
    except OSError:
        pass
    return data


def _write(path: Path, key: str, data: TwoViewDataset, digests: dict[str, str]) -> None:
    """Write the cache atomically (owner-only permissions), then prune the folder's others;
    any OS failure is ignored."""
    ids = _stored_ids(data.ids)
    if ids is None:
        return
    left, right = (np.ascontiguousarray(v.values, dtype=np.float64) for v in data.views)
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".npz", dir=path.parent)
        with os.fdopen(fd, "wb") as f:      # mkstemp creates the file with mode 0600
            np.savez(f, key=np.array(key), left=left, right=right, ids=ids,
                     digest=np.array(_arrays_digest(left, right, ids)),
                     text_ids=np.array(np.asarray(data.ids).dtype == object),
                     code=np.array(_loader_code_digest().hex()),
                     files=np.array(json.dumps(sorted(digests.items()))))
        with _folder_lock(path.parent) as locked:
            os.replace(tmp, path)
            tmp = None
            if locked:
                _prune_locked(path.parent, keep=path)
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


@contextmanager
def _folder_lock(folder: Path):
    """Exclusive ``flock`` of the cache folder's lock file, for writers and pruners; yields
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


def _entry_sources(path: Path) -> tuple[str, list[tuple[str, str]]] | None:
    """(loader-code digest, [(view file name, SHA-256)]) recorded in a cache, or None if it
    does not read as a cache of this format."""
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            code, files = str(z["code"]), json.loads(str(z["files"]))
        if not all(isinstance(n, str) and isinstance(d, str) for n, d in files):
            return None
        return code, [(n, d) for n, d in files]
    except Exception:  # noqa: BLE001 - whatever does not read is stale
        return None


def _prune_locked(folder: Path, *, keep: Path) -> list[Path]:
    """Remove the stale caches of ``folder`` and the least recently used beyond
    :data:`MAX_ENTRIES`, never ``keep``; the caller holds the folder's lock.

    A view file's digest is taken now, while pruning (not reused from before the parse), so
    a cache built from the files as they are is never judged stale.
    """
    base = folder.parent
    current: dict[str, str | None] = {}   # view file name → digest now (filled on demand)
    code = _loader_code_digest().hex()

    def now_digest(name: str) -> str | None:
        if name not in current:
            try:
                current[name] = _file_digest(path_inside(base, name))
            except Exception:  # noqa: BLE001 - gone, unreadable or outside the folder
                current[name] = None
        return current[name]

    removed, fresh = [], []
    for entry in folder.iterdir():
        if entry.name.startswith(_TMP_PREFIX):
            try:
                if time.time() - entry.stat().st_mtime > _TMP_MAX_AGE:
                    entry.unlink()
                    removed.append(entry)
            except OSError:
                pass
            continue
        if entry.suffix != ".npz" or entry == keep:
            continue
        sources = _entry_sources(entry)
        stale = (sources is None or sources[0] != code
                 or any(now_digest(name) != digest for name, digest in sources[1]))
        if not stale:
            try:
                fresh.append((entry.stat().st_mtime, entry))
                continue
            except OSError:
                continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    fresh.sort(reverse=True)
    for _, entry in fresh[max(MAX_ENTRIES - 1, 0):]:
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def prune_cache_folder(source_path, schema: Schema) -> list[Path]:
    """Prune the cache folder of the dataset at ``source_path`` as a write does.

    Removes every stale cache (unreadable, another format or loader code, or built from
    view files that are gone or changed) and the least recently used beyond
    :data:`MAX_ENTRIES`; the cache of ``schema`` is kept if it is current.

    Returns
    -------
    list of Path
        The files removed (none when the folder or its lock cannot be used).
    """
    files = _view_files(source_path, schema)
    path = cache_file(source_path, schema) if files is not None else None
    if path is None or not path.parent.is_dir():
        return []
    try:
        with _folder_lock(path.parent) as locked:
            return _prune_locked(path.parent, keep=path) if locked else []
    except OSError:
        return []


def load_two_view_cached(source_path, schema: Schema) -> TwoViewDataset:
    """The two-view data at ``source_path`` read with ``schema``, from the cache when valid.

    Returns exactly what :func:`dpcore.data.loading.load_dataset` returns for
    ``(source_path, schema=schema)`` (private data); on a miss it calls that loader, stores
    its result and prunes the folder's stale caches.

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
        digests = _file_digests(files) if path is not None else None
        key = _key(schema, digests) if path is not None else None
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
            same = _file_digests(files) == digests
        except OSError:
            same = False
        if same:
            _write(path, key, data, digests)
    return data
