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
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.cases import case_mine, case_numpy, dpcore_source_digest, run_startup
from bench.report import assess_targets, numpy_speedups, scaling, summary_markdown, write_plot
from bench.settings import (
    CASE_TIMEOUT_S,
    CMS_SIZES,
    DEFAULT_OUT,
    NUMPY_BUDGET_S,
    NUMPY_ITER,
    NUMPY_MAX_K,
    OTHER_BUSY_LIMIT,
    PARTS,
    REPO_ROOT,
    _machine_busy_s,
    interactive_setting,
    log,
    settings_for,
    wait_idle,
)

# ---------------------------------------------------------------------------
# Parent: orchestration, analysis, output
# ---------------------------------------------------------------------------

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

    return {"date": datetime.now(UTC).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "cpu_model": model, "memory_gb": mem, "platform": platform.platform(),
            "python": platform.python_version(), "numpy": ver("numpy"), "numba": ver("numba"),
            "llvmlite": ver("llvmlite"), "pandas": ver("pandas"), "plotly": ver("plotly"),
            "dpcore": __version__, "dpcore_source": dpcore_source_digest(),
            "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR", "(dpcore default: "
                                              ".numba_cache/<version>-<source hash>)")}


def main(argv=None) -> int:  # noqa: C901, PLR0912, PLR0915
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
