"""The counts PFS2 and its baseline take from the records, per partition and summed.

Every count a strict run (PFS2 or the baseline) reads from the records is a sum over
records of a function of one record and public or released values: a record's length, its
number of items of a candidate set, whether it holds a candidate (as it is, or shrunk for
the candidates to a public bound). Such a count over a dataset is the sum of the same count
over any split of its records into partitions, so each partition is counted on its own by
the existing numba kernels and the int64 arrays are added up **before** the miner draws the
one noise of that release (:mod:`dpcore.sequences.miner`). The summed array is exactly the
whole-dataset array, so a seeded run releases the same values whatever the partitioning.

Where the counting runs is the run's choice:

* :class:`WholeCounts`: the loaded records as one block (faithful mode, data in memory);
* :class:`PartitionCounts` with no backend: the dataset's partitions in this process, one
  partition's records held at a time (datasets the loader left on disk: above
  ``LOAD_WHOLE_UP_TO_RECORDS`` of :mod:`dpcore.data.sequences.partitions`; smaller ones
  are read whole when loaded and counted whole, which is faster);
* :class:`PartitionCounts` with a :class:`DaskCounting` backend: one task per partition on
  a Dask cluster; each worker reads its partition from the shared store, checks its digests
  and returns only the partition's count array; the client sums them.

Nothing here is a DP release: every array returned is private (exact counts, in records)
and goes to the miner, which charges the accountant and adds the noise before anything
leaves the run. A count that cannot be completed (the cluster failed, a partition no longer
matches its digest) raises :class:`~dpcore.errors.CountingInterrupted` before its noise is
drawn: the run stays charged and finishing it counts again (``dpcore/sequences/PRIVACY.md``).
"""

from __future__ import annotations

import numpy as np

from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.errors import CountingInterrupted, DataError
from dpcore.sequences.kernels import length_histogram, relevant_length_histogram
from dpcore.sequences.shrinking import ShrinkStats, candidate_supports, shrink_records

__all__ = ["WholeCounts", "PartitionCounts", "DaskCounting", "CountingInterrupted",
           "record_counts"]

_N_STATS = 4    # ShrinkStats' fields, all sums over records


# ---------------------------------------------------------------------------
# One block of records → one int64 vector (module-level: a worker imports them)
# ---------------------------------------------------------------------------

def _lengths(part: SequenceDataset, n_bins: int) -> np.ndarray:
    return length_histogram(part.indptr, int(n_bins))


def _length_counts(part: SequenceDataset, lmax: int) -> np.ndarray:
    from dpcore.sequences.miner import length_counts

    return length_counts(part.lengths, lmax)


def _relevant(part: SequenceDataset, mask: np.ndarray, cap: int) -> np.ndarray:
    return relevant_length_histogram(part.indptr, part.items, mask, int(cap))


def _shrunk_supports(part: SequenceDataset, trie, length: int) -> np.ndarray:
    """Supports of the candidates on the records shrunk to ``length`` items (hard cut,
    checked), then the shrinking's statistics."""
    n_items = part.schema.n_items
    sh_indptr, sh_items, stats = shrink_records(part.indptr, part.items, n_items, trie,
                                                length, truncate=True)
    if sh_indptr.size > 1 and np.diff(sh_indptr).max() > length:
        raise AssertionError("shrinking left a record longer than its bound")
    supports = candidate_supports(sh_indptr, sh_items, n_items, trie)
    return np.concatenate([supports, np.asarray(
        [stats.long_records, stats.rebuilt_records, stats.overshooting_records,
         stats.items_removed], dtype=np.int64)])


def _supports(part: SequenceDataset, trie, bound: int, runs=None) -> np.ndarray:
    """Supports on the records as they are, then (``bound`` > 0) on them shrunk to
    ``bound`` items (``runs``: the block's occurrence runs if built already)."""
    support = candidate_supports(part.indptr, part.items, part.schema.n_items, trie, runs)
    if not bound:
        return support
    return np.concatenate([support, _shrunk_supports(part, trie, bound)[:trie.n_cand]])


_OPS = {"lengths": _lengths, "length_counts": _length_counts, "relevant": _relevant,
        "shrunk": _shrunk_supports, "supports": _supports}


def _count_block(part: SequenceDataset, op: str, args: tuple) -> np.ndarray:
    return np.asarray(_OPS[op](part, *args), dtype=np.int64)


def _count_partition(manifest, schema, index: int, op: str, args: tuple) -> np.ndarray:
    """What one Dask task runs: partition ``index`` read (digests checked), counted."""
    from dpcore.data.sequences.partitions import read_partition

    return _count_block(read_partition(manifest, schema, index), op, args)


# ---------------------------------------------------------------------------
# The counters the miner calls
# ---------------------------------------------------------------------------

class _Counts:
    """The count queries of a strict run; subclasses say how ``_sum`` gets the sum over
    every record of one block function."""

    n_items: int

    def _sum(self, op: str, args: tuple, size: int) -> np.ndarray:
        raise NotImplementedError

    def length_histogram(self, n_bins: int) -> np.ndarray:
        """Records of each length 0..n_bins−1 (longer ones in the last cell)."""
        return self._sum("lengths", (int(n_bins),), int(n_bins))

    def length_counts(self, lmax: int) -> np.ndarray:
        """:func:`~dpcore.sequences.miner.length_counts` over every record."""
        return self._sum("length_counts", (int(lmax),), int(lmax))

    def relevant_lengths(self, mask: np.ndarray, cap: int) -> np.ndarray:
        """Records holding 1..cap items of ``mask`` (more in cell ``cap``)."""
        return self._sum("relevant", (np.asarray(mask, dtype=np.bool_), int(cap)), int(cap))

    def shrunk_supports(self, trie, length: int) -> tuple[np.ndarray, ShrinkStats]:
        """Supports of ``trie``'s candidates on every record shrunk to ``length`` items, and
        the shrinking's statistics (owner diagnostics)."""
        out = self._sum("shrunk", (trie, int(length)), trie.n_cand + _N_STATS)
        return out[:trie.n_cand], ShrinkStats(*(int(x) for x in out[trie.n_cand:]))

    def supports(self, trie, bound: int) -> tuple[np.ndarray, np.ndarray]:
        """``(supports on every record as it is, supports on the records shrunk to
        ``bound`` items)`` (the same array when ``bound`` is 0)."""
        n = trie.n_cand
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        out = self._sum("supports", (trie, int(bound)), 2 * n if bound else n)
        return (out[:n], out[n:]) if bound else (out, out)


class WholeCounts(_Counts):
    """Counts over loaded records, as one block (faithful mode; data given in memory)."""

    def __init__(self, data: SequenceDataset, runs=None):
        self.data, self.n_items, self.runs = data, data.schema.n_items, runs

    def _sum(self, op, args, size):
        if op == "supports" and self.runs is not None:
            args = (*args, self.runs)      # built once for the run, not once per level
        return _count_block(self.data, op, args)


class PartitionCounts(_Counts):
    """Counts over a :class:`~dpcore.data.sequences.partitions.PartitionedSequences`, one
    partition at a time, summed into one int64 array.

    Parameters
    ----------
    data : PartitionedSequences
        The records' manifest and schema (its records are never loaded whole here).
    backend : DaskCounting, optional
        Count the partitions on a Dask cluster; default: in this process, one after the
        other (one partition's records held at a time).
    """

    def __init__(self, data, backend=None):
        self.manifest, self.schema = data.manifest, data.schema
        self.n_items, self.backend = data.schema.n_items, backend

    def _sum(self, op, args, size):
        if self.backend is not None:
            return self.backend.sum(self.manifest, self.schema, op, args, size)
        from dpcore.data.partitions import Damaged
        from dpcore.data.sequences.partitions import iter_partitions

        total = np.zeros(size, dtype=np.int64)
        try:
            for part in iter_partitions(self.manifest, self.schema):
                total += _count_block(part, op, args)
        except (Damaged, DataError) as e:
            # the requester sees this message: the exception's type only, never its text,
            # which names server paths
            raise CountingInterrupted(f"a partition of the dataset no longer reads or "
                                      f"matches its digest ({type(e).__name__}); the run "
                                      "stays charged: finish it once the dataset is intact"
                                      ) from None
        return total


class DaskCounting:
    """Count a dataset's partitions on a Dask cluster, one task per partition.

    Each task reads its own partition from the store (the workers must see the dataset's
    folder at the same path, and import this dpcore), checks its digests and returns that
    partition's count array; the client adds them up. A worker lost mid-count has its tasks
    run again on another worker (Dask's retries: the count is a pure function of the
    partition); if the cluster cannot give every partition's count,
    :class:`CountingInterrupted` is raised and the run stays charged.

    Parameters
    ----------
    client : distributed.Client
    """

    def __init__(self, client):
        self.client = client

    def sum(self, manifest, schema, op: str, args: tuple, size: int) -> np.ndarray:
        n_parts = len(manifest.partitions)
        try:
            futures = self.client.map(_count_partition, [manifest] * n_parts,
                                      [schema] * n_parts, range(n_parts),
                                      [op] * n_parts, [args] * n_parts, pure=False)
            total = np.zeros(size, dtype=np.int64)
            for counts in self.client.gather(futures):
                total += counts
        except Exception as e:  # noqa: BLE001 - any cluster failure: the run stays charged
            # type only: a worker's error text may name server paths or what its count read
            raise CountingInterrupted(f"the cluster did not count every partition "
                                      f"({type(e).__name__}); the run stays charged: "
                                      "finish it") from None
        return total


def record_counts(data: SequenceDataset, backend=None, *, whole: bool = False,
                  runs=None) -> _Counts:
    """The counter a run uses: per partition when ``data`` was read from its partitions and
    ``whole`` is False — on ``backend``, else the one the data carry, else in this process
    when the loader left the records on disk — the loaded records otherwise (``runs``:
    their occurrence runs, if built)."""
    from dpcore.data.sequences.partitions import PartitionedSequences

    if whole:
        return WholeCounts(data, runs)
    if isinstance(data, PartitionedSequences):
        backend = backend if backend is not None else data.count_backend
        if backend is None and data.in_memory:
            return WholeCounts(data, runs)     # read whole when loaded; same sums
        return PartitionCounts(data, backend)
    if backend is not None:
        raise DataError("per-partition counting needs a dataset read from its partitions")
    return WholeCounts(data)

