"""Benchmark suite: speed, memory and scaling of the miners against the paper's targets.

Run from the repository root (never part of the test suite)::

    .venv/bin/python -m bench.run            # full run (five miners): ~15 min on 2 idle cores
    .venv/bin/python -m bench.run --quick    # smoke check: k = 1, 2, one repeat (~2 min)

Options: ``--sizes 1,2,4`` (CMS-2-k sizes k), ``--algorithms mcmctreepair,altmcmc``,
``--repeats 3``, ``--parts cms,desynpuf,interactive,startup,numpy``, ``--out DIR``,
``--wait-idle SECONDS`` (shared machines: wait for idle cores before each case).
Progress goes to stderr; the summary table (Markdown) to stdout. Writes ``DIR/results.json``
(every raw number + machine info), ``DIR/summary.md`` and ``DIR/scaling.html`` (plotly,
log-log time vs rows with the fitted exponents). See bench/README.md for what each number
means.

Every (dataset, algorithm setting) case runs in a fresh subprocess (``--case JSON``), so its
peak RSS is its own. Inside it: warm the kernels on a tiny dataset, build the data (timed
apart as data generation), then run ``mine()`` ``repeats`` times with fixed seeds on a fresh
dataset object each time (so the strict coding / bitsets of the "prepare" phase are paid by
every run) and take the median wall.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from dpcore.registry import MCMCTREEPAIR, SERENADE_ALGORITHMS, STRICT

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results"

CMS_BASE_ROWS = 7_200          # CMS-2-k has 7,200·k rows
CMS_SIZES = (1, 2, 4, 8, 16)
CMS_BOOL, CMS_NUMERIC = 452, 152
INTERACTIVE = {"n_rows": 2_500, "n_bool": 190, "n_numeric": 60}
DATA_SEED = 20232
RUN_SEED = 7
MC_ITER, DEPTH = 10_000, 4
# phases of RunResult.diagnostics.phase_seconds besides "prepare"
TREE_PHASES = ("trees", "extract")
SERENADE_PHASES = ("initial pairs", "extensions", "quality")
NUMPY_MAX_K = 2                # the NumPy reference runs on k ≤ 2
NUMPY_ITER, NUMPY_BUDGET_S = 10_000, 60.0
CASE_TIMEOUT_S = 3_600
OTHER_BUSY_LIMIT = 0.25         # cores kept busy by other processes before a case is flagged
PARTS = ("cms", "desynpuf", "interactive", "startup", "numpy")

TARGET_FIT_S = 60.0            # per tree miner, paper parameters, CMS-2-16, 2 cores
TARGET_INTERACTIVE_S = 1.0     # 2,500 × 250, InTr 4, warm
TARGET_STARTUP_S = 2.0         # cached start-up
TARGET_PEAK_MB = 2_048.0       # CMS-2-16


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Algorithm settings
# ---------------------------------------------------------------------------

def is_serenade(algorithm: str) -> bool:
    return algorithm in SERENADE_ALGORITHMS


def _preset_setting(algorithm: str, preset, name: str) -> dict:
    return {"algorithm": algorithm, "name": name, "label": preset.label, **preset.overrides}


def settings_for(algorithm: str) -> list[dict]:
    """The parameter settings benchmarked for one algorithm: its registry presets named
    ``paper`` (MCMCTreePair: InTr 20, MCIter 10,000, d 4; Serenade: I 20, K 80 / L 4,
    s 0.02, split 0.45/0.45/0.1) or ``paper-stable`` / ``paper-default`` (the alternating
    miners: InTr 20, RMIter 1 and InTr 1, RMIter 20, MCIter 10,000, d 4)."""
    from dpcore.registry import algorithm_spec

    spec = algorithm_spec(algorithm)
    return [_preset_setting(algorithm, p, algorithm + p.name.removeprefix("paper"))
            for p in spec.presets if p.name == "paper" or p.name.startswith("paper-")]


def interactive_setting(algorithm: str) -> dict:
    """The setting of the "interactive 2,500 × 250" case: the registry preset
    ``interactive``, what the app runs by default (tree miners InTr 4, RMIter 1,
    MCIter 10,000, d 4; Serenade the paper's I 20, K 80 / L 4)."""
    from dpcore.registry import algorithm_spec, preset

    return _preset_setting(algorithm, preset(algorithm_spec(algorithm), "interactive"),
                           f"{algorithm}-interactive")


def params_of(setting: dict):
    """The validated MiningParams of a setting (ε = 1, strict): every parameter the setting
    names that its algorithm uses (from the registry); the rest keep their defaults."""
    from dpcore.redescriptions.params import MiningParams
    from dpcore.registry import algorithm_spec

    used = algorithm_spec(setting["algorithm"]).parameters_used(STRICT)
    return MiningParams(algorithm=setting["algorithm"],
                        **{k: v for k, v in setting.items() if k in used}).validate()


def tiny_params(algorithm: str, purpose: str) -> dict:
    """Keyword arguments of the tiny ``mine()`` (300 rows) that compiles or loads every kernel
    a miner uses: ``purpose`` "warm-up" (inside each case) or "startup" (start-up part)."""
    if is_serenade(algorithm):
        # two initial pairs and a few rounds reach every Serenade kernel
        return {"algorithm": algorithm, "init_pairs": 2,
                "es_rounds": 4, "cs_rounds": 2}
    if purpose == "warm-up":
        return {"algorithm": algorithm, "in_tr": 2, "rm_iter": 1, "mc_iter": 100,
                "depth": DEPTH}
    return {"algorithm": algorithm, "in_tr": 1, "mc_iter": 100}


# ---------------------------------------------------------------------------
# Child process: one case
# ---------------------------------------------------------------------------

def _rss_now_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def dpcore_source_digest() -> str:
    """Hash of dpcore's sources (what the numba cache folder is named by): the code measured."""
    import dpcore

    return dpcore.source_digest()


def _warm_up(algorithm: str) -> float:
    """Compile (or load from the numba cache) every kernel the miner uses, on tiny data."""
    import numpy as np

    from dpcore.data.generator import generate_cms_like_dataset
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import MiningParams

    start = time.perf_counter()
    tiny = generate_cms_like_dataset(300, n_bool=20, n_numeric=8, seed=1)
    mine(tiny, MiningParams(**tiny_params(algorithm, "warm-up")), rng=np.random.default_rng(0))
    return time.perf_counter() - start


def _make_dataset(spec: dict):
    from dpcore.data.generator import generate_cms_like_dataset

    if spec["name"] == "cms":
        return generate_cms_like_dataset(CMS_BASE_ROWS * spec["k"], n_bool=CMS_BOOL,
                                         n_numeric=CMS_NUMERIC, seed=DATA_SEED)
    if spec["name"] == "interactive":
        return generate_cms_like_dataset(INTERACTIVE["n_rows"], n_bool=INTERACTIVE["n_bool"],
                                         n_numeric=INTERACTIVE["n_numeric"], seed=DATA_SEED)
    if spec["name"] == "desynpuf":
        from bench.desynpuf import load_desynpuf

        return load_desynpuf()
    raise ValueError(f"unknown dataset {spec['name']!r}")


def _fresh(dataset):
    """A new dataset object over the same arrays: dpcore caches the strict coding and the
    candidate bitsets per dataset object, so a fresh one makes a run pay its "prepare"."""
    from dpcore.dataset import TwoViewDataset

    return TwoViewDataset(dataset.schema, dataset.views, dataset.ids)


def _one_run(dataset, params, seed: int) -> dict:
    import numpy as np

    from dpcore.redescriptions.mining import mine

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    cpu0 = time.process_time()
    start = time.perf_counter()
    result = mine(dataset, params, rng=np.random.default_rng(seed), seed=seed)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    d = result.diagnostics
    phases = {k: float(v) for k, v in d.phase_seconds.items()}
    iters = int(d.mcmc_iterations)
    # cpu/wall well below 1 means the process waited for a core: another process competed
    return {"wall_s": wall, "cpu_s": cpu, "cpu_over_wall": cpu / wall if wall > 0 else None,
            "loadavg_1min_before": load, "phase_s": phases, "mcmc_iterations": iters,
            "mcmc_rows_touched": int(d.mcmc_rows_touched),
            "mcmc_iterations_per_s": iters / phases["trees"] if iters and phases["trees"] > 0
            else None,
            "rows_touched_per_iteration": d.mcmc_rows_touched / iters if iters else None,
            "n_trees": len(result.trees), "n_redescriptions": len(result.redescriptions)}


def _phase_median(runs: list[dict], phase: str):
    """Median seconds of one phase over the runs (None when the miner has no such phase)."""
    return _median([r["phase_s"].get(phase) for r in runs])


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _max_or_none(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _summarise(runs: list[dict]) -> dict:
    walls = [r["wall_s"] for r in runs]
    return {"wall_s_median": _median(walls), "wall_s_min": min(walls), "wall_s_max": max(walls),
            "phase_s_median": {p: _phase_median(runs, p) for p in runs[0]["phase_s"]},
            "n_redescriptions_median": _median([r["n_redescriptions"] for r in runs]),
            "cpu_over_wall_min": min(r["cpu_over_wall"] for r in runs),
            "loadavg_1min_max": _max_or_none([r["loadavg_1min_before"] for r in runs]),
            "mcmc_iterations": runs[0]["mcmc_iterations"],
            "mcmc_iterations_per_s_median": _median([r["mcmc_iterations_per_s"] for r in runs]),
            "rows_touched_per_iteration_median":
                _median([r["rows_touched_per_iteration"] for r in runs])}


def case_mine(spec: dict) -> dict:
    import gc

    setting = spec["setting"]
    params = params_of(setting)
    t0 = time.perf_counter()
    import numpy  # noqa: F401  (import cost shown apart from the warm-up)

    import dpcore.redescriptions.mining  # noqa: F401
    import_s = time.perf_counter() - t0
    warm_s = _warm_up(setting["algorithm"])
    rss_warm = _rss_now_mb()
    start = time.perf_counter()
    dataset = _make_dataset(spec["dataset"])
    data_s = time.perf_counter() - start
    rss_data = _rss_now_mb()
    from dpcore.redescriptions.mining import strict_coding

    coded = strict_coding(dataset)  # shape info only; a fresh object per run re-codes
    info = {"rows": dataset.n_rows,
            "attributes": [v.n_attributes for v in dataset.views],
            "candidates": [c.n_candidates for c in coded],
            "fanout": [c.fanout for c in coded]}
    if is_serenade(setting["algorithm"]):
        from dpcore.redescriptions.serenade.literals import literal_set

        info["literals"] = [literal_set(c).size for c in coded]
    del coded
    runs = []
    for r in range(spec["repeats"]):
        fresh = _fresh(dataset)
        runs.append(_one_run(fresh, params, RUN_SEED + r))
        del fresh
        gc.collect()
        log(f"  {spec['dataset']['label']} {setting['label']}: run {r + 1}/{spec['repeats']} "
            f"{runs[-1]['wall_s']:.2f} s")
    out = {"kind": "mine", "dpcore_source": dpcore_source_digest(),
           "dataset": dict(spec["dataset"], **info), "setting": setting,
           "params": params.to_dict(), "import_s": import_s, "warmup_s": warm_s,
           "data_s": data_s, "runs": runs, "summary": _summarise(runs)}
    if spec.get("cached_repeats"):
        # the app's situation: the same dataset object mined again (coding cached)
        _one_run(dataset, params, RUN_SEED)
        cached = [_one_run(dataset, params, RUN_SEED + r) for r in range(spec["cached_repeats"])]
        out["cached_runs"] = cached
        out["cached_summary"] = _summarise(cached)
    out["rss_after_warmup_mb"] = rss_warm
    out["rss_after_data_mb"] = rss_data
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def case_numpy(spec: dict) -> dict:
    """NumPy reference chain vs the numba kernel on the same target, same ε, same data."""
    import numpy as np

    from bench import numpy_reference as ref
    from dpcore.privacy.accountant import PrivacyAccountant
    from dpcore.redescriptions.mining import strict_coding
    from dpcore.redescriptions.params import plan_budget
    from dpcore.redescriptions.targets import make_target
    from dpcore.trees import sample_tree_pair

    setting = settings_for(MCMCTREEPAIR)[0]
    _warm_up(MCMCTREEPAIR)
    dataset = _make_dataset({"name": "cms", "k": spec["k"]})
    coded_left, coded_right = strict_coding(dataset)
    target = make_target(dataset, 0, 0, STRICT)   # a left Boolean: trees on right, then left
    nano = plan_budget(params_of(setting))[0].epsilon_nano
    first, second = coded_right, coded_left

    def numba_chain(mc_iter, seed):
        acc = PrivacyAccountant(nano)
        start = time.perf_counter()
        t1, t2, trace = sample_tree_pair((1, 0), first, second, target.classes,
                                         target.n_classes, DEPTH, nano,
                                         np.random.default_rng(seed), acc, "bench",
                                         mc_iter=mc_iter, faithful=False, sigma=0.005,
                                         window=500)
        return time.perf_counter() - start, t1, t2, trace

    numba_chain(100, 0)  # candidate bitsets built here (the mining "prepare" phase)
    timings = []
    for r in range(3):
        seconds, t1, t2, trace = numba_chain(MC_ITER, RUN_SEED + r)
        timings.append(seconds / MC_ITER)
    check = ref.pair_score(ref.CodedArrays(first, DEPTH), t1.nodes[0],
                           ref.CodedArrays(second, DEPTH), t2.nodes[0], target.classes,
                           target.n_classes)
    res = ref.run_chain(first, second, target.classes, target.n_classes, DEPTH, nano * 1e-9,
                        spec["n_iter"], np.random.default_rng(RUN_SEED),
                        time_budget=spec["time_budget"])
    return {"kind": "numpy", "dpcore_source": dpcore_source_digest(), "k": spec["k"],
            "rows": dataset.n_rows, "epsilon_tree": nano * 1e-9,
            "target_attribute": target.name,
            "numba_direct_s_per_iteration": statistics.median(timings),
            "numba_direct_runs_s_per_iteration": timings,
            "numpy": res,
            "score_check": {"numba_trace_final": float(trace[-1]), "numpy_same_trees": check,
                            "abs_diff": abs(float(trace[-1]) - check)},
            "peak_rss_mb": _peak_rss_mb()}


# ---------------------------------------------------------------------------
# Start-up (cold compile and cached)
# ---------------------------------------------------------------------------

# argv[1]: JSON list of MiningParams keyword dicts, one tiny mine() each (tiny_params)
STARTUP_CODE = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from dpcore.data.generator import generate_cms_like_dataset
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import MiningParams
t_import = time.perf_counter() - t0
data = generate_cms_like_dataset(300, n_bool=20, n_numeric=8, seed=1)
first = {}
for kw in json.loads(sys.argv[1]):
    t = time.perf_counter()
    mine(data, MiningParams(**kw), rng=np.random.default_rng(0))
    first[kw["algorithm"]] = time.perf_counter() - t
print(json.dumps({"import_s": t_import, "first_mine_s": first,
                  "in_process_s": time.perf_counter() - t0}))
"""


def _startup_once(algorithms: list[str], cache_dir: str) -> dict:
    import resource

    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    runs = json.dumps([tiny_params(a, "startup") for a in algorithms])
    proc = subprocess.run([sys.executable, "-c", STARTUP_CODE, runs],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=CASE_TIMEOUT_S)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:], "wall_s": wall}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    out["cpu_s"] = cpu
    out["cpu_over_wall"] = cpu / wall
    return out


def run_startup(algorithms: list[str], repeats: int, idle_wait: float = 0.0) -> list[dict]:
    """Per algorithm and for all together: a process that imports dpcore.redescriptions.mining and runs one
    tiny mine() per algorithm (:func:`tiny_params`), first with an EMPTY numba cache (cold
    compile), then again with the cache it filled (cached). Wall = the whole subprocess,
    interpreter start included."""
    rows = []
    groups = ([("all", list(algorithms))] if len(algorithms) > 1 else []) + [
        (a, [a]) for a in algorithms]
    for name, algs in groups:
        cache = tempfile.mkdtemp(prefix="dpcore-bench-numba-")
        if idle_wait > 0:
            wait_idle(idle_wait)
        try:
            log(f"start-up {name}: cold (empty numba cache) ...")
            cold = _startup_once(algs, cache)
            cached = [_startup_once(algs, cache) for _ in range(max(3, repeats))]
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        walls = [c["wall_s"] for c in cached if "error" not in c]
        rows.append({"algorithms": name, "cold": cold, "cached_runs": cached,
                     "cold_wall_s": cold["wall_s"] if "error" not in cold else None,
                     "cached_wall_s_median": _median(walls)})
        log(f"start-up {name}: cold {cold['wall_s']:.1f} s, cached "
            f"{rows[-1]['cached_wall_s_median'] or float('nan'):.2f} s")
    return rows


# ---------------------------------------------------------------------------
# Parent: orchestration, analysis, output
# ---------------------------------------------------------------------------

def _machine_busy_s() -> float | None:
    """CPU seconds all processes have spent so far (user+nice+system+irq+softirq+steal)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        ticks = os.sysconf("SC_CLK_TCK")
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
        return (user + nice + system + irq + softirq + steal) / ticks
    except (OSError, ValueError, IndexError):
        return None


def wait_idle(max_wait: float) -> float:
    """Wait (at most ``max_wait`` s) until other processes use < OTHER_BUSY_LIMIT core over a
    1-second sample; return the seconds waited. A shared machine otherwise inflates times."""
    start = time.perf_counter()
    while time.perf_counter() - start < max_wait:
        b0 = _machine_busy_s()
        time.sleep(1.0)
        b1 = _machine_busy_s()
        if b0 is None or b1 is None or b1 - b0 < OTHER_BUSY_LIMIT:
            break
    return time.perf_counter() - start


def run_child(spec: dict) -> dict:
    """Run one case in a fresh process; add its wall and the other processes' CPU use.

    ``other_cores_busy``: the machine's CPU time during the case minus the case process's
    own, divided by the wall — how many cores other processes kept busy meanwhile (0 on a
    quiet machine; then the case had both cores to itself).
    """
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0 = _machine_busy_s()
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.run", "--case", json.dumps(spec)],
                              cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                              timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CASE_TIMEOUT_S} s", "spec": spec}
    wall = time.perf_counter() - start
    busy1 = _machine_busy_s()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        return {"error": f"case exited with {proc.returncode}", "spec": spec,
                "process_wall_s": wall}
    out = json.loads(lines[-1])
    out["process_wall_s"] = wall
    out["process_cpu_s"] = own
    out["other_cores_busy"] = (max(0.0, (busy1 - busy0 - own) / wall)
                               if busy0 is not None and busy1 is not None else None)
    return out


def machine_info() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    def ver(pkg):
        try:
            return version(pkg)
        except PackageNotFoundError:
            return None

    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    from dpcore import __version__

    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "cpu_model": model, "memory_gb": mem, "platform": platform.platform(),
            "python": platform.python_version(), "numpy": ver("numpy"), "numba": ver("numba"),
            "llvmlite": ver("llvmlite"), "pandas": ver("pandas"), "plotly": ver("plotly"),
            "dpcore": __version__, "dpcore_source": dpcore_source_digest(),
            "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR", "(dpcore default: "
                                              ".numba_cache/<version>-<source hash>)")}


def fit_exponent(rows: list[float], times: list[float]) -> dict | None:
    """Least squares log(time) = a + b·log(rows); returns b (the exponent) and R²."""
    import numpy as np

    pts = [(r, t) for r, t in zip(rows, times) if t and t > 0]
    if len(pts) < 2:
        return None
    x = np.log([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    ss = float(((y - y.mean()) ** 2).sum())
    return {"exponent": float(b), "intercept": float(a),
            "r2": 1.0 - float((resid ** 2).sum()) / ss if ss > 0 else 1.0, "points": len(pts)}


def scaling(cases: list[dict]) -> dict:
    out = {}
    by_setting: dict[str, list[dict]] = {}
    for c in cases:
        if c.get("kind") == "mine" and c["dataset"]["name"] == "cms":
            by_setting.setdefault(c["setting"]["name"], []).append(c)
    for name, cs in by_setting.items():
        cs.sort(key=lambda c: c["dataset"]["rows"])
        rows = [c["dataset"]["rows"] for c in cs]
        algorithm = cs[0]["setting"]["algorithm"]
        entry = {"label": cs[0]["setting"]["label"], "algorithm": algorithm, "rows": rows,
                 "wall_s": [c["summary"]["wall_s_median"] for c in cs],
                 "wall": fit_exponent(rows, [c["summary"]["wall_s_median"] for c in cs]),
                 # slope between the two largest sizes: the asymptotic behaviour, once
                 # the per-iteration and per-tree fixed costs no longer dominate
                 "wall_top2": fit_exponent(rows[-2:], [c["summary"]["wall_s_median"]
                                                       for c in cs[-2:]]),
                 "phases": {}}
        for phase in SERENADE_PHASES if is_serenade(algorithm) else TREE_PHASES:
            seconds = [c["summary"]["phase_s_median"].get(phase) for c in cs]
            if any(x is None for x in seconds):
                continue  # the miner does not time this phase apart
            entry["phases"][phase] = {"seconds": seconds, "fit": fit_exponent(rows, seconds)}
        if "trees" in entry["phases"]:
            entry["trees_s"] = entry["phases"]["trees"]["seconds"]
            entry["trees"] = entry["phases"]["trees"]["fit"]
        out[name] = entry
    return out


def numpy_speedups(numpy_cases: list[dict], cases: list[dict]) -> list[dict]:
    out = []
    for n in numpy_cases:
        if "error" in n:
            continue
        mined = [c for c in cases if c.get("kind") == "mine" and c["dataset"]["name"] == "cms"
                 and c["dataset"].get("k") == n["k"] and c["setting"]["algorithm"] ==
                 MCMCTREEPAIR]
        np_it = n["numpy"]["seconds_per_iteration"]
        row = {"k": n["k"], "rows": n["rows"], "numpy_s_per_iteration": np_it,
               "numpy_iterations": n["numpy"]["iterations"],
               "numba_direct_s_per_iteration": n["numba_direct_s_per_iteration"],
               "speedup_vs_direct": np_it / n["numba_direct_s_per_iteration"],
               "score_abs_diff": n["score_check"]["abs_diff"]}
        if mined:
            s = mined[0]["summary"]
            per_it = s["phase_s_median"]["trees"] / s["mcmc_iterations"]
            row["numba_mine_s_per_iteration"] = per_it
            row["speedup_vs_mine"] = np_it / per_it
        out.append(row)
    return out


def assess_targets(cases, startup) -> list[dict]:
    rows = []
    k16 = [c for c in cases if c.get("kind") == "mine" and c["dataset"]["name"] == "cms"
           and c["dataset"].get("k") == 16]
    for c in k16:
        m = c["summary"]["wall_s_median"]
        if is_serenade(c["setting"]["algorithm"]):
            # the 60 s target was set for the tree miners; Serenade's figure is reported
            # without one (met = None)
            rows.append({"target": f"{c['setting']['label']}, paper defaults on CMS-2-16: "
                                   "wall", "limit": "none (tree-miner target)",
                         "measured": f"{m:.1f} s", "met": None})
            continue
        rows.append({"target": f"{c['setting']['label']}, MCIter 10k, d 4 on CMS-2-16: wall",
                     "limit": f"≤ {TARGET_FIT_S:g} s", "measured": f"{m:.1f} s",
                     "met": m <= TARGET_FIT_S})
    for c in cases:
        if c.get("kind") == "mine" and c["dataset"]["name"] == "interactive":
            m = c["summary"]["wall_s_median"]
            mc = c.get("cached_summary", {}).get("wall_s_median")
            extra = f" (coding cached: {mc:.2f} s)" if mc is not None else ""
            rows.append({"target": f"interactive 2,500 × 250, {c['setting']['label']}: warm wall",
                         "limit": f"≤ {TARGET_INTERACTIVE_S:g} s",
                         "measured": f"{m:.2f} s{extra}", "met": m <= TARGET_INTERACTIVE_S})
    for s in startup:
        if s["cached_wall_s_median"] is None:
            continue
        m = s["cached_wall_s_median"]
        what = "all miners" if s["algorithms"] == "all" else s["algorithms"]
        rows.append({"target": f"cached start-up ({what}: import + one tiny mine each)",
                     "limit": f"≤ {TARGET_STARTUP_S:g} s",
                     "measured": f"{m:.2f} s (cold {s['cold_wall_s']:.1f} s)",
                     "met": m <= TARGET_STARTUP_S})
    if k16:
        worst = max(k16, key=lambda c: c["peak_rss_mb"])
        m = worst["peak_rss_mb"]
        rows.append({"target": f"peak RSS on CMS-2-16 (worst: {worst['setting']['label']})",
                     "limit": f"≤ {TARGET_PEAK_MB / 1024:g} GB", "measured": f"{m / 1024:.2f} GB",
                     "met": m <= TARGET_PEAK_MB})
    return rows


def _f(x, fmt="{:.2f}"):
    return "–" if x is None else fmt.format(x)


def _case_algorithm(c: dict) -> str:
    return (c.get("setting") or c.get("spec", {}).get("setting", {})).get("algorithm", "")


def _cases_table(cases: list[dict]) -> list[str]:
    tree_cases = [c for c in cases if not is_serenade(_case_algorithm(c))]
    serenade_cases = [c for c in cases if is_serenade(_case_algorithm(c))]
    lines = []
    if tree_cases:
        lines += _tree_cases_table(tree_cases)
    if serenade_cases:
        lines += _serenade_cases_table(serenade_cases)
    return lines


def _error_row(c: dict, n_columns: int) -> str:
    return (f"| {c['spec'].get('dataset', {}).get('label', '?')} | | "
            f"{c['spec'].get('setting', {}).get('label', '?')} | error: {c['error']} |"
            + " |" * (n_columns - 4))


def _serenade_cases_table(cases: list[dict]) -> list[str]:
    lines = ["", "**Serenade cases** (median wall of the repeats; phases are medians too; "
             "data = generation/loading, not part of the wall)", "",
             "| dataset | rows | setting | wall s | prepare s | initial pairs s | "
             "extensions s | quality s | redescriptions | peak RSS MB | data s | "
             "other cores busy |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        if "error" in c:
            lines.append(_error_row(c, 12))
            continue
        s = c["summary"]
        p = s["phase_s_median"]
        lines.append(f"| {c['dataset']['label']} | {c['dataset']['rows']:,} | "
                     f"{c['setting']['label']} | {_f(s['wall_s_median'])} | "
                     f"{_f(p.get('prepare'))} | {_f(p.get('initial pairs'))} | "
                     f"{_f(p.get('extensions'))} | {_f(p.get('quality'))} | "
                     f"{_f(s.get('n_redescriptions_median'), '{:g}')} | "
                     f"{c['peak_rss_mb']:,.0f} | {c['data_s']:.2f} | "
                     f"{_f(c.get('other_cores_busy'))} |")
    return lines


def _tree_cases_table(cases: list[dict]) -> list[str]:
    lines = ["", "**Cases** (median wall of the repeats; phases are medians too; "
             "data = generation/loading, not part of the wall)", "",
             "| dataset | rows | setting | wall s | prepare s | trees s | extract s | "
             "MCMC it/s | rows/it | peak RSS MB | data s | other cores busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        if "error" in c:
            lines.append(_error_row(c, 12))
            continue
        s = c["summary"]
        p = s["phase_s_median"]
        lines.append(f"| {c['dataset']['label']} | {c['dataset']['rows']:,} | "
                     f"{c['setting']['label']} | {_f(s['wall_s_median'])} | "
                     f"{_f(p.get('prepare'))} | {_f(p.get('trees'))} | {_f(p.get('extract'))} | "
                     f"{_f(s['mcmc_iterations_per_s_median'], '{:,.0f}')} | "
                     f"{_f(s['rows_touched_per_iteration_median'], '{:,.0f}')} | "
                     f"{c['peak_rss_mb']:,.0f} | {c['data_s']:.2f} | "
                     f"{_f(c.get('other_cores_busy'))} |")
    return lines


def summary_markdown(results: dict) -> str:
    lines = []
    m = results["machine"]
    lines.append(f"Run {m['date']} on {m['cores_available']} of {m['cores']} cores "
                 f"({m['cpu_model']}), Python {m['python']}, numpy {m['numpy']}, numba "
                 f"{m['numba']}; {results['repeats']} repeat(s), total "
                 f"{results['total_seconds'] / 60:.1f} min.")
    lines += ["", "**Targets**", "", "| target | limit | measured | met |", "|---|---|---|---|"]
    for t in results["targets"]:
        met = "–" if t["met"] is None else "yes" if t["met"] else "**NO**"
        lines.append(f"| {t['target']} | {t['limit']} | {t['measured']} | {met} |")
    if results["cases"]:
        lines += _cases_table(results["cases"])
    tree_scaling = {n: s for n, s in results["scaling"].items()
                    if not is_serenade(s.get("algorithm", ""))}
    serenade_scaling = {n: s for n, s in results["scaling"].items()
                        if is_serenade(s.get("algorithm", ""))}
    if tree_scaling:
        lines += ["", "**Scaling** (least-squares fit of log time on log rows over the CMS "
                  "sizes; last column: slope between the two largest sizes)", "",
                  "| setting | sizes | exponent (wall) | R² | exponent (trees phase) | "
                  "slope, two largest |", "|---|---|---|---|---|---|"]
        for name, s in tree_scaling.items():
            w, t, top = s["wall"], s.get("trees"), s.get("wall_top2")
            lines.append(f"| {s['label']} | {len(s['rows'])} | {_f(w and w['exponent'])} | "
                         f"{_f(w and w['r2'], '{:.3f}')} | {_f(t and t['exponent'])} | "
                         f"{_f(top and top['exponent'])} |")
    if serenade_scaling:
        lines += ["", "**Serenade scaling** (least-squares fit of log time on log rows over "
                  "the CMS sizes, for the wall and per phase; – = the phase is not timed "
                  "apart)", "",
                  "| setting | sizes | exponent (wall) | R² | initial pairs | extensions | "
                  "quality | slope, two largest |", "|---|---|---|---|---|---|---|---|"]
        for name, s in serenade_scaling.items():
            w, top = s["wall"], s.get("wall_top2")
            phase = [(s["phases"].get(p) or {}).get("fit") for p in SERENADE_PHASES]
            lines.append(f"| {s['label']} | {len(s['rows'])} | {_f(w and w['exponent'])} | "
                         f"{_f(w and w['r2'], '{:.3f}')} | "
                         + " | ".join(_f(f and f["exponent"]) for f in phase)
                         + f" | {_f(top and top['exponent'])} |")
    if results["numpy_speedup"]:
        lines += ["", "**NumPy reference** (plain NumPy MCMCTreePair step, full re-partition; "
                  "per iteration)", "", "| k | rows | NumPy ms/it | numba µs/it (same chain) | "
                  "speed-up | numba µs/it (mine(), trees phase) | speed-up |",
                  "|---|---|---|---|---|---|---|"]
        for r in results["numpy_speedup"]:
            mine_it = r.get("numba_mine_s_per_iteration")
            lines.append(f"| {r['k']} | {r['rows']:,} | {r['numpy_s_per_iteration'] * 1e3:.3f} | "
                         f"{r['numba_direct_s_per_iteration'] * 1e6:.1f} | "
                         f"{r['speedup_vs_direct']:.0f}× | "
                         f"{_f(mine_it and mine_it * 1e6, '{:.1f}')} | "
                         f"{_f(r.get('speedup_vs_mine'), '{:.0f}×')} |")
    if results["startup"]:
        lines += ["", "**Start-up** (whole subprocess: interpreter, imports, one tiny mine() "
                  "per miner)", "", "| miners | cold (empty numba cache) s | cached s | "
                  "import s (cached) |", "|---|---|---|---|"]
        for s in results["startup"]:
            imp = _median([c.get("import_s") for c in s["cached_runs"]])
            lines.append(f"| {s['algorithms']} | {_f(s['cold_wall_s'], '{:.1f}')} | "
                         f"{_f(s['cached_wall_s_median'])} | {_f(imp)} |")
    for note in results["notes"]:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"


def write_plot(results: dict, path: Path) -> None:
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
    for i, (name, s) in enumerate(results["scaling"].items()):
        color = palette[i % len(palette)]
        fit = s["wall"]
        label = s["label"] + (f" — exponent {fit['exponent']:.2f}" if fit else "")
        fig.add_trace(go.Scatter(x=s["rows"], y=s["wall_s"], mode="markers+lines", name=label,
                                 line={"color": color}, marker={"size": 8}))
        if fit:
            xs = np.array([min(s["rows"]), max(s["rows"])], dtype=float)
            fig.add_trace(go.Scatter(x=xs, y=np.exp(fit["intercept"]) * xs ** fit["exponent"],
                                     mode="lines", line={"color": color, "dash": "dot"},
                                     showlegend=False, hoverinfo="skip"))
    all_rows = [r for s in results["scaling"].values() for r in s["rows"]
                if not is_serenade(s.get("algorithm", ""))]
    if all_rows:
        # the target as a trace: add_hline's annotation is misplaced on log axes
        fig.add_trace(go.Scatter(x=[min(all_rows), max(all_rows)], y=[TARGET_FIT_S] * 2,
                                 mode="lines", line={"color": "gray", "dash": "dash"},
                                 name=f"tree-miner target: {TARGET_FIT_S:g} s on CMS-2-16"))
    m = results["machine"]
    fig.update_layout(
        title=f"Fit time vs rows (CMS-2-k shape, 452 Boolean + 152 numeric), median of "
              f"{results['repeats']}; {m['cores_available']} cores, {m['date'][:10]}",
        xaxis={"title": "rows", "type": "log"}, yaxis={"title": "wall time (s)", "type": "log"},
        legend={"title": "setting — fitted exponent (least squares, log–log)",
                "orientation": "h", "x": 0.0, "y": -0.15, "yanchor": "top"},
        template="plotly_white", width=1000, height=750, margin={"b": 220})
    fig.write_html(str(path), include_plotlyjs=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke check: k = 1, 2 only and 1 repeat")
    parser.add_argument("--sizes", help="comma-separated CMS-2-k sizes k (default 1,2,4,8,16)")
    parser.add_argument("--algorithms", help="comma-separated algorithms (default: all of "
                        "dpcore.redescriptions.params.ALGORITHMS)")
    parser.add_argument("--repeats", type=int, help="mine() runs per case; the median is "
                        "reported (default 3, --quick 1)")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated parts to run (default {','.join(PARTS)})")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output folder "
                        "(default bench/results)")
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                        help="before each case, wait up to SECONDS for other processes to "
                        "leave the cores idle (for shared machines; default 0 = don't wait)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.case:
        spec = json.loads(args.case)
        result = case_numpy(spec) if spec["kind"] == "numpy" else case_mine(spec)
        print(json.dumps(result))
        return 0

    from dpcore.registry import ALGORITHMS

    sizes = ([int(x) for x in args.sizes.split(",")] if args.sizes
             else [1, 2] if args.quick else list(CMS_SIZES))
    algorithms = args.algorithms.split(",") if args.algorithms else list(ALGORITHMS)
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        parser.error(f"unknown algorithm(s) {unknown}; known: {', '.join(ALGORITHMS)}")
    parts = args.parts.split(",")
    if [p for p in parts if p not in PARTS]:
        parser.error(f"--parts takes some of {', '.join(PARTS)}")
    repeats = args.repeats or (1 if args.quick else 3)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = [s for a in algorithms for s in settings_for(a)]
    started = time.perf_counter()
    notes: list[str] = []
    cases: list[dict] = []
    log(f"sizes k = {sizes}, algorithms {algorithms}, repeats {repeats}, parts {parts}; "
        f"results to {out_dir}")

    def mine_case(dataset: dict, setting: dict, **extra):
        log(f"case {dataset['label']} / {setting['label']} ...")
        if args.wait_idle > 0:
            waited = wait_idle(args.wait_idle)
            if waited > 1.5:
                log(f"  waited {waited:.0f} s for idle cores")
        res = run_child({"kind": "mine", "dataset": dataset, "setting": setting,
                         "repeats": repeats, **extra})
        if "error" in res:
            log(f"  FAILED: {res['error']}")
        else:
            s = res["summary"]
            log(f"  median wall {s['wall_s_median']:.2f} s, peak RSS {res['peak_rss_mb']:.0f} MB"
                f", data {res['data_s']:.1f} s, other processes kept "
                f"{res['other_cores_busy'] or 0:.2f} core(s) busy")
        cases.append(res)

    if "cms" in parts:
        for k in sizes:
            for setting in settings:
                mine_case({"name": "cms", "k": k, "label": f"CMS-2-{k}"}, setting)
    if "desynpuf" in parts:
        from bench.desynpuf import missing_reason

        reason = missing_reason()
        if reason:
            log(reason)
            notes.append(reason)
        else:
            for setting in settings:
                mine_case({"name": "desynpuf", "label": "DE-SynPUF 2008–10"}, setting)
    if "interactive" in parts:
        for a in algorithms:
            mine_case({"name": "interactive", "label": "interactive 2,500 × 250"},
                      interactive_setting(a), cached_repeats=repeats)
    numpy_cases = []
    if "numpy" in parts:
        small = [k for k in sizes if k <= NUMPY_MAX_K]
        if not small:
            notes.append(f"NumPy reference skipped: it runs on k ≤ {NUMPY_MAX_K}, none of "
                         f"{sizes} is")
        for k in small:
            log(f"NumPy reference CMS-2-{k} ...")
            if args.wait_idle > 0:
                wait_idle(args.wait_idle)
            res = run_child({"kind": "numpy", "k": k,
                             "n_iter": 1_000 if args.quick else NUMPY_ITER,
                             "time_budget": NUMPY_BUDGET_S})
            if "error" in res:
                log(f"  FAILED: {res['error']}")
            else:
                log(f"  NumPy {res['numpy']['seconds_per_iteration'] * 1e3:.2f} ms/it, numba "
                    f"{res['numba_direct_s_per_iteration'] * 1e6:.1f} µs/it")
            numpy_cases.append(res)
    startup = (run_startup(algorithms, repeats, args.wait_idle) if "startup" in parts
               else [])

    ok_cases = [c for c in cases if "error" not in c]
    results = {"machine": machine_info(), "command": " ".join([sys.executable, "-m", "bench.run"]
                                                               + (argv or sys.argv[1:])),
               "sizes": sizes, "algorithms": algorithms, "repeats": repeats, "parts": parts,
               "settings": settings, "cases": cases, "numpy_reference": numpy_cases,
               "startup": startup, "scaling": scaling(ok_cases),
               "numpy_speedup": numpy_speedups(numpy_cases, ok_cases), "notes": notes}
    results["targets"] = assess_targets(ok_cases, startup)
    digests = sorted({c.get("dpcore_source") for c in ok_cases + numpy_cases
                      if "error" not in c} - {None})
    if len(digests) > 1:
        notes.append(f"dpcore's sources changed during the run (source hashes "
                     f"{', '.join(digests)}): the cases did not all measure the same code")
    busy = [c for c in ok_cases if (c["summary"].get("cpu_over_wall_min") or 1.0) < 0.9
            or (c.get("other_cores_busy") or 0.0) > OTHER_BUSY_LIMIT]
    if busy:
        notes.append(f"{len(busy)} case(s) ran while other processes kept more than "
                     f"{OTHER_BUSY_LIMIT:g} core busy on average (or a run got < 0.9 s of CPU "
                     f"per wall second); their times may be inflated: "
                     + ", ".join(f"{c['dataset']['label']} / {c['setting']['label']}"
                                 for c in busy))
    results["total_seconds"] = time.perf_counter() - started
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=float))
    summary = summary_markdown(results)
    (out_dir / "summary.md").write_text(summary)
    if results["scaling"]:
        write_plot(results, out_dir / "scaling.html")
    log(f"done in {results['total_seconds'] / 60:.1f} min: {out_dir / 'results.json'}, "
        f"{out_dir / 'summary.md'}" + (f", {out_dir / 'scaling.html'}" if results["scaling"]
                                       else ""))
    print(summary)
    return 1 if any("error" in c for c in cases + numpy_cases) else 0


if __name__ == "__main__":
    sys.exit(main())
