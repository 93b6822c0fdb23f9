"""PFS2 benchmark: a whole strict run on the three data shapes of Xu et al. (2015), beside
exact mining of the same data.

Run from the repository root (never part of the test suite)::

    .venv/bin/python -m bench.pfs2                 # all three shapes, 3 repeats (~3 min)
    .venv/bin/python -m bench.pfs2 --shapes msnbc --repeats 5
    .venv/bin/python -m bench.pfs2 --no-prefixspan --out /tmp/pfs2.json
    .venv/bin/python -m bench.pfs2 --shapes bible --epsilon 0.1 --no-prefixspan
    .venv/bin/python -m bench.pfs2 --shapes house_power --theta 0.02 --no-exact

Shapes (synthetic, :mod:`dpcore.sequences.samples`; the real data are not shipped):

* ``msnbc``: 989,818 Markov clickstreams over 17 items, θ = 0.02, l1 = 8;
* ``bible``: 36,369 Zipf word streams over 13,905 items (mean length 21.6), θ = 0.1, l1 = 32;
* ``house_power``: 40,986 windows of 50 readings × 21 levels, θ = 0.3, l1 = 30.

Each shape runs in a fresh subprocess, so its peak RSS is its own. In it: warm the kernels
on a tiny dataset (compile or load the numba cache), generate the data (timed apart), run
strict PFS2 at ε = 1 (``--epsilon``) ``repeats`` times with fixed seeds (median wall:
"warm"), read the peak RSS, then time exact mining of the same data at the same θ with
dpcore's own exact miner and with the ``prefixspan`` package (pure Python; if installed,
under a time limit), and report PFS2's wall as a ratio of each. The machine's 1-minute load
average is printed with every figure (2 cores are shared: a load above ~1 means the
figures are inflated). Targets: the MSNBC shape ≤ 3 s warm and ≤ 1 GB peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time

SHAPES = {
    "msnbc": {"label": "MSNBC shape (989,818 × 17 items)", "theta": 0.02, "l1": 8},
    "bible": {"label": "BIBLE shape (36,369 × 13,905 items)", "theta": 0.1, "l1": 32},
    "house_power": {"label": "House_Power shape (40,986 × 50, 21 levels)", "theta": 0.3,
                    "l1": 30},
}
TARGET_WALL_S, TARGET_RSS_MB = 3.0, 1024.0
EPSILON = 1.0


def _load() -> float:
    return os.getloadavg()[0]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def run_case(shape: str, repeats: int, prefixspan_timeout: float, epsilon: float = EPSILON,
             theta: float | None = None, exact: bool = True) -> dict:
    """One shape, in this process (call it in a fresh subprocess).

    ``theta`` overrides the shape's θ; ``exact=False`` skips exact mining (and so F, the
    median relative error and the ratios): at θ = 0.02 on the House_Power shape exact
    mining does not finish in minutes.
    """
    import numpy as np

    from dpcore.sequences import samples
    from dpcore.sequences.evaluate import exact_frequent_sequences, f_score, median_relative_error
    from dpcore.sequences.miner import mine_frequent_sequences
    from dpcore.sequences.params import SequenceMiningParams

    setting = SHAPES[shape]
    theta = float(setting["theta"] if theta is None else theta)
    out: dict = {"shape": shape, "label": setting["label"], "theta": theta,
                 "l1": setting["l1"], "epsilon": epsilon}
    started = time.perf_counter()
    tiny = samples.generate_clickstream(500, 1)
    mine_frequent_sequences(tiny, SequenceMiningParams(theta=0.05),
                            rng=np.random.default_rng(0))
    out["warm_up_s"] = time.perf_counter() - started

    started = time.perf_counter()
    data = {"msnbc": samples.msnbc_shape, "bible": samples.bible_shape,
            "house_power": samples.house_power_shape}[shape]()
    out["data_s"] = time.perf_counter() - started
    out["records"], out["items"] = data.n_records, int(data.lengths.sum())

    params = SequenceMiningParams(epsilon=epsilon, theta=theta, l1=setting["l1"])
    walls, loads, result = [], [], None
    for seed in range(repeats):
        loads.append(_load())
        started = time.perf_counter()
        result = mine_frequent_sequences(data, params, rng=np.random.default_rng(seed))
        walls.append(time.perf_counter() - started)
    out["pfs2_walls_s"] = walls
    out["pfs2_wall_s"] = statistics.median(walls)
    out["pfs2_load"] = max(loads)
    out["peak_rss_mb"] = _peak_rss_mb()
    out["phases_s"] = {k: round(v, 3) for k, v in result.diagnostics.phase_seconds.items()}
    out["lmax"], out["l_f"] = result.lmax, result.max_frequent_length
    out["released"] = len(result.patterns)
    # per level: k, |C_k|, pruned (Δ_k > 0), kept, released, dropped by the cap, stop note
    out["levels"] = [(lv.length, lv.candidates, lv.prune_sensitivity > 0,
                      lv.kept_after_pruning, lv.frequent, lv.capped, lv.note)
                     for lv in result.levels]
    out["unspent_epsilon"] = result.unspent_nano / 1e9
    out["exact_wall_s"] = out["true_frequent"] = out["f_score"] = out["median_re"] = None
    out["prefixspan_wall_s"] = None
    if not exact:
        out["load_after"] = _load()
        return out

    load = _load()
    started = time.perf_counter()
    truth = exact_frequent_sequences(data, theta=theta)
    out["exact_wall_s"] = time.perf_counter() - started
    out["exact_load"] = load
    out["true_frequent"] = len(truth)
    out["true_max_length"] = max(map(len, truth)) if truth else 0
    score = f_score(result.supports(), truth)
    out["f_score"] = score.f_score
    out["median_re"] = median_relative_error(result.supports(), data)

    if prefixspan_timeout > 0:
        try:
            from prefixspan import PrefixSpan
        except ImportError:
            out["prefixspan"] = "not installed"
        else:
            from dpcore.sequences.evaluate import support_threshold

            records = data.to_lists()
            out["prefixspan_load"] = _load()
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, prefixspan_timeout)
            started = time.perf_counter()
            try:
                found = PrefixSpan(records).frequent(
                    support_threshold(theta, data.n_records))
                out["prefixspan_wall_s"] = time.perf_counter() - started
                out["prefixspan_agrees"] = {tuple(p): s for s, p in found} == truth
            except _Timeout:
                out["prefixspan"] = f"over {prefixspan_timeout:.0f} s"
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    out["load_after"] = _load()
    return out


def _fmt(x, spec=".2f") -> str:
    return "—" if x is None else format(x, spec)


def summary(cases: list[dict]) -> str:
    lines = ["| shape | θ | PFS2 warm (s) | load | peak RSS (MB) | lmax / L_f | released / true "
             "| F | median RE | exact, dpcore (s) | PFS2 / exact | prefixspan (s) "
             "| PFS2 / prefixspan |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        ps = c.get("prefixspan_wall_s")
        ps_text = _fmt(ps, ".1f") if ps is not None else c.get("prefixspan", "—")
        ex = c["exact_wall_s"]
        lines.append(
            f"| {c['label']} | {c['theta']:g} | {c['pfs2_wall_s']:.2f} | {c['pfs2_load']:.2f} | "
            f"{c['peak_rss_mb']:.0f} | {c['lmax']} / {c['l_f']} | {c['released']} / "
            f"{_fmt(c['true_frequent'], 'd')} | {_fmt(c['f_score'])} | "
            f"{_fmt(c['median_re'], '.3f')} | {_fmt(ex)} | "
            f"{_fmt(c['pfs2_wall_s'] / ex if ex else None)} | "
            f"{ps_text} | {_fmt(c['pfs2_wall_s'] / ps if ps else None)} |")
    msnbc = next((c for c in cases if c["shape"] == "msnbc"), None)
    if msnbc:
        ok = msnbc["pfs2_wall_s"] <= TARGET_WALL_S and msnbc["peak_rss_mb"] <= TARGET_RSS_MB
        lines += ["", f"Target (MSNBC shape ≤ {TARGET_WALL_S:.0f} s warm, ≤ "
                      f"{TARGET_RSS_MB:.0f} MB peak RSS): {'met' if ok else 'MISSED'} "
                      f"({msnbc['pfs2_wall_s']:.2f} s, {msnbc['peak_rss_mb']:.0f} MB, "
                      f"1-min load {msnbc['pfs2_load']:.2f} on {os.cpu_count()} cores)."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pfs2",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help="comma-separated: " + ", ".join(SHAPES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=EPSILON,
                        help="ε of every PFS2 run (default 1; 0.1 shows the work bound on "
                             "the BIBLE shape)")
    parser.add_argument("--prefixspan-timeout", type=float, default=600.0,
                        help="seconds per shape for the prefixspan package (0: skip)")
    parser.add_argument("--no-prefixspan", action="store_true")
    parser.add_argument("--theta", type=float,
                        help="θ for every shape (default: each shape's own)")
    parser.add_argument("--no-exact", action="store_true",
                        help="skip exact mining (no F, no ratios; implies --no-prefixspan)")
    parser.add_argument("--out", help="write every raw figure as JSON to this file")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    timeout = 0.0 if args.no_prefixspan or args.no_exact else args.prefixspan_timeout
    if args.case:
        print(json.dumps(run_case(args.case, args.repeats, timeout, args.epsilon, args.theta,
                                  not args.no_exact)))
        return 0
    cases = []
    for shape in args.shapes.split(","):
        if shape not in SHAPES:
            parser.error(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")
        print(f"[pfs2] {SHAPES[shape]['label']} (load {_load():.2f}) …", file=sys.stderr,
              flush=True)
        proc = subprocess.run([sys.executable, "-m", "bench.pfs2", "--case", shape,
                               "--repeats", str(args.repeats), "--prefixspan-timeout",
                               str(timeout), "--epsilon", str(args.epsilon)]
                              + (["--theta", str(args.theta)] if args.theta else [])
                              + (["--no-exact"] if args.no_exact else []),
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        case = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"[pfs2]   {json.dumps(case)}", file=sys.stderr, flush=True)
        cases.append(case)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"cpu_count": os.cpu_count(), "cases": cases}, fh, indent=1)
    print(summary(cases))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
