"""The in-memory sequence dataset: records in CSR layout, ready for the numba kernels.

Record ``r`` is ``items[indptr[r]:indptr[r + 1]]``: item codes (``int32``) into the
schema's declared alphabet, in the record's order. Nothing here is a DP release: the
record count, the lengths and the items are private unless the schema is ``public_demo``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.sequences.schema import SequenceSchema
from dpcore.errors import DataError

__all__ = ["SequenceDataset", "csr_from_lists"]


def csr_from_lists(records) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr int64, items int32)`` of an iterable of item-code sequences."""
    records = [np.asarray(r, dtype=np.int64).ravel() for r in records]
    indptr = np.zeros(len(records) + 1, dtype=np.int64)
    if records:
        np.cumsum([r.size for r in records], out=indptr[1:])
    items = (np.concatenate(records) if records else np.zeros(0, np.int64)).astype(np.int32)
    return indptr, np.ascontiguousarray(items)


@dataclass(frozen=True, eq=False)
class SequenceDataset:
    """A sequence database (private) with its public schema.

    Attributes
    ----------
    schema : SequenceSchema
        Public metadata; ``schema.alphabet`` names the item codes.
    indptr : numpy.ndarray of int64, shape (n_records + 1,)
        Record boundaries, ``indptr[0] = 0``, non-decreasing.
    items : numpy.ndarray of int32, shape (indptr[-1],)
        Item codes in ``[0, schema.n_items)``.
    """

    schema: SequenceSchema
    indptr: np.ndarray
    items: np.ndarray

    def __post_init__(self):
        indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        items = np.ascontiguousarray(self.items, dtype=np.int32)
        object.__setattr__(self, "indptr", indptr)
        object.__setattr__(self, "items", items)
        if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 \
                or np.any(np.diff(indptr) < 0) or indptr[-1] != items.size:
            raise DataError("malformed record layout (indptr must start at 0, never "
                            "decrease and end at the number of items)")
        if items.size and (items.min() < 0 or items.max() >= self.schema.n_items):
            raise DataError(f"item codes must lie in [0, {self.schema.n_items}) (the "
                            "declared alphabet)")

    @classmethod
    def from_lists(cls, schema: SequenceSchema, records) -> SequenceDataset:
        """Build from item-code sequences (tests and generators)."""
        indptr, items = csr_from_lists(records)
        return cls(schema, indptr, items)

    @classmethod
    def from_names(cls, schema: SequenceSchema, records) -> SequenceDataset:
        """Build from sequences of item names (every name must be in the alphabet)."""
        codes = schema.item_codes()
        out = []
        for r, record in enumerate(records, start=1):
            try:
                out.append([codes[name] for name in record])
            except KeyError as exc:
                raise DataError(f"item {exc.args[0]!r} is not in the declared alphabet",
                                row=r) from None
        return cls.from_lists(schema, out)

    def content_arrays(self) -> tuple[tuple[str, np.ndarray], ...]:
        """What a miner reads, as named arrays (the ledger's content digest hashes them).

        The record boundaries and the item codes. Private: only a digest of them is stored.
        """
        return (("indptr", self.indptr), ("items", self.items))

    @property
    def n_records(self) -> int:
        """Number of records (private unless public_demo)."""
        return int(self.indptr.size - 1)

    @property
    def lengths(self) -> np.ndarray:
        """Record lengths in items (private)."""
        return np.diff(self.indptr)

    def record(self, r: int) -> np.ndarray:
        """Item codes of record ``r`` (a view)."""
        return self.items[self.indptr[r]:self.indptr[r + 1]]

    def record_names(self, r: int) -> list[str]:
        """Item names of record ``r``."""
        return [self.schema.alphabet[i] for i in self.record(r)]

    def to_lists(self) -> list[list[int]]:
        """Every record as a list of item codes (tests, exact miners)."""
        return [self.record(r).tolist() for r in range(self.n_records)]

    def subset(self, rows: np.ndarray) -> SequenceDataset:
        """The records ``rows`` (in that order) as a new dataset with the same schema."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        if rows.size == 0:
            return SequenceDataset(self.schema, indptr, np.zeros(0, np.int32))
        starts = self.indptr[rows]
        idx = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return SequenceDataset(self.schema, indptr, self.items[idx])
