"""The two-view dataset model: columnar arrays ready for numba kernels.

Raw values live only here and in the kernels; nothing in this module is a DP
release. The row count ``n_rows`` is *not* public unless the schema is
``public_demo``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.schema import BOOLEAN, CATEGORICAL, NUMERIC, Attribute, Schema
from dpcore.errors import DataError


@dataclass(frozen=True)
class ViewData:
    """One view's data.

    Attributes
    ----------
    attributes : tuple of Attribute
        Schema order; row ``a`` of ``values`` is ``attributes[a]``.
    values : ndarray of float64, shape (n_attributes, n_rows)
        C-contiguous. NaN = missing. Boolean as 0/1, categorical as codes
        0..k-1 (the schema's category order), numeric as is.
    """

    attributes: tuple[Attribute, ...]
    values: np.ndarray

    @property
    def n_attributes(self) -> int:
        return len(self.attributes)


@dataclass(frozen=True)
class TwoViewDataset:
    """A validated two-view dataset: schema + left/right arrays over the same rows."""

    schema: Schema
    views: tuple[ViewData, ViewData]
    ids: np.ndarray

    @property
    def n_rows(self) -> int:
        """True number of rows (entities). Private unless the dataset is public_demo."""
        return int(self.views[0].values.shape[1])

    @classmethod
    def from_arrays(cls, schema: Schema, left: np.ndarray, right: np.ndarray,
                    ids=None) -> TwoViewDataset:
        """Build from coded arrays of shape (n_attributes, n_rows) per view, checking them.

        Raises
        ------
        DataError
            On shape mismatch, inf, values outside a declared domain, bad codes.
        """
        views = []
        for v, arr in enumerate((left, right)):
            attrs = schema.view_attributes(v)
            arr = np.ascontiguousarray(arr, dtype=np.float64)
            if arr.ndim != 2 or arr.shape[0] != len(attrs):
                raise DataError(f"view {schema.views[v].name!r} array has shape {arr.shape}, "
                                f"expected ({len(attrs)}, n_rows)")
            if len(attrs) == 0:
                raise DataError(f"view {schema.views[v].name!r} has no attributes")
            for a, attr in enumerate(attrs):
                check_column_codes(attr, arr[a])
            views.append(ViewData(attrs, arr))
        if views[0].values.shape[1] != views[1].values.shape[1]:
            raise DataError("the two views have different numbers of rows")
        n = views[0].values.shape[1]
        if n == 0:
            raise DataError("the dataset has no rows")
        ids = np.arange(n) if ids is None else np.asarray(ids)
        return cls(schema, (views[0], views[1]), ids)


def check_column_codes(attr: Attribute, column: np.ndarray, file: str | None = None) -> None:
    """Raise DataError naming the first bad row (1-based) of a coded column."""
    finite = ~np.isnan(column)
    bad_inf = np.isinf(column)
    if bad_inf.any():
        raise DataError("infinite value", file=file, column=attr.name,
                        row=int(np.argmax(bad_inf)) + 1)
    vals = column[finite]
    if attr.type == BOOLEAN:
        bad = finite & ~np.isin(column, (0.0, 1.0))
        if bad.any():
            raise DataError(f"Boolean value {float(column[bad][0])!r} is not 0/1", file=file,
                            column=attr.name, row=int(np.argmax(bad)) + 1)
    elif attr.type == CATEGORICAL:
        k = len(attr.categories)
        bad = finite & ((column < 0) | (column >= k) | (column != np.floor(column)))
        if bad.any():
            raise DataError(f"category code {float(column[bad][0])!r} not in 0..{k - 1}", file=file,
                            column=attr.name, row=int(np.argmax(bad)) + 1)
    elif attr.type == NUMERIC:
        if attr.domain is not None and vals.size:
            lo, hi = attr.domain
            bad = finite & ((column < lo) | (column > hi))
            if bad.any():
                raise DataError(f"value {float(column[bad][0])!r} outside the declared domain "
                                f"[{lo}, {hi}]", file=file, column=attr.name,
                                row=int(np.argmax(bad)) + 1)
    else:
        raise DataError(f"unknown attribute type {attr.type!r}", column=attr.name)
