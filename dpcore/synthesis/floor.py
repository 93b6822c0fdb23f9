"""The floor: class-conditional independent noisy marginals (strict, ε-DP, integer noise).

1. **Class counts** N̂_y = N_y + discrete Laplace(1/ε_Y) (Δ = 1); class y gets
   max(round(N̂_y), 0) rows.
2. **One histogram per feature** over (class × bin): a numeric feature in ``marginal_bins``
   equal-width bins of its public bounds, a categorical one over its declared levels. Each
   record is in exactly one cell, so Δ = 1; the features share ε − ε_Y equally (sequential
   composition), and the classes are disjoint (parallel).
3. **Generation** (post-processing): every feature of every synthetic row is drawn
   independently from its class's noisy histogram (∝ max(count, 0); uniform over the bins if
   none is positive), a numeric value uniformly inside its bin.

It models no correlation between features beyond the label, so any method that models
correlations should beat it; the utility report shows it beside MC-GEN.
"""

from __future__ import annotations

import time

import numpy as np

from dpcore.data.table.table import SynthesisTable
from dpcore.privacy.mechanisms import discrete_laplace
from dpcore.synthesis.params import (
    CLASSES,
    COUNTS,
    HISTOGRAM,
    MARGINALS,
    SynthesisParams,
    mechanism_shares,
)

__all__ = ["feature_bins", "noisy_marginals", "run_floor"]


def _progress(progress, fraction: float, message: str) -> None:
    if progress is not None:
        progress(float(min(max(fraction, 0.0), 1.0)), message)


def feature_bins(table: SynthesisTable, feature: int, n_bins: int) -> tuple[np.ndarray, int]:
    """Each record's bin of ``feature`` and the number of bins (public bins, private values)."""
    schema = table.schema
    cols = schema.columns_of(feature)
    z = table.encoded()
    if schema.features[feature].is_numeric:
        x = z[:, cols.start]
        return np.clip(np.floor((x + 1.0) * 0.5 * n_bins), 0, n_bins - 1).astype(np.int64), \
            n_bins
    return np.argmax(z[:, cols.start:cols.stop], axis=1).astype(np.int64), len(cols)


def noisy_marginals(table: SynthesisTable, params: SynthesisParams, *, rng, accountant
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Release N̂_y and every feature's noisy class × bin histogram (int64 arrays)."""
    schema = table.schema
    shares = {(s.phase, s.index, s.part): s.epsilon_nano
              for s in mechanism_shares(params, [1] * schema.n_features)}
    n_hat = discrete_laplace(table.class_counts(), sensitivity=1,
                             epsilon_nano=shares[(CLASSES, 0, COUNTS)], rng=rng,
                             accountant=accountant,
                             label="N̂_y: records per class (label histogram)")
    hists = []
    c = schema.n_classes
    for j, f in enumerate(schema.features):
        bins, n_bins = feature_bins(table, j, params.marginal_bins)
        counts = np.bincount(table.labels.astype(np.int64) * n_bins + bins,
                             minlength=c * n_bins).reshape(c, n_bins)
        hists.append(discrete_laplace(counts, sensitivity=1,
                                      epsilon_nano=shares[(MARGINALS, j, HISTOGRAM)], rng=rng,
                                      accountant=accountant,
                                      label=f"class × bin histogram of {f.name}", parallel=c))
    return n_hat, hists


def run_floor(table: SynthesisTable, params: SynthesisParams, *, rng, accountant,
              progress=None, timings: dict | None = None, released: dict | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Release the noisy marginals and draw the synthetic records.

    ``released``, when given, receives the noisy class × bin histograms under
    ``"histograms"`` (one int64[n_classes, n_bins] per feature): ε-DP releases, kept so the
    result can show them with their intervals (:mod:`dpcore.synthesis.intervals`).

    Returns
    -------
    encoded : float64[N, D]
        Synthetic records in encoded units (grouped by class).
    labels : int32[N]
    noisy_class_counts : int64[n_classes]
    """
    schema = table.schema
    timings = {} if timings is None else timings
    started = time.perf_counter()
    _progress(progress, 0.0, "noisy class counts and per-class histograms")
    n_hat, hists = noisy_marginals(table, params, rng=rng, accountant=accountant)
    timings["marginals"] = time.perf_counter() - started
    if released is not None:
        released["histograms"] = hists
    started = time.perf_counter()
    _progress(progress, 0.8, "generating")
    per_class = np.maximum(np.rint(n_hat), 0).astype(np.int64)
    total = int(per_class.sum())
    out = np.zeros((total, schema.width))
    labels = np.repeat(np.arange(schema.n_classes, dtype=np.int32), per_class)
    starts = np.concatenate([[0], np.cumsum(per_class)])
    for j, f in enumerate(schema.features):
        cols = schema.columns_of(j)
        hist = hists[j]
        n_bins = hist.shape[1]
        for y in range(schema.n_classes):
            n = int(per_class[y])
            if n == 0:
                continue
            w = np.maximum(hist[y].astype(np.float64), 0.0)
            prob = w / w.sum() if w.sum() > 0 else np.full(n_bins, 1.0 / n_bins)
            b = rng.choice(n_bins, size=n, p=prob)
            rows = slice(starts[y], starts[y + 1])
            if f.is_numeric:
                out[rows, cols.start] = -1.0 + 2.0 * (b + rng.random(n)) / n_bins
            else:
                block = np.zeros((n, n_bins))
                block[np.arange(n), b] = 1.0
                out[rows, cols.start:cols.stop] = block
    timings["generate"] = time.perf_counter() - started
    return out, labels, n_hat
