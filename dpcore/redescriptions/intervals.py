"""Intervals on every released statistic of a redescription, accounting for selection.

Post-processing only: 0 ε. Every function here reads a released
:class:`~dpcore.redescriptions.results.RunResult` (its noisy counts, trees, queries, the
ε and sensitivity of every recorded mechanism call, its Γ parameters) and nothing else —
never the dataset. The interval of a statistic is therefore as public as the statistic.

Why not ``noisy ± z·sd``
------------------------
The miners release what *looks good after noise*: extractReds keeps, among the many leaf
combinations of two trees, those whose noisy Jaccard is largest and passes Γ; Serenade keeps
a measurement whose noisy Jaccard passes Γ (and, for SerenadeCS, ``min_acc``). A released
statistic is thus a winner, and its noise leans upward (winner's curse): a symmetric interval
around it under-covers, and an error model that ignores the selection (the delta-method
sd of :func:`dpcore.redescriptions.pruning.jaccard_error_sd`) promises too much.

How the selection is accounted for (docs/ALGORITHMS.md, "Intervals and selection")
---------------------------------------------------------------------------------
Released values and public noise scales only:

* **tree miners** — for each extraction, the released noisy leaf × leaf table (clipped at 0)
  stands in for the truth; it is re-noised ``replicates`` times at the public scale of that
  extraction's mechanism call (same noise kind, ε, Δ), and extractReds — deterministic
  post-processing of a table with the run's public Γ — is run again on each copy (in one
  numba kernel, :func:`dpcore.redescriptions.kernels.reselect.reselect`). Every
  redescription a replicate releases gives one error ``noisy − stand-in truth`` per statistic,
  drawn *conditional on having been selected*. A released redescription whose query pair
  is selected again in at least :data:`MATCH_SHARE` of the replicates takes the quantiles of
  its own errors; the others (selected mostly by noise) take the pooled errors of the
  rarely re-selected ones, rescaled by their own noise sd (z-scores).
* **Serenade** — the queries are chosen by exponential-mechanism draws on their own budget;
  what selects on noise is only which measurements are released (Γ; SerenadeCS's
  ``min_acc``, each test on the measurement's own noisy values). Each released statistic is
  a sum of noisy cells of one measurement, whose noise law is public, so it gets the
  interval of that noise at the miss rate (1 − coverage)·R/M, R released out of M
  measurements (Benjamini & Yekutieli's false coverage rate adjustment: among what is
  released, the expected share of intervals missing their truth is at most 1 − coverage,
  whatever the filter selected, as the measurements' noises are independent); the
  Jaccard's by inverting the test of "J = t" (``(1 − t)·|E11| − t·(|E10| + |E01|)`` has
  noise of public law).

Tree miners: the interval is ``[noisy − q_hi, noisy − q_lo]`` with ``q_lo``, ``q_hi`` the
``(1 − coverage)/2`` and ``(1 + coverage)/2`` quantiles of those errors, clipped to the
statistic's range. The Jaccard's errors come from a second bootstrap of the same kind whose
stand-in truth keeps the cells above :data:`STANDIN_SDS` noise sd and gives the cells
within the noise their common mean: clipped noise in every empty cell gives the stand-in world
structure the true one lacks, and at small ε its J errors were far too small (on the
clinic sample at ε = 0.1 that J interval covered 68–72 % for AltMCMC and AltExpM). The J
interval also spans the J range of the support box when that range is at most
:data:`BOX_WIDTH` wide (large ε). The p-value's interval is the "marg" p-value at the
corners of the support intervals (smallest: the least over |E11| in its interval with the
smallest sides that hold it; largest: smallest |E11| with the largest sides): conservative.
A strict tree run's |qL|, |qR| and Ñ are sums of the table's cells, which hold only rows
that reach a leaf of both trees; the intervals are of those statistics (docs/ALGORITHMS.md
§11, :func:`dpcore.redescriptions.evaluate.evaluate` with ``as_released``).
The trees and the Serenade queries are chosen by separate mechanisms on their own budget,
before the counts are noised, so conditioning on them leaves the count noise untouched.

The bootstrap's generator is seeded from the released values, so the same release always
gets the same intervals (in the app, the CLI and every export).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import SimpleNamespace

import numpy as np

from dpcore.redescriptions.extract import _clip_stats, _counts, marg_pvalues
from dpcore.redescriptions.kernels.reselect import reselect
from dpcore.redescriptions.pruning import cell_noise_variance
from dpcore.registry import FAITHFUL, LITERAL_QUERY_ALGORITHMS, SERENADE_CS

__all__ = ["BOX_WIDTH", "DEFAULT_COVERAGE", "DEFAULT_REPLICATES", "EXCEEDANCE_RATE", "MATCH_SHARE",
           "NEIGHBOURS", "STANDIN_SDS",
           "STATISTICS", "Interval", "RedescriptionIntervals", "redescription_intervals",
           "exceedance_probabilities", "interval_columns", "intervals_document",
           "stored_intervals_document",
           "expected_widths", "interval_expectation_text", "FlowNoise", "flow_noise",
           "FLOW_MAX_COVERAGE"]

#: Two-sided coverage of every interval unless asked otherwise (90 %).
DEFAULT_COVERAGE = 0.9
#: Bootstrap replicates per extraction (tree miners) or per measurement (Serenade).
DEFAULT_REPLICATES = 40
#: The suggested threshold's promise: at most this share of the kept redescriptions is
#: off by more than the tolerance (docs/ALGORITHMS.md, "Intervals and selection").
EXCEEDANCE_RATE = 0.1
#: A released query pair selected again in at least this share of the replicates is
#: "stable" and takes its own errors; a rarer one takes the pooled rare errors.
MATCH_SHARE = 0.2
#: A pair selected mostly by noise takes the errors of this many rare replicate pairs of
#: the nearest size.
NEIGHBOURS = 300
#: The released statistics that get an interval, in column order.
STATISTICS = ("jaccard", "support_both", "support_left", "support_right", "pvalue")
#: Fewest errors a quantile is taken from; with fewer, the interval is the full range.
_MIN_SAMPLES = 20
#: The Jaccard's bootstrap keeps, as stand-in truth, the cells of the noisy table above
#: this many noise sd and gives all others their mean: clipping at 0 alone leaves every
#: empty cell about half a noise sd of spurious rows, so at small ε the stand-in world holds
#: structure the true one does not and the J errors come out too small (docs/ALGORITHMS.md
#: §11).
STANDIN_SDS = 2.0
#: The J interval also spans the J range of the support box when that range is at most this
#: wide (large ε: the box is then informative and the bootstrap's J errors of small winners
#: too narrow); a wider box (small ε, ≈ [0, 1]) would only make the interval uninformative.
BOX_WIDTH = 0.2


@dataclass(frozen=True)
class Interval:
    """A two-sided interval ``[low, high]`` in the statistic's unit (rows or Jaccard)."""

    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class RedescriptionIntervals:
    """The intervals of one released redescription (post-processing of the release, 0 ε).

    ``coverage``: the stated two-sided coverage (0.9 = 90 %). ``stable``: whether the
    query pair was re-selected in at least :data:`MATCH_SHARE` of the bootstrap replicates
    (then its own errors were used). NaN bounds: a statistic the run did not release
    (faithful Serenade's side supports and p-value).
    """

    id: int
    coverage: float
    jaccard: Interval
    support_both: Interval
    support_left: Interval
    support_right: Interval
    pvalue: Interval
    stable: bool

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- noise

def _draw_noise(rng: np.random.Generator, shape, epsilon: float, sensitivity: float,
                kind: str) -> np.ndarray:
    """Noise of the mechanism that was used (a simulation, not a release: no ε is spent).

    Discrete Laplace with α = exp(−ε/Δ) is the difference of two geometric variables on
    {0, 1, …}; continuous Laplace has scale Δ/ε.
    """
    if kind == "continuous":
        return rng.laplace(0.0, sensitivity / epsilon, size=shape)
    alpha = math.exp(-epsilon / sensitivity)
    p = 1.0 - alpha
    if p >= 1.0:
        return np.zeros(shape)
    return (rng.geometric(p, size=shape) - rng.geometric(p, size=shape)).astype(np.float64)


def _release_digest(result) -> bytes:
    """SHA-256 of everything the intervals read from a release, in canonical JSON: the
    same release (the miner's result with NumPy numbers, the stored one read back, a seeded
    re-run with another id) always has the same digest."""
    released = [result.algorithm, result.mode, result.params,
                [e.noisy_table for e in result.extractions],
                [(e.noisy_left, e.noisy_right, e.noisy_n) for e in result.extractions],
                [(r.id, r.extraction, r.left.text, r.right.text, r.left.leaves, r.right.leaves,
                  r.support_left, r.support_right, r.support_both, r.jaccard, r.pvalue)
                 for r in result.redescriptions],
                sorted((c["label"], c["epsilon_nano"], c["sensitivity"])
                       for c in result.mechanism_calls)]
    text = json.dumps(released, sort_keys=True, default=_plain)
    return hashlib.sha256(("intervals|" + text).encode()).digest()


def _plain(value):
    """A NumPy number or array as the plain value it stands for (JSON default hook)."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"not part of a release: {type(value).__name__}")


def _rng_for(result) -> np.random.Generator:
    """A generator seeded by the released values, so the same release always gets the same
    intervals (in the CLI's output, the app and every export)."""
    return np.random.default_rng(int.from_bytes(_release_digest(result)[:8], "little"))


def _calls(result) -> dict[str, dict]:
    return {call["label"]: call for call in result.mechanism_calls}


def _kind(result) -> str:
    return "continuous" if result.mode == FAITHFUL else result.params.get("noise", "discrete")


# --------------------------------------------------------------------------- errors

@dataclass
class _Errors:
    """Per redescription: errors (noisy − stand-in truth) per statistic, and stability."""

    samples: dict[str, np.ndarray]
    stable: bool


def _gamma(params: Mapping, mode: str) -> SimpleNamespace:
    return SimpleNamespace(min_jaccard=float(params.get("min_jaccard", 0.1)),
                           max_pvalue=float(params.get("max_pvalue", 0.01)),
                           min_support=float(params.get("min_support", 0.0)),
                           max_support=float(params.get("max_support", 1.0)),
                           max_clauses=int(params.get("max_clauses", 3)), mode=mode)


@dataclass(frozen=True)
class _Extraction:
    """What the bootstrap of one extraction needs, all of it released or public."""

    truth: np.ndarray                  # stand-in truth: the noisy table clipped at 0
    marginals: tuple | None            # faithful: stand-in |A_i|, |B_j| (clipped at 0)
    table_noise: tuple[float, float]   # (ε, Δ) of the table's cells
    marginal_noise: tuple[float, float] | None
    kind: str

    @property
    def faithful(self) -> bool:
        return self.marginals is not None

    def variances(self) -> tuple[float, float | None]:
        v_table = cell_noise_variance(*self.table_noise, self.kind)
        v_marg = (None if self.marginal_noise is None
                  else cell_noise_variance(*self.marginal_noise, self.kind))
        return v_table, v_marg

    def sds(self, a, c, e, union) -> dict[str, np.ndarray]:
        """Noise sd of each statistic of query pairs covering ``a`` × ``c`` leaves (vectorised;
        the Jaccard's by the delta method of :func:`~dpcore.redescriptions.pruning.
        jaccard_error_sd`)."""
        m, k = self.truth.shape
        v, vm = self.variances()
        a, c = np.asarray(a, dtype=np.float64), np.asarray(c, dtype=np.float64)
        e = np.maximum(np.asarray(e, dtype=np.float64), 0.0)
        u = np.asarray(union, dtype=np.float64)
        if vm is None:
            side_l, side_r = np.sqrt(v * a * k), np.sqrt(v * c * m)
            var_j = v * (a * c * (u - e) ** 2 + e * e * (a * (k - c) + (m - a) * c))
        else:
            side_l, side_r = np.sqrt(vm * a), np.sqrt(vm * c)
            var_j = v * a * c * (u + e) ** 2 + vm * e * e * (a + c)
        with np.errstate(divide="ignore", invalid="ignore"):
            sd_j = np.where(u > 0, np.sqrt(var_j) / np.where(u > 0, u, 1.0) ** 2, np.inf)
        return {"jaccard": sd_j, "support_both": np.sqrt(v * a * c),
                "support_left": side_l, "support_right": side_r}

    def replicate(self, rng) -> tuple[np.ndarray, dict]:
        """One re-noised copy of the release (a simulation: no ε is spent)."""
        eps, sens = self.table_noise
        noisy = self.truth + _draw_noise(rng, self.truth.shape, eps, sens, self.kind)
        if not self.faithful:
            return noisy, {}
        eps_m, sens_m = self.marginal_noise
        m, k = self.truth.shape
        # as the miner: counts truncated toward zero, Ñ the clipped right marginals' sum
        nl = np.trunc(self.marginals[0] + _draw_noise(rng, m, eps_m, sens_m, self.kind))
        nr = np.trunc(self.marginals[1] + _draw_noise(rng, k, eps_m, sens_m, self.kind))
        return np.trunc(noisy), {"noisy_left": nl, "noisy_right": nr,
                                 "noisy_n": float(np.maximum(nr, 0.0).sum())}

    def true_statistics(self, lm: np.ndarray, rm: np.ndarray):
        """Stand-in true ``(ql, qr, e11, j)`` of query pairs given as leaf masks."""
        lf, rf = lm.astype(np.float64), rm.astype(np.float64)
        if self.faithful:
            t_left, t_right = self.marginals
            t_n = float(t_right.sum())
        else:
            t_left, t_right = self.truth.sum(axis=1), self.truth.sum(axis=0)
            t_n = float(self.truth.sum())
        return _clip_stats(lf @ t_left, rf @ t_right,
                           np.einsum("ri,ij,rj->r", lf, self.truth, rf), t_n)


def _extraction_of(result, ext, calls: Mapping[str, dict], sparse: bool = False
                   ) -> _Extraction:
    """The bootstrap's inputs for one extraction. ``sparse``: the stand-in truth keeps the
    cells above :data:`STANDIN_SDS` noise sd and gives the others their mean, clipped at 0
    (the Jaccard's bootstrap); otherwise the noisy table clipped at 0 (the supports')."""
    prefix = f"trial {ext.trial} step {ext.step} extraction"
    noisy_table = np.asarray(ext.noisy_table, dtype=np.float64)
    truth = np.maximum(noisy_table, 0.0)
    if result.mode == FAITHFUL:
        table, left = calls[prefix + " table"], calls[prefix + " left"]
        marginals = (np.maximum(np.asarray(ext.noisy_left, dtype=np.float64), 0.0),
                     np.maximum(np.asarray(ext.noisy_right, dtype=np.float64), 0.0))
        marginal_noise = (left["epsilon_nano"] / 1e9, float(left["sensitivity"]))
    else:
        table, marginals, marginal_noise = calls[prefix], None, None
    table_noise = (table["epsilon_nano"] / 1e9, float(table["sensitivity"]))
    if sparse:
        sd = math.sqrt(cell_noise_variance(*table_noise, _kind(result)))
        above = noisy_table > STANDIN_SDS * sd
        # the cells within the noise share one level: the mean of their noisy counts, which
        # averages their noise away (≈ 0 in a sparse table, their common size in a dense one)
        level = max(float(noisy_table[~above].mean()), 0.0) if (~above).any() else 0.0
        truth = np.where(above, noisy_table, level)
    return _Extraction(truth, marginals, table_noise, marginal_noise, _kind(result))


def _masks(red, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    lmask, rmask = np.zeros(m, bool), np.zeros(k, bool)
    lmask[list(red.left.leaves)] = True
    rmask[list(red.right.leaves)] = True
    return lmask, rmask


def _pair_key(lmask: np.ndarray, rmask: np.ndarray) -> bytes:
    return lmask.tobytes() + b"|" + rmask.tobytes()


def _reselect(noisy: np.ndarray, extra: dict, gamma):
    """What extractReds releases from one replicate, as
    :func:`~dpcore.redescriptions.extract.released_query_masks` (one numba kernel), with
    each pair's key; of duplicates (same leaf masks) the first in seed order stays."""
    c = _counts(noisy, extra.get("noisy_left"), extra.get("noisy_right"),
                extra.get("noisy_n"))
    lm, rm, st = reselect(c.table, c.left, c.right, c.n, gamma.max_pvalue, gamma.max_support,
                          gamma.min_jaccard, gamma.min_support, gamma.max_clauses,
                          gamma.mode == FAITHFUL)
    keys, first = [], []
    seen: set[bytes] = set()
    for r in range(len(st)):
        key = _pair_key(lm[r], rm[r])
        if key not in seen:
            seen.add(key)
            keys.append(key)
            first.append(r)
    return lm[first], rm[first], st[first], keys


def _extraction_errors(x: _Extraction, reds, gamma, replicates: int, rng
                       ) -> dict[int, _Errors]:
    """Bootstrap one extraction: errors of everything extractReds re-releases, by pair."""
    m, k = x.truth.shape
    stats4 = STATISTICS[:4]
    keyed: dict[bytes, list[int]] = {}   # pair → its rows in err/sd/e11, replicate order
    errs, sds, e11s = [], [], []
    rows_so_far = 0
    for _ in range(replicates):
        noisy, extra = x.replicate(rng)
        lm, rm, st, keys = _reselect(noisy, extra, gamma)
        if not len(st):
            continue
        t_ql, t_qr, t_e, t_j = x.true_statistics(lm, rm)
        errs.append(np.stack([st[:, 3] - t_j, st[:, 2] - t_e, st[:, 0] - t_ql,
                              st[:, 1] - t_qr], axis=1))
        sd = x.sds(lm.sum(axis=1), rm.sum(axis=1), st[:, 2], st[:, 0] + st[:, 1] - st[:, 2])
        sds.append(np.stack([np.broadcast_to(sd[s], st[:, 2].shape) for s in stats4], axis=1))
        e11s.append(st[:, 2])
        for r, key in enumerate(keys):
            keyed.setdefault(key, []).append(rows_so_far + r)
        rows_so_far += len(st)
    err_all = np.concatenate(errs) if errs else np.zeros((0, 4))
    sd_all = np.concatenate(sds) if sds else np.zeros((0, 4))
    e11_all = np.concatenate(e11s) if e11s else np.zeros(0)
    # The rarely re-selected pairs' errors in sd units: the errors of a pair selected by
    # noise. How far selection pushes a winner's J depends on its size (a large pair's
    # rivals are close to it in sd units), so its J takes the errors of the NEIGHBOURS rare
    # pairs nearest to it in log |E11|.
    enough = max(MATCH_SHARE * replicates, _MIN_SAMPLES)
    rare = [i for rows in keyed.values() if len(rows) < enough for i in rows]
    rare_e = [math.log1p(max(float(e), 0.0)) for e in e11_all[rare]]
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (sd_all[rare] > 0) & (sd_all[rare] < math.inf)
        rare_rows = np.where(ok, err_all[rare] / np.where(ok, sd_all[rare], 1.0), math.nan)
    order = np.argsort(rare_e)
    rare_log_e = np.asarray(rare_e, dtype=np.float64)[order]
    rare_z = np.asarray(rare_rows, dtype=np.float64).reshape(-1, len(stats4))[order]
    out = {}
    for red in reds:
        lmask, rmask = _masks(red, m, k)
        rows = keyed.get(_pair_key(lmask, rmask), [])
        if len(rows) >= enough:
            out[red.id] = _Errors({s: err_all[rows, i] for i, s in enumerate(stats4)}, True)
            continue
        union = red.support_left + red.support_right - red.support_both
        sd = x.sds(lmask.sum(), rmask.sum(), red.support_both, union)
        near = _nearest(rare_log_e, math.log1p(max(red.support_both, 0.0)), NEIGHBOURS)
        samples = {}
        for i, s in enumerate(stats4):
            # the Jaccard takes its size-matched neighbours; a support's error in sd units
            # depends on its size far less, and takes all rare pairs (steadier quantiles)
            z = rare_z[near, i] if s == "jaccard" else rare_z[:, i]
            samples[s] = z * float(sd[s]) if np.isfinite(sd[s]) else np.array([])
        out[red.id] = _Errors(samples, False)
    return out


def _nearest(sorted_values: np.ndarray, value: float, count: int) -> slice:
    """The slice of the ``count`` entries of ``sorted_values`` nearest to ``value``."""
    n = sorted_values.size
    if n <= count:
        return slice(0, n)
    lo = int(np.searchsorted(sorted_values, value)) - count // 2
    lo = min(max(lo, 0), n - count)
    # slide toward the closer side while that brings nearer values in
    while lo > 0 and value - sorted_values[lo - 1] < sorted_values[lo + count - 1] - value:
        lo -= 1
    while lo + count < n and sorted_values[lo + count] - value < value - sorted_values[lo]:
        lo += 1
    return slice(lo, lo + count)


def _tree_errors(result, replicates: int, rng, sparse: bool = False) -> dict[int, _Errors]:
    calls = _calls(result)
    gamma = _gamma(result.params, result.mode)
    by_extraction: dict[int, list] = {}
    for red in result.redescriptions:
        by_extraction.setdefault(red.extraction, []).append(red)
    out: dict[int, _Errors] = {}
    for index, reds in by_extraction.items():
        x = _extraction_of(result, result.extractions[index], calls, sparse)
        out.update(_extraction_errors(x, reds, gamma, replicates, rng))
    return out


#: Noise draws behind a Serenade interval's quantiles: a simulation of the mechanism's
#: public noise law at the public scale from a constant seed (no ε; the same release always
#: gets the same intervals).
_SERENADE_DRAWS = 100_000
#: The Jaccard values tested when inverting the Jaccard's test (step 1/200).
_J_GRID = np.linspace(0.0, 1.0, 201)


def _serenade_noise(result) -> tuple[float, int, int] | None:
    """(ε/Δ of the noisiest quality measurement, measurements made, cells used by each).

    Strict Serenade noises a 4-cell table per measurement (|E11|, |E10|, |E01| are used);
    faithful Serenade two counts (|E11|, |E10|+|E01|) at half a measurement's ε each.
    """
    faithful = result.mode == FAITHFUL
    suffix = " |E11|" if faithful else " quality table"
    quality = [c for c in result.mechanism_calls if c["label"].endswith(suffix)]
    if not quality:
        return None
    worst = min(quality, key=lambda c: c["epsilon_nano"] / float(c["sensitivity"]))
    return (worst["epsilon_nano"] / 1e9 / float(worst["sensitivity"]), len(quality),
            2 if faithful else 3)


def _serenade_level(result, coverage: float, measurements: int) -> float:
    """Per-statistic miss rate α' = (1 − coverage)·R/M: Benjamini & Yekutieli's
    FCR-adjusted level for R released out of M measurements (docs/ALGORITHMS.md §11).

    M is the plan's count when larger than the measurements made: SerenadeCS measures a
    redescription's next form only while the last one passed ``min_acc``, so what was made
    depends on the noise; the I·(L + 1) measurements its plan allows are fixed in advance
    (public parameters), as the adjustment needs.
    """
    params = result.params
    planned = int(params.get("init_pairs", 0))
    if result.algorithm == SERENADE_CS:
        planned *= int(params.get("cs_rounds", 0)) + 1
    released = max(len(result.redescriptions), 1)
    return (1.0 - coverage) * min(released / max(measurements, planned, 1), 1.0)


_NOISE_DRAWS: dict[tuple, np.ndarray] = {}
_J_QUANTILES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _unit_noise(eps_per_sens: float, kind: str, cells: int) -> np.ndarray:
    """``_SERENADE_DRAWS`` × ``cells`` independent draws of one measurement's cell noise."""
    key = (eps_per_sens, kind, cells)
    if key not in _NOISE_DRAWS:
        rng = np.random.default_rng(20230)
        _remember(_NOISE_DRAWS, key, _draw_noise(rng, (_SERENADE_DRAWS, cells),
                                                 eps_per_sens, 1.0, kind))
    return _NOISE_DRAWS[key]


def _shift_interval(value: float, noise: np.ndarray, alpha: float,
                    low: float = 0.0) -> Interval:
    """``[value − q_hi, value − q_lo]`` for a released count ``value`` = truth + ``noise``
    (q: the α/2 and 1 − α/2 quantiles of the noise), cut at ``low``. A cell released
    clipped at 0 had truth + noise ≤ 0, so truth ≤ −noise and the upper bound still holds."""
    q_lo, q_hi = np.quantile(noise, [alpha / 2, 1 - alpha / 2])
    return Interval(float(max(value - q_hi, low)), float(max(value - q_lo, low)))


def _jaccard_quantiles(eps_per_sens: float, kind: str, faithful: bool, *alphas: float
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Per t of :data:`_J_GRID`, the α/2 and 1 − α/2 quantiles of
    W_t = (1 − t)·X_11 − t·X_rest (X_rest: |E10|'s and |E01|'s noise summed; faithful:
    the one noise of |E10| + |E01|), for the first α; the others are computed in the same
    pass and kept. They depend on the noise scale only: once per release."""
    key = (eps_per_sens, kind, faithful)
    if len(_J_QUANTILES) > 64:
        _J_QUANTILES.clear()
    missing = [a for a in alphas if key + (a,) not in _J_QUANTILES]
    if missing:
        x = _unit_noise(eps_per_sens, kind, 2 if faithful else 4)
        rest = x[:, 1] if faithful else x[:, 1] + x[:, 2]
        levels = [q for a in missing for q in (a / 2, 1 - a / 2)]
        qs = np.array([np.quantile((1.0 - t) * x[:, 0] - t * rest, levels) for t in _J_GRID])
        for i, a in enumerate(missing):
            _J_QUANTILES[key + (a,)] = (qs[:, 2 * i], qs[:, 2 * i + 1])
    return _J_QUANTILES[key + (alphas[0],)]


def _jaccard_by_inversion(inter: float, rest: float, quantiles) -> Interval:
    """The Jaccard values t that a level-α test of "J = t" does not reject.

    J ≥ t exactly when L_t = (1 − t)·|E11| − t·(|E10| + |E01|) ≥ 0, and the released
    L̂_t = L_t + W_t with W_t of public law (:func:`_jaccard_quantiles`). "J = t" means
    L_t = 0 and is rejected when L̂_t lies outside W_t's central range; the interval spans
    the accepted t, widened by one grid step (the true J may lie between grid points).
    """
    q_lo, q_hi = quantiles
    stat = (1.0 - _J_GRID) * inter - _J_GRID * rest
    accepted = _J_GRID[(q_lo <= stat) & (stat <= q_hi)]
    if not accepted.size:
        # no t fits the released pair (only where clipping moved a cell): say nothing
        return Interval(0.0, 1.0)
    step = float(_J_GRID[1])
    return Interval(max(float(accepted.min()) - step, 0.0),
                    min(float(accepted.max()) + step, 1.0))


def _serenade_intervals(result, red, alpha: float, noise) -> dict[str, Interval]:
    """Per-statistic intervals of one released Serenade measurement at miss rate ``alpha``.

    Each released count is a sum of noisy cells (strict: |E11|, |qL| = |E11| + |E10|,
    |qR| = |E11| + |E01|, Ñ = all four; faithful: |E11|), so its interval is the released
    value minus the quantiles of that sum of noises; the Jaccard's is a test inversion
    (:func:`_jaccard_by_inversion`). ``alpha`` accounts for Serenade's selection
    (:func:`_serenade_level`). Only released values and public scales are read (0 ε).
    """
    eps_per_sens = noise[0]
    e = max(red.support_both, 0.0)
    nan = Interval(math.nan, math.nan)
    if result.mode == FAITHFUL:
        x = _unit_noise(eps_per_sens, "continuous", 2)
        return {"jaccard": _serenade_jaccard(result, red, alpha, eps_per_sens),
                "support_both": _shift_interval(e, x[:, 0], alpha),
                "support_left": nan, "support_right": nan, "n": nan}
    kind = _kind(result)
    x = _unit_noise(eps_per_sens, kind, 4)
    b, c = max(red.support_left - e, 0.0), max(red.support_right - e, 0.0)
    n = _implied_n(red)
    return {"jaccard": _serenade_jaccard(result, red, alpha, eps_per_sens),
            "support_both": _shift_interval(e, x[:, 0], alpha),
            "support_left": _shift_interval(e + b, x[:, 0] + x[:, 1], alpha),
            "support_right": _shift_interval(e + c, x[:, 0] + x[:, 2], alpha),
            "n": nan if n is None else _shift_interval(n, x.sum(axis=1), alpha, low=1.0)}


def _serenade_jaccard(result, red, alpha: float, eps_per_sens: float) -> Interval:
    """The Jaccard's interval alone (:func:`_serenade_intervals`), as the threshold needs."""
    e = max(red.support_both, 0.0)
    if result.mode == FAITHFUL:
        rest = e / red.jaccard - e if red.jaccard > 0 else 0.0
        return _jaccard_by_inversion(
            e, rest, _jaccard_quantiles(eps_per_sens, "continuous", True, alpha))
    rest = max(red.support_left - e, 0.0) + max(red.support_right - e, 0.0)
    return _jaccard_by_inversion(
        e, rest, _jaccard_quantiles(eps_per_sens, _kind(result), False, alpha))


def _serenade_pvalue(red, b: Mapping[str, Interval]) -> Interval:
    """The "marg" p-value at the corners of the support and row-count intervals: low at
    the largest |E11| with the smallest sides and the largest N, high at the reverse (the
    p-value falls as N grows). Conservative: each corner holds with the rate of its own
    intervals."""
    if not math.isfinite(red.pvalue):
        return Interval(math.nan, math.nan)
    e, ql, qr, n = b["support_both"], b["support_left"], b["support_right"], b["n"]
    if not math.isfinite(n.low):
        return Interval(0.0, 1.0)
    low = _smallest_pvalue(e, ql, qr, n.high)
    high = float(marg_pvalues(min(ql.high, n.low), min(qr.high, n.low),
                              min(e.low, ql.high, qr.high, n.low), n.low))
    return Interval(min(low, red.pvalue), max(high, red.pvalue))


# Computed once per release and kept in this process (the app's server), keyed by the
# digest of the release itself: a rerun of a page, another session, a reload of the same
# stored result all hit; a different release can never be served another's intervals.
_CACHE: dict[tuple, dict[int, _Errors]] = {}
_INTERVAL_CACHE: dict[tuple, dict[int, RedescriptionIntervals]] = {}
_CACHE_SIZE = 16


def _remember(cache: dict, key: tuple, value):
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def _errors(result, replicates: int, sparse: bool = False) -> dict[int, _Errors]:
    """Selection-aware errors per redescription; ``sparse``: of the Jaccard's bootstrap
    (stand-in truth levelling the cells under :data:`STANDIN_SDS` noise sd)."""
    key = (_release_digest(result), replicates, sparse)
    if key not in _CACHE:
        _remember(_CACHE, key, _tree_errors(result, replicates, _rng_for(result), sparse))
    return _CACHE[key]


# --------------------------------------------------------------------------- public API

def _check_coverage(coverage: float) -> float:
    if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) \
            or not 0.0 < float(coverage) < 1.0:
        raise ValueError(f"coverage must be a number strictly between 0 and 1 (0.9 = 90 %); "
                         f"got {coverage!r}")
    return float(coverage)


def _interval(value: float, errors: np.ndarray, coverage: float, low: float,
              high: float) -> Interval:
    if not math.isfinite(value):
        return Interval(math.nan, math.nan)
    errors = errors[np.isfinite(errors)] if errors.size else errors
    if errors.size < _MIN_SAMPLES:
        return Interval(low, high)
    q_lo, q_hi = np.quantile(errors, [(1 - coverage) / 2, (1 + coverage) / 2])
    return Interval(float(min(max(value - q_hi, low), high)),
                    float(max(min(value - q_lo, high), low)))


def redescription_intervals(result, coverage: float = DEFAULT_COVERAGE, *,
                            replicates: int = DEFAULT_REPLICATES
                            ) -> dict[int, RedescriptionIntervals]:
    """Selection-adjusted intervals of every released statistic of a run (0 ε).

    Parameters
    ----------
    result : RunResult
        A released run of any redescription miner. Only what it released is read (noisy
        counts, trees, queries, parameters, the ε and Δ of its mechanism calls): the
        intervals are post-processing of the release and cost **0 ε**. No dataset is
        passed, and none is read.
    coverage : float
        Stated two-sided coverage, in (0, 1); default 0.9 (90 %).
    replicates : int
        Bootstrap replicates (module docstring); more gives steadier bounds, slower.

    Returns
    -------
    dict
        Redescription id → :class:`RedescriptionIntervals`. Jaccard intervals lie in
        [0, 1], support intervals (rows) in [0, ∞); the p-value's in [0, 1].
    """
    coverage = _check_coverage(coverage)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise ValueError(f"replicates must be an integer ≥ 1; got {replicates!r}")
    stored = _from_stored(result, coverage, replicates)
    if stored is not None:
        return stored
    key = (_release_digest(result), coverage, replicates)
    if key not in _INTERVAL_CACHE:
        _remember(_INTERVAL_CACHE, key, _compute_intervals(result, coverage, replicates))
    return dict(_INTERVAL_CACHE[key])


def _compute_intervals(result, coverage: float, replicates: int
                       ) -> dict[int, RedescriptionIntervals]:
    n_of = {ext.id: max(float(ext.noisy_n), 0.0) for ext in result.extractions}
    out = {}
    if result.algorithm in LITERAL_QUERY_ALGORITHMS:
        return {red.id: _serenade_interval_set(result, red, coverage)
                for red in result.redescriptions}
    errors = _errors(result, replicates)
    j_errors = _errors(result, replicates, sparse=True)
    for red in result.redescriptions:
        err = errors[red.id]
        j = _interval(red.jaccard, j_errors[red.id].samples["jaccard"], coverage, 0.0, 1.0)
        e = _interval(red.support_both, err.samples["support_both"], coverage, 0.0, math.inf)
        ql = _interval(red.support_left, err.samples["support_left"], coverage, 0.0, math.inf)
        qr = _interval(red.support_right, err.samples["support_right"], coverage, 0.0,
                       math.inf)
        box = _jaccard_from_supports(e, ql, qr)
        if box.width <= BOX_WIDTH:
            j = _hull(j, box)
        out[red.id] = RedescriptionIntervals(
            red.id, coverage, j, e, ql, qr, _pvalue_interval(red, e, ql, qr, n_of),
            err.stable)
    return out


def _serenade_interval_set(result, red, coverage: float) -> RedescriptionIntervals:
    noise = _serenade_noise(result)
    if noise is None:
        full, rows = Interval(0.0, 1.0), Interval(0.0, math.inf)
        return RedescriptionIntervals(red.id, coverage, full, rows, rows, rows, full, False)
    b = _serenade_intervals(result, red, _serenade_level(result, coverage, noise[1]), noise)
    return RedescriptionIntervals(red.id, coverage, b["jaccard"], b["support_both"],
                                  b["support_left"], b["support_right"],
                                  _serenade_pvalue(red, b), False)


def _jaccard_from_supports(e: Interval, ql: Interval, qr: Interval) -> Interval:
    """The J range of the box of support intervals (J rises with |E11|, falls with |qL|, |qR|).

    The J interval spans it too when it is at most :data:`BOX_WIDTH` wide: at large ε the
    bootstrap's J errors of small winners are narrower than the real ones, while the box,
    built from the supports' calibrated intervals, is narrow and holds the true J. At small
    ε the box is ≈ [0, 1] and says nothing, so it is not used there.
    """
    if not all(map(math.isfinite, (e.low, e.high, ql.low, ql.high, qr.low, qr.high))):
        return Interval(0.0, 1.0)
    union_hi = ql.high + qr.high - e.low
    low = e.low / union_hi if union_hi > 0 else 0.0
    top = min(e.high, ql.low, qr.low) if min(ql.low, qr.low) > 0 else e.high
    union_lo = max(ql.low + qr.low - top, top)
    high = top / union_lo if union_lo > 0 else 1.0
    return Interval(min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0))


def _hull(a: Interval, b: Interval) -> Interval:
    return Interval(min(a.low, b.low), max(a.high, b.high))


def _pvalue_interval(red, e: Interval, ql: Interval, qr: Interval,
                     n_of: Mapping[int, float]) -> Interval:
    """The "marg" p-value at the support intervals' corners (conservative; NaN if unreleased).

    Its row count is the extraction's noisy Ñ (tree miners); Serenade releases none, so the
    one its released p-value implies is solved for.
    """
    if not math.isfinite(red.pvalue) or not all(map(math.isfinite, (ql.high, qr.high))):
        return Interval(math.nan, math.nan)
    n = n_of.get(red.extraction) if red.extraction >= 0 else _implied_n(red)
    if n is None or not math.isfinite(n) or n < 1:
        return Interval(0.0, 1.0)
    low = _smallest_pvalue(e, ql, qr, n)
    high = float(marg_pvalues(min(ql.high, n), min(qr.high, n),
                              min(e.low, ql.high, qr.high), n))
    return Interval(min(low, red.pvalue), max(high, red.pvalue))


def _smallest_pvalue(e: Interval, ql: Interval, qr: Interval, n: float) -> float:
    """The smallest "marg" p-value over the box of support intervals, at row count ``n``.

    The p-value falls as |E11| grows and rises with |qL| and |qR|, but |E11| ≤ |qL|, |qR|:
    for each |E11| = x the smallest sides are max(lower bound, x), and the smallest p-value
    may lie inside the range of x, not at its corner (a pair whose sides are close to its
    overlap, common at large ε). So it is the least over 65 values of x across the range.
    """
    top = max(min(e.high, ql.high, qr.high, n), e.low)
    x = np.linspace(e.low, top, 65)
    return float(np.min(marg_pvalues(np.minimum(np.maximum(ql.low, x), n),
                                     np.minimum(np.maximum(qr.low, x), n), x, n)))


def _implied_n(red) -> float | None:
    """The row count N for which P[Bin(N, |qL||qR|/N²) ≥ |E11|] is the released p-value.

    The p-value falls as N grows (the expected overlap |qL||qR|/N shrinks); bisection on
    log N between max(|qL|, |qR|) and 10⁹. None when the p-value does not pin N down.
    """
    ql, qr, e, p = red.support_left, red.support_right, red.support_both, red.pvalue
    lo, hi = max(ql, qr, 1.0), 1e9
    f = lambda n: float(marg_pvalues(ql, qr, e, n)) - p  # noqa: E731
    if not 0.0 < p < 1.0 or f(lo) < 0 or f(hi) > 0:
        return None
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return math.sqrt(lo * hi)


def exceedance_probabilities(result, tolerance: float, *,
                             replicates: int = DEFAULT_REPLICATES) -> dict[int, float]:
    """Per redescription, the estimated chance that |noisy J − true J| > ``tolerance``.

    From the same selection-aware errors as the J interval (the bootstrap whose stand-in
    truth levels the cells within the noise; released values only, 0 ε); 1.0 where too few
    errors were drawn to say.
    """
    if result.algorithm in LITERAL_QUERY_ALGORITHMS:
        return _serenade_exceedance(result, tolerance)
    out = {}
    by_id = {red.id: red for red in result.redescriptions}
    coverage = 1.0 - EXCEEDANCE_RATE
    for red_id, err in _errors(result, replicates, sparse=True).items():
        j = err.samples["jaccard"]
        j = j[np.isfinite(j)]
        chance = float(np.mean(np.abs(j) > tolerance)) if j.size >= _MIN_SAMPLES else 1.0
        # The bootstrap's errors of small winners at large ε are too narrow (on the 2,500 ×
        # 250 shape at ε = 10 it kept 19 % beyond the tolerance): a redescription counts as
        # missing whenever its (1 − rate) bootstrap J interval reaches beyond the tolerance.
        iv = _interval(by_id[red_id].jaccard, j, coverage, 0.0, 1.0)
        noisy = by_id[red_id].jaccard
        if noisy - iv.low > tolerance or iv.high - noisy > tolerance:
            chance = 1.0
        out[red_id] = chance
    return out


def interval_columns(result, coverage: float = DEFAULT_COVERAGE) -> dict[int, dict]:
    """Flat columns per redescription for tables and exports (``jaccard_low``, …, 0 ε)."""
    tag = f"{100 * coverage:g}"
    out = {}
    for red_id, iv in redescription_intervals(result, coverage).items():
        row = {}
        for stat in STATISTICS:
            bounds = getattr(iv, stat)
            row[f"{stat}_low_{tag}"] = bounds.low
            row[f"{stat}_high_{tag}"] = bounds.high
        out[red_id] = row
    return out


#: The levels α tried for a Serenade measurement's chance of missing the tolerance.
_ALPHAS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def _serenade_exceedance(result, tolerance: float) -> dict[int, float]:
    """Per Serenade redescription, the smallest α of :data:`_ALPHAS` whose per-statistic
    J interval at coverage 1 − α (FCR-adjusted as the shown one) stays within
    ``tolerance`` of the noisy J (an upper bound on the chance of missing it), else 1."""
    noise = _serenade_noise(result)
    out = {}
    for red in result.redescriptions:
        out[red.id] = 1.0
        if noise is None:
            continue
        levels = [_serenade_level(result, 1.0 - a, noise[1]) for a in _ALPHAS]
        _jaccard_quantiles(noise[0], "continuous" if result.mode == FAITHFUL
                           else _kind(result), result.mode == FAITHFUL, *levels)
        for alpha, level in zip(_ALPHAS, levels):
            j = _serenade_jaccard(result, red, level, noise[0])
            if red.jaccard - j.low <= tolerance and j.high - red.jaccard <= tolerance:
                out[red.id] = alpha
                break
    return out


def _bound(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _stored(result, coverage: float, replicates: int) -> dict | None:
    """The intervals stored with ``result`` when it was stored, if they are the ones asked
    for (same coverage, default replicates)."""
    doc = getattr(result, "stored_intervals", None)
    if (not doc or replicates != DEFAULT_REPLICATES
            or not math.isclose(float(doc.get("coverage", -1.0)), coverage)):
        return None
    return doc


def _from_stored(result, coverage: float, replicates: int
                 ) -> dict[int, RedescriptionIntervals] | None:
    """:class:`RedescriptionIntervals` read back from the stored document. A JSON ``null``
    low bound is a statistic the run did not release (NaN, and so its high bound); a
    ``null`` high bound with a finite low one is an unbounded support (∞)."""
    doc = _stored(result, coverage, replicates)
    if doc is None:
        return None
    stable = {int(i) for i in doc.get("stable", ())}

    def interval(pair) -> Interval:
        low = math.nan if pair[0] is None else float(pair[0])
        high = (math.nan if math.isnan(low) else math.inf) if pair[1] is None \
            else float(pair[1])
        return Interval(low, high)

    return {int(key): RedescriptionIntervals(int(key), coverage,
                                             *(interval(stats[s]) for s in STATISTICS),
                                             int(key) in stable)
            for key, stats in doc["redescriptions"].items()}


def stored_intervals_document(result, coverage: float = DEFAULT_COVERAGE) -> dict:
    """What a result stores (:attr:`~dpcore.redescriptions.results.RunResult.stored_intervals`):
    :func:`intervals_document` and the ids of the pairs re-selected in the bootstrap
    (``stable``), so the intervals read back are the ones first shown (0 ε)."""
    ivs = redescription_intervals(result, coverage)
    return {**intervals_document(result, coverage),
            "stable": sorted(i for i, iv in ivs.items() if iv.stable)}


def intervals_document(result, coverage: float = DEFAULT_COVERAGE) -> dict:
    """The intervals of a run as JSON-ready data, for the CLI's output and the exports (0 ε).

    ``{"coverage": 0.9, "method": …, "redescriptions": {"<id>": {"jaccard": [low, high],
    …}}}``; a bound that is not a finite number (a statistic the run did not release, or an
    unbounded support) is ``null``.
    """
    stored = _stored(result, coverage, DEFAULT_REPLICATES)
    if stored is not None:
        return {k: v for k, v in stored.items() if k != "stable"}
    serenade = result.algorithm in LITERAL_QUERY_ALGORITHMS
    method = ("per-statistic intervals from the public noise law at the false coverage "
              "rate adjusted level (1 - coverage)·released/measured, valid whatever the "
              "noisy filters selected" if serenade else
              "parametric bootstrap of extractReds' selection from the released noisy "
              "tables (accounts for the winner's curse)")
    return {"coverage": coverage, "method": method,
            "privacy": "post-processing of the released values only: 0 ε",
            "redescriptions": {
                str(red_id): {stat: [_bound(getattr(iv, stat).low),
                                     _bound(getattr(iv, stat).high)] for stat in STATISTICS}
                for red_id, iv in redescription_intervals(result, coverage).items()}}


def expected_widths(params, support: float, coverage: float = DEFAULT_COVERAGE) -> dict:
    """Interval widths a run of ``params`` will give, from the parameters alone (0 ε).

    For a one-leaf query on each side with noisy support ``support`` (rows) and J = ½:
    the width of the |E11| interval (rows) and of the Jaccard interval, from the noise
    scale of the budget plan (:func:`dpcore.redescriptions.params.plan_budget`), before
    selection for the tree miners: what they release are winners, whose intervals come out
    wider and lower than this (module docstring). Serenade: a statistic's FCR-adjusted
    interval when one of the plan's M measurements is released (miss rate
    (1 − coverage)/M, the widest case; more releases give narrower ones). Nothing here
    reads data.

    Returns
    -------
    dict
        ``{"support_both": rows, "jaccard": Jaccard units, "count_sd": rows}``.
    """
    from dpcore.redescriptions.params import plan_budget
    from dpcore.redescriptions.pruning import jaccard_error_sd

    coverage = _check_coverage(coverage)
    z = float(_normal_quantile((1 + coverage) / 2))
    params = params.validate()
    slots = plan_budget(params)
    faithful = params.mode == FAITHFUL
    kind = "continuous" if faithful else params.noise
    if params.is_serenade:
        # one released out of the plan's M measurements: miss rate (1 − coverage)/M per
        # statistic; a cell's noise is beyond h with probability ≤ 2·e^(−hε)
        quality = [s for s in slots if s.role == "quality"]
        eps = min(s.epsilon_nano for s in quality) / 1e9
        eps = eps / 2 if faithful else eps
        h = math.log(2.0 * len(quality) / (1.0 - coverage)) / eps
        e, b = support, support / 2        # J = ½: |E10| + |E01| = |E11|
        lo = max(e - h, 0.0)
        j_lo = lo / (lo + 2 * b + 2 * h) if lo > 0 else 0.0
        j_hi = (e + h) / (e + h + 2 * max(b - h, 0.0))
        return {"support_both": 2 * h, "jaccard": min(j_hi, 1.0) - j_lo,
                "count_sd": math.sqrt(cell_noise_variance(eps, 1.0, kind))}
    else:
        eps = min(s.epsilon_nano for s in slots if s.role == "extract") / 1e9
        eps = eps / 3 if faithful else eps
        v = cell_noise_variance(eps, 1.0, kind)
        leaves = 2 ** params.depth
        sd_e = math.sqrt(v)
        sd_j = jaccard_error_sd(support, 2.0 * support, 1, 1, leaves, leaves, v,
                                v if faithful else None)
    return {"support_both": 2 * z * sd_e, "jaccard": min(2 * z * sd_j, 1.0),
            "count_sd": sd_e}


def _normal_quantile(p: float) -> float:
    """Φ⁻¹(p) by bisection on ``math.erf`` (no SciPy import for a launch form)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p else (lo, mid)
    return (lo + hi) / 2


def interval_expectation_text(params, support: float = 500.0,
                              coverage: float = DEFAULT_COVERAGE) -> str:
    """One sentence for the launch form: the interval widths to expect (parameters only)."""
    w = expected_widths(params, support, coverage)
    return (f"**Intervals to expect** (from the parameters alone, 0 ε): every released "
            f"statistic comes with a {coverage:.0%} interval; for a redescription with a "
            f"noisy support of {support:g} rows, |E11| ± {w['support_both'] / 2:.3g} rows and "
            f"Jaccard ± {w['jaccard'] / 2:.2g} before selection. The miners release what "
            f"looks best after noise, so the intervals of what they release are wider and "
            f"sit lower than the noisy values.")


# --------------------------------------------------------------------------- tree-pair flows

#: The highest coverage :meth:`FlowNoise.halfwidth` states (its normal bound holds up to it).
FLOW_MAX_COVERAGE = 0.9


@dataclass(frozen=True)
class FlowNoise:
    """The public noise of one extraction's noisy table, for intervals on sums of its cells.

    A flow of the tree-pair diagram sums ``cells`` released cells of the table. The trees
    and the table are released before anything is chosen from the table, and a flow is
    fixed by the trees alone, so no selection acts on it: the plain noise law of the sum
    covers. Post-processing of the public scale only: 0 ε.

    Attributes
    ----------
    epsilon, sensitivity : float
        ε and Δ of the table's mechanism call (one cell's noise scale is Δ/ε rows).
    kind : str
        ``"discrete"`` (discrete Laplace) or ``"continuous"`` (Laplace).
    """

    epsilon: float
    sensitivity: float
    kind: str

    def halfwidth(self, cells: int, coverage: float = DEFAULT_COVERAGE) -> float:
        """Half-width (rows) h with P(|Z₁ + … + Z_cells| ≤ h) ≥ ``coverage`` for the cells'
        independent noises.

        One or two discrete cells: the exact integer quantile
        (:func:`dpcore.privacy.count_intervals.noise_halfwidth`). Otherwise the normal
        quantile of the sum, z·√(cells·v) (rounded up to rows for discrete noise). At a
        coverage of at most 90 % that bound is never below the exact quantile: a single
        continuous Laplace's 90 % quantile is b·ln 10 ≈ 1.628 sd < 1.645 sd, and sums of a
        few terms come closer to normal. Above 90 % it is not (at 95 % the Laplace tails
        are heavier than the normal's), so higher coverages are refused.
        ``tests/dpcore/redescriptions/test_intervals.py`` checks the bound against the exact law
        of discrete sums and simulated continuous ones.
        """
        from dpcore.privacy.count_intervals import noise_halfwidth

        coverage = _check_coverage(coverage)
        if coverage > FLOW_MAX_COVERAGE:
            raise ValueError(f"a flow's interval is stated at a coverage of at most "
                             f"{FLOW_MAX_COVERAGE:.0%}; got {coverage!r}")
        cells = int(cells)
        if cells <= 0:
            return 0.0
        if self.kind == "discrete" and cells <= 2:
            return float(noise_halfwidth(self.sensitivity / self.epsilon, terms=cells,
                                         coverage=coverage))
        z = _normal_quantile((1 + coverage) / 2)
        half = z * math.sqrt(cells * cell_noise_variance(self.epsilon, self.sensitivity,
                                                        self.kind))
        return float(math.ceil(half)) if self.kind == "discrete" else half

    def bounds(self, noisy_sum: float, cells: int, coverage: float = DEFAULT_COVERAGE
               ) -> tuple[float, float]:
        """Interval (rows) of the true sum of ``cells`` cells whose released sum (cells not
        clipped) is ``noisy_sum``, cut at 0 (a count is never negative)."""
        h = self.halfwidth(cells, coverage)
        return max(noisy_sum - h, 0.0), max(noisy_sum + h, 0.0)


def flow_noise(result, extraction) -> FlowNoise | None:
    """The noise of ``extraction``'s table in ``result`` (a released tree-miner run), read
    from its recorded mechanism call; None when the run recorded none for it."""
    prefix = f"trial {extraction.trial} step {extraction.step} extraction"
    calls = _calls(result)
    call = calls.get(prefix + " table" if result.mode == FAITHFUL else prefix)
    if call is None:
        return None
    return FlowNoise(call["epsilon_nano"] / 1e9, float(call["sensitivity"]), _kind(result))
