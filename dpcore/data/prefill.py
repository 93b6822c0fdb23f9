"""OWNER-ONLY: a schema guessed from the data, with a report of every column it did not take.

Everything here reads private data. The guessed schema (types, observed categories, domains
rounded outward) is a starting point the data owner must review — widen or round every
domain so it reveals nothing about individuals — before declaring it public; never show it
to analysts unconfirmed.

Nothing is dropped or coerced silently: every column the guess leaves out comes back as a
:class:`ColumnNote` saying why, with the line (plain-text files) or row of the first few
values that caused it, and — where the column could still be used — a proposed attribute the
owner may include during review (e.g. declare a column of numbers with a few stray texts
categorical, or fix the file and upload it again).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.loading import location_text
from dpcore.data.schema import (
    BOOLEAN,
    CATEGORICAL,
    DEFAULT_MISSING_VALUES,
    FALSE_TEXTS,
    NUMERIC,
    TRUE_TEXTS,
    Attribute,
    Schema,
    ViewSpec,
)
from dpcore.errors import DataError

__all__ = ["ColumnNote", "Prefill", "prefill", "prefill_schema", "nice_domain",
           "MAX_PROPOSED_CATEGORIES", "SHOWN_OFFENDERS"]

#: A left-out text column is offered as categorical (all its texts as categories) up to this
#: many distinct texts; above it the owner types the categories.
MAX_PROPOSED_CATEGORIES = 1000
#: How many offending values a note shows (with their line or row).
SHOWN_OFFENDERS = 3


@dataclass(frozen=True)
class ColumnNote:
    """A column the prefill left out, and why (OWNER ONLY: it quotes private values).

    Attributes
    ----------
    column : str
        Column name.
    view : int
        0 = left, 1 = right (the file it was read from).
    file : str or None
        File name, for the owner.
    reason : str
        Why it was left out, quoting the first offending values with their line (plain-text
        files) or row, and what the owner can do.
    proposal : Attribute or None
        An attribute the owner may include instead (None when the column cannot be used:
        all missing or constant).
    """

    column: str
    view: int
    file: str | None
    reason: str
    proposal: Attribute | None = None


@dataclass(frozen=True)
class Prefill:
    """The guessed schema and the report of the columns it left out (OWNER ONLY)."""

    schema: Schema
    notes: tuple[ColumnNote, ...]


def nice_domain(lo: float, hi: float, bins: int | None = None) -> tuple[float, float]:
    """Round [lo, hi] outward to "nice" numbers.

    With ``bins`` (the grid's ``grid_bins``) the domain is ``[a, a + (bins + 1)·s]`` for the
    smallest step s in the 1-2-5 sequence that covers [lo, hi] with ``a`` a multiple of s, so
    every equal-width grid threshold ``a + k·s`` is a round number. Without ``bins`` the ends are
    rounded to the decimal power below the span.
    """
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise DataError(f"cannot round a non-finite range [{lo}, {hi}]")
    span = hi - lo if hi > lo else max(abs(lo), 1.0)
    if bins is None:
        step = 10.0 ** math.floor(math.log10(span))
        a, b = math.floor(lo / step) * step, math.ceil(hi / step) * step
        if b <= a:
            b = a + step
        return (_clean(a), _clean(b))
    n = int(bins) + 1
    e = math.floor(math.log10(span / n)) - 1
    while True:
        for m in (1, 2, 5):
            step = m * 10.0 ** e
            a = math.floor(lo / step) * step
            if a > lo:          # lo / step underflowed to -0.0 (a subnormal lo): one step down
                a -= step
            if a + n * step >= hi and a + n * step > lo:
                return (_clean(a), _clean(a + n * step))
        e += 1


def _clean(x: float) -> float:
    return float(f"{x:.12g}")


def _cell_texts(series: pd.Series) -> np.ndarray:
    """Each cell as stripped text ('' for NaN/None); Booleans as '1'/'0'."""
    if pd.api.types.is_bool_dtype(series):
        series = series.map({True: "1", False: "0"})
    texts = series.astype(object).where(series.notna(), "").astype(str).str.strip()
    return texts.to_numpy(dtype=object)


def _offenders(series: pd.Series, texts: np.ndarray, bad: np.ndarray) -> str:
    """The first few offending values with their line/row, and how many there are."""
    where = np.flatnonzero(bad)
    shown = ", ".join(f"{location_text(series, i)}: {texts[i]!r}"
                      for i in where[:SHOWN_OFFENDERS])
    more = f", … ({len(where)} in all)" if len(where) > SHOWN_OFFENDERS else ""
    return shown + more


def _guess_column(series: pd.Series, name: str, view: int, file, missing: set,
                  max_categories: int, grid_bins: int, align_grid: bool):
    """(attribute, None) for a column taken, (None, ColumnNote) for one left out."""
    texts = _cell_texts(series)
    present = ~np.isin(texts, list(missing | {""}))
    values = pd.unique(texts[present])
    if values.size == 0:
        return None, ColumnNote(name, view, file, "every value is missing (empty or a "
                                                  "missing-value text)")
    if values.size == 1:
        return None, ColumnNote(name, view, file, f"constant: every non-missing value is "
                                                  f"{values[0]!r}, so it cannot split rows")
    low = {str(v).lower() for v in values}
    if low <= (TRUE_TEXTS | FALSE_TEXTS) and low & TRUE_TEXTS and low & FALSE_TEXTS:
        return Attribute(name, view, BOOLEAN), None
    nums = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
    finite = np.isfinite(nums)

    def domain() -> tuple[float, float]:
        return nice_domain(float(nums[finite].min()), float(nums[finite].max()),
                           grid_bins if align_grid else None)

    if finite.all():
        return Attribute(name, view, NUMERIC, domain=domain()), None
    number_text = dict(zip(values, finite))
    is_number = np.array([bool(number_text.get(t, False)) for t in texts]) & present
    not_number = present & ~is_number
    categories = tuple(sorted(str(v) for v in values))
    if finite.any() and is_number.sum() >= not_number.sum():
        # mostly numbers: neither drop the stray texts nor turn the column into categories
        # without asking — the owner decides
        k, n = int(not_number.sum()), int(present.sum())
        reason = (f"a column of numbers, but {k} of its {n} values are not numbers "
                  f"({_offenders(series, texts, not_number)}). Fix them in the file (or add "
                  f"them to the missing-value texts), or include the column as categorical.")
        if len(values) <= max_categories:
            proposal = Attribute(name, view, CATEGORICAL, categories=categories)
        else:
            proposal = Attribute(name, view, NUMERIC, domain=domain())
        return None, ColumnNote(name, view, file, reason, proposal)
    if len(values) <= max_categories:
        return Attribute(name, view, CATEGORICAL, categories=categories), None
    reason = (f"{len(values)} distinct texts, more than {max_categories} for a categorical "
              f"attribute (free text or an identifier?). Include it as categorical only if "
              f"every text is a public category.")
    proposal = (Attribute(name, view, CATEGORICAL, categories=categories)
                if len(values) <= MAX_PROPOSED_CATEGORIES else None)
    return None, ColumnNote(name, view, file, reason, proposal)


def prefill(frame_left, frame_right, name: str, id_column: str | None = None, *,
            files: tuple = (None, None), view_names: tuple = ("left", "right"),
            missing_values=DEFAULT_MISSING_VALUES, max_categories: int = 20,
            grid_bins: int = 32, align_grid: bool = True) -> Prefill:
    """OWNER-ONLY: guess a schema from the data and report every column left out.

    .. warning::
       The output is **derived from the private data** (observed categories and ranges, and
       the notes quote cell values). The owner must review and edit the schema before
       declaring it public; never show it or the notes to analysts.

    Types: a column whose non-missing values are Boolean spellings
    (:data:`dpcore.data.schema.TRUE_TEXTS` / :data:`~dpcore.data.schema.FALSE_TEXTS`) is
    Boolean; a column of numbers is numeric with its observed [min, max] rounded outward (see
    :func:`nice_domain`; with ``align_grid`` the domain width is ``(grid_bins + 1)`` round
    steps so the public split grid is round numbers too); other text columns with at most
    ``max_categories`` distinct values are categorical. Left out, each with a
    :class:`ColumnNote`: columns that are all missing or constant; columns of numbers with
    some texts that are not numbers (the note names the first few by line or row; the owner
    fixes the file or includes the column as categorical — it is never silently turned into
    categories or dropped); text columns with more than ``max_categories`` distinct values.

    Parameters
    ----------
    frame_left, frame_right : pandas.DataFrame
        The two views' tables (any dtypes; tables from
        :func:`dpcore.data.loading.read_table` give lines in the notes).
    name : str
        Dataset name.
    id_column : str, optional
        Column joining the views; excluded from the attributes.
    files : (str or None, str or None)
        View file names to record (same name twice for one file with both views).
    view_names : (str, str)
        Public names of the views.
    missing_values : sequence of str
        Cell texts that mean "missing" (empty cells always do).
    max_categories : int
        Most distinct texts a column may have to be guessed categorical.
    grid_bins : int
        Thresholds of the public split grid per numeric attribute.
    align_grid : bool
        Round domains so the grid's thresholds are round numbers.

    Returns
    -------
    Prefill
        The guessed schema (not public until the owner confirms it) and the notes.
    """
    missing = set(missing_values)
    attributes, notes = [], []
    for v, frame in enumerate((frame_left, frame_right)):
        for col in frame.columns:
            cname = str(col).strip()
            if id_column is not None and cname == id_column:
                continue
            attribute, note = _guess_column(frame[col], cname, v, files[v], missing,
                                            max_categories, grid_bins, align_grid)
            if attribute is not None:
                attributes.append(attribute)
            else:
                notes.append(note)
    desc = ("PREFILLED FROM DATA — review every type and domain before declaring this schema "
            "public.")
    if notes:
        desc += " Columns left out: " + ", ".join(n.column for n in notes) + "."
    schema = Schema(name=name, attributes=tuple(attributes),
                    views=(ViewSpec(view_names[0], files[0]), ViewSpec(view_names[1], files[1])),
                    id_column=id_column, description=desc, public_demo=False,
                    missing_values=tuple(missing_values), grid_bins=grid_bins)
    return Prefill(schema=schema, notes=tuple(notes))


def prefill_schema(frame_left, frame_right, name: str, id_column: str | None = None,
                   **kwargs) -> Schema:
    """The schema of :func:`prefill` alone (OWNER ONLY; its notes are dropped — use
    :func:`prefill` wherever an owner reviews the result)."""
    return prefill(frame_left, frame_right, name, id_column, **kwargs).schema
