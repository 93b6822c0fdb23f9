"""bench/numpy_reference.py is the same chain as the numba kernels: its naive option counts
and Hastings proposal ratio equal the kernels' on random moves of random trees."""

from __future__ import annotations

import numpy as np
import pytest

from bench import numpy_reference as ref
from dpcore.redescriptions import kernels as K
from dpcore.redescriptions.coding import code_view_strict
from dpcore.redescriptions.trees import cands_matrix
from tests.support import reference as R

DEPTH = 3


@pytest.mark.parametrize("view", [0, 1])
def test_proposal_ratio_and_option_counts_match_the_kernels(view):
    rng = R.make_rng("numpy-reference", view)
    ds = R.random_dataset(300, rng)
    coded = code_view_strict(ds.schema, ds.views[view])
    cands, f = cands_matrix(coded), coded.fanout
    depth_of = K.node_depths(f, DEPTH)
    arrays = ref.CodedArrays(coded, DEPTH)
    work = K.hastings_workspace(cands)
    no_tree = np.full((4, 1), K.ABSENT, dtype=np.int64)
    y = R.random_classes(coded.codes.shape[1], 3, rng)
    no_perm, no_codes = np.empty(1, dtype=np.int64), np.zeros((1, 1), dtype=np.uint16)
    changed_children = 0
    for _ in range(40):
        nodes = R.grow_random_tree(coded, y, DEPTH, rng)[0]
        for u in np.flatnonzero(nodes[K.SPLIT] != K.ABSENT):
            assert (len(ref._growth_options(arrays, nodes[K.SPLIT], u))
                    == K.growth_options(u, nodes, cands, f, work))
        for _move in range(10):
            h, s = K.propose_move(nodes, cands, f, rng)
            if h < 0:
                continue
            assert (len(ref._move_options(arrays, nodes[K.SPLIT].copy(), h))
                    == K.move_options(h, nodes, cands, f, work))
            saved = np.empty_like(nodes)
            K.apply_move(h, s, nodes, saved, cands, f, depth_of, DEPTH, rng, False, no_perm,
                         no_codes, y, 0)
            kernel = K.log_proposal_ratio(h, saved, nodes, no_tree, cands, f, depth_of, DEPTH,
                                          True, work)
            naive = ref.log_proposal_ratio(arrays, saved[K.SPLIT], nodes[K.SPLIT], h, 0)
            assert naive == pytest.approx(kernel, rel=1e-12, abs=1e-12)
            changed_children += cands[K.NCHILD, s] != cands[K.NCHILD, saved[K.SPLIT, h]]
    assert changed_children >= 20, "too few moves changed a node's child count to test"
