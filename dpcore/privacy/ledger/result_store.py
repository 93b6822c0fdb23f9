"""Large tables of stored results, kept as Parquet files beside the ledger, by SHA-256.

A synthetic table of Adult's size (≈ 39,000 rows) is ≈ 6 MB of JSON; kept inside the
ledger's ``results`` rows it made a 149-run ledger 94 MB. :meth:`Ledger.store_result
<dpcore.privacy.ledger.store.Ledger.store_result>` therefore moves every **large table** of
a release out of the row, into a columnar file of the ledger's results store, and keeps in
its place a reference holding the file's SHA-256 digest. It knows nothing of the families:
any result's table moves, whatever its type.

What moves
----------
A *table* is a JSON list of at least two elements that are all lists (rows: a synthetic
table's ``rows``) or all objects (records: PFS2's ``patterns``). It moves when its own JSON
is at least :data:`THRESHOLD_BYTES` (1 MiB: ≈ 15,000 rows of a 10-column table, ≈ 10,000
frequent sequences); a smaller one stays inline, so a typical redescription result (a few
hundred KiB) is stored as before, and a command that stores it does not load pyarrow and
pandas (≈ 0.5 s of start-up a `mine` would otherwise pay; they were loaded at 64 KiB).
Its place in the release becomes ``{"$dpcore_stored_table": {"sha256": …, "rows": …,
"bytes": …}}``; a release that already uses that key is refused.

Encoding (exact: reading gives back the very JSON values that were stored): rows of one
length become columns ``"0"``, ``"1"``, …, records with the same keys in the same order one
column per key, anything else one column ``json`` of each element's JSON text. A column whose
values are all integers (within int64), all floats, all strings or all booleans, ``null``
allowed, is stored as that Arrow type; any other column (mixed types, nested values) as the
JSON text of each value. The layout and the JSON-text columns are named in the file's
metadata under ``dpcore.result_table``.

Where the files live
--------------------
SQLite: the folder ``<ledger file>.results/`` beside the database file (created on first
use). PostgreSQL: the directory named by ``$DPRM_RESULTS_DIR`` (or
``Ledger(location, results_dir=…)``), which the operator creates on storage every app server
and batch client of that ledger shares (it is not created here: a mistyped path on one
server would split the store). A PostgreSQL ledger without one refuses every charge
(:class:`ResultStoreMissing`, nothing charged), so no run is paid for whose result could not
be stored. A file's name is its digest (``<sha256>.parquet``): the same table is stored once,
and two processes storing it at once write the same bytes.

Guarantees
----------
* **Stored before shown, nothing lost**: a file is written to a temporary name, flushed and
  ``fsync``-ed, renamed atomically to its digest's name and the folder ``fsync``-ed, all
  before the ledger's transaction marks the run ``done``; a crash in between leaves an
  unreferenced file, never a reference without its file.
* **Checked on every read**: the file's SHA-256 must equal the digest the ledger row holds;
  a missing, damaged or edited file is refused (:class:`~dpcore.errors.DataError` naming the
  run, the file and what is wrong) — the ledger never shows a table it did not store.
* **Copied with the ledger**: ``ledger copy`` checks and copies every referenced file into the
  target's store before the target's rows commit.

Privacy: the files hold exactly what the ``results`` row held (the DP release; owner
diagnostics are never moved), so who may read them is unchanged — but they are files, so the
store folder must be readable only by the accounts that run the app, like the ledger itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from dpcore.errors import DataError, ParameterError

__all__ = ["ENV_VAR", "MARKER", "THRESHOLD_BYTES", "ResultStore", "ResultStoreMissing",
           "externalise", "resolve", "references"]

#: Environment variable naming a PostgreSQL ledger's results store (a shared directory).
ENV_VAR = "DPRM_RESULTS_DIR"
#: The key of a reference to a stored table (reserved: a release may not use it).
MARKER = "$dpcore_stored_table"
#: A table whose JSON has at least this many bytes is stored as a file (1 MiB).
THRESHOLD_BYTES = 1024 * 1024
_META_KEY = b"dpcore.result_table"
_INT64 = (-(2**63), 2**63 - 1)


class ResultStoreMissing(ParameterError):
    """The ledger has no results store configured (PostgreSQL without ``$DPRM_RESULTS_DIR``)
    or its directory does not exist; nothing was charged or stored."""


class ResultStore:
    """A folder of content-addressed Parquet files (``<sha256>.parquet``).

    Parameters
    ----------
    folder : path
        Where the files are.
    create : bool
        Create the folder if it is missing (the SQLite ledger's own folder); otherwise a
        missing folder raises :class:`ResultStoreMissing`.
    """

    def __init__(self, folder: str | os.PathLike, *, create: bool = False):
        self.folder = Path(folder).expanduser().resolve()
        self._create = create

    def __repr__(self) -> str:
        return f"ResultStore({str(self.folder)!r})"

    def check(self) -> None:
        """Refuse (ResultStoreMissing) a store whose folder is missing or not a folder."""
        if self._create:
            self.folder.mkdir(parents=True, exist_ok=True)
        if not self.folder.is_dir():
            raise ResultStoreMissing(f"the results store {self.folder} does not exist or is "
                                     "not a directory; create it on storage every app server "
                                     "and batch client of this ledger shares")

    def path(self, digest: str) -> Path:
        """Where the file of ``digest`` is (whether or not it exists)."""
        if not (isinstance(digest, str) and len(digest) == 64
                and all(c in "0123456789abcdef" for c in digest)):
            raise DataError(f"{digest!r} is not a SHA-256 digest of a stored table")
        return self.folder / f"{digest}.parquet"

    def put_bytes(self, data: bytes) -> str:
        """Store ``data`` under its SHA-256 (fsync + atomic rename); its digest."""
        self.check()
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.is_file() and _sha256_file(target) == digest:
            return digest                  # stored already (content-addressed)
        fd, temp = tempfile.mkstemp(prefix=".incoming-", suffix=".parquet", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        _fsync_folder(self.folder)
        return digest

    def get_bytes(self, digest: str, *, what: str = "a stored result") -> bytes:
        """The file of ``digest``, checked against it (DataError if missing or changed)."""
        path = self.path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise DataError(f"{what} refers to the table {path.name}, which is missing from "
                            f"the results store {self.folder}; restore it from a backup "
                            "(nothing is shown without it)") from None
        except OSError as exc:
            raise DataError(f"{what}: cannot read {path}: {exc}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise DataError(f"{what} refers to the table {path.name} in {self.folder}, whose "
                            "content no longer matches its SHA-256 digest (changed or "
                            "damaged); refusing to read it")
        return data


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:                        # a platform without directory descriptors
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- encoding

def _is_table(value) -> bool:
    if not isinstance(value, list) or len(value) < 2:
        return False
    return (all(isinstance(v, list) for v in value)
            or all(isinstance(v, dict) for v in value))


def _column_type(values: list):
    """The Arrow type that holds ``values`` exactly, or None (then: JSON text)."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    if not present:
        return None
    kinds = {type(v) for v in present}
    if kinds == {int}:
        if all(_INT64[0] <= v <= _INT64[1] for v in present):
            return pa.int64()
        return None
    for python, arrow in ((float, pa.float64()), (str, pa.string()), (bool, pa.bool_())):
        if kinds == {python}:
            return arrow
    return None


def _layout(elements: list) -> tuple[str, list[str], list[list]]:
    """``(layout, column names, columns)`` of a table's elements."""
    first = elements[0]
    if isinstance(first, list):
        width = len(first)
        if all(len(r) == width for r in elements):
            return "rows", [str(j) for j in range(width)], [list(c) for c in zip(*elements)] \
                if width else []
    else:
        keys = list(first)
        if all(list(r) == keys for r in elements):
            return "records", keys, [[r[k] for r in elements] for k in keys]
    return "json", ["json"], [[json.dumps(e, ensure_ascii=False) for e in elements]]


def encode_table(elements: list) -> bytes:
    """The Parquet bytes of a table (a list of rows or records), exactly decodable."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    layout, names, columns = _layout(elements)
    arrays, as_json = [], []
    for name, values in zip(names, columns):
        kind = _column_type(values) if layout != "json" else pa.string()
        if kind is None:
            as_json.append(name)
            values = [json.dumps(v, ensure_ascii=False) for v in values]
            kind = pa.string()
        arrays.append(pa.array(values, type=kind))
    meta = {"layout": layout, "rows": len(elements), "json_columns": as_json,
            "columns": names}
    table = pa.table(arrays, names=names) if arrays else pa.table({})
    table = table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode("utf-8")})
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue()


def decode_table(data: bytes) -> list:
    """Inverse of :func:`encode_table`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data))
    meta = json.loads((table.schema.metadata or {})[_META_KEY])
    json_columns = set(meta["json_columns"])
    columns = []
    for name in meta["columns"]:
        values = table.column(name).to_pylist()
        if name in json_columns:
            values = [json.loads(v) for v in values]
        columns.append(values)
    if meta["layout"] == "json":
        return [json.loads(v) for v in columns[0]]
    if meta["layout"] == "rows":
        if not columns:
            return [[] for _ in range(meta["rows"])]
        return [list(r) for r in zip(*columns)]
    return [dict(zip(meta["columns"], r)) for r in zip(*columns)]


# --------------------------------------------------------------------------- a release

def externalise(release, store_for, *, threshold: int | None = None):
    """``release`` with every large table replaced by a reference to its stored file.

    Parameters
    ----------
    release : JSON value
        A parsed release (not changed).
    store_for : callable () -> ResultStore
        The store, asked for only when a table is to be stored (so a ledger without one
        stores small results as before).
    threshold : int, optional
        Bytes of a table's JSON from which it is stored as a file (default
        :data:`THRESHOLD_BYTES`, read at call time).

    Returns
    -------
    (JSON value, list of str)
        The release to keep in the ledger row, and the digests of the files it refers to.

    Raises
    ------
    ParameterError
        The release uses the reserved key :data:`MARKER`.
    """
    digests: list[str] = []
    threshold = THRESHOLD_BYTES if threshold is None else threshold

    def walk(value):
        if isinstance(value, dict):
            if MARKER in value:
                raise ParameterError(f"result_json uses the key {MARKER!r}, which the ledger "
                                     "reserves for its stored tables")
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            if _is_table(value):
                size = len(json.dumps(value, ensure_ascii=False))
                if size >= threshold:
                    digest = store_for().put_bytes(encode_table(value))
                    digests.append(digest)
                    return {MARKER: {"sha256": digest, "rows": len(value), "bytes": size}}
                _check_no_marker(value)
                return value
            return [walk(v) for v in value]
        return value

    return walk(release), digests


def _check_no_marker(value) -> None:
    if isinstance(value, dict):
        if MARKER in value:
            raise ParameterError(f"result_json uses the key {MARKER!r}, which the ledger "
                                 "reserves for its stored tables")
        for v in value.values():
            _check_no_marker(v)
    elif isinstance(value, list):
        for v in value:
            _check_no_marker(v)


def _reference(value) -> str | None:
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(MARKER), dict):
        return value[MARKER].get("sha256")
    return None


def references(release) -> list[str]:
    """Digests of the stored tables a stored release refers to, in order."""
    found: list[str] = []

    def walk(value):
        digest = _reference(value)
        if digest is not None:
            found.append(digest)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(release)
    return found


def resolve(release, store_for, *, what: str = "a stored result"):
    """A stored release with every reference replaced by its table, each file checked
    against its digest (DataError if missing or changed)."""

    def walk(value):
        digest = _reference(value)
        if digest is not None:
            rows = decode_table(store_for().get_bytes(digest, what=what))
            if len(rows) != value[MARKER].get("rows"):
                raise DataError(f"{what}: the table {digest}.parquet holds {len(rows)} rows "
                                f"but the ledger recorded {value[MARKER].get('rows')}")
            return rows
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(release)
