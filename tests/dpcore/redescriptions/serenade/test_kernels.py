"""dpcore.redescriptions.serenade.kernels: log-sum-exp, cumulative code counts, row cells and
the scores of literal pairs, against plain NumPy on the literal masks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from dpcore.redescriptions.coding import code_dataset_strict
from dpcore.redescriptions.serenade.kernels import (
    MISSING,
    code_counts,
    log_sum_exp,
    pair_scores,
    row_cells,
)
from dpcore.redescriptions.serenade.literals import literal_mask, literal_set
from dpcore.redescriptions.serenade.quality import quality
from dpcore.redescriptions.warmup import tiny_dataset


def test_log_sum_exp_skips_minus_infinity():
    scores = np.array([0.3, -np.inf, 2.0, -1.0])
    assert log_sum_exp(scores, 3.0) == pytest.approx(logsumexp(3.0 * scores[[0, 2, 3]]))
    assert log_sum_exp(np.array([-np.inf, -np.inf]), 1.0) == -np.inf
    assert log_sum_exp(np.array([1000.0, 1000.0]), 1.0) == pytest.approx(1000 + np.log(2))


def test_code_counts_are_cumulative_and_skip_missing():
    codes = np.array([0, 2, 2, MISSING, 1, 2], dtype=np.uint16)
    assert code_counts(codes, 3).tolist() == [0, 1, 2, 5]


def test_row_cells():
    left = np.array([1, 1, 0, 0, 1], dtype=np.bool_)
    right = np.array([1, 0, 1, 0, 1], dtype=np.bool_)
    cells, sizes = row_cells(left, right)
    assert cells.tolist() == [3, 2, 1, 0, 3] and sizes.tolist() == [1, 1, 1, 2]


def test_pair_scores_match_the_literal_masks():
    data = tiny_dataset(n_rows=160, seed=6)
    data.views[1].values[1, :3] = np.nan
    left, right = code_dataset_strict(data)
    lits_l, lits_r = literal_set(left), literal_set(right)
    a, b = 2, 1                                       # x1 (left) × x2 (right)
    ka = np.flatnonzero(lits_l.attr == a)
    kb = np.flatnonzero(lits_r.attr == b)
    out = np.empty(ka.size * kb.size)
    steepness, x0 = 0.2, 16.0
    pair_scores(left.codes[a], int(left.n_codes[a]), lits_l.lo[ka], lits_l.hi[ka],
                right.codes[b], int(right.n_codes[b]), lits_r.lo[kb], lits_r.hi[kb],
                steepness, x0, out)
    expected = []
    for i in ka:
        ml = literal_mask(left, lits_l, int(i))
        for j in kb:
            mr = literal_mask(right, lits_r, int(j))
            expected.append(quality(int((ml & mr).sum()), int((ml | mr).sum()), steepness, x0))
    assert np.allclose(out, expected)
