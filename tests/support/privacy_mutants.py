"""A catalogue of planted privacy bugs (mutants) for every mechanism call site of every
family, and of the sampling cores in ``dpcore.privacy.mechanisms``.

Each mutant is a named context manager that monkeypatches one Python-level thing — the
arguments a family passes to a mechanism (ε, Δ, the generator), the ε it hands a numba
kernel, a choice it makes before drawing, or a sampler of ``mechanisms`` — and restores it on
exit. The run still works and still charges its plan: every mutant is a *silent* bug that
only a privacy test can see. ``tests/dpcore/privacy/test_privacy_mutants.py`` runs each family's
cheap detectors (``tests/dpcore/privacy/test_audit_replay.py::DETECTORS`` and the exact sampler
checks) under every mutant and asserts that at least one fails; the privacy mutation score is
caught / planted and must be 100 %.

Numba kernels called from other jitted code cannot be patched, so nothing here changes a
kernel's body: a hotter chain or exponential mechanism is planted where the family passes
the kernel its ε (as a wrong Δ in ε/(2Δ) would do), and the Hastings correction is removed
by the flag the family passes the pair chain.

Kinds (``Mutant.kind``):

* ``scale``: noise drawn at a smaller scale (a larger ε) than charged;
* ``sensitivity``: Δ understated — the noise is calibrated to, and charged with, a Δ below
  the release's real sensitivity;
* ``hotter``: an exponential mechanism or MCMC chain at a higher ε than charged;
* ``branch``: a data-dependent choice before the noise (a threshold, a length, a size, a
  stop);
* ``split``: a split of ε whose parts, as drawn, sum to more than the charge;
* ``stream``: a reused random stream (two releases from one generator state, or one draw
  copied to several values);
* ``revert``: a privacy fix of the last two months undone.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from dpcore.privacy import mechanisms
from dpcore.redescriptions import bitset_mcmc, custom_query, mining, regions, trees
from dpcore.redescriptions.serenade import miner as serenade_miner
from dpcore.registry import (
    ALTEXPM,
    ALTMCMC,
    CUSTOM_QUERY,
    FLOOR,
    MCGEN,
    MCMCTREEPAIR,
    PFS2,
    PFS2_BASELINE,
    REGION_MAP,
    SERENADE_CS,
    SERENADE_ES,
)
from dpcore.sequences import counting as sequence_counting
from dpcore.sequences import miner as sequence_miner
from dpcore.synthesis import floor, mcgen, moments
from dpcore.synthesis import tree as synthesis_tree
from dpcore.synthesis.intervals import MARGINAL_PREFIX
from dpcore.synthesis.params import TREE

#: The family of the sampling cores (their detectors are the exact sampler checks).
MECHANISMS = "mechanisms"
MCGEN_GROUPS = f"{MCGEN}-groups"
MCGEN_TREE = f"{MCGEN}-{TREE}"

DISCRETE, EXPONENTIAL, MCMC = "discrete Laplace", "exponential mechanism", "MCMC"


@dataclass(frozen=True)
class Mutant:
    """One planted bug: where (family, call site), what (kind, mechanism) and how (plant)."""

    name: str
    family: str
    mechanism: str
    kind: str
    site: str
    description: str
    plant: Callable[[], contextlib.AbstractContextManager]


class _Patches:
    """setattr with undo, as a context manager (the mutants' monkeypatch)."""

    def __init__(self):
        self.undo = []

    def set(self, owner, name, value):
        self.undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def restore(self):
        for owner, name, value in reversed(self.undo):
            setattr(owner, name, value)


@contextlib.contextmanager
def _patched(*changes) -> Iterator[None]:
    patches = _Patches()
    try:
        for owner, name, make in changes:
            patches.set(owner, name, make(getattr(owner, name)))
        yield
    finally:
        patches.restore()


def _matches(label: str, labels) -> bool:
    """``labels``: None (every release), a predicate, or label parts (any one contained)."""
    if labels is None:
        return True
    if callable(labels):
        return bool(labels(label))
    return any(part in label for part in labels)


class _ChargeOnly:
    """An accountant stand-in: charges ``charge(ε)`` while the mechanism draws at ε."""

    def __init__(self, accountant, charge):
        self.accountant, self.charge = accountant, charge

    def spend(self, mechanism, label, epsilon_nano, sensitivity, parallel=1):
        self.accountant.spend(mechanism, label, self.charge(int(epsilon_nano)), sensitivity,
                              parallel)
        return epsilon_nano * 1e-9


def _draw_at(factor: int, labels=None):
    """A noise function drawing at factor·ε while the accountant is charged ε (matching
    labels only)."""
    def make(real):
        def broken(counts, *, epsilon_nano, accountant, label, **kw):
            if not _matches(label, labels):
                return real(counts, epsilon_nano=epsilon_nano, accountant=accountant,
                            label=label, **kw)
            return real(counts, epsilon_nano=factor * int(epsilon_nano),
                        accountant=_ChargeOnly(accountant, lambda e: e // factor),
                        label=label, **kw)
        return broken
    return make


def _sensitivity(value: int, labels=None):
    """A noise function calibrated to (and charged with) Δ = ``value`` on matching labels."""
    def make(real):
        def broken(counts, *, sensitivity, label, **kw):
            return real(counts, sensitivity=value if _matches(label, labels) else sensitivity,
                        label=label, **kw)
        return broken
    return make


def _frozen_stream(labels=None):
    """A noise function drawing from a copy of the generator: the stream never advances, so
    the next release draws the same numbers again."""
    def make(real):
        def broken(counts, *, rng, label, **kw):
            return real(counts, rng=copy.deepcopy(rng) if _matches(label, labels) else rng,
                        label=label, **kw)
        return broken
    return make


def _scaled_return(factor: float):
    """A charge function whose returned ε (what the kernel then uses) is factor × charged."""
    def make(real):
        def broken(*args, **kw):
            return real(*args, **kw) * factor
        return broken
    return make


# ------------------------------------------------------------------ tree miners

def _same_child_streams(real):
    def broken(rng, n):
        streams = real(rng, n)
        return [copy.deepcopy(streams[0]) for _ in streams]
    return broken


def _target_by_majority(real):
    """The initial target: the attribute with the most true 'yes' values (drawn from the
    stream as before, then overridden) — a choice read from the data, unpaid."""
    def broken(dataset, rng, exclude=None):
        real(dataset, rng, exclude)
        pool = [(v, a) for v in (0, 1) for a in range(dataset.views[v].n_attributes)]
        ones = [np.nansum(dataset.views[v].values[a]) for v, a in pool]
        return pool[int(np.argmax(ones))]
    return broken


class _NoHastings:
    """Stands in for ``trees.B`` (bitset_mcmc): the strict chains run without the Hastings
    correction (the flag strict mode passes as True, or leaves at its default True), every
    other kernel unchanged."""

    def __getattr__(self, name):
        return getattr(bitset_mcmc, name)

    @staticmethod
    def mcmc_tree_pair_bits(*args):
        args = list(args)
        args[21] = False
        return bitset_mcmc.mcmc_tree_pair_bits(*args)

    @staticmethod
    def mcmc_single_tree_bits(*args):
        return bitset_mcmc.mcmc_single_tree_bits(*args, False)


def _levels_at_tree_epsilon(real):
    """Every level drawn with the tree's whole ε (charged split over the levels)."""
    def broken(*args, **kw):
        levels = real(*args, **kw)
        return np.full_like(levels, levels.sum())
    return broken


# ------------------------------------------------------------------ Serenade

def _factor_times(k: float):
    def make(real):
        def broken(self, epsilon):
            return real(self, k * epsilon)
        return broken
    return make


def _role_total(role: str):
    """min_epsilon of ``role`` returns the role's whole ε: every draw of the role uses all."""
    def make(real):
        def broken(self, r):
            if r != role:
                return real(self, r)
            return sum(s.epsilon_nano for s in self.slots.values() if s.role == r) / 1e9
        return broken
    return make


def _quality_scale_from_true_n(real):
    """x0 and Δf from the true N (N̂ is still released): the quality function, its Δf and
    every later charge depend on the data."""
    def broken(self):
        real(self)
        self.n_hat = float(self.n_rows)
        self.x0 = 0.1 * self.n_hat
        self.delta = serenade_miner.quality_sensitivity(self.n_hat, self.params.steepness)
    return broken


def _snapshot_at_row_count(real):
    def broken(self):
        self._mutant_snapshot = copy.deepcopy(self.rng)
        return real(self)
    return broken


def _measure_from_snapshot(real):
    """Every quality table drawn from the generator as it was before N̂'s draw."""
    def broken(self, red, slot, label):
        saved, self.rng = self.rng, copy.deepcopy(self._mutant_snapshot)
        try:
            return real(self, red, slot, label)
        finally:
            self.rng = saved
    return broken


# ------------------------------------------------------------------ custom query, map

def _one_noise_for_all(real):
    """One noise value drawn and added to every cell (the release's other draws skipped)."""
    def broken(counts, **kw):
        counts = np.asarray(counts)
        first = real(counts.ravel()[:1], **kw)
        return (counts + (first[0] - counts.ravel()[0])).astype(np.float64)
    return broken


def _supports_instead_of_cells(real):
    def broken(left, right):
        e11, e10, e01, e00 = real(left, right)
        return np.array([e11, e11 + e10, e11 + e01, e11 + e10 + e01 + e00], dtype=np.int64)
    return broken


def _epsilon_from_true_n(real):
    """The query's ε chosen from the true N: just enough for ±10 % of N, at most the charge."""
    def broken(cells, epsilon_nano, *, rng, accountant):
        need = int(10e9 / max(int(np.sum(cells)), 1))
        return real(cells, min(int(epsilon_nano), need), rng=rng, accountant=accountant)
    return broken


def _double_counted_supports(real):
    """Each cell's E10 and E01 also count its E11 rows (per-cell supports), still Δ = 1."""
    def broken(cells, left, right, n_cells):
        hist = real(cells, left, right, n_cells)
        hist[:, 1] += hist[:, 0]
        hist[:, 2] += hist[:, 0]
        return hist
    return broken


def _only_nonempty_cells(real):
    """Only cells holding rows get noise; the others are released as exact zeros."""
    def broken(hist, epsilon_nano, *, rng, accountant):
        hist = np.asarray(hist, dtype=np.int64)
        keep = hist.sum(axis=1) > 0
        out = np.zeros(hist.shape, dtype=np.float64)
        out[keep] = real(hist[keep], epsilon_nano, rng=rng, accountant=accountant)
        return out
    return broken


def _tiled_noise(real):
    """The first cell's three noise values reused for every cell."""
    def broken(hist, **kw):
        hist = np.asarray(hist, dtype=np.int64)
        first = real(hist[:1], **kw)
        return (hist + (first - hist[:1])).astype(np.float64)
    return broken


# ------------------------------------------------------------------ sequences

_STASH: dict = {}


def _stash_longest(real):
    def broken(indptr, n):
        _STASH["longest"] = int(np.diff(indptr).max()) if len(indptr) > 1 else 0
        return real(indptr, n)
    return broken


def _lmax_from_true_longest(real):
    def broken(noisy_histogram, noisy_records, eta, l1):
        l2, _ = real(noisy_histogram, noisy_records, eta, l1)
        return l2, max(1, min(int(l1), _STASH["longest"]))
    return broken


def _stash_length_counts(real):
    def broken(lengths, lmax):
        out = real(lengths, lmax)
        _STASH["length_counts"] = out.copy()
        return out
    return broken


def _bound_from_true_counts(real):
    def broken(noisy_counts, support_threshold):
        return real(_STASH["length_counts"].astype(np.float64), support_threshold)
    return broken


def _counts_noise_frozen(real):
    def broken(self, counts, **kw):
        saved, self.rng = self.rng, copy.deepcopy(self.rng)
        try:
            return real(self, counts, **kw)
        finally:
            self.rng = saved
    return broken


# ------------------------------------------------------------------ synthesis

def _stash_true_total(real):
    def broken(table, epsilon_nano, *, rng, accountant):
        _STASH["rows"] = int(np.sum(table.class_counts()))
        return real(table, epsilon_nano, rng=rng, accountant=accountant)
    return broken


def _correlation_rule_on_true_n(real):
    def broken(params, n_features, n_total):
        return real(params, n_features, float(_STASH["rows"]))
    return broken


def _bins_from_distinct_values(real):
    """The floor's bin count from the number of distinct true values of the feature."""
    def broken(table, feature, n_bins):
        cols = table.schema.columns_of(feature)
        distinct = np.unique(table.encoded()[:, cols.start]).size
        return real(table, feature, int(min(n_bins, max(2, distinct))))
    return broken


def _utility_from_true_marginals(real):
    """The edge utility's independence prediction from the true class × code marginals
    instead of the released ones (one record then moves a utility by up to about 3)."""
    def broken(codes, cards, labels, marginals, n_hat, marginal_scales):
        c = len(n_hat)
        true = [np.bincount(labels * int(k) + codes[:, j], minlength=c * int(k)).reshape(c, -1)
                for j, k in enumerate(cards)]
        return real(codes, cards, labels, true, n_hat, marginal_scales)
    return broken


# ------------------------------------------------------------------ mechanisms

def _half_scale(real):
    def broken(sensitivity, epsilon_nano):
        s, t = real(sensitivity, epsilon_nano)
        return 2 * s, t
    return broken


def _sampler_half_scale(real):
    def broken(flat, s, t, rng):
        return real(flat, 2 * s, t, rng)
    return broken


def _exponential_without_half(real):
    def broken(utilities, scale_epsilon, sensitivity, rng):
        return real(utilities, scale_epsilon, sensitivity / 2.0, rng)
    return broken


def VERIFY(label: str) -> bool:  # noqa: N802 - used like the label tuples
    """PFS2's and the baseline's verification releases (the pruning's label goes on: "... on
    all records shrunk to ...")."""
    return label.endswith("candidates on all records")


CATALOGUE: tuple[Mutant, ...] = (
    # ---------------------------------------------------------------- MCMCTreePair
    Mutant("treepair-chain-hotter", MCMCTREEPAIR, MCMC, "hotter",
           "mining._mine_tree_pairs → trees.charge_tree_pair",
           "the pair chain samples at 2·ε_T while ε_T is charged",
           lambda: _patched((mining, "charge_tree_pair", _scaled_return(2.0)))),
    Mutant("treepair-no-hastings", MCMCTREEPAIR, MCMC, "revert",
           "trees.draw_tree_pair → bitset_mcmc.mcmc_tree_pair_bits(hastings)",
           "strict pair chain without the Hastings correction (reverts the fix of §7)",
           lambda: _patched((trees, "B", lambda real: _NoHastings()))),
    Mutant("treepair-extraction-half-noise", MCMCTREEPAIR, DISCRETE, "scale",
           "mining._Run._extract → noisy_counts",
           "the leaf×leaf table drawn at 2·ε_X, charged ε_X",
           lambda: _patched((mining, "noisy_counts", _draw_at(2, ("extraction",))))),
    Mutant("treepair-same-trial-streams", MCMCTREEPAIR, DISCRETE, "stream",
           "mining._pick_targets → randomness.child_generators",
           "every trial gets a copy of the first trial's stream",
           lambda: _patched((mining, "child_generators", lambda real: _same_child_streams(real)))),
    # ---------------------------------------------------------------- AltMCMC
    Mutant("altmcmc-chain-hotter", ALTMCMC, MCMC, "hotter",
           "mining._mine_alternating → trees.charge_mcmc_tree",
           "each createDTMCMC chain samples at 2·ε_P while ε_P is charged (Δ 1 for Gini)",
           lambda: _patched((mining, "charge_mcmc_tree", _scaled_return(2.0)))),
    Mutant("altmcmc-chain-trial-epsilon", ALTMCMC, MCMC, "split",
           "mining._mine_alternating → trees.charge_mcmc_tree",
           "each chain samples with the trial's three slots (ε_P charged per chain)",
           lambda: _patched((mining, "charge_mcmc_tree", _scaled_return(3.0)))),
    Mutant("altmcmc-no-hastings", ALTMCMC, MCMC, "revert",
           "trees.draw_mcmc_tree → bitset_mcmc.mcmc_single_tree_bits(hastings)",
           "strict createDTMCMC chain without the Hastings correction (reverts the fix of §7)",
           lambda: _patched((trees, "B", lambda real: _NoHastings()))),
    Mutant("altmcmc-extraction-trial-epsilon", ALTMCMC, DISCRETE, "split",
           "mining._Run._extract → noisy_counts",
           "the table drawn with the trial's whole ε (3 slots), charged its slot",
           lambda: _patched((mining, "noisy_counts", _draw_at(3, ("extraction",))))),
    Mutant("altmcmc-target-by-majority", ALTMCMC, DISCRETE, "branch",
           "mining._pick_targets → targets.pick_attribute",
           "the initial target is the attribute with most true 'yes' values",
           lambda: _patched((mining, "pick_attribute", _target_by_majority))),
    # ---------------------------------------------------------------- AltExpM
    Mutant("altexpm-levels-delta-1", ALTEXPM, EXPONENTIAL, "hotter",
           "mining._mine_alternating → trees.charge_expmech_tree → kernels.expmech_tree",
           "issue 31 example 1: every level drawn at 2× its ε (Δ 1 instead of 2)",
           lambda: _patched((mining, "charge_expmech_tree", _scaled_return(2.0)))),
    Mutant("altexpm-levels-whole-tree-epsilon", ALTEXPM, EXPONENTIAL, "split",
           "mining._mine_alternating → trees.charge_expmech_tree",
           "every level drawn with the tree's whole ε (charged split over the d levels)",
           lambda: _patched((mining, "charge_expmech_tree", _levels_at_tree_epsilon))),
    Mutant("altexpm-extraction-half-noise", ALTEXPM, DISCRETE, "scale",
           "mining._Run._extract → noisy_counts",
           "the leaf×leaf table drawn at 2·ε_P, charged ε_P",
           lambda: _patched((mining, "noisy_counts", _draw_at(2, ("extraction",))))),
    Mutant("altexpm-same-trial-streams", ALTEXPM, EXPONENTIAL, "stream",
           "mining._pick_targets → randomness.child_generators",
           "every trial gets a copy of the first trial's stream (trees and tables repeat)",
           lambda: _patched((mining, "child_generators", lambda real: _same_child_streams(real)))),
    # ---------------------------------------------------------------- SerenadeES
    Mutant("es-quality-half-noise", SERENADE_ES, DISCRETE, "scale",
           "serenade _Miner.measure → noisy_counts",
           "the 4-cell quality table drawn at 2·ε_Q, charged ε_Q",
           lambda: _patched((serenade_miner, "noisy_counts", _draw_at(2, ("quality",))))),
    Mutant("es-draws-hotter", SERENADE_ES, EXPONENTIAL, "hotter",
           "serenade _Miner.factor → exponential_index",
           "every draw at factor 2·ε/(2Δf)",
           lambda: _patched((serenade_miner._Miner, "factor", _factor_times(2.0)))),
    Mutant("es-rounds-whole-extension-epsilon", SERENADE_ES, EXPONENTIAL, "split",
           "serenade _Miner.min_epsilon('extend') → extend_es",
           "each of the K rounds drawn with all of ε_ext (charged ε_ext/K)",
           lambda: _patched((serenade_miner._Miner, "min_epsilon", _role_total("extend")))),
    Mutant("es-quality-scale-from-true-n", SERENADE_ES, EXPONENTIAL, "branch",
           "serenade _Miner.fix_quality_scale",
           "x0 and Δf from the true N instead of the released N̂",
           lambda: _patched((serenade_miner._Miner, "fix_quality_scale",
                             _quality_scale_from_true_n))),
    Mutant("es-quality-reuses-row-count-stream", SERENADE_ES, DISCRETE, "stream",
           "serenade _Miner.measure → noisy_counts(rng)",
           "the quality tables drawn from the stream state of N̂'s draw",
           lambda: _patched((serenade_miner._Miner, "fix_quality_scale", _snapshot_at_row_count),
                            (serenade_miner._Miner, "measure", _measure_from_snapshot))),
    # ---------------------------------------------------------------- SerenadeCS
    Mutant("cs-discrete-laplace-half-scale", SERENADE_CS, DISCRETE, "scale",
           "mechanisms.discrete_laplace → discrete_laplace_scale",
           "issue 31 example 2: discrete Laplace at half its scale, charged at full ε",
           lambda: _patched((mechanisms, "discrete_laplace_scale", _half_scale))),
    Mutant("cs-draws-hotter", SERENADE_CS, EXPONENTIAL, "hotter",
           "serenade _Miner.factor → extend_cs",
           "every draw at factor 2·ε/(2Δf)",
           lambda: _patched((serenade_miner._Miner, "factor", _factor_times(2.0)))),
    Mutant("cs-rounds-whole-extension-epsilon", SERENADE_CS, EXPONENTIAL, "split",
           "serenade _Miner.min_epsilon('extend') → extend_cs",
           "each round's extension drawn with all of ε_ext (charged ε_ext/(L·I))",
           lambda: _patched((serenade_miner._Miner, "min_epsilon", _role_total("extend")))),
    Mutant("cs-quality-per-redescription-epsilon", SERENADE_CS, DISCRETE, "split",
           "serenade _Miner.measure → noisy_counts",
           "each of the L + 1 measurements drawn with 3 slots (ε_Q/I, charged ε_Q/((L+1)·I))",
           lambda: _patched((serenade_miner, "noisy_counts", _draw_at(3, ("quality",))))),
    Mutant("cs-quality-scale-from-true-n", SERENADE_CS, EXPONENTIAL, "branch",
           "serenade _Miner.fix_quality_scale",
           "x0 and Δf from the true N instead of the released N̂",
           lambda: _patched((serenade_miner._Miner, "fix_quality_scale",
                             _quality_scale_from_true_n))),
    # ---------------------------------------------------------------- custom query
    Mutant("query-half-noise", CUSTOM_QUERY, DISCRETE, "scale",
           "custom_query.release_table → noisy_counts",
           "the 4-cell table drawn at 2·ε, charged ε",
           lambda: _patched((custom_query, "noisy_counts", _draw_at(2)))),
    Mutant("query-supports-at-delta-1", CUSTOM_QUERY, DISCRETE, "sensitivity",
           "custom_query.run_custom_query → query_cells",
           "releases (E11, |q_L|, |q_R|, N) with Δ 1 (one row moves up to 4 of them)",
           lambda: _patched((custom_query, "query_cells", _supports_instead_of_cells))),
    Mutant("query-one-noise-for-all-cells", CUSTOM_QUERY, DISCRETE, "stream",
           "custom_query.release_table → noisy_counts",
           "one noise value added to all four cells",
           lambda: _patched((custom_query, "noisy_counts", _one_noise_for_all))),
    Mutant("query-epsilon-from-true-n", CUSTOM_QUERY, DISCRETE, "branch",
           "custom_query.run_custom_query → release_table",
           "the query's ε chosen from the true N (10 %-of-N accuracy)",
           lambda: _patched((custom_query, "release_table", _epsilon_from_true_n))),
    # ---------------------------------------------------------------- region map
    Mutant("map-half-noise", REGION_MAP, DISCRETE, "scale",
           "regions.release_map → noisy_counts",
           "the map drawn at 2·ε, charged ε",
           lambda: _patched((regions, "noisy_counts", _draw_at(2)))),
    Mutant("map-supports-at-delta-1", REGION_MAP, DISCRETE, "sensitivity",
           "regions.run_region_map → map_histogram",
           "per-cell supports (E10 and E01 also count E11 rows) released with Δ 1",
           lambda: _patched((regions, "map_histogram", _double_counted_supports))),
    Mutant("map-noise-only-in-occupied-cells", REGION_MAP, DISCRETE, "branch",
           "regions.run_region_map → release_map",
           "cells without rows are released as exact zeros (the set of noisy cells is data)",
           lambda: _patched((regions, "release_map", _only_nonempty_cells))),
    Mutant("map-one-cell-noise-tiled", REGION_MAP, DISCRETE, "stream",
           "regions.release_map → noisy_counts",
           "the first cell's noise reused for every cell",
           lambda: _patched((regions, "noisy_counts", _tiled_noise))),
    # ---------------------------------------------------------------- PFS2
    Mutant("pfs2-verification-half-noise", PFS2, DISCRETE, "scale",
           "sequences.miner verification → discrete_laplace",
           "the verification drawn at 2·ε, charged ε",
           lambda: _patched((sequence_miner, "discrete_laplace", _draw_at(2, VERIFY)))),
    Mutant("pfs2-verification-delta-1", PFS2, DISCRETE, "sensitivity",
           "sequences.miner verification → discrete_laplace(sensitivity)",
           "verification of |C′_k| candidates with Δ 1 instead of |C′_k|",
           lambda: _patched((sequence_miner, "discrete_laplace", _sensitivity(1, VERIFY)))),
    Mutant("pfs2-lmax-from-true-longest", PFS2, DISCRETE, "branch",
           "sequences.miner → estimate_lmax",
           "lmax = the longest true record (capped at l1)",
           lambda: _patched((sequence_counting, "length_histogram", _stash_longest),
                            (sequence_miner, "estimate_lmax", _lmax_from_true_longest))),
    Mutant("pfs2-frozen-stream", PFS2, DISCRETE, "stream",
           "sequences.miner._Run.counts_noise(rng)",
           "every release drawn from a copy of the run's generator (the stream never moves)",
           lambda: _patched((sequence_miner._Run, "counts_noise", _counts_noise_frozen))),
    # ---------------------------------------------------------------- PFS2 baseline
    Mutant("baseline-verification-half-noise", PFS2_BASELINE, DISCRETE, "scale",
           "sequences.miner verification → discrete_laplace",
           "the verification drawn at 2·ε, charged ε",
           lambda: _patched((sequence_miner, "discrete_laplace", _draw_at(2, VERIFY)))),
    Mutant("baseline-verification-delta-1", PFS2_BASELINE, DISCRETE, "sensitivity",
           "sequences.miner verification → discrete_laplace(sensitivity)",
           "verification of |C_k| candidates with Δ 1 instead of |C_k|",
           lambda: _patched((sequence_miner, "discrete_laplace", _sensitivity(1, VERIFY)))),
    Mutant("baseline-lf-from-true-lengths", PFS2_BASELINE, DISCRETE, "branch",
           "sequences.miner → frequent_length_bound",
           "L_f and the probes read from the true length counts",
           lambda: _patched((sequence_miner, "length_counts", _stash_length_counts),
                            (sequence_miner, "frequent_length_bound", _bound_from_true_counts))),
    Mutant("baseline-row-count-pre-mining-epsilon", PFS2_BASELINE, DISCRETE, "split",
           "sequences.miner N̂ → discrete_laplace",
           "N̂ drawn with the whole pre-mining ε (4·ε1), charged ε1",
           lambda: _patched((sequence_miner, "discrete_laplace", _draw_at(4, ("N̂",))))),
    # ---------------------------------------------------------------- MC-GEN
    Mutant("mcgen-class-counts-half-noise", MCGEN, DISCRETE, "scale",
           "mcgen.noisy_class_counts → discrete_laplace",
           "N̂_y drawn at 2·ε_Y, charged ε_Y",
           lambda: _patched((mcgen, "discrete_laplace", _draw_at(2)))),
    Mutant("mcgen-sums-delta-1", MCGEN, DISCRETE, "sensitivity",
           "moments.release_cell_statistics sums → discrete_laplace(sensitivity)",
           "cell sums with Δ 1 instead of p_m·L",
           lambda: _patched((moments, "discrete_laplace", _sensitivity(1, ("cell sums",))))),
    Mutant("mcgen-moments-group-epsilon", MCGEN, DISCRETE, "split",
           "moments.release_cell_statistics moments → discrete_laplace",
           "second moments drawn with 3× their part of ε_m",
           lambda: _patched((moments, "discrete_laplace", _draw_at(3, ("second moments",))))),
    Mutant("mcgen-frozen-stream", MCGEN, DISCRETE, "stream",
           "moments.release_cell_statistics → discrete_laplace(rng)",
           "every cell statistic drawn from a copy of the generator",
           lambda: _patched((moments, "discrete_laplace", _frozen_stream()))),
    Mutant("mcgen-correlation-rule-on-true-n", MCGEN_GROUPS, DISCRETE, "branch",
           "mcgen.fit_mcgen_dp → correlation_noise",
           "whether to release correlations decided from the true N, not N̂",
           lambda: _patched((mcgen, "noisy_class_counts", _stash_true_total),
                            (mcgen, "correlation_noise", _correlation_rule_on_true_n))),
    # ---------------------------------------------------------------- MC-GEN's tree
    Mutant("tree-utility-reads-true-marginals", MCGEN_TREE, EXPONENTIAL, "sensitivity",
           "tree._choose_edges → pair_utilities(marginals)",
           "the pair utility predicts independence from the true marginals (Δ ≈ 3, charged 1)",
           lambda: _patched((synthesis_tree, "pair_utilities", _utility_from_true_marginals))),
    Mutant("tree-edge-choice-hotter", MCGEN_TREE, EXPONENTIAL, "hotter",
           "tree._choose_edges → exponential_mechanism",
           "every edge choice drawn at 2·ε_F/(p − 1), charged ε_F/(p − 1)",
           lambda: _patched((synthesis_tree, "exponential_mechanism", _draw_at(2)))),
    Mutant("tree-edge-choice-delta-half", MCGEN_TREE, EXPONENTIAL, "sensitivity",
           "tree._choose_edges → exponential_mechanism(sensitivity)",
           "the edge choice calibrated to (and charged with) Δ = 0.5 instead of 1",
           lambda: _patched((synthesis_tree, "exponential_mechanism", _sensitivity(0.5)))),
    Mutant("tree-edge-table-half-noise", MCGEN_TREE, DISCRETE, "scale",
           "tree.fit_tree edge tables → discrete_laplace",
           "each class × parent × child table drawn at 2·ε_e, charged ε_e",
           lambda: _patched((synthesis_tree, "discrete_laplace",
                             _draw_at(2, ("tree edge table",))))),
    Mutant("tree-marginals-all-features-epsilon", MCGEN_TREE, DISCRETE, "split",
           "tree.fit_tree marginals → discrete_laplace",
           "each of the 3 marginals drawn with the marginals' whole ε (shares sum above ε)",
           lambda: _patched((synthesis_tree, "discrete_laplace",
                             _draw_at(3, (MARGINAL_PREFIX,))))),
    Mutant("tree-histograms-frozen-stream", MCGEN_TREE, DISCRETE, "stream",
           "tree.fit_tree marginals and edge tables → discrete_laplace(rng)",
           "every marginal and edge table drawn from a copy of the generator",
           lambda: _patched((synthesis_tree, "discrete_laplace", _frozen_stream()))),
    # ---------------------------------------------------------------- floor
    Mutant("floor-histograms-half-noise", FLOOR, DISCRETE, "scale",
           "floor.noisy_marginals → discrete_laplace",
           "each class × bin histogram drawn at 2·ε, charged ε",
           lambda: _patched((floor, "discrete_laplace", _draw_at(2, ("histogram of",))))),
    Mutant("floor-histograms-all-features-epsilon", FLOOR, DISCRETE, "split",
           "floor.noisy_marginals → discrete_laplace",
           "each of the 3 histograms drawn with the marginals' whole ε",
           lambda: _patched((floor, "discrete_laplace", _draw_at(3, ("histogram of",))))),
    Mutant("floor-frozen-stream", FLOOR, DISCRETE, "stream",
           "floor.noisy_marginals → discrete_laplace(rng)",
           "every histogram drawn from a copy of the generator",
           lambda: _patched((floor, "discrete_laplace", _frozen_stream()))),
    Mutant("floor-bins-from-distinct-values", FLOOR, DISCRETE, "branch",
           "floor.noisy_marginals → feature_bins",
           "the number of bins from the feature's distinct true values",
           lambda: _patched((floor, "feature_bins", _bins_from_distinct_values))),
    # ---------------------------------------------------------------- mechanisms
    Mutant("sampler-half-scale", MECHANISMS, DISCRETE, "scale",
           "mechanisms.discrete_laplace_sample → _add_discrete_laplace",
           "the exact sampler draws at half the scale it is given",
           lambda: _patched((mechanisms, "_add_discrete_laplace", _sampler_half_scale))),
    Mutant("sampler-scale-fraction-half", MECHANISMS, DISCRETE, "scale",
           "mechanisms.discrete_laplace_scale",
           "Δ/ε computed as Δ/(2ε) for every discrete release",
           lambda: _patched((mechanisms, "discrete_laplace_scale", _half_scale))),
    Mutant("exponential-choice-without-half", MECHANISMS, EXPONENTIAL, "hotter",
           "mechanisms.exponential_choice",
           "the uncharged exponential-mechanism draw at ε/Δ instead of ε/(2Δ)",
           lambda: _patched((mechanisms, "exponential_choice", _exponential_without_half))),
)

__all__ = ["CATALOGUE", "Mutant", "MECHANISMS", "MCGEN_GROUPS", "MCGEN_TREE", "DISCRETE",
           "EXPONENTIAL", "MCMC"]
