"""Frequent-sequence experiments (Xu et al. 2015, Fig. 2–3): OWNER / TEACHING ONLY, NOT private.

:func:`run_sequence_experiment` mines generated data of the paper's three shapes with PFS2
(strict) and the straightforward baseline over a grid of θ × ε, several seeded runs per
cell, and scores every release against the exact frequent sequences: F-score =
2PR/(P + R) (with precision and recall) and the median relative error |noisy − true| / true
of the released supports. It writes ``metrics.json`` (every run's figures) and
``report.md`` (mean ± sd per cell, PFS2 beside the baseline) into an output folder.

Ground truth
------------
The exact frequent sequences (no length cap, as docs/ALGORITHMS.md recommends) come from the
established ``prefixspan`` package when it is importable (an optional test/bench
dependency) and ``truth="auto"``; otherwise from dpcore's own exact miner
(:func:`dpcore.sequences.evaluate.exact_frequent_sequences`). The report names the miner
used, and when both ran it records whether they agree. True supports of released sequences
that are not frequent come from :func:`dpcore.sequences.evaluate.true_supports`.

Sandbox budget
--------------
Every run goes through the run path's executor without a ledger
(:func:`dpcore.executor.run_sandbox`) with its
own in-memory :class:`~dpcore.privacy.accountant.PrivacyAccountant` capped at the run's
planned cost (in ε). The harness never opens, reads or charges a ledger: its spending is a
sandbox for measuring the methods, not a release. The data are generated
(:mod:`dpcore.sequences.samples`, no real record), but the metrics read true statistics,
so the report is owner/teaching material.

Seeds: the data of a shape use the shape's fixed generator seed; run ``i`` of every cell
uses ``numpy.random.default_rng([seed, i])``.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpcore import __version__
from dpcore.data.sequences.dataset import SequenceDataset
from dpcore.errors import ParameterError
from dpcore.executor import run_sandbox
from dpcore.experiments.report import write_report
from dpcore.privacy.units import nano_to_epsilon
from dpcore.registry import ALGORITHM_LABELS, PFS2, PFS2_BASELINE, SEQUENCE_ALGORITHMS, STRICT
from dpcore.sequences import samples
from dpcore.sequences.accuracy import TOLERANCE, expected_accuracy
from dpcore.sequences.evaluate import (
    exact_frequent_sequences,
    f_score,
    median_relative_error,
    support_threshold,
)
from dpcore.sequences.miner import resolve_l1
from dpcore.sequences.params import SequenceMiningParams
from dpcore.sequences.results import pattern_key

__all__ = ["SHAPES", "ShapeSetting", "TRUTH_MINERS", "PREFIXSPAN", "DPCORE_EXACT",
           "shape_dataset", "ground_truth", "score_release", "run_sequence_experiment",
           "parse_thetas", "report_markdown", "accuracy_check", "NOT_PRIVATE_NOTE"]

Progress = Callable[[int, int, str], None]

#: Ground-truth miners: the ``prefixspan`` package and dpcore's own exact miner.
PREFIXSPAN, DPCORE_EXACT = "prefixspan", "dpcore exact miner"
TRUTH_MINERS = ("auto", PREFIXSPAN, "dpcore")

NOT_PRIVATE_NOTE = ("NOT private: metrics use true statistics (owner/teaching only). Sandbox "
                    "budget: every run had its own in-memory accountant; no ledger was used.")


@dataclass(frozen=True)
class ShapeSetting:
    """One of the paper's data shapes: its generator, full size, l1 and θ grid.

    Attributes
    ----------
    label : str
        Shown in the report.
    records : int
        Full size (records), the paper's.
    l1 : int
        Public bound on the record length (items; the paper's Table II lmax).
    thetas : tuple of float
        The paper's Fig. 2 θ range (relative support).
    """

    label: str
    records: int
    l1: int
    thetas: tuple[float, ...]
    make: Callable[[int, int], SequenceDataset]
    seed: int


def _msnbc(n: int, seed: int) -> SequenceDataset:
    return samples.generate_clickstream(n, seed, name="msnbc_shape")


def _bible(n: int, seed: int) -> SequenceDataset:
    return samples.generate_word_stream(n, 13_905, seed)


def _house_power(n: int, seed: int) -> SequenceDataset:
    return samples.generate_house_power(n, seed, name="house_power_shape")


def _power_runs_width(n: int, seed: int) -> SequenceDataset:
    return samples.generate_power_runs(n, seed, binning=samples.EQUAL_WIDTH,
                                       name="power_runs_width_shape")


def _power_runs_quantile(n: int, seed: int) -> SequenceDataset:
    return samples.generate_power_runs(n, seed, binning=samples.QUANTILE,
                                       name="power_runs_quantile_shape")


#: The three shapes of Xu et al. (2015), generated (:mod:`dpcore.sequences.samples`), and
#: House_Power's size with long constant runs in its two binnings
#: (:func:`~dpcore.sequences.samples.generate_power_runs`), the shape of the household data
#: on which PFS2 was reported below its baseline.
SHAPES = {
    "msnbc": ShapeSetting("MSNBC shape (989,818 records × 17 items)", 989_818, 8,
                          (0.005, 0.01, 0.015, 0.02, 0.025), _msnbc, 1),
    "bible": ShapeSetting("BIBLE shape (36,369 records × 13,905 items, mean length 21.6)",
                          36_369, 32, (0.1, 0.12, 0.14, 0.16, 0.18), _bible, 2),
    "house_power": ShapeSetting("House_Power shape (40,986 windows × 50, 21 levels)", 40_986,
                                30, (0.3, 0.32, 0.34, 0.36, 0.38), _house_power, 3),
    "power_runs_width": ShapeSetting("House_Power size with long constant runs, equal-width "
                                     "levels (40,986 windows × 50, 21 levels)", 40_986, 30,
                                     (0.3, 0.32, 0.34, 0.36, 0.38), _power_runs_width, 4),
    "power_runs_quantile": ShapeSetting("House_Power size with long constant runs, quantile "
                                        "levels (40,986 windows × 50, 21 levels)", 40_986, 30,
                                        (0.3, 0.32, 0.34, 0.36, 0.38), _power_runs_quantile,
                                        5),
}


def shape_dataset(shape: str, scale: float = 1.0) -> SequenceDataset:
    """The generated dataset of ``shape`` with ``round(scale · records)`` records (≥ 100)."""
    if shape not in SHAPES:
        raise ParameterError(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale <= 1):
        raise ParameterError(f"scale must lie in (0, 1]; got {scale!r}")
    s = SHAPES[shape]
    return s.make(max(100, round(scale * s.records)), s.seed)


def parse_thetas(specs: Sequence[str]) -> dict[str, list[float]]:
    """``["msnbc=0.01,0.02", "bible=0.1"]`` → ``{"msnbc": [0.01, 0.02], "bible": [0.1]}``."""
    out: dict[str, list[float]] = {}
    for spec in specs:
        shape, sep, values = str(spec).partition("=")
        shape = shape.strip()
        if not sep or shape not in SHAPES:
            raise ParameterError(f"--theta takes SHAPE=θ,θ,… with SHAPE one of "
                                 f"{', '.join(SHAPES)}; got {spec!r}")
        try:
            out[shape] = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise ParameterError(f"--theta {spec!r}: θ values must be numbers") from None
        if not out[shape]:
            raise ParameterError(f"--theta {spec!r} gives no θ")
    return out


def _prefixspan_available() -> bool:
    try:
        import prefixspan  # noqa: F401
    except ImportError:
        return False
    return True


def ground_truth(data: SequenceDataset, theta: float, miner: str = "auto"
                 ) -> tuple[dict[tuple[int, ...], int], dict]:
    """Exact frequent sequences at θ (NOT private) and how they were found.

    Parameters
    ----------
    data : SequenceDataset
    theta : float
        Relative threshold; the support threshold is ⌈θ·|D|⌉ records (true |D|).
    miner : {"auto", "prefixspan", "dpcore"}
        "auto": ``prefixspan`` if importable, else dpcore's exact miner.

    Returns
    -------
    (dict, dict)
        Sequence → support (records); and ``{"miner", "seconds", "agrees_with_dpcore"}``
        (the last is None when only one miner ran).
    """
    if miner not in TRUTH_MINERS:
        raise ParameterError(f"truth must be one of {', '.join(TRUTH_MINERS)}; got {miner!r}")
    use_prefixspan = miner == PREFIXSPAN or (miner == "auto" and _prefixspan_available())
    started = time.perf_counter()
    own = exact_frequent_sequences(data, theta=theta)
    own_seconds = time.perf_counter() - started
    if not use_prefixspan:
        return own, {"miner": DPCORE_EXACT, "seconds": own_seconds, "agrees_with_dpcore": None}
    try:
        from prefixspan import PrefixSpan
    except ImportError:
        raise ParameterError("truth 'prefixspan' needs the prefixspan package (an optional "
                             "test/bench dependency); it is not installed") from None
    records = data.to_lists()
    started = time.perf_counter()
    found = PrefixSpan(records).frequent(support_threshold(theta, data.n_records))
    seconds = time.perf_counter() - started
    truth = {tuple(int(x) for x in p): int(s) for s, p in found}
    return truth, {"miner": PREFIXSPAN, "seconds": seconds, "dpcore_seconds": own_seconds,
                   "agrees_with_dpcore": truth == own}


def score_release(noisy: dict, truth: dict, data: SequenceDataset) -> dict:
    """F-score, precision, recall and median relative error of one release (NOT private).

    ``noisy`` maps released sequences to noisy supports; ``truth`` the exact frequent ones to
    their supports. Precision/recall/median RE are NaN when undefined (nothing released).
    """
    score = f_score(noisy, truth)
    return {"f_score": score.f_score, "precision": score.precision, "recall": score.recall,
            "released": score.released, "true": score.true, "correct": score.correct,
            "median_re": median_relative_error(noisy, data, supports=truth)}


def _one_run(data: SequenceDataset, params: SequenceMiningParams, truth: dict, seed: int,
             run: int) -> dict:
    # Sandbox budget: the executor's in-memory accountant capped at this run's plan, no ledger.
    started = time.perf_counter()
    result = run_sandbox(params, data, rng=np.random.default_rng([seed, run]))
    seconds = time.perf_counter() - started
    out = score_release(result.supports(), truth, data)
    out.update(seconds=seconds, lmax=result.lmax, l_f=result.max_frequent_length,
               levels=len(result.levels), spent_epsilon=result.spent_nano / 10**9,
               charged_epsilon=result.epsilon_nano / 10**9,
               returned_epsilon=(result.run_budget().refunded if result.run_budget()
                                 else 0.0),
               **interval_coverage(result), **accuracy_check(result, params, data))
    return out


def accuracy_check(result, params: SequenceMiningParams, data: SequenceDataset) -> dict:
    """The run's accuracy statement (:mod:`dpcore.sequences.accuracy`, stated with the true
    record count as the analyst's N) against what the run delivered (NOT private: reads
    the owner diagnostics).

    Returns ``stated_error`` and ``measured_error`` (level 1's noise scale over θ·N: the
    stated one and the one the level record shows; NaN where level 1 stopped),
    ``observed_error`` (mean |noisy − true|/(θ·N) over level 1's releases, selection
    included), ``stated_stop`` / ``measured_stop`` (level 1 released nothing because of its
    noise), ``stated_levels`` (levels the budget reaches below 100 % error) and
    ``delivered_levels`` (levels that released with a noise scale below θ·N), and
    ``accuracy_held``: 1.0 when the stop agrees, the measured scale is within
    :data:`~dpcore.sequences.accuracy.TOLERANCE` of the stated one (at most the stated
    one plus that share when the statement is a bound) and no more levels delivered than
    stated, else 0.0.
    """
    acc = expected_accuracy(params, data.schema.n_items, resolve_l1(data, params),
                            data.n_records)
    threshold = acc.support_threshold
    level1 = result.levels[0] if result.levels else None
    stopped = level1 is None or bool(level1.note) and level1.verify_epsilon_nano == 0
    measured = math.nan if stopped else (
        level1.verify_sensitivity / nano_to_epsilon(level1.verify_epsilon_nano) / threshold)
    true = result.diagnostics.true_supports
    errors = [abs(p.noisy_support - true[pattern_key(p.items)]) / threshold
              for p in result.patterns if p.length == 1]
    delivered = sum(1 for lv in result.levels if lv.verify_epsilon_nano and lv.frequent
                    and lv.verify_sensitivity / nano_to_epsilon(lv.verify_epsilon_nano)
                    < float(params.theta) * result.noisy_records)
    stated = math.nan if acc.level1_stops else acc.level1_error
    stop_ok = stopped if acc.level1_stops else (not stopped or acc.level1_may_stop)
    if acc.level1_stops or stopped:
        scale_ok = stop_ok
    elif acc.level1_exact:
        scale_ok = abs(measured / stated - 1.0) <= TOLERANCE
    else:
        scale_ok = measured <= stated * (1.0 + TOLERANCE)
    held = scale_ok and stop_ok and delivered <= acc.levels_reached
    return {"stated_error": stated, "measured_error": measured,
            "observed_error": float(np.mean(errors)) if errors else math.nan,
            "stated_stop": acc.level1_stops, "measured_stop": stopped,
            "stated_levels": acc.levels_reached, "delivered_levels": delivered,
            "accuracy_held": float(held)}


def interval_coverage(result) -> dict:
    """How many released supports' intervals hold the true support (NOT private: reads the
    owner diagnostics): ``interval_coverage`` (NaN when nothing was released),
    ``interval_covered``, ``interval_count``, and ``flagged`` (patterns flagged as
    possible noise)."""
    true = result.diagnostics.true_supports
    hits = [p.support_low <= true[pattern_key(p.items)] <= p.support_high
            for p in result.patterns]
    return {"interval_coverage": float(np.mean(hits)) if hits else math.nan,
            "interval_covered": int(sum(hits)), "interval_count": len(hits),
            "flagged": sum(bool(p.flags) for p in result.patterns)}


_SUMMARISED = ("f_score", "precision", "recall", "median_re", "released", "seconds", "l_f",
               "interval_coverage", "flagged", "returned_epsilon", "stated_error",
               "measured_error", "observed_error", "stated_levels", "delivered_levels",
               "accuracy_held")


def _mean_sd(values) -> tuple[float | None, float | None, int]:
    arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None, None, 0
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0, int(arr.size)


def _check(shapes, epsilons, runs, algorithms, thetas) -> None:
    if not shapes:
        raise ParameterError("give at least one shape")
    for s in shapes:
        if s not in SHAPES:
            raise ParameterError(f"unknown shape {s!r}; choose from {', '.join(SHAPES)}")
    if not algorithms:
        raise ParameterError("give at least one algorithm")
    for a in algorithms:
        if a not in SEQUENCE_ALGORITHMS:
            raise ParameterError(f"unknown sequence algorithm {a!r}; choose from "
                                 f"{', '.join(SEQUENCE_ALGORITHMS)}")
    if not epsilons:
        raise ParameterError("give at least one ε")
    for e in epsilons:
        if not (isinstance(e, (int, float)) and math.isfinite(e) and e > 0):
            raise ParameterError(f"every ε must be a finite number > 0; got {e!r}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ParameterError(f"runs must be an integer ≥ 1; got {runs!r}")
    for shape, ts in (thetas or {}).items():
        if shape not in SHAPES:
            raise ParameterError(f"θ given for unknown shape {shape!r}")
        for t in ts:
            if not (isinstance(t, (int, float)) and 0 < t < 1):
                raise ParameterError(f"every θ must lie in (0, 1); got {t!r} for {shape}")


def run_sequence_experiment(out_dir, *, shapes: Sequence[str] = tuple(SHAPES),
                            thetas: dict[str, Sequence[float]] | None = None,
                            epsilons: Sequence[float] = (1.0, 0.1), runs: int = 3,
                            algorithms: Sequence[str] = (PFS2, PFS2_BASELINE),
                            scale: float = 1.0, truth: str = "auto", seed: int = 0,
                            progress: Progress | None = None,
                            command: str | None = None) -> dict:
    """Run the θ × ε grid on the generated shapes and write the report; return the metrics.

    Parameters
    ----------
    out_dir : path
        Receives ``metrics.json`` and ``report.md``.
    shapes : sequence of str
        Keys of :data:`SHAPES`.
    thetas : dict of shape → sequence of float, optional
        θ grid per shape (default: the shape's paper grid, :attr:`ShapeSetting.thetas`).
    epsilons : sequence of float
        Total ε of one run (strict mode), each > 0.
    runs : int
        Seeded runs per (shape, θ, ε, algorithm) cell.
    algorithms : sequence of str
        Sequence algorithms of the registry (PFS2 and/or its straightforward baseline).
    scale : float
        Share of each shape's full number of records to generate, in (0, 1].
    truth : {"auto", "prefixspan", "dpcore"}
        Ground-truth miner (see the module docstring).
    seed : int
        Run ``i`` of each cell uses ``default_rng([seed, i])``.
    progress : callable(done, total, message), optional
    command : str, optional
        Recorded in the report.

    The harness never touches a ledger (one in-memory accountant per run). The output is
    NOT private: it uses true statistics.
    """
    shapes, algorithms = list(shapes), list(algorithms)
    epsilons = [float(e) for e in epsilons] if epsilons else []
    _check(shapes, epsilons, runs, algorithms, thetas)
    grid = {s: [float(t) for t in (thetas or {}).get(s, SHAPES[s].thetas)] for s in shapes}
    total = sum(len(grid[s]) for s in shapes) * len(epsilons) * len(algorithms) * runs
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started_all = time.perf_counter()
    done = 0
    shape_rows, cells = [], []
    for shape in shapes:
        setting = SHAPES[shape]
        started = time.perf_counter()
        data = shape_dataset(shape, scale)
        lengths = data.lengths
        shape_rows.append({"shape": shape, "label": setting.label, "records": data.n_records,
                           "items": data.schema.n_items, "mean_length": float(lengths.mean()),
                           "l1": setting.l1, "generate_seconds": time.perf_counter() - started,
                           "truth": {}})
        for theta in grid[shape]:
            true_set, how = ground_truth(data, theta, truth)
            how.update(frequent=len(true_set),
                       longest=max(map(len, true_set)) if true_set else 0)
            shape_rows[-1]["truth"][f"{theta:g}"] = how
            for eps in epsilons:
                for algorithm in algorithms:
                    params = SequenceMiningParams(algorithm=algorithm, epsilon=eps, mode=STRICT,
                                                  theta=theta, l1=setting.l1).validate()
                    run_rows = []
                    for i in range(runs):
                        run_rows.append(_one_run(data, params, true_set, seed, i))
                        done += 1
                        if progress:
                            progress(done, total, f"{shape} θ = {theta:g} ε = {eps:g} "
                                                  f"{ALGORITHM_LABELS[algorithm]} run {i + 1}")
                    summary = {}
                    for key in _SUMMARISED:
                        mean, sd, n = _mean_sd(r[key] for r in run_rows)
                        summary[key] = {"mean": mean, "sd": sd, "n": n}
                    cells.append({"shape": shape, "theta": theta, "epsilon": eps,
                                  "algorithm": algorithm, "label": ALGORITHM_LABELS[algorithm],
                                  "true_frequent": len(true_set), "runs": run_rows,
                                  "summary": summary})
    metrics = {
        "note": NOT_PRIVATE_NOTE,
        "command": command,
        "parameters": {"shapes": shapes, "thetas": grid, "epsilons": epsilons, "runs": runs,
                       "algorithms": algorithms, "mode": STRICT, "scale": scale,
                       "truth": truth, "seed": seed},
        "versions": _versions(),
        "seconds": time.perf_counter() - started_all,
        "shapes": shape_rows,
        "cells": cells,
        "comparison": _compare(cells, algorithms),
    }
    write_report(out, metrics, report_markdown(metrics))
    return metrics


def _compare(cells: list[dict], algorithms: list[str]) -> list[dict]:
    """Per (shape, θ, ε): mean F of PFS2 minus the baseline's (when both ran)."""
    if PFS2 not in algorithms or PFS2_BASELINE not in algorithms:
        return []
    by = {(c["shape"], c["theta"], c["epsilon"], c["algorithm"]): c for c in cells}
    rows = []
    for c in cells:
        if c["algorithm"] != PFS2:
            continue
        base = by[(c["shape"], c["theta"], c["epsilon"], PFS2_BASELINE)]
        f_p, f_b = c["summary"]["f_score"]["mean"], base["summary"]["f_score"]["mean"]
        diff = None if f_p is None or f_b is None else f_p - f_b
        rows.append({"shape": c["shape"], "theta": c["theta"], "epsilon": c["epsilon"],
                     "f_pfs2": f_p, "f_baseline": f_b, "difference": diff,
                     "pfs2_at_least_baseline": None if diff is None else diff >= 0})
    return rows


def _versions() -> dict:
    import numba
    import scipy
    return {"dpcore": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__}


def _pm(stat: dict, spec: str = ".3f", percent: bool = False) -> str:
    if stat["mean"] is None:
        return "–"
    k = 100.0 if percent else 1.0
    if stat["n"] < 2:
        return format(k * stat["mean"], spec)
    return f"{format(k * stat['mean'], spec)} ± {format(k * stat['sd'], spec)}"


def _accuracy_section(metrics: dict) -> list[str]:
    """The table of the accuracy statements against what the runs delivered."""
    lines = ["## Accuracy before spending: stated against delivered", "",
             "Stated from the parameters, the alphabet, l1 and the true record count as the "
             "analyst's N (dpcore.sequences.accuracy); level 1's noise scale over θ·N "
             f"(stated; measured from the level record; observed mean |noisy − true|/(θ·N) "
             f"of its releases, selection included), the levels the budget reaches below "
             f"100 % error (stated) and those that released below it (delivered); held = "
             f"share of runs where the statement held (tolerance {TOLERANCE:.0%}).", "",
             "| shape | θ | ε | algorithm | stated error | measured | observed | stated "
             "levels | delivered levels | held |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in metrics["cells"]:
        s = c["summary"]
        if "accuracy_held" not in s:
            continue
        lines.append(f"| {c['shape']} | {c['theta']:g} | {c['epsilon']:g} | {c['label']} | "
                     f"{_pm(s['stated_error'])} | {_pm(s['measured_error'])} | "
                     f"{_pm(s['observed_error'])} | {_pm(s['stated_levels'], '.0f')} | "
                     f"{_pm(s['delivered_levels'], '.1f')} | {_pm(s['accuracy_held'], '.2f')} |")
    return lines + [""]


def report_markdown(metrics: dict) -> str:
    """The Markdown report of :func:`run_sequence_experiment`'s metrics."""
    p = metrics["parameters"]
    lines = ["# Frequent-sequence experiment report", "",
             "**NOT private — owner/teaching only.** The metrics compare released (noisy) "
             "frequent sequences with the exact ones mined from the data. Sandbox budget: "
             "each run had its own in-memory accountant; no ledger was read or charged.", "",
             f"- command: `{metrics['command']}`" if metrics["command"] else "- command: (API)",
             f"- mode: {p['mode']}; runs per cell: {p['runs']} (run i uses seed "
             f"[{p['seed']}, i]); data scale: {p['scale']:g} of each shape's full size",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in metrics["versions"].items()),
             f"- wall time: {metrics['seconds']:.1f} s", "",
             "Columns: mean ± sd over the runs. F = 2PR/(P + R) against every exact frequent "
             "sequence (no length cap); median RE = median over released sequences of "
             "|noisy − true| / true support (in %); released = sequences released; L_f = the "
             "run's estimated longest frequent length; s = wall seconds per run.", ""]
    for shape in metrics["shapes"]:
        lines += [f"## {shape['label']}", "",
                  f"Generated: {shape['records']:,} records, {shape['items']:,} items in the "
                  f"alphabet, mean length {shape['mean_length']:.2f}, l1 = {shape['l1']} "
                  f"(generation {shape['generate_seconds']:.1f} s).", "",
                  "| θ | ground truth | exact frequent | longest | truth s |",
                  "|---|---|---|---|---|"]
        for theta, how in shape["truth"].items():
            agree = ""
            if how.get("agrees_with_dpcore") is not None:
                agree = (" (agrees with dpcore's exact miner)" if how["agrees_with_dpcore"]
                         else " (DISAGREES with dpcore's exact miner)")
            lines.append(f"| {theta} | {how['miner']}{agree} | {how['frequent']} | "
                         f"{how['longest']} | {how['seconds']:.1f} |")
        lines += ["", "| θ | ε | algorithm | F | precision | recall | median RE % | released "
                      "| L_f | s |", "|---|---|---|---|---|---|---|---|---|---|"]
        for c in metrics["cells"]:
            if c["shape"] != shape["shape"]:
                continue
            s = c["summary"]
            lines.append(f"| {c['theta']:g} | {c['epsilon']:g} | {c['label']} | "
                         f"{_pm(s['f_score'])} | {_pm(s['precision'])} | {_pm(s['recall'])} | "
                         f"{_pm(s['median_re'], '.1f', percent=True)} | "
                         f"{_pm(s['released'], '.0f')} | {_pm(s['l_f'], '.1f')} | "
                         f"{_pm(s['seconds'], '.1f')} |")
        lines.append("")
    lines += _accuracy_section(metrics)
    if metrics["comparison"]:
        lines += ["## PFS2 against the straightforward baseline (mean F)", "",
                  "| shape | θ | ε | F PFS2 | F baseline | difference | PFS2 ≥ baseline |",
                  "|---|---|---|---|---|---|---|"]
        for r in metrics["comparison"]:
            fmt = lambda v: "–" if v is None else f"{v:.3f}"
            verdict = {None: "–", True: "yes", False: "NO"}[r["pfs2_at_least_baseline"]]
            lines.append(f"| {r['shape']} | {r['theta']:g} | {r['epsilon']:g} | "
                         f"{fmt(r['f_pfs2'])} | {fmt(r['f_baseline'])} | "
                         f"{'–' if r['difference'] is None else format(r['difference'], '+.3f')}"
                         f" | {verdict} |")
        lines.append("")
    return "\n".join(lines)
