"""OWNER-ONLY: a labelled-table schema guessed from an uploaded table, for the owner to review.

Everything here reads private data. The guess reuses the two-view prefill's column rules
(:func:`dpcore.data.prefill.prefill`: types, observed ranges rounded outward, observed
categories, and a :class:`~dpcore.data.prefill.ColumnNote` for every column it leaves out,
quoting the first offending values with their line or row) and turns them into the features
of a :class:`~dpcore.data.table.schema.TableSchema`: a numeric column becomes a numeric
feature with its rounded range as public ``bounds``, a categorical or Boolean column a
categorical feature with its observed texts as ``levels``, and the label column's observed
texts become the declared ``classes``.

Observed classes, levels and ranges are derived from the private data: they are a starting
point the owner must review — widen the bounds, add levels and classes that could occur — and
confirm before they are declared public (the schema is validated by
:func:`dpcore.data.table.schema.schema_from_dict` when it is registered). Never show the guess
or its notes to analysts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dpcore.data.loading import location, location_text
from dpcore.data.prefill import ColumnNote, prefill
from dpcore.data.schema import BOOLEAN, NUMERIC
from dpcore.data.table.schema import CATEGORICAL
from dpcore.data.table.schema import NUMERIC as TABLE_NUMERIC
from dpcore.errors import DataError

__all__ = ["TablePrefill", "prefill_table", "feature_object"]


@dataclass(frozen=True)
class TablePrefill:
    """The guessed features and classes, and the columns left out (OWNER ONLY).

    Attributes
    ----------
    features : tuple of dict
        One JSON object per feature taken, in column order, as
        :func:`dpcore.data.table.schema.schema_from_dict` reads them (numeric: ``bounds``
        and ``decimals`` 0 when every value is a whole number; categorical: ``levels``).
    classes : tuple of str
        The label column's observed texts, sorted.
    notes : tuple of ColumnNote
        Every feature column left out, why, and what it could be included as.
    proposed : tuple of dict
        For each note with a proposal, the feature object it proposes (in note order), for
        the owner to include or not.
    """

    features: tuple[dict, ...]
    classes: tuple[str, ...]
    notes: tuple[ColumnNote, ...]
    proposed: tuple[dict, ...] = ()


def _texts(series: pd.Series) -> np.ndarray:
    texts = series.astype(object).where(series.notna(), "").astype(str).str.strip()
    return texts.to_numpy(dtype=object)


def _whole_numbers(series: pd.Series) -> bool:
    values = pd.to_numeric(pd.Series(_texts(series), dtype=object), errors="coerce")
    values = values[np.isfinite(values.to_numpy(dtype=float))]
    return bool(len(values)) and bool((values == np.round(values)).all())


def feature_object(attribute, series: pd.Series) -> dict:
    """The feature JSON object of a two-view prefill ``attribute`` for column ``series``."""
    if attribute.type == NUMERIC:
        out = {"name": attribute.name, "type": TABLE_NUMERIC,
               "bounds": [float(attribute.domain[0]), float(attribute.domain[1])]}
        if _whole_numbers(series):
            out["decimals"] = 0
        return out
    if attribute.type == BOOLEAN:
        texts = _texts(series)
        levels = sorted({t for t in texts if t})
    else:
        levels = list(attribute.categories)
    return {"name": attribute.name, "type": CATEGORICAL, "levels": levels}


def prefill_table(frame: pd.DataFrame, label: str, *, name: str, file: str | None = None,
                  max_categories: int = 20) -> TablePrefill:
    """OWNER-ONLY: guess a labelled table's features and classes from the data.

    .. warning::
       The output is **derived from the private data** (observed classes, levels and
       ranges; the notes quote cell values). The owner reviews and edits it before it is
       declared public.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table (from :func:`dpcore.data.loading.read_table`, so notes name lines).
    label : str
        The label column.
    name : str
        Dataset name (for the prefill's bookkeeping).
    file : str, optional
        The file name, quoted in the notes.
    max_categories : int
        Most distinct texts a text column may have to be guessed categorical.

    Raises
    ------
    DataError
        No data rows, a missing label column, a label column with a missing value, or no
        other column (naming the file and column). A feature column with an empty cell is
        not an error here: it is left out with a note naming its first empty line or row.
    """
    columns = [str(c).strip() for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    if len(frame) == 0:
        raise DataError("the table has no data rows", file=file)
    if label not in columns:
        raise DataError(f"the label column is not in the table (columns: "
                        f"{', '.join(columns[:20])})", file=file, column=label)
    texts = _texts(frame[label])
    empty = np.flatnonzero(texts == "")
    if empty.size:
        raise DataError("missing label value", file=file, column=label,
                        **location(frame, int(empty[0])))   # a CSV's line, else the row
    features = frame[[c for c in columns if c != label]]
    if features.shape[1] == 0:
        raise DataError("the table has no column besides the label", file=file)
    guess = prefill(features, features.iloc[:, :0], name, files=(file, file),
                    missing_values=(), max_categories=max_categories, align_grid=False)
    # A labelled table allows no missing cell (the loader refuses one at register): a column
    # with an empty cell is left out here, naming its first empty line, not found later.
    gaps = {}
    for column in features.columns:
        empty = np.flatnonzero(_texts(features[column]) == "")
        if empty.size:
            gaps[column] = (f"empty cell at {location_text(features, int(empty[0]))} "
                            f"({empty.size} in all): a labelled table allows no missing "
                            "values; fill every cell of the column and read the file again, "
                            "or leave the column out")
    objects = tuple(feature_object(a, features[a.name]) for a in guess.schema.attributes
                    if a.name not in gaps)
    notes = [n if n.column not in gaps else replace(n, reason=gaps[n.column], proposal=None)
             for n in guess.notes]
    noted = {n.column for n in notes}
    notes += [ColumnNote(column=c, view=0, file=file, reason=why) for c, why in gaps.items()
              if c not in noted]
    proposed = tuple(feature_object(n.proposal, features[n.column]) for n in notes
                     if n.proposal is not None)
    return TablePrefill(features=objects, classes=tuple(sorted(set(texts))),
                        notes=tuple(notes), proposed=proposed)
