"""Load sequence datasets from files: record-per-line text files and event tables.

Everything here reads private data and is for the process that owns it: nothing returned is
a DP release. Every problem raises :class:`~dpcore.errors.DataError` naming the file, the
line (text files, 1-based; ``error.row`` holds it) or the data row (tables: 1-based, the
header is row 0, blank lines not counted) and the reason, before anything is built.

Two layouts:

* **lines**: one record per line, items separated by spaces or tabs, each item a name of
  the declared alphabet; plus an alphabet file with one item name per line (code order).
  A blank line would be an empty record and is refused. Either file may be gzip-compressed
  (recognised by its first bytes, whatever its name, e.g. ``records.seq.gz``).
* **events**: a CSV or Parquet table with one event per row: a record id, an order key
  (a number, or a timestamp) and an item name. Each record's events are sorted by the
  order key (ties keep the file's order); records come out in order of first appearance.

Items outside the declared alphabet are an error: strict PFS2 takes its first candidates
from the declared alphabet and never from the data.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.loading import check_separator
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.data.sequences.schema import (
    EVENTS,
    LINES,
    SCHEMA_FILE_NAME,
    SequenceSchema,
    check_item_name,
    load_sequence_schema,
)
from dpcore.errors import DataError

__all__ = ["read_alphabet_file", "load_record_lines", "load_event_table",
           "load_sequence_dataset", "load_registered_sequences", "write_record_lines",
           "write_alphabet_file", "observed_items"]

_CSV_EXT = (".csv", ".csv.gz", ".tsv", ".txt")
_PARQUET_EXT = (".parquet", ".pq")
_GZIP_MAGIC = b"\x1f\x8b"


def _line_error(path, line: int, reason: str) -> DataError:
    err = DataError(f"line {line}: {reason}", file=str(path))
    err.row = line
    return err


def _read_lines(path, label: str | None = None) -> list[str]:
    path = Path(path)
    label = label or str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the file ({exc.strerror or exc})",
                        file=label) from None
    if raw[:2] == _GZIP_MAGIC:    # records.seq.gz and the like, as tables read .csv.gz
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"a gzip file that cannot be decompressed ({exc}); compress it "
                            "again or upload it uncompressed", file=label) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _line_error(label, raw[:exc.start].count(b"\n") + 1,
                          "not UTF-8 text (save the file as UTF-8 text, gzip-compressed or "
                          "not)") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def read_alphabet_file(path, *, label: str | None = None) -> tuple[str, ...]:
    """Item names, one per line, in code order.

    ``label`` is how messages name the file (default: its path); an upload read from a
    temporary copy passes the uploaded file's name, so no server path is shown.

    Raises
    ------
    DataError
        Naming the file and line of an empty or duplicated name or a name with spaces.
    """
    names: list[str] = []
    seen: dict[str, int] = {}
    shown = label or str(path)
    lines = _read_lines(path, shown)
    for n, line in enumerate(lines, start=1):
        name = line.strip()
        if not name:
            raise _line_error(shown, n, "empty item name (one name per line, no blank lines)")
        if any(ch.isspace() for ch in name):
            raise _line_error(shown, n, f"item name {name!r} contains a space")
        if name in seen:
            raise _line_error(shown, n, f"item {name!r} is declared twice (first on line "
                                       f"{seen[name]})")
        seen[name] = n
        names.append(name)
    if not names:
        raise DataError("the alphabet file is empty", file=shown)
    return tuple(names)


def load_record_lines(path, schema: SequenceSchema) -> SequenceDataset:
    """Records from a text file: one record per line, item names separated by whitespace.

    Parameters
    ----------
    path : path-like
        The record file (UTF-8 text, or that text gzip-compressed).
    schema : SequenceSchema
        Its ``alphabet`` gives the item codes.

    Raises
    ------
    DataError
        Naming the file, the line and the reason (an empty record, an item outside the
        declared alphabet, text that is not UTF-8).
    """
    codes = schema.item_codes()
    lines = _read_lines(path)
    lengths = np.zeros(len(lines), dtype=np.int64)
    out: list[int] = []
    for n, line in enumerate(lines, start=1):
        tokens = line.split()
        if not tokens:
            raise _line_error(path, n, "empty record (every line must hold at least one "
                                       "item)")
        try:
            out.extend([codes[t] for t in tokens])
        except KeyError as exc:
            raise _line_error(path, n, f"item {exc.args[0]!r} is not in the declared "
                                       f"alphabet of {len(codes)} items") from None
        lengths[n - 1] = len(tokens)
    if not lines:
        raise DataError("the record file holds no records", file=str(path))
    indptr = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return SequenceDataset(schema, indptr, np.asarray(out, dtype=np.int32))


def _read_table(path, label: str | None = None) -> tuple[pd.DataFrame, str]:
    path = Path(path)
    label = label or str(path)
    name = path.name.lower()
    try:
        if name.endswith(_PARQUET_EXT):
            return pd.read_parquet(path), "parquet"
        if name.endswith(_CSV_EXT):
            sep = "\t" if name.endswith(".tsv") else ","
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                                skip_blank_lines=True)
            if frame.shape[1] == 1:
                check_separator(str(frame.columns[0]), sep, label)
            return frame, "csv"
    except FileNotFoundError:
        raise DataError("file not found", file=label) from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"cannot read the table ({str(exc).splitlines()[0]})",
                        file=label) from None
    raise DataError("unsupported file type; use CSV (.csv, .tsv) or Parquet (.parquet)",
                    file=label)


def _missing(values: pd.Series, kind: str) -> np.ndarray:
    miss = values.isna().to_numpy().copy()
    if kind == "csv":
        miss |= (values.astype(str).str.strip() == "").to_numpy()
    return miss


def _order_keys(values: pd.Series, kind: str, path, column: str) -> np.ndarray:
    """Order keys as float64 (numbers) or int64 nanoseconds (timestamps)."""
    if kind == "parquet" and pd.api.types.is_numeric_dtype(values) \
            and not pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype=np.float64)
    if kind == "parquet" and pd.api.types.is_datetime64_any_dtype(values):
        return values.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    text = values.astype(str).str.strip()
    numbers = pd.to_numeric(text, errors="coerce")
    if not numbers.isna().any():
        return numbers.to_numpy(dtype=np.float64)
    try:
        stamps = pd.to_datetime(text, errors="coerce", format="ISO8601")
    except (ValueError, TypeError):
        stamps = pd.Series(pd.NaT, index=text.index)
    if not stamps.isna().any():
        return stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    bad = np.flatnonzero((numbers.isna() & stamps.isna()).to_numpy())
    if bad.size == 0:  # a mix of numbers and timestamps
        bad = np.flatnonzero(numbers.isna().to_numpy())
    raise DataError(f"order key {text.iloc[bad[0]]!r} is neither a number nor an ISO "
                    "timestamp (all keys of one file must be of one kind)", file=str(path),
                    column=column, row=int(bad[0]) + 1)


def load_event_table(path, schema: SequenceSchema, *, record_column: str, order_column: str,
                     item_column: str) -> SequenceDataset:
    """Records from an event table (CSV or Parquet): one row per event.

    Parameters
    ----------
    path : path-like
        ``.csv`` / ``.tsv`` or ``.parquet``.
    schema : SequenceSchema
        Its ``alphabet`` gives the item codes.
    record_column, order_column, item_column : str
        The record id (any value), the order key within a record (numbers or ISO
        timestamps; ties keep the file's order) and the item name.

    Raises
    ------
    DataError
        Naming the file, column, 1-based data row and reason (a missing column or value,
        an item outside the declared alphabet, an order key that is neither a number nor a
        timestamp).
    """
    frame, kind = _read_table(path)
    for col in (record_column, order_column, item_column):
        if col not in frame.columns:
            have = ", ".join(map(str, frame.columns))
            raise DataError(f"column not found (the table has {have})", file=str(path),
                            column=col)
    if len(frame) == 0:
        raise DataError("the event table has no rows", file=str(path))
    for col in (record_column, order_column, item_column):
        miss = _missing(frame[col], kind)
        if miss.any():
            raise DataError("missing value", file=str(path), column=col,
                            row=int(np.flatnonzero(miss)[0]) + 1)
    item_text = frame[item_column].astype(str).str.strip()
    codes = pd.Index(list(schema.alphabet)).get_indexer(item_text)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        raise DataError(f"item {item_text.iloc[bad[0]]!r} is not in the declared alphabet "
                        f"of {schema.n_items} items", file=str(path), column=item_column,
                        row=int(bad[0]) + 1)
    order = _order_keys(frame[order_column], kind, path, order_column)
    record_ids = frame[record_column]
    if kind == "csv":
        record_ids = record_ids.astype(str).str.strip()
    rec_code, uniques = pd.factorize(record_ids, sort=False)
    perm = np.lexsort((np.arange(len(frame)), order, rec_code))
    counts = np.bincount(rec_code, minlength=len(uniques)).astype(np.int64)
    indptr = np.zeros(len(uniques) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return SequenceDataset(schema, indptr, codes[perm].astype(np.int32))


def observed_items(path, item_column: str | None = None, *, label: str | None = None
                   ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """OWNER ONLY: the column names of an event table and the distinct items it holds.

    .. warning::
       The items are **read from the private data** (a rare item reveals that some record
       holds it). They are a prefill the owner reviews before declaring the alphabet
       public; never show them to analysts.

    ``label`` is how messages name the file (default: its path); an upload read from a
    temporary copy passes the uploaded file's name, so no server path is shown.

    Returns
    -------
    (columns, items) : tuple of str, tuple of str
        The table's column names, and the item column's distinct stripped texts, sorted
        (empty without ``item_column``: the header only, to choose the columns from).

    Raises
    ------
    DataError
        The table cannot be read, has no rows, lacks ``item_column`` or has a missing item
        (naming the file, column and 1-based data row).
    """
    frame, kind = _read_table(path, label)
    label = label or str(path)
    columns = tuple(str(c) for c in frame.columns)
    if item_column is None:
        return columns, ()
    if item_column not in frame.columns:
        raise DataError(f"column not found (the table has {', '.join(columns)})",
                        file=label, column=item_column)
    if len(frame) == 0:
        raise DataError("the event table has no rows", file=label)
    miss = _missing(frame[item_column], kind)
    if miss.any():
        raise DataError("missing value", file=label, column=item_column,
                        row=int(np.flatnonzero(miss)[0]) + 1)
    return columns, tuple(sorted(set(frame[item_column].astype(str).str.strip())))


def load_sequence_dataset(path) -> SequenceDataset:
    """A dataset folder holding ``sequence_schema.json`` (or the schema file itself).

    The schema's ``files`` name the record file(s), relative to the schema's folder. With
    the ``lines`` format and an ``alphabet`` file, the file must list exactly the schema's
    alphabet, in the same order.
    """
    path = Path(path)
    schema_path = path / SCHEMA_FILE_NAME if path.is_dir() else path
    schema = load_sequence_schema(schema_path)
    return _load_files(schema, schema_path.parent, str(schema_path))


def load_registered_sequences(source_path, schema: SequenceSchema) -> SequenceDataset:
    """The records of a registered sequence dataset, read with its *confirmed* schema.

    Parameters
    ----------
    source_path : str or Path
        The registered dataset folder (or its schema file); the schema's ``files`` are
        relative to that folder. The schema file on disk is not read: the ledger's
        confirmed schema is what the records are checked against.
    schema : SequenceSchema
        The confirmed public schema (alphabet, l1, files).

    Raises
    ------
    DataError
        A missing or malformed file, or an item outside the declared alphabet (naming the
        file, line and reason).
    """
    path = Path(source_path)
    folder = path if path.is_dir() else path.parent
    return _load_files(schema.validate(), folder, str(folder / SCHEMA_FILE_NAME))


def _load_files(schema: SequenceSchema, folder: Path, schema_label: str) -> SequenceDataset:
    files = schema.files
    if not files:
        raise DataError("the schema names no record file ('files')", file=schema_label)
    if files["format"] == LINES:
        if "alphabet" in files:
            declared = read_alphabet_file(folder / files["alphabet"])
            if declared != schema.alphabet:
                raise DataError("the alphabet file differs from the schema's 'alphabet' "
                                "(same names in the same order are required)",
                                file=str(folder / files["alphabet"]))
        return load_record_lines(folder / files["records"], schema)
    if files["format"] == EVENTS:
        return load_event_table(folder / files["events"], schema,
                                record_column=files["record_column"],
                                order_column=files["order_column"],
                                item_column=files["item_column"])
    raise DataError(f"unknown record format {files['format']!r}", file=schema_label)


def write_record_lines(dataset: SequenceDataset, path) -> None:
    """Write records one per line as space-separated item names (UTF-8, final newline)."""
    names = np.asarray(dataset.schema.alphabet, dtype=object)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for r in range(dataset.n_records):
            fh.write(" ".join(names[dataset.record(r)]) + "\n")


def write_alphabet_file(schema: SequenceSchema, path) -> None:
    """Write the declared alphabet, one item name per line."""
    for name in schema.alphabet:
        check_item_name(name)
    Path(path).write_text("\n".join(schema.alphabet) + "\n", encoding="utf-8")
