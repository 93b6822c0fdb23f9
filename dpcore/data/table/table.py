"""A labelled table loaded for synthesis: validated, clipped to the public bounds, encoded.

Everything here reads private data and is for the process that owns it: nothing returned is a
DP release. The clip counts and the row count are owner-only diagnostics.

Errors name the file, the column and the 1-based data row (the header is row 0) so the data
owner can fix the input: a missing label or feature column, a label value that is not a
declared class, a categorical value that is not a declared level, or a numeric cell that is
empty or not a number raise :class:`~dpcore.errors.DataError`. Numeric values outside the
public bounds are **clipped** to them (not an error) and counted per feature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.loading import read_table
from dpcore.data.table.schema import (
    SCHEMA_FILE_NAME,
    TableSchema,
    load_table_schema,
    value_text,
)
from dpcore.errors import DataError

__all__ = ["SynthesisTable", "table_from_frame", "load_table", "load_synthesis_dataset",
           "load_registered_table", "encode", "frame_from_encoded", "decode_columns",
           "typed_values"]


@dataclass
class SynthesisTable:
    """A validated labelled table (private data).

    Attributes
    ----------
    schema : TableSchema
        The public schema.
    numeric : numpy.ndarray of float64, shape (n, number of numeric features)
        Numeric features in their own units, clipped to the public bounds.
    categorical : numpy.ndarray of int32, shape (n, number of categorical features)
        Level codes (index into the feature's ``levels``).
    labels : numpy.ndarray of int32, shape (n,)
        Class codes (index into ``schema.classes``).
    clipped : dict of str → int
        Per numeric feature, how many values lay outside the public bounds and were clipped
        (owner-only: it is computed from the true data).
    source : str
        The file (or a label such as ``"<frame>"``) the table came from, for messages.
    """

    schema: TableSchema
    numeric: np.ndarray
    categorical: np.ndarray
    labels: np.ndarray
    clipped: dict[str, int] = field(default_factory=dict)
    source: str = "<frame>"
    _encoded: np.ndarray | None = field(default=None, init=False, repr=False)

    @property
    def n_rows(self) -> int:
        """Number of records (private unless the schema is ``public_demo``)."""
        return int(self.labels.shape[0])

    def encoded(self) -> np.ndarray:
        """The encoded matrix float64[n, D] (see :mod:`dpcore.data.table.schema`), cached."""
        if self._encoded is None:
            self._encoded = encode(self.schema, self.numeric, self.categorical)
        return self._encoded

    def content_arrays(self) -> tuple[tuple[str, np.ndarray], ...]:
        """What a synthesizer reads, as named arrays (the ledger's content digest hashes them).

        The clipped numeric values, the level and class codes, and the per-feature clip
        counts (owner diagnostics read them). Private: only a digest of them is stored.
        """
        clipped = np.asarray([self.clipped.get(f.name, 0) for f in self.schema.features
                              if f.is_numeric], dtype=np.int64)
        return (("numeric", np.ascontiguousarray(self.numeric, dtype=np.float64)),
                ("categorical", np.ascontiguousarray(self.categorical, dtype=np.int32)),
                ("labels", np.ascontiguousarray(self.labels, dtype=np.int32)),
                ("clipped", clipped))

    def class_counts(self) -> np.ndarray:
        """True records per class, int64[n_classes] (owner-only)."""
        return np.bincount(self.labels, minlength=self.schema.n_classes).astype(np.int64)

    def subset(self, rows) -> SynthesisTable:
        """The records ``rows`` (indices or a boolean mask) as a new table (clip counts kept)."""
        rows = np.asarray(rows)
        return SynthesisTable(self.schema, self.numeric[rows], self.categorical[rows],
                              self.labels[rows], dict(self.clipped), self.source)

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame with the schema's columns (label first, levels decoded)."""
        data = {self.schema.label: typed_values(self.schema.classes, self.labels)}
        num = cat = 0
        for f in self.schema.features:
            if f.is_numeric:
                data[f.name] = self.numeric[:, num].copy()
                num += 1
            else:
                data[f.name] = typed_values(f.levels, self.categorical[:, cat])
                cat += 1
        return pd.DataFrame(data)


def typed_values(declared, codes) -> np.ndarray:
    """Declared values by code: an int64 array if every declared value is an integer, a float
    array if every one is a number, else an object array of texts."""
    declared = list(declared)
    codes = np.asarray(codes, dtype=np.int64)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in declared):
        return np.asarray(declared, dtype=np.int64)[codes]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in declared):
        return np.asarray(declared, dtype=np.float64)[codes]
    return np.asarray([value_text(v) for v in declared], dtype=object)[codes]


def encode(schema: TableSchema, numeric: np.ndarray, categorical: np.ndarray) -> np.ndarray:
    """Encoded matrix float64[n, D]: numeric → [−1, 1] over the public bounds, one-hot {0, 1}.

    The numeric values must already lie within their bounds (they are clipped again here, so
    the result always lies in [−1, 1]).
    """
    n = numeric.shape[0] if numeric.ndim == 2 else categorical.shape[0]
    out = np.zeros((n, schema.width), dtype=np.float64)
    num = cat = 0
    for i, f in enumerate(schema.features):
        cols = schema.columns_of(i)
        if f.is_numeric:
            lo, hi = f.bounds
            out[:, cols.start] = np.clip(2.0 * (numeric[:, num] - lo) / (hi - lo) - 1.0,
                                         -1.0, 1.0)
            num += 1
        else:
            out[np.arange(n), cols.start + categorical[:, cat]] = 1.0
            cat += 1
    return out


def decode_columns(schema: TableSchema, encoded: np.ndarray, *, clip: bool = True
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Encoded rows → (numeric in their units, categorical codes).

    Numeric: undo the scaling (clipped to the bounds unless ``clip=False``) and round to the
    feature's ``decimals``. Categorical: the level of the largest one-hot column (argmax).
    """
    n = encoded.shape[0]
    n_num = sum(f.is_numeric for f in schema.features)
    numeric = np.empty((n, n_num), dtype=np.float64)
    categorical = np.empty((n, schema.n_features - n_num), dtype=np.int32)
    num = cat = 0
    for i, f in enumerate(schema.features):
        cols = schema.columns_of(i)
        if f.is_numeric:
            lo, hi = f.bounds
            z = encoded[:, cols.start]
            if clip:
                z = np.clip(z, -1.0, 1.0)
            values = lo + (z + 1.0) * 0.5 * (hi - lo)
            if f.decimals is not None:
                values = np.round(values, f.decimals)
                if clip:  # rounding must not leave the bounds
                    values = np.clip(values, lo, hi)
            numeric[:, num] = values
            num += 1
        else:
            categorical[:, cat] = np.argmax(encoded[:, cols.start:cols.stop], axis=1)
            cat += 1
    return numeric, categorical


def frame_from_encoded(schema: TableSchema, encoded: np.ndarray, labels: np.ndarray, *,
                       clip: bool = True) -> pd.DataFrame:
    """Synthetic encoded rows and class codes → a DataFrame with the schema's columns."""
    numeric, categorical = decode_columns(schema, encoded, clip=clip)
    table = SynthesisTable(schema, numeric, categorical, np.asarray(labels, dtype=np.int32))
    return table.to_frame()


# ---------------------------------------------------------------------------- loading

def _texts(series: pd.Series) -> np.ndarray:
    """Cell texts as the schema compares them (Parquet numbers rendered like CSV text)."""
    values = series.to_numpy(dtype=object)
    out = np.empty(values.shape[0], dtype=object)
    for i, v in enumerate(values):
        out[i] = "" if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA \
            else value_text(v)
    return out


def _codes(series: pd.Series, declared, *, what: str, file: str, column: str) -> np.ndarray:
    texts = _texts(series)
    lookup = {value_text(v): i for i, v in enumerate(declared)}
    uniques, inverse = np.unique(texts, return_inverse=True)
    codes_u = np.array([lookup.get(u, -1) for u in uniques], dtype=np.int32)
    codes = codes_u[inverse]
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        row = int(bad[0])
        shown = ", ".join(repr(value_text(v)) for v in list(declared)[:12])
        more = " …" if len(declared) > 12 else ""
        raise DataError(f"{texts[row]!r} is not a declared {what} (declared: {shown}{more}); "
                        f"{bad.size} row(s) affected", file=file, column=column, row=row + 1)
    return codes


def _numbers(series: pd.Series, *, file: str, column: str) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        texts = pd.Series(_texts(series), dtype=object)
        values = pd.to_numeric(texts.str.strip(), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = int(bad[0])
        shown = series.iloc[row]
        raise DataError(f"{shown!r} is not a finite number (missing values are not allowed; "
                        f"{bad.size} row(s) affected)", file=file, column=column, row=row + 1)
    return values


def table_from_frame(frame: pd.DataFrame, schema: TableSchema, *, file: str = "<frame>"
                     ) -> SynthesisTable:
    """Validate a DataFrame against the schema; clip numerics to their bounds and count.

    Columns the schema does not name are ignored. Raises :class:`DataError` (file, column,
    1-based row) for a missing column, an undeclared class or level, or a non-number.
    """
    columns = [str(c).strip() for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    if schema.label not in columns:
        raise DataError(f"the label column {schema.label!r} is missing (columns: "
                        f"{', '.join(columns[:20])})", file=file, column=schema.label)
    missing = [f.name for f in schema.features if f.name not in columns]
    if missing:
        raise DataError(f"feature column(s) missing: {', '.join(missing)}", file=file,
                        column=missing[0])
    labels = _codes(frame[schema.label], schema.classes, what="class", file=file,
                    column=schema.label)
    n = len(frame)
    n_num = sum(f.is_numeric for f in schema.features)
    numeric = np.empty((n, n_num), dtype=np.float64)
    categorical = np.empty((n, schema.n_features - n_num), dtype=np.int32)
    clipped: dict[str, int] = {}
    num = cat = 0
    for f in schema.features:
        if f.is_numeric:
            values = _numbers(frame[f.name], file=file, column=f.name)
            lo, hi = f.bounds
            clipped[f.name] = int(np.count_nonzero((values < lo) | (values > hi)))
            numeric[:, num] = np.clip(values, lo, hi)
            num += 1
        else:
            categorical[:, cat] = _codes(frame[f.name], f.levels, what="level", file=file,
                                         column=f.name)
            cat += 1
    return SynthesisTable(schema, numeric, categorical, labels, clipped, file)


def load_table(path, schema: TableSchema, *, label: str | None = None) -> SynthesisTable:
    """Load one CSV (.csv, .tsv) or Parquet file and validate it against ``schema``.

    Parameters
    ----------
    path : str or Path
        The table file.
    schema : TableSchema
        The public schema (bounds, classes, levels).
    label : str, optional
        How the file is named in error messages (default: the path).
    """
    name = label or str(path)
    return table_from_frame(read_table(path, label=name), schema, file=name)


def load_synthesis_dataset(folder) -> SynthesisTable:
    """Load a dataset folder: ``synthesis_schema.json`` and the table file it names."""
    folder = Path(folder)
    schema = load_table_schema(folder / SCHEMA_FILE_NAME)
    if schema.file is None:
        raise DataError("the schema names no 'file' to load", file=str(folder / SCHEMA_FILE_NAME))
    return load_table(folder / schema.file, schema, label=schema.file)


def load_registered_table(source_path, schema: TableSchema) -> SynthesisTable:
    """The table of a registered synthesis dataset, read with its *confirmed* schema.

    Parameters
    ----------
    source_path : str or Path
        The registered dataset folder (or its schema file); ``schema.file`` is relative to
        that folder, or ``source_path`` is the table file itself. The schema file on disk is
        not read: the ledger's confirmed schema (bounds, classes, levels) is what the table
        is checked against and clipped to.
    schema : TableSchema
        The confirmed public schema.

    Raises
    ------
    DataError
        A missing or malformed file, a missing label, a level or class not declared (naming
        the file, row and reason).
    """
    path = Path(source_path)
    if path.is_file() and path.name != SCHEMA_FILE_NAME:
        return load_table(path, schema, label=path.name)
    folder = path if path.is_dir() else path.parent
    if schema.file is None:
        raise DataError("the schema names no 'file' to load", file=str(folder / SCHEMA_FILE_NAME))
    return load_table(folder / schema.file, schema, label=schema.file)

