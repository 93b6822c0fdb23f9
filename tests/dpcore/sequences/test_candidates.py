"""dpcore.sequences.candidates: GSP candidate generation (against a plain-Python join and
prune) and the candidate trie."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.errors import ParameterError
from dpcore.sequences.candidates import (
    build_candidate_trie,
    candidates_as_array,
    generate_candidates,
    one_item_candidates,
)
from tests.support import sequences_reference as ref


@settings(deadline=None, max_examples=60)
@given(st.integers(2, 4), st.data())
def test_generation_equals_the_reference_join_and_prune(k, data):
    pool = list(itertools.product(range(3), repeat=k - 1))
    frequent = data.draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
    out = generate_candidates(frequent, k)
    assert out.dtype == np.int32 and out.shape[1] == k
    got = [tuple(int(x) for x in row) for row in out]
    assert got == sorted(ref.gsp_candidates(set(frequent), k))


def test_generation_refuses_bad_levels():
    with pytest.raises(ParameterError, match="length ≥ 2"):
        generate_candidates([(0,)], 1)
    with pytest.raises(ParameterError, match="must have length 2"):
        generate_candidates([(0, 1), (1,)], 3)
    assert generate_candidates([], 3).shape == (0, 3)


def test_one_item_candidates_are_sorted_and_distinct():
    assert one_item_candidates([3, 1, 3, 0]).tolist() == [[0], [1], [3]]


def test_the_trie_holds_every_candidate_once_in_order():
    cands = [(1, 2, 0), (0, 1, 1), (1, 2, 0), (0, 1, 2), (2, 0, 0)]
    trie = build_candidate_trie(cands, 3)
    assert trie.k == 3 and trie.n_cand == 4
    assert trie.patterns() == sorted(set(cands))
    for c, leaf in enumerate(trie.cand_leaf):
        assert trie.leaf_cand[leaf] == c
        path, node = [], leaf                              # walk up to the root
        while trie.node_parent[node] >= 0:
            path.append(int(trie.node_item[node]))
            node = trie.node_parent[node]
        assert tuple(reversed(path)) == trie.patterns()[c]
    assert candidates_as_array(cands, 3).flags.c_contiguous
