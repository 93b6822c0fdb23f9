"""Cold start of ``python -m dpcore mine``: compile time per kernel and in total, per miner.

For every miner of every family (the five redescription miners, PFS2 and its baseline,
MC-GEN and the floor) and each of its privacy modes, a seeded ``mine`` on the family's
public sample (``cms_small``, ``house_power``, ``pima_like``) runs as a whole process:

* **cold**: once with an EMPTY numba cache (a fresh ``NUMBA_CACHE_DIR``): every kernel the
  miner needs is compiled;
* **cached**: ``--repeats`` times more with the cache the cold run filled (the kernels
  are loaded, not compiled) — the figure a user sees on every later start.

Per process: CPU (user + system, from ``os.wait4``) and wall. *Extra CPU* = cold CPU −
median cached CPU (what an empty cache costs). Inside each process numba's own events are
recorded: per kernel (dispatcher × signature) the CPU time of compiling it (the compiling
thread's) *excluding* the kernels it compiled while typing its body (so the rows add up to
the total), and the CPU time spent under numba's compiler lock (compiling, or loading from
the cache). The released result of every
run is hashed (SHA-256 of the JSON without ``run_id`` and ``created_at``): cold and cached runs
must agree, and ``--digests`` prints only these digests (default cache, fast) so a change of
the kernels can be checked to release the same bytes before and after.

::

    .venv/bin/python -m bench.compile_times                    # every miner, both modes
    .venv/bin/python -m bench.compile_times --algorithms mcmctreepair --modes strict
    .venv/bin/python -m bench.compile_times --digests > before.json
    .venv/bin/python -m bench.compile_times --warmup             # the app's warm-up steps

``--warmup`` runs the app's one warm-up (``components.common.warmup.warmup_steps``: every miner ×
mode of every family on tiny data) in a process with an empty cache, then in one with
the cache it filled, and prints each step's CPU seconds, cold and cached — the figures of
``components.common.warmup.STEP_SECONDS`` — and the whole warm-up's wall and CPU.

Prints a Markdown table (and ``--json FILE`` every raw number). On a shared machine quote
the CPU figures; wall times need a quiet machine (``--wait-idle SECONDS``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The public sample each dataset kind's miners run on (all three are public demos, so a
#: seed is accepted and the release is reproducible).
SAMPLES = {"two_view": "cms_small", "sequences": "house_power", "table": "pima_like"}
OWNER_NAME = "bench-owner"
OWNER_PASSWORD = "bench-compile-times"


def miner_cases(algorithms=None, modes=None) -> list[tuple[str, str]]:
    """(algorithm, mode) of every registered miner that ``mine`` runs without a query."""
    from dpcore.registry import ALGORITHM_SPECS, ALL_ALGORITHMS, REDESCRIPTION_QUERIES

    out = []
    for key in ALL_ALGORITHMS:
        if key in REDESCRIPTION_QUERIES or (algorithms and key not in algorithms):
            continue
        out += [(key, m) for m in ALGORITHM_SPECS[key].modes if not modes or m in modes]
    return out


def release_digest(path: Path) -> str:
    """SHA-256 of a released result JSON without the fields that differ run to run."""
    doc = json.loads(path.read_text())
    for key in ("run_id", "created_at"):
        doc.pop(key, None)
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _env(work: Path, cache: str | None) -> dict:
    """The environment of every child: the private ledger in ``work`` and its owner account
    signed in from ``$DPRM_USER`` / ``$DPRM_PASSWORD`` (a script's secret, as ``dpcore.cli``
    reads it); ``cache`` the numba cache folder (None: the default)."""
    env = dict(os.environ)
    env["DPRM_LEDGER"] = str(work / "ledger.sqlite")
    env["DPRM_USER"] = OWNER_NAME
    env["DPRM_PASSWORD"] = OWNER_PASSWORD
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    return env


def prepare_ledger(work: Path) -> None:
    """A private ledger in ``work`` with an owner account and the three public samples
    registered (``register`` needs the owner signed in: accounts live in the ledger)."""
    work.mkdir(parents=True, exist_ok=True)
    if (work / "ledger.sqlite").exists():
        return
    env = _env(work, None)
    steps = [(["users", "add", OWNER_NAME, "--role", "owner", "--password-stdin"],
              OWNER_PASSWORD + "\n")]
    steps += [(["register", "--data", str(REPO_ROOT / "sample_data" / name),
                "--cap", "1000000000"], None) for name in SAMPLES.values()]
    for argv, stdin in steps:
        done = subprocess.run([sys.executable, "-m", "dpcore", *argv], input=stdin, env=env,
                              cwd=REPO_ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            (work / "ledger.sqlite").unlink(missing_ok=True)
            raise SystemExit(f"bench.compile_times: `dpcore {' '.join(argv)}` failed "
                             f"({done.returncode}): {done.stderr.strip()}")


def mine_argv(algorithm: str, mode: str, out: Path, seed: int = 1) -> list[str]:
    from dpcore.registry import ALGORITHM_SPECS, FAITHFUL

    argv = ["mine", "--dataset", SAMPLES[ALGORITHM_SPECS[algorithm].dataset_kind],
            "--algorithm", algorithm, "--mode", mode, "--seed", str(seed), "--out", str(out)]
    return argv + (["--owner"] if mode == FAITHFUL else [])


# ---------------------------------------------------------------------------
# Child: one `mine` with numba's compile events recorded
# ---------------------------------------------------------------------------

class CompileRecorder:
    """Listens to numba's ``numba:compile`` and ``numba:compiler_lock`` events.

    ``kernels``: (kernel, signature) → seconds compiling it, minus the time spent compiling
    the kernels its typing compiled first (each thread keeps its own stack of open
    compilations). ``lock_s``: time under the compiler lock, outermost holds only (compiles
    and cache loads).
    """

    def __init__(self):
        from numba.core import event

        self._event = event
        self.kernels: dict[tuple[str, str], float] = {}
        self.lock_s = 0.0
        self._local = threading.local()
        recorder = self

        class _Compile(event.Listener):
            def on_start(self, ev):
                recorder._stack().append([time.thread_time(), 0.0])

            def on_end(self, ev):
                stack = recorder._stack()
                start, nested = stack.pop()
                took = time.thread_time() - start
                if stack:
                    stack[-1][1] += took
                disp = ev.data["dispatcher"]
                name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
                sig = ", ".join(str(a) for a in ev.data["args"])
                key = (name, sig)
                recorder.kernels[key] = recorder.kernels.get(key, 0.0) + took - nested

        class _Lock(event.Listener):
            def on_start(self, ev):
                depth = getattr(recorder._local, "depth", 0)
                if depth == 0:
                    recorder._local.lock_start = time.thread_time()
                recorder._local.depth = depth + 1

            def on_end(self, ev):
                recorder._local.depth -= 1
                if recorder._local.depth == 0:
                    recorder.lock_s += time.thread_time() - recorder._local.lock_start

        event.register("numba:compile", _Compile())
        event.register("numba:compiler_lock", _Lock())

    def _stack(self) -> list:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack


def child(spec: dict) -> int:
    """Run one ``mine`` (or, ``spec['warmup']``, the app's warm-up steps) in this process;
    write the compile figures to ``spec['report']``."""
    import numba  # noqa: F401 - the event module must exist before the recorder

    recorder = CompileRecorder()
    if spec.get("warmup"):
        return _warmup_child(spec, recorder)
    if spec.get("launch"):
        return _launch_child(spec)
    from dpcore.cli import main

    t0, c0 = time.perf_counter(), time.process_time()
    rc = main(spec["argv"])
    report = {"rc": rc, "mine_wall_s": time.perf_counter() - t0,
              "mine_cpu_s": time.process_time() - c0, "lock_s": recorder.lock_s,
              "compile_s": sum(recorder.kernels.values()),
              "kernels": [{"kernel": k, "signature": s, "seconds": t}
                          for (k, s), t in sorted(recorder.kernels.items(),
                                                  key=lambda kv: -kv[1])]}
    Path(spec["report"]).write_text(json.dumps(report))
    return rc


def _warmup_child(spec: dict, recorder: CompileRecorder) -> int:
    from components.common.warmup import warmup_steps

    t0, c0 = time.perf_counter(), time.process_time()
    steps = []
    for step in warmup_steps():
        w, c, k = time.perf_counter(), time.process_time(), sum(recorder.kernels.values())
        step.action()
        steps.append({"key": step.key, "cpu_s": time.process_time() - c,
                      "wall_s": time.perf_counter() - w,
                      "compile_s": sum(recorder.kernels.values()) - k})
    Path(spec["report"]).write_text(json.dumps({
        "rc": 0, "steps": steps, "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0, "compile_s": sum(recorder.kernels.values()),
        "lock_s": recorder.lock_s, "kernels": len(recorder.kernels)}))
    return 0


def _launch_child(spec: dict) -> int:
    """The app's warm-up as the server runs it on a first start (``run_warmup`` with its
    compile workers, ``spec['workers']``): when each family is ready, the whole wall, and
    the CPU of this process and its workers."""
    import resource

    from components.common.warmup import WarmupState, WarmupStep, run_warmup, warmup_steps

    t0 = time.perf_counter()
    ready_at: dict[str, float] = {}

    def timed(step):
        def action():
            step.action()
            ready_at[step.key] = time.perf_counter() - t0
        return WarmupStep(step.key, step.label, step.family, action, step.group)

    steps = [timed(s) for s in warmup_steps()]
    state = WarmupState(steps=steps, cold=True)
    run_warmup(state, workers=spec["workers"])
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    families = {}
    for step in steps:
        families[step.family] = max(families.get(step.family, 0.0), ready_at[step.key])
    Path(spec["report"]).write_text(json.dumps({
        "rc": 0 if state.error is None else 1, "error": state.error,
        "wall_s": time.perf_counter() - t0, "family_ready_s": families,
        "cpu_s": own.ru_utime + own.ru_stime, "workers_cpu_s": kids.ru_utime + kids.ru_stime,
        "workers": spec["workers"]}))
    return 0


def launch_figures(work: Path, workers: list[int]) -> list[dict]:
    """A first start's warm-up, from an empty numba cache each time, per worker count."""
    out = []
    for n in workers:
        cache = tempfile.mkdtemp(prefix="dpcore-cold-numba-")
        try:
            spec = {"launch": True, "workers": n, "report": str(work / f"launch-{n}.json")}
            load = os.getloadavg()[0]
            proc = subprocess.run([sys.executable, "-m", "bench.compile_times", "--child",
                                   json.dumps(spec)], env=_env(work, cache), cwd=REPO_ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"launch ({n} workers) failed: {proc.stderr[-800:]}")
            out.append({**json.loads(Path(spec["report"]).read_text()), "load_before": load,
                        "load_after": os.getloadavg()[0]})
        finally:
            subprocess.run(["rm", "-rf", cache], check=False)
    return out


def launch_markdown(rows: list[dict]) -> str:
    families = list(rows[0]["family_ready_s"])
    lines = ["| compile workers | " + " | ".join(f"{f} ready s" for f in families)
             + " | every miner ready s | CPU s (server + workers) | load before → after |",
             "|---" * (len(families) + 4) + "|"]
    for r in rows:
        lines.append(f"| {r['workers']} | " + " | ".join(
            f"{r['family_ready_s'][f]:.1f}" for f in families)
            + f" | **{r['wall_s']:.1f}** | {r['cpu_s']:.1f} + {r['workers_cpu_s']:.1f} | "
              f"{r['load_before']:.1f} → {r['load_after']:.1f} |")
    return "\n".join(lines)


def warmup_figures(work: Path) -> dict:
    """The warm-up's steps in a cold process, then in a cached one."""
    cache = tempfile.mkdtemp(prefix="dpcore-cold-numba-")
    env = _env(work, cache)
    out = {}
    try:
        for name in ("cold", "cached"):
            spec = {"warmup": True, "report": str(work / f"warmup-{name}.json")}
            proc = subprocess.run([sys.executable, "-m", "bench.compile_times", "--child",
                                   json.dumps(spec)], env=env, cwd=REPO_ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"warm-up ({name}) failed: {proc.stderr[-800:]}")
            out[name] = json.loads(Path(spec["report"]).read_text())
    finally:
        subprocess.run(["rm", "-rf", cache], check=False)
    return out


def warmup_markdown(fig: dict) -> str:
    cold, cached = fig["cold"], fig["cached"]
    lines = ["| step | cold CPU s | cold compiling s | cached CPU s |", "|---|---|---|---|"]
    for a, b in zip(cold["steps"], cached["steps"], strict=True):
        lines.append(f"| {a['key']} | {a['cpu_s']:.1f} | {a['compile_s']:.1f} | "
                     f"{b['cpu_s']:.2f} |")
    lines.append(f"| **whole warm-up** | **{cold['cpu_s']:.1f}** (wall {cold['wall_s']:.1f}) | "
                 f"{cold['compile_s']:.1f} ({cold['kernels']} kernels) | "
                 f"**{cached['cpu_s']:.2f}** (wall {cached['wall_s']:.2f}) |")
    lines += ["", "STEP_SECONDS = {" + ", ".join(
        f'"{a["key"]}": ({a["cpu_s"]:.1f}, {b["cpu_s"]:.2f})'
        for a, b in zip(cold["steps"], cached["steps"], strict=True)) + "}"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------

def _timed_child(spec: dict, env: dict) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bench.compile_times", "--child",
                             json.dumps(spec)], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with proc.stderr:
        err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    out = {"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
           "rc": os.waitstatus_to_exitcode(status)}
    if out["rc"] != 0:
        out["error"] = err.decode(errors="replace")[-800:]
        return out
    out.update(json.loads(Path(spec["report"]).read_text()))
    out["digest"] = release_digest(Path(spec["argv"][spec["argv"].index("--out") + 1]))
    return out


def measure(algorithm: str, mode: str, work: Path, repeats: int, wait: float) -> dict:
    from bench.settings import log, wait_idle

    cache = tempfile.mkdtemp(prefix="dpcore-cold-numba-")
    env = _env(work, cache)
    out = work / f"{algorithm}-{mode}.json"
    spec = {"argv": mine_argv(algorithm, mode, out), "report": str(work / "report.json")}
    try:
        if wait > 0:
            wait_idle(wait)
        cold = _timed_child(spec, env)
        cached = []
        for _ in range(repeats):
            if wait > 0:
                wait_idle(wait)
            cached.append(_timed_child(spec, env))
    finally:
        subprocess.run(["rm", "-rf", cache], check=False)
    runs = [cold, *cached]
    errors = [r["error"] for r in runs if "error" in r]
    row = {"algorithm": algorithm, "mode": mode, "cold": cold, "cached": cached,
           "error": errors[0] if errors else None}
    if not errors:
        cpu = statistics.median(r["cpu_s"] for r in cached)
        row.update(cold_cpu_s=cold["cpu_s"], cached_cpu_s=cpu,
                   extra_cpu_s=cold["cpu_s"] - cpu, cold_wall_s=cold["wall_s"],
                   cached_wall_s=statistics.median(r["wall_s"] for r in cached),
                   compile_s=cold["compile_s"],
                   cached_lock_s=statistics.median(r["lock_s"] for r in cached),
                   cached_compile_s=max(r["compile_s"] for r in cached),
                   digests_agree=len({r["digest"] for r in runs}) == 1,
                   digest=cold["digest"])
        log(f"{algorithm}/{mode}: cold {cold['cpu_s']:.1f} s CPU, cached {cpu:.2f} s "
            f"(extra {row['extra_cpu_s']:.1f} s; compiling {cold['compile_s']:.1f} s in "
            f"{len(cold['kernels'])} kernels)")
    else:
        log(f"{algorithm}/{mode}: FAILED {errors[0][-300:]}")
    return row


def digests(cases, work: Path) -> dict:
    """Seeded release digests with the default (shared) numba cache."""
    out = {}
    env = _env(work, None)
    for alg, mode in cases:
        path = work / f"{alg}-{mode}.json"
        subprocess.run([sys.executable, "-m", "dpcore", *mine_argv(alg, mode, path)],
                       env=env, cwd=REPO_ROOT, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        out[f"{alg}/{mode}"] = release_digest(path)
    return out


def markdown(rows: list[dict], top: int) -> str:
    lines = ["| miner | mode | cold CPU s | cached CPU s | extra CPU s | compiling s (kernels) "
             "| cached: loading s | cold / cached wall s | same release |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["error"]:
            lines.append(f"| {r['algorithm']} | {r['mode']} | failed | | | | | | |")
            continue
        lines.append(f"| {r['algorithm']} | {r['mode']} | {r['cold_cpu_s']:.1f} | "
                     f"{r['cached_cpu_s']:.2f} | {r['extra_cpu_s']:.1f} | {r['compile_s']:.1f} "
                     f"({len(r['cold']['kernels'])}) | {r['cached_lock_s']:.2f} | "
                     f"{r['cold_wall_s']:.1f} / {r['cached_wall_s']:.2f} | "
                     f"{'yes' if r['digests_agree'] else 'NO'} |")
    ok = [r for r in rows if not r["error"]]
    if ok and top:
        lines += ["", f"Most expensive kernels (cold compile, exclusive seconds; top {top} per "
                  "miner):", ""]
        for r in ok:
            ks = r["cold"]["kernels"][:top]
            lines.append(f"* {r['algorithm']}/{r['mode']}: " + "; ".join(
                f"`{k['kernel'].rsplit('.', 1)[-1]}` {k['seconds']:.2f}" for k in ks))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.compile_times",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--algorithms", help="comma-separated algorithms (default: every miner)")
    ap.add_argument("--modes", help="comma-separated modes (default: each miner's modes)")
    ap.add_argument("--repeats", type=int, default=3, help="cached runs per miner (median)")
    ap.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--json", help="write every raw figure to this file")
    ap.add_argument("--top", type=int, default=5, help="kernels listed per miner")
    ap.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                    help="before each process, wait up to SECONDS for idle cores")
    ap.add_argument("--digests", action="store_true",
                    help="only print the seeded release digests (default numba cache)")
    ap.add_argument("--warmup", action="store_true",
                    help="time the app's warm-up steps, cold and cached")
    ap.add_argument("--launch", metavar="WORKERS", default=None,
                    help="time the app's first-start warm-up from an empty cache with each "
                         "comma-separated number of compile workers (e.g. 1,2)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(json.loads(args.child))
    if args.launch:
        work = Path(args.work or tempfile.mkdtemp(prefix="dpcore-compile-times-"))
        work.mkdir(parents=True, exist_ok=True)
        rows = launch_figures(work, [int(n) for n in args.launch.split(",")])
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        print(f"{os.cpu_count()} cores\n")
        print(launch_markdown(rows))
        return 0
    if args.warmup:
        work = Path(args.work or tempfile.mkdtemp(prefix="dpcore-compile-times-"))
        work.mkdir(parents=True, exist_ok=True)
        load = os.getloadavg()
        fig = warmup_figures(work)
        load_after = os.getloadavg()
        if args.json:
            Path(args.json).write_text(json.dumps({"load_before": load,
                                                   "load_after": load_after, **fig}, indent=1))
        print(f"1-minute load average {load[0]:.2f} before, {load_after[0]:.2f} after; "
              f"{os.cpu_count()} cores\n")
        print(warmup_markdown(fig))
        return 0
    cases = miner_cases(args.algorithms.split(",") if args.algorithms else None,
                        args.modes.split(",") if args.modes else None)
    work = Path(args.work or tempfile.mkdtemp(prefix="dpcore-compile-times-"))
    prepare_ledger(work)
    if args.digests:
        print(json.dumps(digests(cases, work), indent=1))
        return 0
    load = os.getloadavg()
    rows = [measure(a, m, work, args.repeats, args.wait_idle) for a, m in cases]
    load_after = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps({"load_before": load, "load_after": load_after,
                                               "rows": rows}, indent=1))
    print(f"1-minute load average {load[0]:.2f} before, {load_after[0]:.2f} after; "
          f"{os.cpu_count()} cores\n")
    print(markdown(rows, args.top))
    return 1 if any(r["error"] for r in rows) else 0


if __name__ == "__main__":
    from dpcore.__main__ import one_blas_thread_unless_chosen

    one_blas_thread_unless_chosen()
    sys.exit(main())
