"""Entry points of the synthesis family: the pre-charge check and the synthesizer.

:func:`check_runnable` raises before anything is charged if a run could fail later (bad
parameters, feature groups that do not match the schema, a noise scale too large for exact
integer arithmetic). :func:`synthesize` then runs MC-GEN-DP (strict), faithful MC-GEN (NOT
DP) or the floor, spending exactly :func:`~dpcore.synthesis.params.plan_budget`'s total
through the accountant, and returns a :class:`~dpcore.synthesis.results.SynthesisResult`.

Registry hooks (to be added to ``dpcore/registry.py`` when the family is registered):
``params_type = dpcore.synthesis.params:SynthesisParams``,
``result_type = dpcore.synthesis.results:SynthesisResult``,
``plan = dpcore.synthesis.params:plan_budget``,
``check = dpcore.synthesis.miner:check_runnable``,
``miner = dpcore.synthesis.miner:synthesize``.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict
from datetime import UTC, datetime

import numpy as np
from threadpoolctl import threadpool_limits

from dpcore import __version__
from dpcore.data.table.schema import value_text
from dpcore.data.table.table import SynthesisTable, frame_from_encoded
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.policy import EVERYONE, OWNER_ONLY
from dpcore.privacy.randomness import secure_generator
from dpcore.registry import FAITHFUL, STRICT
from dpcore.synthesis.fixedpoint import half_range
from dpcore.synthesis.floor import run_floor
from dpcore.synthesis.mcgen import FAITHFUL_NOT_DP, fit_mcgen_dp, run_faithful, sample_mcgen_dp
from dpcore.synthesis.params import (
    FEATURES,
    FLOOR,
    GROUPS,
    MARGINALS,
    MCGEN,
    MOMENTS,
    TREE,
    SynthesisParams,
    marginal_codes,
    mechanism_shares,
    plan_budget,
    tree_shares,
)
from dpcore.synthesis.results import SynthesisDiagnostics, SynthesisResult

__all__ = ["check_runnable", "check_feature_groups", "synthesize", "MAX_NOISE_SCALE",
           "BLAS_THREADS"]

#: BLAS/LAPACK threads during a run. The linear algebra here is many small eigen-
#: decompositions and matrix products: multi-threaded OpenBLAS gains nothing on them and,
#: on a busy machine (other sessions, other processes), its spinning threads made a batch of
#: 64 eigendecompositions of 50 × 50 matrices take 2 s instead of 0.02 s.
BLAS_THREADS = 1

#: Largest discrete-Laplace scale Δ/ε a strict run may need (dpcore.privacy.mechanisms refuses
#: larger ones: noisy int64 statistics could overflow).
MAX_NOISE_SCALE = 1e15


def _check_groups(table: SynthesisTable, params: SynthesisParams) -> None:
    check_feature_groups(table.schema, params)


def check_feature_groups(schema, params: SynthesisParams) -> None:
    """Raise ParameterError unless the owner's ``feature_groups`` (if given) name every
    feature of the public ``schema`` (a :class:`~dpcore.data.table.schema.TableSchema`)
    exactly once. Reads the public schema only, so a caller can check before it prices
    the run."""
    if not params.groups_given:
        return
    names = set(schema.feature_names)
    listed = [n for g in params.feature_groups for n in g]
    unknown = sorted(set(listed) - names)
    if unknown:
        raise ParameterError(f"feature_groups name unknown feature(s): {', '.join(unknown)}; "
                             f"the schema declares {', '.join(schema.feature_names)}")
    missing = [n for n in schema.feature_names if n not in set(listed)]
    if missing:
        raise ParameterError("feature_groups must cover every feature once; missing: "
                             + ", ".join(missing))


def _check_scales(table: SynthesisTable, params: SynthesisParams) -> None:
    """The largest noise scale any group could need stays within MAX_NOISE_SCALE.

    Worst case over every partition into groups: the moment sensitivity of all p features
    together, (C(p, 2) + p)·L², against the smallest group share (one feature).
    """
    p = table.schema.n_features
    worst_delta = (p * (p - 1) // 2 + p) * half_range(params.fixed_point_bits) ** 2
    shares = mechanism_shares(params, [1] * p)
    smallest = min(s.epsilon_nano for s in shares if s.part == MOMENTS
                   and s.phase in (GROUPS, FEATURES))
    if worst_delta / (smallest / 1e9) > MAX_NOISE_SCALE:
        raise ParameterError(
            f"ε = {params.epsilon:g} is too small for {p} features at {params.fixed_point_bits} "
            "fixed-point bits: the second moments' integer noise could overflow. Lower "
            "fixed_point_bits, give fewer or smaller feature groups, or raise ε.")


def check_runnable(table: SynthesisTable, params: SynthesisParams) -> None:
    """Raise (ParameterError) before any charge if this run could fail; reads no private value.

    Checks the parameters and the budget plan, the owner's feature groups against the
    schema, and (strict MC-GEN) that every noise scale fits exact int64 arithmetic.
    """
    params.validate()
    plan_budget(params)
    mechanism_shares(params, [1] * table.schema.n_features)
    _check_groups(table, params)
    if params.algorithm == MCGEN and params.mode == STRICT:
        if not params.groups_given and table.schema.n_features < 3:
            raise ParameterError(
                f"with {table.schema.n_features} feature(s) there is only one possible "
                "grouping (all features together): give feature_groups, which costs nothing, "
                "instead of paying ε_F for noisy correlations")
        _check_scales(table, params)
        if params.structure == TREE and not params.groups_given:
            tree_shares(params, table.schema.n_features,
                        marginal_codes(table.schema, params.histogram_bins))


def _progress(progress, fraction: float, message: str) -> None:
    if progress is not None:
        progress(float(min(max(fraction, 0.0), 1.0)), message)


def synthesize(table: SynthesisTable, params: SynthesisParams, *,
               rng: np.random.Generator | None = None,
               accountant: PrivacyAccountant | None = None, run_id: str | None = None,
               seed: int | None = None, progress=None, dataset: str | None = None
               ) -> SynthesisResult:
    """Generate a synthetic table from ``table`` under ε-DP (strict) or as published (faithful).

    Parameters
    ----------
    table : SynthesisTable
        Private data; only DP releases leave this function in strict mode (plus owner-only
        ``diagnostics``).
    params : SynthesisParams
        Validated here; :func:`~dpcore.synthesis.params.plan_budget` is what gets spent.
    rng : numpy.random.Generator, optional
        Source of all randomness. Default: fresh ChaCha20 keyed from the OS (real releases).
        Pass a seeded generator only in tests and labelled demos, and give ``seed`` so the result
        records it.
    accountant : PrivacyAccountant, optional
        Caps the run's spending (normally at what the ledger charged). Default: one capped
        at the plan's total.
    run_id : str, optional
        Stored in the result (default: a fresh id).
    seed : int, optional
        Recorded in the result (public demo data only).
    progress : callable(fraction, message), optional
        Called between phases (fraction in [0, 1]).
    dataset : str, optional
        The dataset name stored in the result (default: the schema's name).

    Returns
    -------
    SynthesisResult
    """
    check_runnable(table, params)
    # threadpool_limits is process-wide: a concurrent run may briefly see the limit lifted
    # when this one ends (slower, never wrong).
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
        return _synthesize(table, params, rng=rng, accountant=accountant, run_id=run_id,
                           seed=seed, progress=progress, dataset=dataset)


def _marginals_released(schema, hists) -> list[dict]:
    """The floor's noisy class × bin histograms as stored (ε-DP releases, public bins)."""
    out = []
    for f, hist in zip(schema.features, hists):
        entry = {"feature": f.name,
                 "counts": {value_text(c): [int(x) for x in row]
                            for c, row in zip(schema.classes, hist)}}
        if f.is_numeric:
            lo, hi = f.bounds
            entry["edges"] = [float(x) for x in np.linspace(lo, hi, hist.shape[1] + 1)]
        else:
            entry["levels"] = [value_text(v) for v in f.levels]
        out.append(entry)
    return out


def _tree_info(schema, tree, shares) -> list[dict]:
    """The tree structure's edges as released (public: chosen under DP), one entry each."""
    p = schema.n_features
    return [{"features": [schema.features[a].name, schema.features[b].name],
             "epsilon_nano": sum(s.epsilon_nano for s in shares
                                 if s.phase == GROUPS and s.index == p + e),
             "model": "tree edge (class × parent × child table)", "bins": int(tree.bins),
             "marginal_bins": int(tree.fine_bins)}
            for e, (a, b) in enumerate(tree.edges)]


def _synthesize(table, params, *, rng, accountant, run_id, seed, progress, dataset
                ) -> SynthesisResult:
    total = sum(s.epsilon_nano for s in plan_budget(params))
    if accountant is None:
        accountant = PrivacyAccountant(total)
    if rng is None:
        rng = secure_generator()   # no generator given: the private-data source
    schema = table.schema
    calls_before, spent_before = len(accountant.calls), accountant.spent_nano
    timings: dict[str, float] = {}
    started = time.perf_counter()
    feature_distances = None
    not_dp: list[str] = []
    true_cells: list[dict] = []
    noisy_marginals = None
    if params.algorithm == FLOOR:
        released: dict = {}
        encoded, labels, n_hat = run_floor(table, params, rng=rng, accountant=accountant,
                                           progress=progress, timings=timings,
                                           released=released)
        noisy_marginals = _marginals_released(schema, released["histograms"])
        groups = [[f] for f in schema.feature_names]
        shares = mechanism_shares(params, [1] * schema.n_features)
        group_info = [{"features": [f], "epsilon_nano": sum(
            s.epsilon_nano for s in shares if s.phase == MARGINALS and s.index == j)}
            for j, f in enumerate(schema.feature_names)]
        counts = {value_text(c): int(max(round(float(n)), 0))
                  for c, n in zip(schema.classes, n_hat)}
        clip = True
    elif params.mode == FAITHFUL:
        if table.n_rows == 0:
            raise ParameterError("faithful MC-GEN needs at least one record")
        out = run_faithful(table, params, rng=rng, accountant=accountant, progress=progress,
                           timings=timings)
        encoded, labels = out.encoded, out.labels
        names = schema.encoded_names()
        groups = [[names[c] for c in g] for g in out.groups]
        shares = mechanism_shares(params, [len(g) for g in out.groups])
        group_info = [{"features": g, "epsilon_nano": sum(s.epsilon_nano for s in shares
                                                          if s.phase == GROUPS and s.index == m),
                       "clusters": {k: len(v) for k, v in out.clusters[m].items()}}
                      for m, g in enumerate(groups)]
        counts = {value_text(c): int(n) for c, n in zip(schema.classes, table.class_counts())}
        true_cells = out.clusters
        not_dp = list(FAITHFUL_NOT_DP)
        clip = False
    else:
        model = fit_mcgen_dp(table, params, rng=rng, accountant=accountant,
                             progress=progress, timings=timings)
        gen_started = time.perf_counter()
        encoded, labels = sample_mcgen_dp(model, rng=rng, progress=progress)
        timings["generate"] = time.perf_counter() - gen_started
        groups = [[schema.features[f].name for f in lay.features] for lay in model.layouts]
        shares = model.shares
        group_info = [] if model.tree is None else _tree_info(schema, model.tree, shares)
        if model.tree is not None:
            groups = [list(schema.feature_names)]
            noisy_marginals = _marginals_released(schema, model.tree.marginals)
        for m, lay in enumerate(model.layouts):
            group_info.append({
                "features": groups[m],
                "epsilon_nano": sum(s.epsilon_nano for s in shares
                                    if s.phase == GROUPS and s.index == m),
                "cells": {value_text(c): model.grids[m][y].n_cells
                          for y, c in enumerate(schema.classes)},
                "grid": {value_text(c): [schema.features[lay.features[pos]].name
                                         for pos in model.grids[m][y].features]
                         for y, c in enumerate(schema.classes)},
                "model": "histogram" if model.histogram[m] else "gaussian"})
        counts = {value_text(c): int(n) for c, n in zip(schema.classes,
                                                          model.rows_per_class())}
        if model.feature_distances is not None:
            feature_distances = np.round(model.feature_distances, 6).tolist()
        true_cells = model.true_cells
        clip = True
    decode_started = time.perf_counter()
    frame = frame_from_encoded(schema, encoded, labels, clip=clip)
    timings["decode"] = time.perf_counter() - decode_started
    timings["total"] = time.perf_counter() - started
    _progress(progress, 1.0, "done")
    calls = [asdict(c) for c in accountant.calls[calls_before:]]
    diagnostics = SynthesisDiagnostics(
        clipped=dict(table.clipped),
        true_class_counts={value_text(c): int(n) for c, n in zip(schema.classes,
                                                                 table.class_counts())},
        true_rows=table.n_rows, true_cells=true_cells,
        phase_seconds={k: round(v, 6) for k, v in timings.items()})
    return SynthesisResult(
        run_id=run_id or uuid.uuid4().hex, dataset=dataset or schema.name,
        algorithm=params.algorithm, mode=params.mode, params=params.to_dict(),
        version=__version__, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        epsilon_nano=int(total), spent_nano=int(accountant.spent_nano - spent_before),
        synthetic=frame, noisy_class_counts=counts, feature_groups=groups, groups=group_info,
        mechanism_calls=calls, feature_distances=feature_distances, not_dp=not_dp,
        noisy_marginals=noisy_marginals, seed=seed, diagnostics=diagnostics,
        audience=OWNER_ONLY if not_dp and not schema.public_demo else EVERYONE)
