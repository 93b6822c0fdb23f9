"""Whole-process speed of the authors' Java code vs ``python -m dpcore mine --mode faithful``.

Each round runs, for every miner, one Java process (JVM start, ARFF loading, mining, output)
and one dpcore process (interpreter start, imports, compiled-kernel loading, ledger check and
charge, mining, storing, output), alternating so that both see the same machine load. Per
process: wall time, CPU time (user + system) and peak resident memory, from ``os.wait4`` on
that very child. The summary gives medians per miner and side and the Java/dpcore ratios, with
the 1-minute load average before and after. The dpcore side uses a private ledger in the work
directory, owner mode (faithful runs are owner-only) and a generous cap; nothing is private
here — use public or generated data.

Usage (from the repository root)::

    .venv/bin/python -m bench.javaref.speed --java-src PATH --dataset cms:7200:40:16 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.javaref.run import (
    ALGORITHMS,
    MAIN_CLASS,
    JavaSettings,
    build,
    dpcore_params,
    math_jar,
    read_queries,
    weka_jar,
    write_arff,
)

OWNER_PASSWORD = "javaref-bench"


def timed_process(cmd, *, env=None, cwd=None) -> dict:
    """Run ``cmd`` to completion; wall, CPU and peak RSS of that child (``os.wait4``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    with proc.stderr:
        stderr = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mib": ru.ru_maxrss / 1024,
            "rc": proc.returncode, "stderr_tail": stderr.decode(errors="replace")[-600:]}


def prepare_dataset(spec: str, work: Path) -> tuple[Path, str]:
    """A dataset folder (CSV + schema.json) for dpcore; returns (folder, schema name)."""
    if spec.startswith("cms:"):
        from dpcore.data.samples.cms import generate_cms_like
        from dpcore.data.samples.write import write_dataset

        parts = [int(x) for x in spec.split(":")[1:]]
        n_bool, n_num = (parts[1], parts[2]) if len(parts) >= 3 else (452, 152)
        seed = parts[3] if len(parts) >= 4 else 20232
        schema, left, right, *_ = generate_cms_like(parts[0], n_bool=n_bool, n_numeric=n_num,
                                                    seed=seed)
        folder = work / "data"
        write_dataset(folder, schema, left, right)
        return folder, schema.name
    from dpcore.data.schema import load_schema

    folder = Path(spec)
    schema_file = folder / "schema.json" if folder.is_dir() else folder
    return (folder if folder.is_dir() else folder.parent), load_schema(schema_file).name


def dpcore_mine_flags(algorithm: str, settings: JavaSettings) -> list[str]:
    """``python -m dpcore mine`` flags for the parameters of the Java ``settings``.

    The mapping is ``run.dpcore_params`` (the quality comparison's): MCMCTreePair runs InTr =
    ``numIterations`` trials, AltMCMC / AltExpM one chain of RMIter = ``numIterations``
    alternation steps (InTr = 1), as the Java programs do; every threshold is the Java one.
    """
    args = argparse.Namespace(
        epsilon=settings.epsilon, depth=settings.depth, mc_iter=settings.mc_iter,
        sigma=settings.sigma, min_supp=settings.min_supp, max_supp=settings.max_supp,
        min_jaccard=settings.min_jaccard, max_pval=settings.max_pval,
        max_clauses=settings.max_clauses, iterations=settings.n_iterations,
        omega=settings.weight_split)
    params = dpcore_params(algorithm, args)
    flags = {"epsilon": "--epsilon", "depth": "--depth", "mc_iter": "--mc-iter",
             "sigma": "--sigma", "min_support": "--min-support", "max_support": "--max-support",
             "min_jaccard": "--min-jaccard", "max_pvalue": "--max-pvalue",
             "max_clauses": "--max-clauses", "in_tr": "--in-tr", "rm_iter": "--rm-iter",
             "omega": "--omega"}
    out = ["--algorithm", params.pop("algorithm"), "--mode", params.pop("mode")]
    for key, value in params.items():
        out += [flags[key], str(value)]
    return out


OWNER_NAME = "javaref-owner"


def dpcore_env(work: Path) -> dict:
    """Every dpcore child's environment: the private ledger in ``work``, its owner account
    signed in from ``$DPRM_USER`` / ``$DPRM_PASSWORD`` (a script's secret)."""
    env = dict(os.environ)
    env["DPRM_LEDGER"] = str(work / "ledger.sqlite")
    env["DPRM_USER"] = OWNER_NAME
    env["DPRM_PASSWORD"] = OWNER_PASSWORD
    return env


def prepare_ledger(work: Path, folder: Path, env: dict) -> None:
    """A new ledger in ``work`` with the owner account and ``folder`` registered (register
    needs an owner signed in: accounts live in the ledger)."""
    if (work / "ledger.sqlite").exists():
        return
    steps = [(["users", "add", OWNER_NAME, "--role", "owner", "--password-stdin"],
              OWNER_PASSWORD + "\n"),
             (["register", "--data", str(folder), "--cap", "1000000"], None)]
    for argv, stdin in steps:
        done = subprocess.run([sys.executable, "-m", "dpcore", *argv], input=stdin, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            (work / "ledger.sqlite").unlink(missing_ok=True)
            raise SystemExit(f"bench.javaref.speed: `dpcore {' '.join(argv)}` failed "
                             f"({done.returncode}): {done.stderr.strip()}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--java-src", required=True)
    ap.add_argument("--dataset", default="cms:7200:40:16",
                    help="cms:ROWS[:N_BOOL:N_NUMERIC[:SEED]] or a dataset folder / schema file")
    ap.add_argument("--algorithm", choices=ALGORITHMS, action="append")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/javaref_speed")
    ap.add_argument("--weka-jar"), ap.add_argument("--math-jar")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--iterations", type=int, default=4,
                    help="the Java numIterations: trials of MCMCTreePair, alternation steps "
                         "of the AltMCMC / AltExpM chain (dpcore: InTr, or RMIter with InTr 1)")
    args = ap.parse_args(argv)
    algorithms = args.algorithm or list(ALGORITHMS)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cp = f"{weka_jar(work, args.weka_jar)}{os.pathsep}{math_jar(args.math_jar)}"
    cp = f"{build(Path(args.java_src).expanduser(), work, cp)}{os.pathsep}{cp}"

    from dpcore.data.loading import load_dataset

    folder, name = prepare_dataset(args.dataset, work)
    dataset = load_dataset(folder)
    write_arff(dataset, 0, work / "view1.arff")
    write_arff(dataset, 1, work / "view2.arff")
    env = dpcore_env(work)
    prepare_ledger(work, folder, env)
    # a seed only on public demo data (the policy refuses it on private data, e.g. DE-SynPUF)
    def seed(k: int) -> list[str]:
        return ["--seed", str(k)] if dataset.schema.public_demo else []

    def settings(alg: str) -> JavaSettings:
        rr = work / f"speed_{alg}.rr"
        return JavaSettings(str(work / "view1.arff"), str(work / "view2.arff"), str(rr),
                            epsilon=args.epsilon, n_iterations=args.iterations)

    # one untimed dpcore run per miner first: fills the compiled-kernel cache
    for alg in algorithms:
        subprocess.run([sys.executable, "-m", "dpcore", "mine", "--dataset", name,
                        *dpcore_mine_flags(alg, settings(alg)), "--owner", *seed(0),
                        "--out", str(work / "warm.json")],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    for rnd in range(args.rounds):
        for alg in algorithms:
            rr = work / f"speed_{alg}.rr"
            settings(alg).write(work / f"speed_{alg}.settings")
            main_class, extra = MAIN_CLASS[alg]
            load0 = os.getloadavg()[0]
            j = timed_process(["java", "-Xmx4g", "-cp", cp, main_class,
                               str(work / f"speed_{alg}.settings"), *extra], cwd=work)
            j["n_redescriptions"] = len(read_queries(rr.with_suffix(".queries")))
            d = timed_process([sys.executable, "-m", "dpcore", "mine", "--dataset", name,
                               *dpcore_mine_flags(alg, settings(alg)), "--owner",
                               *seed(rnd + 1), "--out", str(work / f"speed_{alg}.json")],
                              env=env)
            if d["rc"] == 0:
                d["n_redescriptions"] = len(json.loads(
                    (work / f"speed_{alg}.json").read_text()).get("redescriptions", []))
            for side, m in (("java", j), ("dpcore", d)):
                rows.append({"round": rnd, "miner": alg, "side": side, "load_before": load0,
                             "load_after": os.getloadavg()[0], **m})
                if m["rc"] != 0:
                    print(f"[{side} {alg}] rc={m['rc']}: {m['stderr_tail']}", file=sys.stderr)
            print(f"round {rnd} {alg}: java {j['wall_s']:.1f} s wall / {j['cpu_s']:.1f} s CPU "
                  f"/ {j['peak_rss_mib']:.0f} MiB; dpcore {d['wall_s']:.1f} / {d['cpu_s']:.1f} "
                  f"/ {d['peak_rss_mib']:.0f} MiB (load {load0:.1f})", file=sys.stderr)
    summary = {}
    for alg in algorithms:
        med = {}
        for side in ("java", "dpcore"):
            rs = [r for r in rows if r["miner"] == alg and r["side"] == side and r["rc"] == 0]
            med[side] = {k: statistics.median(r[k] for r in rs) if rs else None
                         for k in ("wall_s", "cpu_s", "peak_rss_mib")}
            med[side]["n_redescriptions"] = [r.get("n_redescriptions") for r in rs]
        ratio = {k: (med["java"][k] / med["dpcore"][k]
                     if med["java"][k] and med["dpcore"][k] else None)
                 for k in ("wall_s", "cpu_s", "peak_rss_mib")}
        summary[alg] = {"median": med, "java_over_dpcore": ratio}
    loads = [r["load_before"] for r in rows] + [r["load_after"] for r in rows]
    load = {"median": statistics.median(loads), "min": min(loads), "max": max(loads)}
    out = {"dataset": args.dataset, "rows": dataset.n_rows, "rounds": args.rounds,
           "cpus": os.cpu_count(), "load_1min": load, "summary": summary, "runs": rows}
    (work / "speed.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({"dataset": args.dataset, "rows": dataset.n_rows, "load_1min": load,
                      "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
