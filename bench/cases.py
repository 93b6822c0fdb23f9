"""One benchmark case in a fresh process (``python -m bench.run --case JSON``), and the
start-up measurements."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.settings import (
    CASE_TIMEOUT_S,
    CMS_BASE_ROWS,
    CMS_BOOL,
    CMS_NUMERIC,
    DATA_SEED,
    DEPTH,
    INTERACTIVE,
    MC_ITER,
    REPO_ROOT,
    RUN_SEED,
    is_serenade,
    log,
    params_of,
    settings_for,
    tiny_params,
    wait_idle,
)
from dpcore.registry import MCMCTREEPAIR, STRICT

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

    from dpcore.data.samples import generate_cms_like_dataset
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import family_type

    start = time.perf_counter()
    tiny = generate_cms_like_dataset(300, n_bool=20, n_numeric=8, seed=1)
    mine(tiny, family_type(algorithm)(**tiny_params(algorithm, "warm-up")),
         rng=np.random.default_rng(0))
    return time.perf_counter() - start


def _make_dataset(spec: dict):
    from dpcore.data.samples import generate_cms_like_dataset

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
    from dpcore.data.dataset import TwoViewDataset

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
    from dpcore.redescriptions.trees import sample_tree_pair

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

# argv[1]: JSON list of parameter keyword dicts, one tiny mine() each (tiny_params)
STARTUP_CODE = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from dpcore.data.samples import generate_cms_like_dataset
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import family_type
t_import = time.perf_counter() - t0
data = generate_cms_like_dataset(300, n_bool=20, n_numeric=8, seed=1)
first = {}
for kw in json.loads(sys.argv[1]):
    t = time.perf_counter()
    mine(data, family_type(kw["algorithm"])(**kw), rng=np.random.default_rng(0))
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
    """Per algorithm and for all together: a process that imports
    dpcore.redescriptions.mining and runs one
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
