"""dpcore.synthesis.fixedpoint: bounded reals as integers, and exact second moments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpcore.errors import ParameterError
from dpcore.synthesis.fixedpoint import (
    MAX_BITS,
    MIN_BITS,
    exact_float_rows,
    gram_upper,
    half_range,
    to_fixed,
)


def test_half_range_and_its_refusals():
    assert half_range(16) == 2**15 and half_range(MIN_BITS) == 8
    for bad in (MIN_BITS - 1, MAX_BITS + 1, 8.0, True, "16"):
        with pytest.raises(ParameterError, match="fixed_point_bits"):
            half_range(bad)


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(hnp.arrays(np.float64, st.integers(0, 30), elements=st.floats(-3, 3)),
       st.integers(MIN_BITS, MAX_BITS))
def test_to_fixed_is_clipped_and_within_half_a_step(values, bits):
    fixed = to_fixed(values, bits)
    scale = half_range(bits)
    assert fixed.dtype == np.int64 and np.all(np.abs(fixed) <= scale)
    assert np.all(np.abs(fixed / scale - np.clip(values, -1, 1)) <= 0.5 / scale + 1e-15)


def test_ends_map_to_the_ends():
    assert to_fixed(np.array([-1.0, 0.0, 1.0]), 8).tolist() == [-128, 0, 128]


@settings(deadline=None)  # timing is not under test (a loaded CI machine)
@given(st.integers(MIN_BITS, MAX_BITS))
def test_exact_float_rows_keeps_every_partial_sum_below_2_53(bits):
    rows = exact_float_rows(bits)
    assert rows * half_range(bits) ** 2 <= 2**53 < (rows + 1) * half_range(bits) ** 2


@pytest.mark.parametrize("bits, rows", [(8, 50), (20, 9000)])
def test_gram_upper_is_exact_on_both_paths(bits, rows):
    rng = np.random.default_rng(bits)
    scale = half_range(bits)
    values = rng.integers(-scale, scale + 1, size=(rows, 3)).astype(np.int64)
    pairs = np.triu_indices(3)
    expected = [sum(int(v[a]) * int(v[b]) for v in values) for a, b in zip(*pairs, strict=True)]
    assert gram_upper(values, pairs, bits).tolist() == expected
    assert gram_upper(values[:0], pairs, bits).tolist() == [0] * 6
