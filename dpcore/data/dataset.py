"""The two-view dataset model: columnar arrays ready for numba kernels.

Raw values live only here and in the kernels; nothing in this module is a DP
release. The row count ``n_rows`` is *not* public unless the schema is
``public_demo``.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterable
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


#: Digests of datasets the loader built from checked partitions (``id`` → (weak ref, hex)).
_known_digests: dict[int, tuple[weakref.ref, str]] = {}


def remember_digest(data, digest: str) -> None:
    """Record ``digest`` as ``data``'s content digest (for the partition loaders only: they
    read ``data`` — a dataset of any kind — from partitions whose every column matched the
    digests the manifest recorded, and the manifest holds the content digest computed from
    those columns when they were written)."""
    key = id(data)
    _known_digests[key] = (weakref.ref(data, lambda _ref, key=key: _known_digests.pop(key, None)),
                           digest)


def known_digest(data) -> str | None:
    """The content digest a partition loader recorded for ``data`` (None: not recorded)."""
    entry = _known_digests.get(id(data))
    if entry is not None and entry[0]() is data:
        return entry[1]
    return None


def content_digest_of_columns(views: Iterable[tuple[int, int, Iterable[np.ndarray]]]) -> str:
    """SHA-256 (hex) of a two-view dataset's values given view by view, column by column.

    Parameters
    ----------
    views : iterable of (n_attributes, n_rows, columns)
        Per view, its shape and its columns in schema order (each float64-convertible,
        ``n_rows`` long; NaN = missing).

    Returns
    -------
    str
        The same digest as hashing each view's whole ``(n_attributes, n_rows)`` float64 array
        (C order) after its shape, which is what it was before datasets were partitioned:
        digests recorded by earlier versions stay valid. Every missing value is hashed as one
        NaN pattern, so the digest is about content. Only one column is copied at a time.
    """
    h = hashlib.sha256(b"dpcore-content-v1")
    for n_attributes, n_rows, columns in views:
        h.update(np.asarray((n_attributes, n_rows), dtype=np.int64).tobytes())
        for column in columns:
            column = np.asarray(column, dtype=np.float64)
            h.update(np.where(np.isnan(column), np.nan, column).tobytes())
    return h.hexdigest()


def two_view_digest(data: TwoViewDataset) -> str:
    """The content digest of ``data`` (:func:`content_digest_of_columns`): the manifest's
    digest when the partition loader built ``data`` (no second pass over the rows), else
    computed from its arrays."""
    known = known_digest(data)
    if known is not None:
        return known
    return content_digest_of_columns((v.n_attributes, data.n_rows, v.values)
                                     for v in data.views)
