"""Whole-process timings of the command line: ``--help`` and warm ``mine`` runs (issue 19).

Registers ``sample_data/cms_small`` (and, with ``--faithful-shape``, a generated dataset of the
CMS-2-1 shape that ``bench/javaref/speed.py`` uses) in a private ledger in the work folder,
runs every command once untimed (fills the compiled-kernel cache and the data cache), then
``--rounds`` interleaved rounds of whole ``python -m dpcore`` processes. Wall time, CPU time
(user + system of that child, from ``os.wait4``) and peak memory are taken per process; the
summary gives medians per command and the 1-minute load average before and after (on a shared
machine CPU is the figure to compare).

``--tree NAME=DIR`` (repeatable) compares source trees, for instance a ``git archive`` of
the commit before a change and one after it: each command of each tree runs from ``DIR`` (so
``python -m dpcore`` imports that tree's dpcore) with its own ledger in ``--work/NAME``, and
every round runs every tree's commands one after the other, so load changes hit all trees
alike. ``--faithful-shape`` also takes a dataset folder (e.g. a copy of a CMS-2-1 shape).

::

    .venv/bin/python -m bench.cli_startup --rounds 5 [--faithful-shape cms:7200:40:16]
    .venv/bin/python -m bench.cli_startup --rounds 5 --tree before=/tmp/b --tree after=/tmp/a

Uses ``$NUMBA_CACHE_DIR`` as it is (set it to a private folder to measure a cold cache
separately). Prints JSON; nothing is written outside ``--work`` (and, on the first run,
the data cache the loader writes beside each registered dataset's files).
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


def _tree(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or not name or not (Path(folder) / "dpcore" / "__main__.py").is_file():
        raise argparse.ArgumentTypeError(f"--tree: expected NAME=DIR with DIR/dpcore a source "
                                         f"tree; got {text!r}")
    return name, Path(folder).resolve()


def _prepare_tree(tree: Path | None, work: Path, faithful: Path | None) -> dict:
    """A ledger in ``work`` with cms_small (the tree's own sample) and ``faithful`` as
    ``shape``; returns the environment of the tree's processes."""
    work.mkdir(parents=True, exist_ok=True)
    env = dpcore_env(work)
    dpcore = [sys.executable, "-m", "dpcore"]
    if not (work / "ledger.sqlite").exists():
        samples = (tree / "sample_data") if tree else sample_data_dir()
        subprocess.run([*dpcore, "register", "--data", str(samples / "cms_small"),
                        "--cap", "1000000"], env=env, cwd=tree, check=True,
                       stderr=subprocess.DEVNULL)
        if faithful:
            subprocess.run([*dpcore, "register", "--data", str(faithful), "--name", "shape",
                            "--cap", "1000000"], env=env, cwd=tree, check=True,
                           stderr=subprocess.DEVNULL)
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default="/tmp/dpcore_cli_startup")
    ap.add_argument("--faithful-shape", default=None,
                    help="also time faithful runs on cms:ROWS:N_BOOL:N_NUMERIC data or on "
                         "a dataset folder")
    ap.add_argument("--tree", type=_tree, action="append", default=[], metavar="NAME=DIR",
                    help="compare source trees (default: this one)")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    faithful = prepare_dataset(args.faithful_shape, work)[0] if args.faithful_shape else None
    trees = args.tree or [("", None)]
    envs = {name: _prepare_tree(folder, work / name if name else work, faithful)
            for name, folder in trees}
    dpcore = [sys.executable, "-m", "dpcore"]
    out_json = str(work / "out.json")
    cmds = {f"{tree}: {name}" if tree else name: (tree, folder, argv_)
            for name, argv_ in commands(args).items() for tree, folder in trees}
    for tree, folder, argv_ in cmds.values():   # untimed: kernel cache, data cache, bytecode
        subprocess.run([*dpcore, *argv_, "--out", out_json] if argv_[0] == "mine"
                       else [*dpcore, *argv_], env=envs[tree], cwd=folder, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    for rnd in range(args.rounds):
        for name, (tree, folder, argv_) in cmds.items():
            extra = ["--out", out_json] if argv_[0] == "mine" else []
            load = os.getloadavg()[0]
            m = timed_process([*dpcore, *argv_, *extra], env=envs[tree], cwd=folder)
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
