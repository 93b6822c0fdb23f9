"""Fixed-point grid: bounded reals as integers, so sums and second moments have integer
sensitivities and take integer (discrete Laplace) noise.

Strict mode never adds float Laplace noise to a real-valued statistic: the low-order bits of
a float Laplace sample can leak the exact value (Mironov 2012). Instead every encoded value
x ∈ [−1, 1] (see :mod:`dpcore.data.table.schema`) is rounded to the public grid
``v = round(x·L)`` with ``L = 2**(bits − 1)`` (``bits = 16``: L = 32768, 2¹⁶ + 1 points).
The rounding is a fixed function of one record's value, so it changes no sensitivity
argument: one record's contribution to a sum is |v| ≤ L, to a product v_a·v_b at most L².
Integer sums are exact (int64), the noise is integer, and the result is scaled back by 1/L
(sums) or 1/L² (second moments) as post-processing.

Quantisation error: at most 1/(2L) per value (1.5·10⁻⁵ for 16 bits), far below any noise.
"""

from __future__ import annotations

import numpy as np

from dpcore.errors import ParameterError

__all__ = ["DEFAULT_BITS", "MIN_BITS", "MAX_BITS", "half_range", "to_fixed",
           "exact_float_rows", "gram_upper"]

DEFAULT_BITS = 16
MIN_BITS, MAX_BITS = 4, 20


def half_range(bits: int) -> int:
    """L = 2**(bits − 1): encoded 1.0 maps to L, −1.0 to −L."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not MIN_BITS <= bits <= MAX_BITS:
        raise ParameterError(f"fixed_point_bits must be an integer in [{MIN_BITS}, {MAX_BITS}]; "
                             f"got {bits!r}")
    return 1 << (bits - 1)


def to_fixed(encoded: np.ndarray, bits: int = DEFAULT_BITS) -> np.ndarray:
    """Encoded values in [−1, 1] → int64 grid values in [−L, L] (round half to even)."""
    scale = half_range(bits)
    return np.rint(np.clip(encoded, -1.0, 1.0) * scale).astype(np.int64)


def exact_float_rows(bits: int) -> int:
    """Most rows whose products v_a·v_b (|v| ≤ L) a float64 matrix product sums exactly.

    Every partial sum is an integer of absolute value ≤ rows·L², exact in float64 while it
    stays below 2⁵³ whatever order BLAS adds in.
    """
    return (1 << 53) // (half_range(bits) ** 2)


def gram_upper(values: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], bits: int
               ) -> np.ndarray:
    """Σ_rows v_a·v_b for the column pairs ``pairs`` (int64, exact).

    ``values`` is int64[rows, D] on the grid of ``bits``. Uses a float64 matrix product when
    it is exact (see :func:`exact_float_rows`), else int64 arithmetic.
    """
    rows = values.shape[0]
    if rows == 0:
        return np.zeros(pairs[0].shape[0], dtype=np.int64)
    if rows <= exact_float_rows(bits):
        f = values.astype(np.float64)
        gram = f.T @ f
        return np.rint(gram[pairs]).astype(np.int64)
    if rows >= (1 << 62) // (half_range(bits) ** 2):
        raise ParameterError(f"{rows} rows are too many for exact int64 second moments at "
                             f"{bits} fixed-point bits; lower fixed_point_bits")
    gram = values.T @ values  # int64 (slow but exact: |Σ| ≤ rows·L² < 2⁶²)
    return gram[pairs].astype(np.int64)
