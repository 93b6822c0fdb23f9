"""Experiment harness (paper Tables 2–5, 7–8): OWNER / TEACHING ONLY, NOT private.

:func:`run_experiment` runs each algorithm × ε cell many times on one dataset,
scores every released redescription against its true statistics
(:func:`dpcore.redescriptions.evaluate.evaluate`, which reads the raw data), and writes
``report.md``, ``metrics.json``, three self-contained HTML plots and the
released run results (``runs/*.json``) into an output folder.

Sandbox budget
--------------
Every run goes through the run path's executor without a ledger
(:func:`dpcore.executor.run_sandbox`: the algorithm's ``prepare``, then its ``mine`` with an
in-memory :class:`~dpcore.privacy.accountant.PrivacyAccountant` capped at the run's planned
cost).
The harness never opens, reads or charges a ledger: its spending is a sandbox
for measuring the methods, not a release. Because the metrics use true
statistics, the report must only be shown to data owners or on public demo data.

Pruning thresholds are either a fixed number or ``"auto"``:
:func:`dpcore.redescriptions.pruning.suggest_threshold` per algorithm × ε on the pooled
released runs of that cell (released values only, 0 ε).

Seeds: run ``i`` of every cell uses ``numpy.random.default_rng(seed + i)``.

Mode
----
``mode`` is strict by default (every step ε-DP). ``faithful`` runs the papers' code as
written (float Laplace, reads the true N, not ε-DP), so that researchers can run the
papers' grid as the papers did. It is allowed here, though faithful runs on private data are
otherwise the owner's only, because the harness is itself owner/teaching only and its
report is already NOT private; the report's title and ``metrics.json`` (``mode``) name the
mode. In faithful mode MCMCTreePair always samples by the paper's pair score, so a preset
that asks for another score is refused.

Equal ε
-------
Every algorithm of one ε section spends exactly that total ε per run (strict
mode), however its plan divides it: the tree miners among trees and noisy
leaf tables, SerenadeES / SerenadeCS among the initial pairs, the extensions and
the noisy quality counts (0.45 / 0.45 / 0.1 of ε by default). The report and the
Mann–Whitney comparisons therefore compare tree miners and Serenade at equal ε.
In faithful mode every algorithm runs the papers' nominal split of that ε; the tree
miners' extractions then really cost 1.5 times their share (three Laplace(2/ε_x)
histograms), which the sandbox accountant charges, as the ledger would.
Serenade runs release no trees; :func:`dpcore.redescriptions.evaluate.evaluate` scores their
literal queries directly.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from dpcore import __version__
from dpcore.data.dataset import TwoViewDataset
from dpcore.data.loading import load_dataset
from dpcore.errors import ParameterError
from dpcore.executor import run_sandbox
from dpcore.experiments.metrics import (
    ScoredRedescription,
    compare_methods,
    false_positives,
    score_run,
    split_by_threshold,
    summarize,
)
from dpcore.experiments.report import jsonable, write_report
from dpcore.redescriptions.evaluate import evaluate
from dpcore.redescriptions.intervals import (
    DEFAULT_COVERAGE,
    EXCEEDANCE_RATE,
    redescription_intervals,
)
from dpcore.redescriptions.params import RedescriptionParams, TreeParams, family_type
from dpcore.redescriptions.pruning import suggest_threshold
from dpcore.redescriptions.results import RunResult
from dpcore.registry import ALTEXPM, FAITHFUL, MODE_LABELS, MODES, PAPER_SCORE, STRICT, presets

__all__ = ["ALGORITHM_PRESETS", "REFERENCE", "REFERENCE_LABEL", "algorithm_params",
           "nonprivate_reference", "run_experiment"]

Progress = Callable[[int, int, str], None]

#: Algorithm specs accepted by the harness (``--algorithms``): the registry's presets whose
#: names start with their algorithm's key, e.g. ``altexpm-stable`` (InTr = 4, RMIter = 1).
ALGORITHM_PRESETS = presets()
REFERENCE = "nonprivate"
REFERENCE_LABEL = "ε = ∞ (non-private reference; owner/teaching only)"
REFERENCE_EPSILON = 1e9

METRIC_COLUMNS = [
    ("share_with_output", "% runs with output"),
    ("n_before", "# before pruning"),
    ("n_after", "# after pruning"),
    ("share_significant_kept", "% kept truly significant"),
    ("spearman_rho", "Spearman ρ"),
    ("spearman_p", "ρ p-value"),
    ("median_true_j", "median true J"),
    ("median_abs_error", "median |noisy J − true J|"),
    ("fp_pruned", "FP pruned"),
    ("fp_kept", "FP kept"),
    ("exceedance_kept", "% kept off by > tol."),
    ("coverage_jaccard", "% J intervals covering"),
    ("coverage_kept_jaccard", "% kept J intervals covering"),
    ("coverage_support_both", "% |E11| intervals covering"),
    ("coverage_support_left", "% |qL| intervals covering"),
    ("coverage_support_right", "% |qR| intervals covering"),
    ("coverage_pvalue", "% p intervals covering"),
]


#: The paper's fixed pruning thresholds (noisy support), by dataset (§4.6).
PAPER_THRESHOLDS = {"NPAS": 200, "MAMMAL": 500, "CMS": 1000, "MIMIC-III": 2000}


def _check_mode(mode) -> str:
    """``mode`` if it is one of :data:`dpcore.registry.MODES`, else a ParameterError naming it."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def algorithm_params(spec: str, epsilon: float, *, mc_iter: int | None = None,
                     mode: str = STRICT) -> RedescriptionParams:
    """The validated parameters (the algorithm's family type) of one algorithm spec at
    ``epsilon``.

    Parameters
    ----------
    spec : str
        A key of :data:`ALGORITHM_PRESETS`.
    epsilon : float
        Total ε of one run.
    mc_iter : int, optional
        MCIter override; applies to the tree miners only (Serenade runs no chain and
        keeps the default, so its recorded parameters stay what it ran).
    mode : str
        Privacy mode, strict (default, ε-DP) or faithful (the papers' code, NOT ε-DP).
        A faithful tree run records the paper's pair score, the one it samples by; a
        preset that sets another score is refused in faithful mode.
    """
    _check_mode(mode)
    if spec not in ALGORITHM_PRESETS:
        raise ParameterError(f"unknown algorithm {spec!r}; choose from "
                             f"{', '.join(ALGORITHM_PRESETS)}")
    algorithm, setting = ALGORITHM_PRESETS[spec]
    if mode == FAITHFUL and setting.overrides.get("tree_score", PAPER_SCORE) != PAPER_SCORE:
        raise ParameterError(f"{spec!r} sets tree_score = {setting.overrides['tree_score']!r}, "
                             f"a {STRICT}-mode choice; {FAITHFUL} mode always samples by the "
                             f"paper's score ({PAPER_SCORE!r})")
    family = family_type(algorithm.key)
    params = replace(family(algorithm=algorithm.key), epsilon=float(epsilon),
                     **setting.overrides)
    if mode == FAITHFUL:
        params = replace(params, mode=FAITHFUL)
        if "tree_score" in family.FIELDS:
            params = replace(params, tree_score=PAPER_SCORE)
    if mc_iter is not None and not params.is_serenade:
        params = replace(params, mc_iter=int(mc_iter))
    return params.validate()


def reference_params() -> TreeParams:
    """AltExpM (InTr = 4, RMIter = 1) at ε = 10⁹: greedy trees, exact counts in practice."""
    return TreeParams(algorithm=ALTEXPM, epsilon=REFERENCE_EPSILON, in_tr=4,
                      rm_iter=1).validate()


def nonprivate_reference(dataset: TwoViewDataset, seed: int) -> RunResult:
    """Non-private reference run, ε = ∞ (owner/teaching only, NOT private).

    AltExpM-like trees per initial target with greedy choices and exact counts: with
    ε = 10⁹ the exponential mechanism is an argmax and the Laplace noise on the counts
    is 0 (discrete Laplace at scale 10⁻⁹). Only the initial targets are random
    (``default_rng(seed)``).
    Uses an in-memory accountant, never a ledger.
    """
    return run_sandbox(reference_params(), dataset, rng=np.random.default_rng(seed), seed=seed)


# ----------------------------------------------------------------------------- runs

_worker_datasets: dict[str, TwoViewDataset] = {}


def _one_run(dataset: TwoViewDataset, spec: str, epsilon: float, seed: int,
             mc_iter: int | None, mode: str = STRICT
             ) -> tuple[RunResult, list[ScoredRedescription]]:
    if spec == REFERENCE:
        result = nonprivate_reference(dataset, seed)
    else:
        params = algorithm_params(spec, epsilon, mc_iter=mc_iter, mode=mode)
        # Sandbox budget: the executor's in-memory accountant capped at this run's plan, no
        # ledger.
        result = run_sandbox(params, dataset, rng=np.random.default_rng(seed), seed=seed)
    # intervals from the release only (0 ε); scored against the truth here (NOT private),
    # over the population the release counts (evaluate's as_released)
    return result, score_run(result, evaluate(result, dataset, as_released=True),
                             redescription_intervals(result))


def _worker(task: tuple) -> tuple[str, list[ScoredRedescription]]:
    """Process-pool entry point: load the dataset by path once per worker."""
    path, spec, epsilon, seed, mc_iter, mode = task
    if path not in _worker_datasets:
        _worker_datasets[path] = load_dataset(path)
    result, scored = _one_run(_worker_datasets[path], spec, epsilon, seed, mc_iter, mode)
    return result.to_json(), scored


def _dask_trials(scheduler, path: str, tasks: list, seed: int, mc_iter: int | None,
                 processes: int, mode: str = STRICT):
    """Yield ``(task, result_json, scored)`` as the trials finish on a Dask cluster.

    ``scheduler``: a connected ``distributed.Client``, ``"local"`` (a LocalCluster of
    ``processes`` workers) or an address. Each trial is submitted once under a key naming
    its cell and run index; Dask reschedules it under that key if its worker dies.
    """
    from contextlib import nullcontext

    from distributed import Client, as_completed

    from dpcore.distributed.cluster import open_client, scheduler_address

    if isinstance(scheduler, Client):
        context = nullcontext(scheduler)
    else:
        context = open_client(scheduler_address(str(scheduler), use_env=False),
                              workers=max(2, processes))
    with context as client:
        futures = {client.submit(_worker, (path, spec, eps, seed + i, mc_iter, mode),
                                 key=f"dpcore-trial-{_cell_key(spec, eps)}-{i}", pure=False):
                   (spec, eps, i) for spec, eps, i in tasks}
        for fut in as_completed(list(futures)):
            text, scored = fut.result()
            task = futures[fut]
            fut.release()
            yield task, text, scored


def _parse_prune(prune) -> float | None:
    """None for "auto", else the threshold as a float ≥ 0."""
    if isinstance(prune, str) and prune.strip().lower() == "auto":
        return None
    try:
        value = float(prune)
    except (TypeError, ValueError):
        raise ParameterError(f"prune must be 'auto' or a number ≥ 0; got {prune!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ParameterError(f"prune must be 'auto' or a number ≥ 0; got {prune!r}")
    return value


def _check_inputs(algorithms, epsilons, runs, mode: str = STRICT
                  ) -> tuple[list[str], list[float], list[int]]:
    _check_mode(mode)
    algorithms = list(algorithms)
    if not algorithms:
        raise ParameterError("give at least one algorithm")
    for spec in algorithms:
        algorithm_params(spec, 1.0, mode=mode)    # unknown, or a score faithful cannot run
    if len(set(algorithms)) != len(algorithms):
        raise ParameterError("an algorithm is listed twice")
    epsilons = [float(e) for e in epsilons]
    if not epsilons:
        raise ParameterError("give at least one ε")
    for e in epsilons:
        if not math.isfinite(e) or e <= 0:
            raise ParameterError(f"every ε must be a finite number > 0; got {e!r}")
    if len(set(epsilons)) != len(epsilons):
        raise ParameterError("an ε is listed twice")
    runs = list(runs)
    if len(runs) == 1:
        runs = runs * len(epsilons)
    if len(runs) != len(epsilons):
        raise ParameterError(f"--runs needs one value or one per ε: got {len(runs)} run "
                             f"counts for {len(epsilons)} ε values")
    for n in runs:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ParameterError(f"every run count must be an integer ≥ 1; got {n!r}")
    return algorithms, epsilons, runs


def _versions() -> dict:
    import numba
    import plotly
    import scipy
    return {"dpcore": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
            "plotly": plotly.__version__}


def run_experiment(dataset, algorithms: list[str], epsilons: list[float], runs: list[int],
                   prune: str | float, out_dir, *, seed: int = 0, processes: int = 1,
                   progress: Progress | None = None, mc_iter: int | None = None,
                   reference_runs: int | None = None, tolerance: float = 0.1,
                   command: str | None = None, scheduler=None, mode: str = STRICT) -> dict:
    """Run the experiment grid and write the report; return the metrics dict.

    Parameters
    ----------
    dataset : TwoViewDataset or path
        The data (a path is needed when ``processes > 1``: each worker loads it).
    algorithms : list of str
        Keys of :data:`ALGORITHM_PRESETS` (tree miners and Serenade; every run of one
        ε spends that same total ε, see the module docstring).
    epsilons : list of float
        ε values (each > 0).
    runs : list of int
        Runs per ε, aligned with ``epsilons`` (one value broadcasts).
    prune : "auto" or float
        Noisy-support threshold; "auto" = ``suggest_threshold`` per algorithm × ε on
        the pooled released runs of the cell.
    out_dir : path
        Receives ``metrics.json``, ``report.md``, ``noisy_vs_true.html``,
        ``true_j_hist.html``, ``abs_error_box.html`` and ``runs/*.json``.
    seed : int
        Run ``i`` of each cell uses ``default_rng(seed + i)``.
    processes : int
        > 1: a 'spawn' process pool runs the trials.
    progress : callable(done, total, message), optional
    mc_iter : int, optional
        Override MCIter of the tree miners (tests, quick looks); Serenade ignores it.
    reference_runs : int, optional
        Runs of the ε = ∞ reference (default: the largest run count; 0 = none).
    scheduler : str or distributed.Client, optional
        Run the trials on a Dask cluster instead: ``"local"`` (a LocalCluster of
        ``max(2, processes)`` worker processes, one thread each), a scheduler address
        (``tcp://host:8786``) or a connected client. Each trial is one task keyed by its
        cell and run index; a trial whose worker dies is rescheduled under the same key by
        Dask and, being seeded (``seed + i``), returns what it would have returned (each
        trial is recorded once). Needs the dataset's path, readable by every worker.
        Default None: in-process (``processes == 1``) or the spawn pool.
    mode : str
        ``strict`` (default: every run ε-DP) or ``faithful`` (the papers' code, NOT ε-DP;
        allowed because this harness is owner/teaching only and its output is NOT private
        anyway). Checked before anything runs; the report's title and ``metrics.json``
        (``mode``, ``mode_label``) name it. The ε = ∞ reference is the same in both.

    The harness never touches a ledger (sandbox budget: one in-memory accountant per
    run). The output is NOT private: it uses true statistics.
    """
    algorithms, epsilons, runs = _check_inputs(algorithms, epsilons, runs, mode)
    threshold_fixed = _parse_prune(prune)
    _check_run_options(dataset, processes, mc_iter, scheduler)
    n_ref = max(runs) if reference_runs is None else int(reference_runs)
    path, dataset_obj = _path_and_data(dataset, processes, scheduler)

    tasks = _tasks(algorithms, epsilons, runs, n_ref)
    total = len(tasks)
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    cells: dict[tuple, dict[int, tuple[RunResult, list]]] = {}

    def record(task, result, scored, done):
        spec, eps, i = task
        cells.setdefault((spec, eps), {})[i] = (result, scored)
        (out / "runs" / f"{_cell_key(spec, eps)}__run{i}.json").write_text(
            result.to_json(), encoding="utf-8")
        if progress:
            progress(done, total, f"{_label(spec)} ε = {_eps_text(eps)} run {i + 1}")

    trials = _trials(tasks, scheduler=scheduler, path=path, dataset_obj=dataset_obj, seed=seed,
                     mc_iter=mc_iter, processes=processes, mode=mode)
    for done, (task, result, scored) in enumerate(trials, 1):
        record(task, result, scored, done)

    cell_rows = _cell_rows(cells, threshold_fixed, tolerance)
    metrics = {
        "note": _not_private_note(mode),
        "mode": mode, "mode_label": MODE_LABELS[mode],
        "command": command,
        "parameters": {
            "dataset": path or dataset_obj.schema.name,
            "algorithms": algorithms, "epsilons": epsilons, "runs": runs,
            "prune": "auto" if threshold_fixed is None else threshold_fixed,
            "tolerance": tolerance, "interval_coverage": DEFAULT_COVERAGE,
            "exceedance_rate": EXCEEDANCE_RATE, "seed": seed, "processes": processes,
            "mc_iter": mc_iter, "reference_runs": n_ref, "mode": mode,
            **_params_record(algorithms, epsilons[0], mc_iter, mode),
        },
        "versions": _versions(),
        "seconds": time.perf_counter() - started,
        "cells": cell_rows,
        "comparisons": _comparisons(cells, cell_rows, algorithms, epsilons),
        "threshold_comparison": _threshold_comparison(cells, tolerance),
    }
    write_report(out, metrics, _report(metrics, algorithms, epsilons))
    _plots(cells, cell_rows, out)
    return metrics


def _tasks(algorithms: list[str], epsilons: list[float], runs: list[int], n_ref: int
           ) -> list[tuple]:
    """``(algorithm, ε, run index)`` of every trial, the ε = ∞ reference's last."""
    tasks = [(spec, eps, i) for eps, n in zip(epsilons, runs) for spec in algorithms
             for i in range(n)]
    return tasks + [(REFERENCE, math.inf, i) for i in range(n_ref)]


def _not_private_note(mode: str) -> str:
    return ("NOT private: metrics use true statistics (owner/teaching only). Sandbox "
            "budget: every run had its own in-memory accountant; no ledger was used."
            + ("" if mode == STRICT else " Faithful mode: the runs themselves were not "
               "ε-DP (the papers' code as written)."))


def _path_and_data(dataset, processes: int, scheduler):
    """``(resolved path or None, loaded dataset or None)``: in-process runs load it once,
    workers load it from the path."""
    path = None
    if isinstance(dataset, (str, Path)):
        path = str(Path(dataset).resolve())
        dataset_obj = load_dataset(path) if processes == 1 and scheduler is None else None
    else:
        dataset_obj = dataset
        if processes > 1:
            raise ParameterError("processes > 1 needs the dataset's path, not a loaded dataset")
    return path, dataset_obj


def _trials(tasks, *, scheduler, path, dataset_obj, seed, mc_iter, processes, mode):
    """``(task, result, scored)`` of every trial, in process, on a spawn pool or on Dask."""
    if scheduler is not None:
        for task, text, scored in _dask_trials(scheduler, path, tasks, seed, mc_iter,
                                               processes, mode):
            yield task, RunResult.from_json(text), scored
    elif processes == 1:
        for spec, eps, i in tasks:
            result, scored = _one_run(dataset_obj, spec, eps, seed + i, mc_iter, mode)
            yield (spec, eps, i), result, scored
    else:
        with ProcessPoolExecutor(max_workers=processes, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_worker, (path, spec, eps, seed + i, mc_iter, mode))
                       for spec, eps, i in tasks]
            for task, fut in zip(tasks, futures):
                text, scored = fut.result()
                yield task, RunResult.from_json(text), scored


def _params_record(algorithms: list[str], epsilon: float, mc_iter, mode: str) -> dict:
    """The parameters every algorithm ran with (ε left out: it varies) and the reference's."""
    return {"mining_params": {spec: algorithm_params(spec, epsilon, mc_iter=mc_iter, mode=mode)
                              .to_dict() | {"epsilon": None} for spec in algorithms},
            "reference_params": reference_params().to_dict()}


def _check_run_options(dataset, processes, mc_iter, scheduler) -> None:
    """Refuse bad run options of :func:`run_experiment` before anything runs."""
    if not isinstance(processes, int) or processes < 1:
        raise ParameterError(f"processes must be an integer ≥ 1; got {processes!r}")
    if mc_iter is not None:
        TreeParams(mc_iter=mc_iter).validate()  # MCIter range (used by tree specs only)
    if scheduler is not None:
        if not isinstance(dataset, (str, Path)):
            raise ParameterError("a Dask scheduler needs the dataset's path, not a loaded "
                                 "dataset (every worker loads it)")
        if isinstance(scheduler, str):
            from dpcore.distributed.cluster import scheduler_address

            scheduler_address(scheduler, use_env=False)  # a bad address: refused up front


def _cell_rows(cells: dict, threshold_fixed: float | None, tolerance: float) -> list[dict]:
    """One metrics row per (algorithm, ε) cell, at the fixed or suggested threshold."""
    cell_rows = []
    for (spec, eps), by_run in cells.items():
        ordered = [by_run[i] for i in sorted(by_run)]
        results = [r for r, _ in ordered]
        scored_runs = [s for _, s in ordered]
        threshold = (suggest_threshold(results, tolerance) if threshold_fixed is None
                     else threshold_fixed)
        cell_rows.append({
            "algorithm": spec, "label": _label(spec),
            "epsilon": None if math.isinf(eps) else eps,
            "runs": len(results), "threshold": threshold,
            "run_files": [f"runs/{_cell_key(spec, eps)}__run{i}.json" for i in sorted(by_run)],
            "summary": summarize(scored_runs, threshold, tolerance=tolerance),
        })
    return cell_rows


def _threshold_comparison(cells: dict, tolerance: float) -> list[dict]:
    """Per cell: what the suggested and the paper's thresholds keep and prune."""
    threshold_comparison = []
    for (spec, eps), by_run in cells.items():
        results = [by_run[i][0] for i in sorted(by_run)]
        pooled = [s for i in sorted(by_run) for s in by_run[i][1]]
        candidates = {"suggested": suggest_threshold(results, tolerance),
                      **{f"{name} {value}": float(value)
                         for name, value in PAPER_THRESHOLDS.items()}}
        row = {"algorithm": spec, "epsilon": None if math.isinf(eps) else eps}
        for name, value in candidates.items():
            kept, pruned = split_by_threshold(pooled, value)
            fp_pruned, fp_kept = false_positives(kept, pruned)
            row[name] = {"threshold": value, "kept": len(kept), "false_positives_kept": fp_kept,
                         "significant_pruned": len(pruned) - fp_pruned}
        threshold_comparison.append(row)
    return threshold_comparison


def _comparisons(cells: dict, cell_rows: list[dict], algorithms: list[str],
                 epsilons: list[float]) -> dict:
    """Per ε: the algorithms' kept redescriptions compared (true J, absolute error)."""
    comparisons = {}
    for eps in epsilons:
        kept_by = {}
        for spec in algorithms:
            row = _find(cell_rows, spec, eps)
            pooled = [s for _, sc in sorted(cells[(spec, eps)].items()) for s in sc[1]]
            kept_by[spec], _ = split_by_threshold(pooled, row["threshold"])
        comparisons[_eps_text(eps)] = {
            "true_j_kept": jsonable(compare_methods(
                {k: [s.true_jaccard for s in v] for k, v in kept_by.items()}, True)),
            "abs_error_kept": jsonable(compare_methods(
                {k: [abs(s.noisy_jaccard - s.true_jaccard) for s in v]
                 for k, v in kept_by.items()}, False)),
        }
    return comparisons


# ----------------------------------------------------------------------------- helpers

def _label(spec: str) -> str:
    if spec == REFERENCE:
        return REFERENCE_LABEL
    return ALGORITHM_PRESETS[spec][1].label if spec in ALGORITHM_PRESETS else spec


def _eps_text(eps: float) -> str:
    return "∞" if math.isinf(eps) else f"{eps:g}"


def _cell_key(spec: str, eps: float) -> str:
    return f"{spec}__eps{'inf' if math.isinf(eps) else format(eps, 'g')}"


def _find(rows, spec, eps):
    want = None if math.isinf(eps) else eps
    return next(r for r in rows if r["algorithm"] == spec and r["epsilon"] == want)


def _fmt(key: str, value) -> str:
    if value is None:
        return "–"
    if key.startswith(("share", "coverage", "exceedance")):
        return f"{100 * value:.1f}"
    if isinstance(value, int):
        return str(value)
    if key == "spearman_p":
        return f"{value:.2g}"
    return f"{value:.3f}"


def _table(rows) -> list[str]:
    lines = ["| algorithm | runs | threshold | " + " | ".join(h for _, h in METRIC_COLUMNS) + " |",
             "|" + "---|" * (3 + len(METRIC_COLUMNS))]
    for r in rows:
        s = r["summary"]
        lines.append(f"| {r['label']} | {r['runs']} | {r['threshold']:.4g} | "
                     + " | ".join(_fmt(k, s[k]) for k, _ in METRIC_COLUMNS) + " |")
    return lines


def _report(metrics: dict, algorithms, epsilons) -> str:
    p = metrics["parameters"]
    rows = metrics["cells"]
    mode = metrics["mode"]
    lines = [f"# Experiment report — {mode} mode", "",
             "**NOT private — owner/teaching only.** The metrics compare released (noisy) "
             "statistics with true statistics read from the raw data. Sandbox budget: each "
             "run had its own in-memory accountant; no ledger was read or charged.", "",
             f"- mode: {metrics['mode_label']}"
             + ("" if mode == STRICT else " (the runs themselves are NOT ε-DP)"),
             f"- dataset: `{p['dataset']}`",
             f"- command: `{metrics['command']}`" if metrics["command"] else "- command: (API)",
             "- pruning: " + (f"auto (suggested threshold per algorithm × ε, tolerance "
                              f"{p['tolerance']:g}, promised rate of kept beyond it "
                              f"{p.get('exceedance_rate', 0.1):.0%}, from released values "
                              f"only)"
                              if p["prune"] == "auto" else f"noisy support ≥ {p['prune']:g}"),
             f"- intervals: {p.get('interval_coverage', 0.9):.0%} two-sided, selection-aware, "
             "from released values only (dpcore.redescriptions.intervals); "
             "'covering' = the interval holds the true value",
             f"- seed: {p['seed']} (run i uses seed + i); runs per ε: "
             + ", ".join(f"ε = {e:g}: {n}" for e, n in zip(p["epsilons"], p["runs"])),
             "- versions: " + ", ".join(f"{k} {v}" for k, v in metrics["versions"].items()),
             f"- wall time: {metrics['seconds']:.1f} s", "",
             "Columns: shares in %; counts pooled over runs; ρ, median true J and median "
             "|error| on the kept redescriptions; FP = released with true p > 0.01.", "",
             "Every algorithm in one ε section spent that same total ε per run (strict mode; "
             "faithful mode runs the papers' nominal split of it, whose tree extractions "
             "really cost 1.5× their share), "
             "so tree miners and Serenade are compared at equal ε. No metric reads the noisy "
             "p-value (FP uses the true one): faithful Serenade releases none (NaN).", ""]
    for eps in epsilons:
        lines += [f"## ε = {eps:g}", ""]
        lines += _table([_find(rows, spec, eps) for spec in algorithms])
        lines.append("")
    ref = [r for r in rows if r["algorithm"] == REFERENCE]
    if ref:
        lines += [f"## {REFERENCE_LABEL}", "",
                  "AltExpM (InTr = 4, RMIter = 1) with greedy choices and exact counts "
                  "(ε = 10⁹ in practice).", ""]
        lines += _table(ref)
        lines.append("")
    lines += ["## Pruning thresholds (noisy support |E11|)", "",
              "| algorithm | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |",
              "|---|" + "---|" * len(epsilons)]
    for spec in algorithms:
        lines.append(f"| {_label(spec)} | "
                     + " | ".join(f"{_find(rows, spec, e)['threshold']:.4g}" for e in epsilons)
                     + " |")
    lines += ["", "## Suggested vs the paper's fixed thresholds", "",
              "Per cell: kept / false positives kept (true p > 0.01) / truly significant "
              "pruned (false negatives), pooled over runs.", "",
              "| algorithm | ε | " + " | ".join(
                  ["suggested"] + [f"{k} {v}" for k, v in PAPER_THRESHOLDS.items()]) + " |",
              "|---|---|" + "---|" * (1 + len(PAPER_THRESHOLDS))]
    for row in metrics["threshold_comparison"]:
        eps = "∞" if row["epsilon"] is None else f"{row['epsilon']:g}"
        cells_txt = []
        for name in ["suggested"] + [f"{k} {v}" for k, v in PAPER_THRESHOLDS.items()]:
            c = row[name]
            head = f"({c['threshold']:.4g}) " if name == "suggested" else ""
            cells_txt.append(f"{head}{c['kept']} / {c['false_positives_kept']} / "
                             f"{c['significant_pruned']}")
        lines.append(f"| {_label(row['algorithm'])} | {eps} | " + " | ".join(cells_txt) + " |")
    lines += ["", "## One-sided Mann–Whitney tests (best method vs the others, kept "
              "redescriptions pooled)", "",
              "| ε | metric | best | other | U | p |", "|---|---|---|---|---|---|"]
    for eps_text, comp in metrics["comparisons"].items():
        for metric, name in (("true_j_kept", "true J (higher better)"),
                             ("abs_error_kept", "|noisy J − true J| (lower better)")):
            c = comp[metric]
            if c["best"] is None:
                lines.append(f"| {eps_text} | {name} | – | – | – | – |")
                continue
            if not c["tests"]:
                lines.append(f"| {eps_text} | {name} | {_label(c['best'])} | – | – | – |")
            for other, t in c["tests"].items():
                pv = "–" if t["pvalue"] is None else f"{t['pvalue']:.3g}"
                lines.append(f"| {eps_text} | {name} | {_label(c['best'])} | {_label(other)} "
                             f"| {t['U']:.1f} | {pv} |")
    lines += ["", "Plots: [noisy vs true J](noisy_vs_true.html), "
              "[true J histograms](true_j_hist.html), [|error| boxplots](abs_error_box.html).",
              ""]
    return "\n".join(lines)


def _plots(cells, cell_rows, out: Path) -> None:
    import pandas as pd
    import plotly.express as px

    records = []
    for row in cell_rows:
        eps = math.inf if row["epsilon"] is None else row["epsilon"]
        by_run = cells[(row["algorithm"], eps)]
        for i in sorted(by_run):
            for s in by_run[i][1]:
                kept = s.noisy_support >= row["threshold"]
                records.append({
                    "algorithm": _label(row["algorithm"]) if row["algorithm"] != REFERENCE
                    else "reference (ε = ∞)",
                    "ε": _eps_text(eps), "run": i,
                    "noisy J": s.noisy_jaccard, "true J": s.true_jaccard,
                    "|error|": abs(s.noisy_jaccard - s.true_jaccard),
                    "noisy support": s.noisy_support,
                    "status": ("kept" if kept else "pruned") + ", "
                              + ("truly significant" if s.true_pvalue <= 0.01
                                 else "not significant"),
                })
    columns = ["algorithm", "ε", "run", "noisy J", "true J", "|error|", "noisy support",
               "status"]
    df = pd.DataFrame.from_records(records, columns=columns)
    if df.empty:  # keep the plots valid with one invisible point
        df = pd.DataFrame([{c: None for c in columns}])
    note = " — NOT private (owner/teaching only)"
    fig = px.scatter(df, x="true J", y="noisy J", color="status", facet_row="algorithm",
                     facet_col="ε", hover_data=["noisy support", "run"],
                     title="Noisy vs true Jaccard (kept/pruned × true significance)" + note)
    fig.write_html(out / "noisy_vs_true.html", include_plotlyjs=True)
    fig = px.histogram(df, x="true J", facet_row="algorithm", facet_col="ε", nbins=20,
                       title="True Jaccard of released redescriptions" + note)
    fig.write_html(out / "true_j_hist.html", include_plotlyjs=True)
    fig = px.box(df, x="algorithm", y="|error|", color="ε",
                 title="|noisy J − true J| of released redescriptions" + note)
    fig.write_html(out / "abs_error_box.html", include_plotlyjs=True)

