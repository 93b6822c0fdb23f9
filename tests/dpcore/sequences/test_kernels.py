"""Sequence kernels against the plain-Python references of tests/support/sequences_reference.py:
containment, support counting (both counters), candidate generation and the trie,
consecutive-pattern compression, reconstruction, shrinking (every record ≤ lmax; its
lossless steps lossless) and the prefix-projected search (exact mining, existence)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpcore.data.sequences.dataset import SequenceDataset, csr_from_lists
from dpcore.data.sequences.loading import load_sequence_dataset
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.sequences import kernels as K
from dpcore.sequences.candidates import (
    build_candidate_trie,
    generate_candidates,
    one_item_candidates,
)
from dpcore.sequences.evaluate import exact_frequent_sequences, true_supports
from dpcore.sequences.shrinking import candidate_supports, shrink_records
from tests.support import sequences_reference as ref

N_ITEMS = 5
records_st = st.lists(st.lists(st.integers(0, N_ITEMS - 1), min_size=0, max_size=12),
                      min_size=1, max_size=25)


def _arr(x):
    return np.asarray(x, dtype=np.int32)


def _dataset(records, n_items=N_ITEMS):
    schema = SequenceSchema("t", tuple(f"i{j}" for j in range(n_items)), l1=8)
    return SequenceDataset.from_lists(schema, records)


def _random_candidates(rng, k, n, n_items=N_ITEMS):
    return {tuple(int(x) for x in rng.integers(0, n_items, size=k)) for _ in range(n)}


# --------------------------------------------------------------------------- containment

@settings(max_examples=200, deadline=None)
@given(record=st.lists(st.integers(0, 3), max_size=10), seq=st.lists(st.integers(0, 3),
                                                                     max_size=4))
def test_containment_equals_reference(record, seq):
    assert K.is_subsequence(_arr(record), _arr(seq)) == ref.is_subsequence(seq, record)


def test_record_contains_reads_the_right_record():
    indptr, items = csr_from_lists([[0, 1, 2], [2, 1, 0], [1]])
    assert K.record_contains(indptr, items, 0, _arr([0, 2]))
    assert not K.record_contains(indptr, items, 1, _arr([0, 2]))
    assert K.record_contains(indptr, items, 2, _arr([]))


# --------------------------------------------------------------------------- supports

@settings(max_examples=60, deadline=None)
@given(records=records_st, k=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_both_support_counters_equal_reference(records, k, seed):
    cands = _random_candidates(np.random.default_rng(seed), k, 30)
    trie = build_candidate_trie(cands, k)
    indptr, items = csr_from_lists(records)
    expected = ref.supports(records, trie.patterns())
    by_scan = K.count_supports(indptr, items, N_ITEMS, trie.node_item, trie.child_start,
                               trie.child_end, trie.leaf_cand, k, trie.n_cand)
    by_runs = candidate_supports(indptr, items, N_ITEMS, trie)
    assert dict(zip(trie.patterns(), by_scan.tolist())) == expected
    assert dict(zip(trie.patterns(), by_runs.tolist())) == expected


def test_supports_on_a_large_alphabet_and_long_records():
    rng = np.random.default_rng(5)
    records = [rng.integers(0, 3000, size=rng.integers(1, 300)).tolist() for _ in range(60)]
    records += [[7] * 2000, [7, 8] * 500]
    cands = {(7,), (8,), (7, 8), (8, 7), (7, 7, 7)} | _random_candidates(rng, 2, 200, 3000) \
        | {(int(x),) for x in rng.integers(0, 3000, size=2500)}
    for k in (1, 2, 3):
        group = [c for c in cands if len(c) == k]
        trie = build_candidate_trie(group, k)
        indptr, items = csr_from_lists(records)
        expected = ref.supports(records, trie.patterns())
        got = candidate_supports(indptr, items, 3000, trie)
        assert dict(zip(trie.patterns(), got.tolist())) == expected
        # the scanning counter walks the record's items, not the trie's 3000-odd children
        scan = K.count_supports(indptr, items, 3000, trie.node_item, trie.child_start,
                                trie.child_end, trie.leaf_cand, k, trie.n_cand)
        assert dict(zip(trie.patterns(), scan.tolist())) == expected
        short = [r[:40] for r in records[:20]]
        new_indptr, new_items, _ = shrink_records(*csr_from_lists(short), 3000, trie, 8)
        assert [new_items[new_indptr[i]:new_indptr[i + 1]].tolist() for i in range(20)] == [
            ref.shrink(r, trie.patterns(), k, 8) for r in short]


def test_contained_candidates_lists_exactly_the_contained_ones():
    cands = [(0, 1), (1, 0), (1, 1), (2, 2), (0, 2)]
    trie = build_candidate_trie(cands, 2)
    got = K.contained_candidates(_arr([1, 0, 2, 1]), 3, trie.node_item, trie.child_start,
                                 trie.child_end, trie.leaf_cand, 2)
    assert {trie.patterns()[i] for i in got} == {(0, 1), (1, 0), (1, 1), (0, 2)}


def test_true_supports_of_mixed_lengths():
    records = [[0, 1, 2], [2, 1, 0], [0, 0]]
    got = true_supports(_dataset(records, 3), [(0,), (0, 1), (0, 0), (2, 1, 0)])
    assert got == {(0,): 3, (0, 1): 1, (0, 0): 1, (2, 1, 0): 1}


# --------------------------------------------------------------------------- candidates

def test_fifteen_frequent_items_give_225_candidate_2_sequences():
    cands = generate_candidates([(i,) for i in range(15)], 2)
    assert cands.shape == (225, 2)
    assert len({tuple(c) for c in cands.tolist()}) == 225


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(3, 5), n=st.integers(1, 40))
def test_gsp_join_and_pruning_equal_reference(seed, k, n):
    frequent = _random_candidates(np.random.default_rng(seed), k - 1, n, 3)
    got = {tuple(c) for c in generate_candidates(frequent, k).tolist()}
    assert got == ref.gsp_candidates(frequent, k)


def test_trie_structure():
    cands = [(2, 1), (0, 1), (0, 0), (2, 2), (0, 1)]
    trie = build_candidate_trie(cands, 2)
    assert trie.patterns() == [(0, 0), (0, 1), (2, 1), (2, 2)]
    root_children = range(trie.child_start[0], trie.child_end[0])
    assert [trie.node_item[c] for c in root_children] == [0, 2]
    for cid, leaf in enumerate(trie.cand_leaf):
        assert trie.leaf_cand[leaf] == cid
        assert trie.node_item[leaf] == trie.cands[cid, 1]
        assert trie.node_item[trie.node_parent[leaf]] == trie.cands[cid, 0]
    empty = build_candidate_trie([], 3)
    assert empty.n_cand == 0 and candidate_supports(*csr_from_lists([[0]]), 1, empty).size == 0
    assert one_item_candidates([3, 1, 3]).tolist() == [[1], [3]]


# --------------------------------------------------------------------------- shrinking

@settings(max_examples=200, deadline=None)
@given(seq=st.lists(st.integers(0, 2), max_size=30), period=st.integers(1, 3),
       k=st.integers(1, 4))
def test_compression_equals_reference_and_is_lossless(seq, period, k):
    got = K.compress_consecutive(_arr(seq), period, k).tolist()
    assert got == ref.compress(seq, period, k)
    if len(seq) <= 14:
        before = {s for s in ref.all_subsequences(seq, k) if len(s) == k}
        after = {s for s in ref.all_subsequences(got, k) if len(s) == k}
        assert before == after


@settings(max_examples=150, deadline=None)
@given(seq=st.lists(st.integers(0, N_ITEMS - 1), min_size=1, max_size=25),
       k=st.integers(1, 4), lmax=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_reconstruction_equals_reference(seq, k, lmax, seed):
    cands = _random_candidates(np.random.default_rng(seed), k, 25)
    trie = build_candidate_trie(cands, k)
    got = K.reconstruct_record(_arr(seq), k, lmax, trie.cands, trie.node_item,
                               trie.child_start, trie.child_end, trie.node_parent,
                               trie.leaf_cand, trie.cand_leaf, N_ITEMS).tolist()
    assert got == ref.reconstruct(seq, trie.patterns(), k, lmax)
    assert len(got) <= lmax + k - 1


@settings(max_examples=60, deadline=None)
@given(records=records_st, k=st.integers(1, 4), lmax=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1), truncate=st.booleans())
# Untruncated, Algorithm 2 rebuilt this 8-item record into 9 items and the kernel wrote the
# ninth past its output array (found by this test in a full run; fixed by sizing the array).
@example(records=[[0, 0, 0, 1, 1, 2, 1, 2]], k=3, lmax=7, seed=3, truncate=False)
def test_shrinking_equals_reference_and_keeps_every_record_within_lmax(records, k, lmax,
                                                                       seed, truncate):
    cands = _random_candidates(np.random.default_rng(seed), k, 20)
    trie = build_candidate_trie(cands, k)
    indptr, items = csr_from_lists(records)
    new_indptr, new_items, stats = shrink_records(indptr, items, N_ITEMS, trie, lmax,
                                                  truncate=truncate)
    got = [new_items[new_indptr[r]:new_indptr[r + 1]].tolist() for r in range(len(records))]
    assert got == [ref.shrink(r, trie.patterns(), k, lmax, truncate) for r in records]
    if truncate:
        assert max(map(len, got)) <= lmax
    assert stats.long_records == sum(len(r) > lmax for r in records)
    assert stats.items_removed == sum(map(len, records)) - sum(map(len, got))


@settings(max_examples=60, deadline=None)
@given(records=records_st, k=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_the_lossless_steps_keep_every_contained_candidate(records, k, seed):
    """With lmax large enough that no record is rebuilt, the supports do not change."""
    cands = _random_candidates(np.random.default_rng(seed), k, 20)
    trie = build_candidate_trie(cands, k)
    indptr, items = csr_from_lists(records)
    lossless = [ref.shrink(r, trie.patterns(), k, 10**6) for r in records]
    # deletion and compression only (what shrink does before rebuilding)
    relevant = {x for c in trie.patterns() for x in c}
    steps = []
    for r in records:
        r = [x for x in r if x in relevant]
        for period in (1, 2, 3):
            r = ref.compress(r, period, k)
        steps.append(r)
    assert ref.supports(steps, trie.patterns()) == ref.supports(records, trie.patterns())
    assert lossless == records  # nothing is longer than lmax: kept as is
    # the kernel with lmax = 1 (everything rebuilt) still keeps lengths ≤ 1
    new_indptr, _, stats = shrink_records(indptr, items, N_ITEMS, trie, 1)
    assert np.diff(new_indptr).max(initial=0) <= 1


def test_shrinking_a_long_repetitive_record_is_lossless_by_compression():
    record = [0, 1] * 40 + [2] * 50
    trie = build_candidate_trie(generate_candidates([(0,), (1,), (2,)], 2), 2)
    indptr, items = csr_from_lists([record])
    new_indptr, new_items, stats = shrink_records(indptr, items, 3, trie, 8)
    assert new_items.tolist() == [0, 1, 0, 1, 2, 2] and stats.rebuilt_records == 0


# --------------------------------------------------------------------------- prefix search

@settings(max_examples=60, deadline=None)
@given(records=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=7), min_size=1,
                        max_size=20), min_support=st.integers(1, 5))
def test_exact_mining_equals_brute_force(records, min_support):
    got = exact_frequent_sequences(_dataset(records, 4), min_support=min_support)
    assert got == ref.frequent_sequences(records, min_support)
    capped = exact_frequent_sequences(_dataset(records, 4), min_support=min_support,
                                      max_length=2)
    assert capped == {p: c for p, c in got.items() if len(p) <= 2}


@settings(max_examples=60, deadline=None)
@given(records=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=7), min_size=1,
                        max_size=20), min_support=st.integers(1, 5), length=st.integers(1, 6))
def test_existence_search_equals_brute_force(records, min_support, length):
    ds = _dataset(records, 4)
    runs = K.build_occurrence_runs(ds.indptr, ds.items, 4)
    found, ptr, items, sup = K.prefix_search(ds.indptr, *runs, 4, min_support, length, length)
    truth = any(len(p) == length for p in ref.frequent_sequences(records, min_support))
    assert found == truth and sup.size == 0


@settings(max_examples=80, deadline=None)
@given(records=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=8), min_size=1,
                        max_size=20), min_support=st.integers(1, 6), max_length=st.integers(1, 8))
def test_max_supports_by_length_equal_brute_force(records, min_support, max_length):
    ds = _dataset(records, 4)
    runs = K.build_occurrence_runs(ds.indptr, ds.items, 4)
    got = K.max_supports_by_length(ds.indptr, *runs, 4, min_support, max_length)
    every = ref.frequent_sequences(records, 1, max_length)
    beta = [max([c for p, c in every.items() if len(p) == y], default=0)
            for y in range(max_length + 1)]
    assert got[1:].tolist() == [b if b >= min_support else 0 for b in beta[1:]]


def test_occurrence_runs_hold_every_position_once():
    records = [[3, 1, 3, 0], [2], [1, 1, 1]]
    run_ptr, run_item, run_bound, run_pos = K.build_occurrence_runs(*csr_from_lists(records), 4)
    got = []
    for r in range(3):
        got.append({int(run_item[j]): run_pos[run_bound[j]:run_bound[j + 1]].tolist()
                    for j in range(run_ptr[r], run_ptr[r + 1])})
        assert list(got[-1]) == sorted(got[-1])
    assert got == [{0: [3], 1: [1], 3: [0, 2]}, {2: [0]}, {1: [0, 1, 2]}]


def test_exact_mining_equals_prefixspan_on_the_sample_data():
    prefixspan = pytest.importorskip("prefixspan")
    ds = load_sequence_dataset(Path(__file__).resolve().parents[3] / "sample_data"
                               / "clickstream")
    ours = exact_frequent_sequences(ds, min_support=300)
    theirs = {tuple(p): s for s, p in prefixspan.PrefixSpan(ds.to_lists()).frequent(300)}
    assert ours == theirs and len(ours) > 20
