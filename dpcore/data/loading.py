"""Load and validate two-view datasets from files, uploaded tables or a Python package.

Everything here reads private data and is for the process that owns it: nothing returned is a
DP release. Bad input raises :class:`~dpcore.errors.DataError` before anything is built, so
nothing is half-registered; the message names the file, the column and one location:

* in a plain-text CSV/TSV file, ``line N of file F`` — the line a text editor shows (the
  header is line 1; blank lines and line breaks inside quoted cells are counted, as an editor
  counts them). A malformed-CSV message names the same line. :func:`read_table` keeps each
  data row's line as the table's index (named :data:`LINE_INDEX_NAME`);
* in a Parquet file, a compressed CSV or a table given in memory (no lines to show),
  ``row N``: the 1-based data row, the header being row 0.

``DataError.row`` is always the 1-based data row; ``DataError.line`` the line, when there is
one.

Supported layouts (see :mod:`dpcore.data.schema` for the schema file):

* a dataset directory holding ``schema.json`` or ``schema.toml`` plus the view files it names
  (paths relative to the directory), or the path of the schema file itself;
* two view files (CSV or Parquet, by extension) joined on the schema's ``id_column``; rows come
  out in the left file's order;
* one file holding both views (both views name the same ``file``; each attribute's ``view`` is
  the column→view mapping);
* a package source, ``"source": {"package": "sklearn", "loader": "load_diabetes"}``.

Columns the schema does not list are ignored.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.dataset import TwoViewDataset
from dpcore.data.names import path_inside
from dpcore.data.schema import (
    BOOLEAN,
    CATEGORICAL,
    FALSE_TEXTS,
    NUMERIC,
    TRUE_TEXTS,
    Attribute,
    Schema,
    load_schema,
    validate_schema,
)
from dpcore.errors import DataError

__all__ = ["load_dataset", "frames_to_dataset", "read_table", "list_sample_datasets",
           "sample_data_dir", "SCHEMA_FILE_NAMES", "LINE_INDEX_NAME", "location",
           "location_text", "check_ids", "join_view_ids", "check_separator", "parse_cells",
           "check_spread", "view_paths"]

SCHEMA_FILE_NAMES = ("schema.json", "schema.toml")
#: Index name of a table read from a plain-text file: the index holds each row's line.
LINE_INDEX_NAME = "line"
_CSV_EXT = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz", ".tsv", ".txt")
_PLAIN_TEXT_EXT = (".csv", ".tsv", ".txt")
_PARQUET_EXT = (".parquet", ".pq")


# ---------------------------------------------------------------------------
# Locating sample datasets
# ---------------------------------------------------------------------------

def sample_data_dir() -> Path:
    """The repository's ``sample_data/`` folder (``dpcore/data/../../sample_data``)."""
    return Path(__file__).resolve().parents[2] / "sample_data"


def list_sample_datasets() -> list[Path]:
    """Directories under ``sample_data/`` holding a ``schema.json`` or ``schema.toml``, by name."""
    root = sample_data_dir()
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir()
                   if p.is_dir() and any((p / n).is_file() for n in SCHEMA_FILE_NAMES)),
                  key=lambda p: p.name)


# ---------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------

def _file_kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        return "parquet"
    if name.endswith(_CSV_EXT):
        return "csv"
    raise DataError("unsupported file type; use CSV (.csv, .tsv) or Parquet (.parquet)",
                    file=str(path))


def _record_lines(text: str, sep: str) -> tuple[list[int], list[int]]:
    """Editor line (1-based) where each non-blank CSV record starts, and its field count.

    Blank lines are skipped as pandas skips them; a quoted cell may span lines. The first
    record is the header.
    """
    starts, widths = [], []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    previous = 0
    try:
        for record in reader:
            if record:
                starts.append(previous + 1)
                widths.append(len(record))
            previous = reader.line_num
    except csv.Error:           # a stray quote: leave the rest to pandas' message
        pass
    return starts, widths


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8-sig")


def _row_lines(raw: bytes, sep: str, n_rows: int) -> np.ndarray | None:
    """The editor line of each of the ``n_rows`` data rows, or None if it cannot be told.

    Fast path: a file with exactly one line per row (plus the header) has row r on line
    r + 1. Otherwise (blank lines, line breaks inside quoted cells) the records are scanned.
    """
    n_lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
    if raw.count(b"\r") in (0, raw.count(b"\r\n")) and n_lines == n_rows + 1:
        return np.arange(2, n_rows + 2, dtype=np.int64)
    starts, _ = _record_lines(_decode(raw), sep)
    if len(starts) != n_rows + 1:
        return None
    return np.asarray(starts[1:], dtype=np.int64)


def _malformed_csv(raw: bytes | None, sep: str, pandas_message: str, label: str) -> DataError:
    """A DataError for a CSV record with the wrong number of fields, at its editor line."""
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", pandas_message)
    if m is None:
        return DataError(f"malformed CSV ({pandas_message})", file=label)
    expected, saw = int(m.group(1)), int(m.group(3))
    line = row = None
    if raw is not None:
        starts, widths = _record_lines(_decode(raw), sep)
        bad = [k for k in range(1, len(widths)) if widths[k] > widths[0]]
        if bad:
            line, row = starts[bad[0]], bad[0]
    if line is None:           # pandas counts quoted line breaks differently; its number
        line = int(m.group(2))  # is still the best we have
    return DataError(f"malformed CSV: {saw} fields where the header has {expected} (a "
                     f"stray separator, or a cell with a separator that is not in quotes)",
                     file=label, row=row, line=line)


#: Separators a CSV saved by a spreadsheet in another locale may use instead.
_OTHER_SEPARATORS = {";": "';'", "\t": "a tab", "|": "'|'"}


def check_separator(header: str, sep: str, label: str) -> None:
    """Refuse a table whose header line holds none of ``sep`` but another separator.

    A ``;``-separated CSV (what spreadsheets write where the decimal mark is a comma) read
    with ``,`` comes out as one column named after the whole header; saying so here beats a
    later "column not found". Raises DataError naming the file, the separator seen and
    what to do; returns None for a header that has ``sep`` or no other separator.
    """
    if sep in header:
        return
    for other, words in _OTHER_SEPARATORS.items():
        if other != sep and other in header:
            fix = ("save it as .tsv, or with ',' between fields" if other == "\t" else
                   "save it again with ',' between fields (CSV, comma-separated)")
            shown = "tab" if sep == "\t" else repr(sep)
            raise DataError(f"line 1 (the header) has no {shown} separator but {words}: the "
                            f"file looks {words}-separated; {fix}", file=label)


def read_table(path, *, label: str | None = None) -> pd.DataFrame:
    """Read one view file: CSV as all-string columns (nothing parsed yet), Parquet as stored.

    A plain-text CSV/TSV comes back indexed by each data row's editor line (index name
    :data:`LINE_INDEX_NAME`; header = line 1), so later messages can say ``line N``; other
    tables have a plain 0-based index. Raises :class:`DataError` naming the file (and, for a
    malformed CSV, the line a text editor shows) for a missing, empty, non-UTF-8 or malformed
    file, or one separated by another character (:func:`check_separator`).
    """
    path = Path(path)
    label = label or str(path)
    if not path.is_file():
        raise DataError(f"file not found (looked for {str(path)!r})", file=label)
    kind = _file_kind(path)
    plain = kind == "csv" and path.name.lower().endswith(_PLAIN_TEXT_EXT)
    sep = "\t" if path.name.lower().endswith(".tsv") else ","
    raw = None
    try:
        if kind == "parquet":
            frame = pd.read_parquet(path).reset_index(drop=True)
        elif plain:
            raw = path.read_bytes()
            check_separator(raw.split(b"\n", 1)[0].decode("utf-8", "replace"), sep, label)
            frame = pd.read_csv(io.BytesIO(raw), sep=sep, dtype=str, keep_default_na=False,
                                na_filter=False, encoding="utf-8-sig")
        else:
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                                na_filter=False, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise DataError("the file is empty (no header row)", file=label) from None
    except pd.errors.ParserError as e:
        raise _malformed_csv(raw, sep, str(e).strip(), label) from None
    except UnicodeDecodeError as e:
        raise DataError(f"the file is not UTF-8 text (byte offset {e.start}); save it as "
                        f"UTF-8 CSV", file=label) from None
    except (OSError, ValueError) as e:  # pyarrow errors for bad Parquet are ValueError/OSError
        raise DataError(f"cannot read the file: {e}", file=label) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if kind == "csv" and frame.shape[1] == 1:     # compressed: only the parsed header is seen
        check_separator(str(frame.columns[0]), sep, label)
    if raw is not None:
        lines = _row_lines(raw, sep, len(frame))
        if lines is not None:
            frame.index = pd.Index(lines, name=LINE_INDEX_NAME)
    return frame


def location(table, i: int) -> dict:
    """Where data row ``i`` (0-based position) of a table is, as DataError keywords.

    ``{"row": i + 1, "line": L}`` for a table read from a plain-text file (see
    :func:`read_table`), else ``{"row": i + 1}``. ``table`` is a DataFrame or a column of one.
    """
    where = {"row": int(i) + 1}
    if getattr(table.index, "name", None) == LINE_INDEX_NAME:
        where["line"] = int(table.index[int(i)])
    return where


def location_text(table, i: int) -> str:
    """``"line L"`` or ``"row R"`` for data row ``i`` (see :func:`location`), for messages."""
    where = location(table, i)
    return f"line {where['line']}" if "line" in where else f"row {where['row']}"


# ---------------------------------------------------------------------------
# Column parsing (vectorised over unique cell texts)
# ---------------------------------------------------------------------------

def _is_text(series: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series))


def _render_numbers(values: np.ndarray) -> np.ndarray:
    """Texts of numbers as a CSV would show them (integral floats without '.0'); NaN -> ''."""
    out = np.empty(values.shape, dtype=object)
    for i, x in enumerate(values):
        if x is None or (isinstance(x, float) and np.isnan(x)) or x is pd.NA:
            out[i] = ""
        elif isinstance(x, (float, np.floating)) and float(x).is_integer():
            out[i] = str(int(x))
        else:
            out[i] = str(x)
    return out


def _factorize_texts(series: pd.Series):
    """codes (−1 = missing NaN/None) and stripped unique texts of a column."""
    if pd.api.types.is_bool_dtype(series):
        series = series.map({True: "1", False: "0"})
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    uniques = np.asarray(uniques, dtype=object)
    if len(uniques) and not all(isinstance(u, str) for u in uniques):
        uniques = _render_numbers(uniques)
    stripped = pd.Series(uniques, dtype=object).astype(str).str.strip().to_numpy(dtype=object)
    return codes, stripped


def _first_bad(series: pd.Series, bad_rows: np.ndarray, what, attr: Attribute, file: str,
               texts=None, codes=None):
    i = int(np.argmax(bad_rows))
    value = texts[codes[i]] if texts is not None else None
    msg = what(value) if callable(what) else what
    raise DataError(msg, file=file, column=attr.name, **location(series, i))


def _parse_numeric(series: pd.Series, attr: Attribute, missing: frozenset, file: str):
    if not _is_text(series) and not pd.api.types.is_bool_dtype(series):
        vals = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isinf(vals).any():
            _first_bad(series, np.isinf(vals), f"infinite value {vals[np.isinf(vals)][0]!r}",
                       attr, file)
        return vals
    codes, texts = _factorize_texts(series)
    is_missing = np.isin(texts, list(missing)) if len(texts) else np.zeros(0, bool)
    num = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(
        np.float64, copy=True)
    num[is_missing] = np.nan
    bad = ~is_missing & ~np.isfinite(num)
    if bad.any():
        bad_rows = (codes >= 0) & bad[np.maximum(codes, 0)]
        if bad_rows.any():
            def what(t):
                low = t.lower().lstrip("+-")
                if low == "nan":
                    return (f"NaN text {t!r} is not one of the schema's missing_values "
                            f"{sorted(missing)!r}; add it there if it means 'missing'")
                if low in ("inf", "infinity") or (np.isinf(pd.to_numeric(t, errors='coerce'))):
                    return f"infinite value {t!r} is not allowed in a numeric column"
                return f"non-numeric value {t!r} in a numeric column"
            _first_bad(series, bad_rows, what, attr, file, texts, codes)
    vals = np.where(codes >= 0, num[np.maximum(codes, 0)] if len(num) else np.nan, np.nan)
    return vals.astype(np.float64, copy=False)


def _parse_coded(series: pd.Series, attr: Attribute, missing: frozenset, file: str):  # noqa: C901, PLR0912
    """Boolean (0/1) or categorical (codes 0..k-1) column from texts."""
    codes, texts = _factorize_texts(series)
    value = np.full(len(texts), np.nan)
    bad = np.zeros(len(texts), dtype=bool)
    if attr.type == BOOLEAN:
        if attr.true_value is not None:
            tmap = {attr.true_value: 1.0, attr.false_value: 0.0}
            expected = f"{attr.true_value!r} (true) or {attr.false_value!r} (false)"
            for j, t in enumerate(texts):
                if t in tmap:
                    value[j] = tmap[t]
                elif t not in missing:
                    bad[j] = True
        else:
            expected = "1/0, true/false, t/f, yes/no or y/n"
            for j, t in enumerate(texts):
                low = t.lower()
                if t in missing:
                    continue
                if low in TRUE_TEXTS:
                    value[j] = 1.0
                elif low in FALSE_TEXTS:
                    value[j] = 0.0
                else:
                    bad[j] = True

        def what(t):
            return (f"Boolean value {t!r} not recognised (expected {expected}, or a missing "
                    f"marker {sorted(missing)!r})")
    else:
        index = {c: float(k) for k, c in enumerate(attr.categories)}
        numeric_index = {}
        for k, c in enumerate(attr.categories):
            try:
                numeric_index.setdefault(float(c), float(k))
            except ValueError:
                pass
        for j, t in enumerate(texts):
            if t in index:
                value[j] = index[t]
            elif t in missing:
                continue
            else:
                try:
                    value[j] = numeric_index[float(t)]  # "1.0" matches category "1"
                except (ValueError, KeyError):
                    bad[j] = True

        def what(t):
            return (f"unknown category {t!r}; the schema declares "
                    f"{_preview(attr.categories)}")     # not all of 10⁵ levels
    if bad.any():
        bad_rows = (codes >= 0) & bad[np.maximum(codes, 0)]
        if bad_rows.any():
            _first_bad(series, bad_rows, what, attr, file, texts, codes)
    if len(value) == 0:
        return np.full(len(codes), np.nan)
    return np.where(codes >= 0, value[np.maximum(codes, 0)], np.nan)


def _parse_column(series: pd.Series, attr: Attribute, missing: frozenset, file: str) -> np.ndarray:
    """One column → float64 (NaN = missing) in the dataset's coding, fully validated."""
    vals = parse_cells(series, attr, missing, file)
    present = vals[~np.isnan(vals)]
    check_spread(attr, int(present.size), present.min() if present.size else None,
                 present.max() if present.size else None, file)
    return vals


def parse_cells(series: pd.Series, attr: Attribute, missing: frozenset, file: str) -> np.ndarray:
    """Cells of one column → float64 (NaN = missing) in the dataset's coding.

    Every cell is checked (type, category, domain); what needs the whole column (all
    missing, constant) is :func:`check_spread`'s, so a file read in blocks can parse each
    block here and check the column once at the end. Raises DataError naming the cell.
    """
    if attr.type == NUMERIC:
        vals = _parse_numeric(series, attr, missing, file)
        if attr.domain is not None:
            lo, hi = attr.domain
            out = (vals < lo) | (vals > hi)
            if out.any():
                i = int(np.argmax(out))
                raise DataError(f"value {vals[i]:g} outside the declared domain "
                                f"[{lo:g}, {hi:g}]", file=file, column=attr.name,
                                **location(series, i))
    elif attr.type in (BOOLEAN, CATEGORICAL):
        vals = _parse_coded(series, attr, missing, file)
    else:
        raise DataError(f"unknown attribute type {attr.type!r}", column=attr.name)
    return vals


def check_spread(attr: Attribute, n_present: int, low, high, file: str) -> None:
    """Refuse a column whose every value is missing (``n_present == 0``) or which is
    constant (``low == high``, its smallest and largest coded values)."""
    if n_present == 0:
        raise DataError("every value is missing; remove the attribute from the schema",
                        file=file, column=attr.name)
    if low == high:
        v = low
        shown = (attr.categories[int(v)] if attr.type == CATEGORICAL
                 else ("true" if v else "false") if attr.type == BOOLEAN else f"{v:g}")
        raise DataError(f"constant column: every non-missing value is {shown}; a constant "
                        f"attribute cannot split rows — remove it from the schema",
                        file=file, column=attr.name)


def check_ids(frame: pd.DataFrame, id_column: str, file: str) -> np.ndarray:
    """The id texts of one view's table, checked: present, non-empty and unique.

    Parameters
    ----------
    frame : pandas.DataFrame
        The view's table (private data).
    id_column : str
        The shared id column.
    file : str
        File name for messages.

    Returns
    -------
    numpy.ndarray of str
        The stripped id texts, in the table's row order.

    Raises
    ------
    DataError
        Missing id column, an empty id or a duplicate id (naming its line or row, and the
        first occurrence).
    """
    if id_column not in frame.columns:
        raise DataError(f"the id column is missing (columns: {_preview(frame.columns)})",
                        file=file, column=id_column)
    s = frame[id_column]
    if pd.api.types.is_float_dtype(s):
        texts = _render_numbers(s.to_numpy(dtype=object))
    else:
        texts = s.astype(object).where(s.notna(), "").astype(str).str.strip().to_numpy(object)
    empty = texts == ""
    if empty.any():
        raise DataError("empty id", file=file, column=id_column,
                        **location(frame, int(np.argmax(empty))))
    dup = pd.Index(texts).duplicated(keep="first")
    if dup.any():
        i = int(np.argmax(dup))
        first = int(np.argmax(texts == texts[i]))
        raise DataError(f"duplicate id {texts[i]!r} (first seen on "
                        f"{location_text(frame, first)})", file=file, column=id_column,
                        **location(frame, i))
    return texts


def join_view_ids(left: pd.DataFrame, right: pd.DataFrame, id_column: str, *,
                  left_file: str = "left view", right_file: str = "right view"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Check both views' ids (:func:`check_ids`) and that they cover the same ids.

    Used when a dataset is built and, by the app, as soon as uploaded files are read (before
    any schema is prefilled or reviewed).

    Returns
    -------
    ids : numpy.ndarray of str
        The left view's ids (the dataset's row order).
    order : numpy.ndarray of int
        For each left row, the position of the right row with the same id.

    Raises
    ------
    DataError
        As :func:`check_ids`, or ids found in one view only: how many each way, with the
        first one and its line or row.
    """
    left_ids = pd.Index(check_ids(left, id_column, left_file))
    right_ids = pd.Index(check_ids(right, id_column, right_file))
    only_left = ~left_ids.isin(right_ids)
    only_right = ~right_ids.isin(left_ids)
    if only_left.any() or only_right.any():
        parts = []
        for mask, ids, frame, file, other in ((only_left, left_ids, left, left_file,
                                               right_file),
                                              (only_right, right_ids, right, right_file,
                                               left_file)):
            if mask.any():
                i = int(np.argmax(mask))
                parts.append(f"{int(mask.sum())} id(s) of {file!r} are not in {other!r} "
                             f"(e.g. {ids[i]!r}, {location_text(frame, i)})")
        raise DataError("the two views do not cover the same ids: " + "; ".join(parts),
                        column=id_column)
    return left_ids.to_numpy(dtype=object), right_ids.get_indexer(left_ids)


def _preview(cols, k: int = 8) -> str:
    cols = list(cols)
    return ", ".join(map(repr, cols[:k])) + (f", ... ({len(cols)} in all)" if len(cols) > k else "")


# ---------------------------------------------------------------------------
# Building a dataset
# ---------------------------------------------------------------------------

def frames_to_dataset(schema: Schema, left_df: pd.DataFrame, right_df: pd.DataFrame | None = None,
                      *, left_file: str = "left view", right_file: str = "right view",
                      schema_file: str | None = None) -> TwoViewDataset:
    """Validate tables against a schema and build a :class:`TwoViewDataset`.

    Used by :func:`load_dataset` and by the app for uploaded files. Best given all-string
    tables (``pd.read_csv(..., dtype=str, keep_default_na=False)``) so that every cell is
    checked against the schema; typed tables (Parquet) work too.

    Parameters
    ----------
    schema : Schema
        Public metadata; validated first.
    left_df, right_df : pandas.DataFrame
        One table per view, joined on ``schema.id_column`` (rows come out in ``left_df``'s
        order; without an id column the two tables are aligned by position and must have the
        same number of rows). Give ``right_df=None`` (or the same object twice) for one table
        holding both views.
    left_file, right_file : str
        Names used in error messages (e.g. the uploaded file names).
    schema_file : str, optional
        Schema file name for schema error messages.

    Returns
    -------
    TwoViewDataset
        Private data; ``ids`` are the id texts (or row positions without an id column).

    Raises
    ------
    DataError
        Naming file, column and line (tables from :func:`read_table` of a plain-text file)
        or 1-based data row: missing id column, duplicate or empty ids,
        ids in one view only, schema attribute missing from the file, non-numeric / NaN /
        infinite text in a numeric column, unrecognised Boolean, unknown category, value
        outside the declared domain, constant or all-missing column, no data rows.
    """
    schema = validate_schema(schema, file=schema_file)
    one_file = right_df is None or right_df is left_df
    frames = [(left_df, left_file)] if one_file else [(left_df, left_file), (right_df, right_file)]
    for frame, file in frames:
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"expected a table (pandas DataFrame), got {type(frame).__name__}",
                            file=file)
    frames = [(frame.rename(columns=lambda c: str(c).strip()), file) for frame, file in frames]
    for frame, file in frames:
        if len(frame) == 0:
            raise DataError("the file has no data rows", file=file)
    missing = frozenset(schema.missing_values)

    # columns present?
    for v in (0, 1):
        frame, file = frames[0 if one_file else v]
        cols = set(frame.columns)
        for attr in schema.view_attributes(v):
            if attr.name not in cols:
                raise DataError(f"declared in the schema ({schema.views[v].name!r} view) but not "
                                f"in the file (its columns: {_preview(frame.columns)})",
                                file=file, column=attr.name)

    # ids and row alignment
    ids = None
    order = None  # right-frame row of each left row
    if schema.id_column is not None:
        if one_file:
            ids = check_ids(frames[0][0], schema.id_column, frames[0][1])
        else:
            ids, order = join_view_ids(frames[0][0], frames[1][0], schema.id_column,
                                       left_file=left_file, right_file=right_file)
    elif not one_file and len(frames[0][0]) != len(frames[1][0]):
        raise DataError(f"without an id column the views are aligned by row, but {left_file!r} "
                        f"has {len(frames[0][0])} rows and {right_file!r} has "
                        f"{len(frames[1][0])}")

    arrays = []
    for v in (0, 1):
        frame, file = frames[0 if one_file else v]
        attrs = schema.view_attributes(v)
        arr = np.empty((len(attrs), len(frame)), dtype=np.float64)
        for a, attr in enumerate(attrs):
            arr[a] = _parse_column(frame[attr.name], attr, missing, file)
        if v == 1 and order is not None:
            arr = np.ascontiguousarray(arr[:, order])
        arrays.append(arr)
    return TwoViewDataset.from_arrays(schema, arrays[0], arrays[1], ids=ids)


def _find_schema_file(directory: Path) -> Path:
    found = [directory / n for n in SCHEMA_FILE_NAMES if (directory / n).is_file()]
    if not found:
        raise DataError("no schema.json or schema.toml in the dataset directory",
                        file=str(directory))
    if len(found) > 1:
        raise DataError("both schema.json and schema.toml exist; keep one", file=str(directory))
    return found[0]


def _load_source(schema: Schema, schema_file: str | None) -> TwoViewDataset:
    import importlib

    src = schema.source
    pkg, loader = src["package"], src["loader"]
    label = f"{pkg}.datasets.{loader}"
    try:
        module = importlib.import_module(f"{pkg}.datasets")
    except ImportError:
        raise DataError(f"this dataset is loaded from the Python package {pkg!r}, which is not "
                        f"installed (pip install scikit-learn)", file=schema_file) from None
    kwargs = dict(src.get("kwargs") or {})
    kwargs["as_frame"] = True
    try:
        bunch = getattr(module, loader)(**kwargs)
    except (TypeError, ValueError, OSError) as e:
        raise DataError(f"{label}(**{kwargs}) failed: {e}", file=schema_file) from None
    frame = bunch.frame if getattr(bunch, "frame", None) is not None else bunch.data
    return frames_to_dataset(schema, frame, None, left_file=label, schema_file=schema_file)


def view_paths(base, schema: Schema) -> tuple[tuple[Path, Path], tuple[Path, Path]]:
    """``((name in messages, resolved path), ...)`` of the left and the right view's file.

    View files must stay inside the dataset folder ``base`` (no absolute paths, "..", links
    out); both are checked before anything is read (DataError naming the file otherwise).
    """
    base = Path(base)
    lf, rf = schema.views[0].file, schema.views[1].file
    return ((base / lf, path_inside(base, lf, what="the left view's file")),
            (base / rf, path_inside(base, rf, what="the right view's file")))


def load_dataset(path_or_schema_path=None, *, schema: Schema | str | Path | None = None
                 ) -> TwoViewDataset:
    """Load, validate and align a two-view dataset.

    Parameters
    ----------
    path_or_schema_path : str or Path
        A dataset directory (holding ``schema.json`` or ``schema.toml``; view files relative to
        it) or a schema file (view files relative to its folder). May be omitted when
        ``schema`` has a package ``source``.
    schema : Schema or path, optional
        Use this schema instead of the one in the directory.

    Returns
    -------
    TwoViewDataset
        Private data (raw values; ``n_rows`` is not public unless ``public_demo``).

    Raises
    ------
    DataError
        For every problem in the schema or the data, naming file, column and row
        (see :func:`frames_to_dataset`).
    """
    base = None
    schema_file = None
    if path_or_schema_path is not None:
        p = Path(path_or_schema_path)
        if p.is_dir():
            base = p
            if schema is None:
                schema_path = _find_schema_file(p)
                schema_file = str(schema_path)
                schema = load_schema(schema_path)
        elif p.is_file():
            base = p.parent
            if schema is None:
                schema_file = str(p)
                schema = load_schema(p)
        else:
            raise DataError("no such dataset directory or schema file", file=str(p))
    if schema is None:
        raise DataError("give a dataset directory, a schema file or a schema")
    if not isinstance(schema, Schema):
        schema_file = str(schema)
        schema = load_schema(schema)
        if base is None:
            base = Path(schema_file).parent
    schema = validate_schema(schema, file=schema_file)
    if schema.source is not None:
        return _load_source(schema, schema_file)
    base = base if base is not None else Path.cwd()
    (left_path, left_real), (right_path, right_real) = view_paths(base, schema)
    left = read_table(left_real, label=str(left_path))
    if right_path == left_path:
        return frames_to_dataset(schema, left, None, left_file=str(left_path),
                                 schema_file=schema_file)
    right = read_table(right_real, label=str(right_path))
    return frames_to_dataset(schema, left, right, left_file=str(left_path),
                             right_file=str(right_path), schema_file=schema_file)
