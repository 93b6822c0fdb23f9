"""Whole-process timings of the command line: ``--help`` and warm ``mine`` runs (issue 19).

Registers ``sample_data/cms_small`` (and, with ``--faithful-shape``, a generated dataset of the
CMS-2-1 shape that ``bench/javaref/speed.py`` uses) in a private ledger in the work folder,
runs every command once untimed (fills the compiled-kernel cache and the data cache), then
``--rounds`` interleaved rounds of whole ``python -m dpcore`` processes. Wall time, CPU time
(user + system of that child, from ``os.wait4``) and peak memory are taken per process; the
summary gives medians per command and the 1-minute load average before and after (on a shared
machine CPU is the figure to compare).

::

    .venv/bin/python -m bench.cli_startup --rounds 5 [--faithful-shape cms:7200:40:16]

Uses ``$NUMBA_CACHE_DIR`` as it is (set it to a private folder to measure a cold cache
separately). Prints JSON; nothing is written outside ``--work``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench.javaref.speed import dpcore_env, prepare_dataset, timed_process
from dpcore.data.loading import sample_data_dir
from dpcore.registry import FAITHFUL, TREE_ALGORITHMS


def commands(args) -> dict[str, list[str]]:
    """Command name → argv after ``python -m dpcore``."""
    out = {"--help": ["--help"]}
    for alg in TREE_ALGORITHMS:
        out[f"mine {alg}"] = ["mine", "--dataset", "cms_small", "--algorithm", alg,
                              "--epsilon", "1", "--seed", "1"]
    if args.faithful_shape:
        for alg in TREE_ALGORITHMS:
            out[f"faithful {alg} ({args.faithful_shape})"] = [
                "mine", "--dataset", "shape", "--algorithm", alg, "--mode", FAITHFUL,
                "--owner", "--epsilon", "1", "--seed", "1"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default="/tmp/dpcore_cli_startup")
    ap.add_argument("--faithful-shape", default=None,
                    help="also time faithful runs on cms:ROWS:N_BOOL:N_NUMERIC data")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    env = dpcore_env(work)
    dpcore = [sys.executable, "-m", "dpcore"]
    if not (work / "ledger.sqlite").exists():
        subprocess.run([*dpcore, "register", "--data", str(sample_data_dir() / "cms_small"),
                        "--cap", "1000000"], env=env, check=True, stderr=subprocess.DEVNULL)
        if args.faithful_shape:
            folder, _ = prepare_dataset(args.faithful_shape, work)
            subprocess.run([*dpcore, "register", "--data", str(folder), "--name", "shape",
                            "--cap", "1000000"], env=env, check=True, stderr=subprocess.DEVNULL)
    cmds = commands(args)
    for argv_ in cmds.values():          # untimed: kernel cache, data cache, bytecode
        subprocess.run([*dpcore, *argv_, "--out", str(work / "out.json")] if argv_[0] == "mine"
                       else [*dpcore, *argv_], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    for rnd in range(args.rounds):
        for name, argv_ in cmds.items():
            extra = ["--out", str(work / "out.json")] if argv_[0] == "mine" else []
            load = os.getloadavg()[0]
            m = timed_process([*dpcore, *argv_, *extra], env=env)
            if m["rc"] != 0:
                print(f"[{name}] rc={m['rc']}: {m['stderr_tail']}", file=sys.stderr)
            rows.append({"round": rnd, "command": name, "load_before": load, **m})
    summary = {}
    for name in cmds:
        rs = [r for r in rows if r["command"] == name and r["rc"] == 0]
        summary[name] = {k: round(statistics.median(r[k] for r in rs), 3) if rs else None
                         for k in ("wall_s", "cpu_s", "peak_rss_mib")}
    loads = [r["load_before"] for r in rows]
    out = {"rounds": args.rounds, "cpus": os.cpu_count(),
           "load_first": round(loads[0], 2), "load_last": round(os.getloadavg()[0], 2),
           "load_median": round(statistics.median(loads), 2),
           "bytecode_cache": not sys.flags.dont_write_bytecode, "summary": summary}
    (work / "cli_startup.json").write_text(json.dumps({**out, "runs": rows}, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
