"""dpcore.sequences.shrinking: shrunk records respect lmax (strict truncation), short ones
stay as they are, and the support counter agrees with a plain-Python count."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.data.sequences.dataset import csr_from_lists
from dpcore.sequences.candidates import build_candidate_trie, generate_candidates
from dpcore.sequences.shrinking import candidate_supports, relevant_items, shrink_records
from tests.support import sequences_reference as ref

N_ITEMS = 5
RECORDS = st.lists(st.lists(st.integers(0, N_ITEMS - 1), max_size=14), min_size=1, max_size=25)


def _records(indptr, items):
    return [items[indptr[r]:indptr[r + 1]].tolist() for r in range(indptr.size - 1)]


def _trie(k=2):
    frequent = [(0,), (1,), (3,)] if k == 2 else [(0, 1), (1, 3), (0, 3), (3, 1)]
    return build_candidate_trie(generate_candidates(frequent, k), k)


@settings(deadline=None, max_examples=25)
@given(RECORDS, st.integers(1, 6), st.sampled_from([2, 3]))
def test_shrunk_records_respect_lmax_and_keep_only_their_own_items(records, lmax, k):
    indptr, items = csr_from_lists(records)
    trie = _trie(k)
    new_indptr, new_items, stats = shrink_records(indptr, items, N_ITEMS, trie, lmax)
    shrunk = _records(new_indptr, new_items)
    assert len(shrunk) == len(records)
    for before, after in zip(records, shrunk, strict=True):
        assert len(after) <= lmax
        assert set(after) <= set(before)                    # rebuilt, never new items
        if len(before) <= lmax:
            assert after == before
    assert stats.long_records == sum(len(r) > lmax for r in records)


@settings(deadline=None, max_examples=25)
@given(RECORDS, st.sampled_from([2, 3]))
def test_candidate_supports_equal_a_plain_count(records, k):
    indptr, items = csr_from_lists(records)
    trie = _trie(k)
    supports = candidate_supports(indptr, items, N_ITEMS, trie)
    expected = ref.supports(records, trie.patterns())
    assert supports.tolist() == [expected[p] for p in trie.patterns()]


def test_relevant_items_are_those_in_some_candidate():
    trie = _trie(3)
    mask = relevant_items(trie, N_ITEMS)
    assert mask.dtype == np.bool_ and np.flatnonzero(mask).tolist() == [0, 1, 3]
