"""Noisy cell statistics (integer, discrete Laplace) and the Gaussian cell models built from them.

Strict MC-GEN-DP (docs/ALGORITHMS.md §9) releases, for one feature group and every
(class, cell) — the cells of all classes together partition the records, each record lies
in exactly one:

=================  ==========================================  ======================
release            value per cell                              L1 sensitivity Δ
=================  ==========================================  ======================
counts             N_c (records)                               1
sums               S_c = Σ v (D_m grid values)                 p_m·L
second moments     Q_c = Σ v_a·v_b, released pairs only        (C(p_m, 2) + n_num)·L²
=================  ==========================================  ======================

Neighbours add or remove one record (replace-one doubles every Δ). v are the record's
encoded values on the fixed-point grid (:mod:`dpcore.synthesis.fixedpoint`, |v| ≤ L); a
record has at most one non-zero encoded column per feature, so its sum vector has L1 norm
≤ p_m·L. The **released pairs** are all column pairs a ≤ b of the group except pairs inside
one categorical feature (their values are public functions of the sums: x_i·x_j = 0 for
i ≠ j and x_i² = x_i for one-hot columns, so nothing is released for them). A record's
released products are then at most one per pair of distinct features, C(p_m, 2), plus one
square per numeric feature, n_num, each ≤ L² in absolute value. Each vector is one discrete
Laplace release with ε the plan's share; the cells are disjoint, so the same ε covers all of
them (parallel composition).

Everything after the release is post-processing: means and covariances from the noisy
moments, shrinkage towards the class's pooled noisy moments, and **PSD repair by eigenvalue
clipping** (never by drawing the noise again, which would condition on a data-dependent
event: MC-GEN critique C9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.data.table.schema import TableSchema
from dpcore.privacy.mechanisms import discrete_laplace
from dpcore.synthesis.fixedpoint import gram_upper, half_range

__all__ = ["GroupLayout", "group_layout", "cell_sufficient_statistics",
           "release_cell_statistics", "NoisyCellStatistics", "GaussianCells",
           "gaussian_cells", "prior_moments", "clip_eigenvalues", "sample_gaussians"]


@dataclass(frozen=True)
class GroupLayout:
    """The public structure of a feature group's encoded columns.

    Attributes
    ----------
    features : tuple of int
        Schema feature indices, in schema order.
    columns : numpy.ndarray of int64
        The group's encoded columns (indices into the schema's encoding), in order.
    numeric : numpy.ndarray of bool
        Per group column: numeric (True) or one-hot.
    owner : numpy.ndarray of int64
        Per group column: the position of its feature within ``features``.
    widths : tuple of int
        Encoded columns per feature.
    pairs : tuple of numpy.ndarray
        The released second-moment pairs (a, b), a ≤ b, local column indices.
    """

    features: tuple[int, ...]
    columns: np.ndarray
    numeric: np.ndarray
    owner: np.ndarray
    widths: tuple[int, ...]
    pairs: tuple[np.ndarray, np.ndarray]

    @property
    def p(self) -> int:
        """p_m: features in the group."""
        return len(self.features)

    @property
    def width(self) -> int:
        """D_m: encoded columns in the group."""
        return int(self.columns.shape[0])

    @property
    def n_numeric(self) -> int:
        """Numeric features in the group (each one encoded column)."""
        return int(np.count_nonzero(self.numeric))

    def sum_sensitivity(self, bits: int) -> int:
        """Δ of the sums: p_m·L."""
        return self.p * half_range(bits)

    def moment_sensitivity(self, bits: int) -> int:
        """Δ of the released second moments: (C(p_m, 2) + n_num)·L²."""
        return (self.p * (self.p - 1) // 2 + self.n_numeric) * half_range(bits) ** 2


def group_layout(schema: TableSchema, features) -> GroupLayout:
    """The layout of the group made of schema features ``features`` (indices, any order)."""
    feats = tuple(sorted(int(f) for f in features))
    columns, numeric, owner, widths = [], [], [], []
    for pos, f in enumerate(feats):
        cols = schema.columns_of(f)
        columns += list(cols)
        numeric += [schema.features[f].is_numeric] * len(cols)
        owner += [pos] * len(cols)
        widths.append(len(cols))
    owner_a = np.asarray(owner, dtype=np.int64)
    numeric_a = np.asarray(numeric, dtype=bool)
    ia, ib = np.triu_indices(len(columns))
    keep = (owner_a[ia] != owner_a[ib]) | ((ia == ib) & numeric_a[ia])
    return GroupLayout(feats, np.asarray(columns, dtype=np.int64), numeric_a, owner_a,
                       tuple(widths), (ia[keep].astype(np.int64), ib[keep].astype(np.int64)))


def cell_sufficient_statistics(values: np.ndarray, cells: np.ndarray, n_cells: int,
                               layout: GroupLayout, bits: int
                               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True per-cell counts, sums and released second moments (exact int64; private).

    Parameters
    ----------
    values : numpy.ndarray of int64, shape (n, D_m)
        The group's encoded columns on the fixed-point grid.
    cells : numpy.ndarray of int, shape (n,)
        Each record's cell in 0..n_cells−1.
    n_cells : int
    layout : GroupLayout
    bits : int
        Fixed-point bits of ``values``.

    Returns
    -------
    counts : int64[n_cells]
    sums : int64[n_cells, D_m]
    moments : int64[n_cells, len(layout.pairs[0])]
    """
    cells = np.asarray(cells, dtype=np.int64)
    counts = np.bincount(cells, minlength=n_cells).astype(np.int64)
    d = values.shape[1]
    sums = np.zeros((n_cells, d), dtype=np.int64)
    moments = np.zeros((n_cells, layout.pairs[0].shape[0]), dtype=np.int64)
    if values.shape[0] == 0:
        return counts, sums, moments
    order = np.argsort(cells, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    sorted_values = values[order]
    for c in np.flatnonzero(counts):
        block = sorted_values[bounds[c]:bounds[c + 1]]
        sums[c] = block.sum(axis=0)
        moments[c] = gram_upper(block, layout.pairs, bits)
    return counts, sums, moments


@dataclass
class NoisyCellStatistics:
    """One group's released cell statistics (a DP release), integer grid units.

    ``counts`` int64[K]; ``sums`` int64[K, D_m] (÷L for encoded units); ``moments``
    int64[K, pairs] (÷L²).
    """

    counts: np.ndarray
    sums: np.ndarray
    moments: np.ndarray


def release_cell_statistics(counts, sums, moments, *, layout: GroupLayout, bits: int,
                            epsilon_nano: tuple, rng, accountant, label: str,
                            parallel: int = 1, known_counts=None) -> NoisyCellStatistics:
    """Release noisy counts, sums and second moments of disjoint cells (ε-DP calls).

    Each call goes through :func:`dpcore.privacy.mechanisms.discrete_laplace`, which charges the
    accountant before drawing: counts with Δ = 1, sums with Δ = p_m·L, second moments with
    Δ = (C(p_m, 2) + n_num)·L² (see the module docstring). ``epsilon_nano`` is the
    (counts, sums, moments) split in nano-ε; their sum is the group's ε. ``parallel`` is the
    number of disjoint cells covered (recorded only).

    ``known_counts``: counts that are already DP releases (a single cell per class holds the
    class's records, whose noisy count N̂_y was released before). Then no count release is
    made, ``epsilon_nano`` is (None, sums, moments), and the result carries ``known_counts``.
    A group without released pairs (one categorical feature) takes ``None`` for the moments.
    A histogram group takes (counts, None, None): only its cell counts are released (the
    returned sums and moments are zeros, never used).
    """
    e_counts, e_sums, e_moments = epsilon_nano
    if known_counts is None:
        noisy_counts = discrete_laplace(counts, sensitivity=1, epsilon_nano=int(e_counts),
                                        rng=rng, accountant=accountant,
                                        label=f"{label}: cell counts", parallel=parallel)
    else:
        noisy_counts = np.asarray(known_counts, dtype=np.int64).copy()
    if e_sums is None:  # a histogram group: counts only
        if known_counts is not None or e_moments is not None:
            raise ValueError("a counts-only release needs its own counts and no moments")
        return NoisyCellStatistics(noisy_counts, np.zeros_like(sums),
                                   np.zeros((sums.shape[0], 0), dtype=np.int64))
    noisy_sums = discrete_laplace(sums, sensitivity=layout.sum_sensitivity(bits),
                                  epsilon_nano=int(e_sums), rng=rng, accountant=accountant,
                                  label=f"{label}: cell sums (fixed point, L = "
                                        f"{half_range(bits)})", parallel=parallel)
    if e_moments is None:  # a single categorical feature: nothing to release
        if layout.pairs[0].shape[0]:
            raise ValueError("second moments of this group need a budget")
        noisy_moments = np.zeros((noisy_sums.shape[0], 0), dtype=np.int64)
    else:
        noisy_moments = discrete_laplace(
            moments, sensitivity=layout.moment_sensitivity(bits), epsilon_nano=int(e_moments),
            rng=rng, accountant=accountant, label=f"{label}: cell second moments (fixed "
                                                  f"point, L² = {half_range(bits) ** 2})",
            parallel=parallel)
    return NoisyCellStatistics(noisy_counts, noisy_sums, noisy_moments)


# ----------------------------------------------------------------------------- post-processing

def prior_moments(layout: GroupLayout) -> tuple[np.ndarray, np.ndarray]:
    """Mean and second-moment matrix of the uniform distribution on the group's box.

    Numeric columns: uniform on [−1, 1] (mean 0, E[x²] = 1/3); a categorical feature: each of
    its q levels with probability 1/q; features independent. Public (no data).
    """
    d = layout.width
    mu = np.zeros(d)
    for pos, w in enumerate(layout.widths):
        cols = layout.owner == pos
        if not layout.numeric[cols][0]:
            mu[cols] = 1.0 / w
    second = np.outer(mu, mu)
    for pos in range(layout.p):
        cols = np.flatnonzero(layout.owner == pos)
        second[np.ix_(cols, cols)] = 0.0
        if layout.numeric[cols[0]]:
            second[cols[0], cols[0]] = 1.0 / 3.0
        else:
            second[cols, cols] = mu[cols]
    return mu, second


def _second_moment_matrices(sums: np.ndarray, moments: np.ndarray, layout: GroupLayout
                            ) -> np.ndarray:
    """Full Σ x·xᵀ matrices (K, D, D) from released pairs; one-hot pairs from the sums."""
    k, d = sums.shape
    out = np.zeros((k, d, d))
    ia, ib = layout.pairs
    out[:, ia, ib] = moments
    out[:, ib, ia] = moments
    onehot = np.flatnonzero(~layout.numeric)
    out[:, onehot, onehot] = sums[:, onehot]
    return out


def clip_eigenvalues(cov: np.ndarray, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """PSD repair: eigenvalues of symmetric matrices (…, D, D) clipped to [low, high].

    Returns the repaired matrices and their sampling factors F = V·diag(√λ) (x = μ + F·z).
    """
    sym = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    lam, vec = np.linalg.eigh(sym)
    lam = np.clip(lam, low, high)
    factor = vec * np.sqrt(lam)[..., None, :]
    repaired = (vec * lam[..., None, :]) @ np.swapaxes(vec, -1, -2)
    return repaired, factor


@dataclass
class GaussianCells:
    """Gaussian models of one (class, group): post-processing of DP statistics.

    Attributes
    ----------
    weights : float64[K]
        max(N̂_c, 0): how often a synthetic record picks cell c.
    means : float64[K, D_m]
        Encoded units (numeric in [−1, 1], one-hot in [0, 1]).
    covariances : float64[K, D_m, D_m]
        PSD-repaired, eigenvalues in [min_eigenvalue, p_m].
    factors : float64[K, D_m, D_m]
        Sampling factors F with F·Fᵀ = covariance.
    """

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    factors: np.ndarray


def gaussian_cells(noisy: NoisyCellStatistics, layout: GroupLayout, bits: int, *,
                   shrinkage: float, min_eigenvalue: float) -> GaussianCells:
    """Means and covariances of each cell from its noisy moments (post-processing only).

    With n_c = max(N̂_c, 0) and w = ``shrinkage`` pseudo-records:

    * pooled (the class over all its cells): μ_p = (Σ_c S_c + w·μ₀)/(Σ_c n_c + w), likewise
      the second moments, with μ₀ the uniform prior of :func:`prior_moments` (used alone
      when nothing else is available);
    * each cell: μ_c = (S_c + w·μ_p)/(n_c + w), M_c = (Q_c + w·M_p)/(n_c + w),
      Σ_c = M_c − μ_c·μ_cᵀ (the pooled model alone when n_c + w = 0);
    * means clipped to the box; covariances repaired by :func:`clip_eigenvalues` to
      [min_eigenvalue, p_m] (no feature varies by more than 1 on [−1, 1], so the trace, and
      with it every eigenvalue, is at most p_m).
    """
    scale = float(half_range(bits))
    counts = noisy.counts.astype(np.float64)
    sums = noisy.sums.astype(np.float64) / scale
    second = _second_moment_matrices(noisy.sums.astype(np.float64) / scale,
                                      noisy.moments.astype(np.float64) / scale ** 2, layout)
    n_pos = np.maximum(counts, 0.0)
    mu0, m0 = prior_moments(layout)
    w = float(shrinkage)
    # Pooled: cells with a non-positive noisy count still contribute their (noisy) moments.
    total = float(n_pos.sum())
    w_prior = w if w > 0 else (0.0 if total > 0 else 1.0)
    mu_p = (sums.sum(axis=0) + w_prior * mu0) / (total + w_prior)
    m_p = (second.sum(axis=0) + w_prior * m0) / (total + w_prior)
    denom = n_pos + w
    safe = denom > 0
    means = np.where(safe[:, None], (sums + w * mu_p) / np.where(safe, denom, 1.0)[:, None],
                     mu_p)
    moments = np.where(safe[:, None, None],
                       (second + w * m_p) / np.where(safe, denom, 1.0)[:, None, None], m_p)
    lo = np.where(layout.numeric, -1.0, 0.0)
    means = np.clip(means, lo, 1.0)
    cov = moments - means[:, :, None] * means[:, None, :]
    cov, factor = clip_eigenvalues(cov, float(min_eigenvalue), float(layout.p))
    return GaussianCells(n_pos, means, cov, factor)


def sample_gaussians(means: np.ndarray, factors: np.ndarray, choice: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
    """One draw from N(μ_c, F_c·F_cᵀ) per entry of ``choice`` (cell indices), float64[n, D]."""
    n, d = choice.shape[0], means.shape[1]
    out = np.empty((n, d))
    z = rng.standard_normal((n, d))
    for c in np.unique(choice):
        rows = choice == c
        out[rows] = means[c] + z[rows] @ factors[c].T
    return out
