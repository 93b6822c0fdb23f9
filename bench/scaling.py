"""Scaling figures of docs/SCALING.md: memory and time per row of every redescription miner
at 115,200 / 1M / 5M generated rows, and the per-step cost of a reduction on a Dask
``LocalCluster`` (the communication a row-partitioned MCMC step would pay).

Usage (from the repository root)::

    .venv/bin/python -m bench.scaling                     # mining cases + communication
    .venv/bin/python -m bench.scaling --parts comm        # communication only (≈ 1 min)
    .venv/bin/python -m bench.scaling --rows 115200,1000000 --algorithms altexpm
    .venv/bin/python -m bench.scaling --parts files --rows 2000000   # register + mine a CSV
    .venv/bin/python -m bench.scaling --parts files --rows 2000000 --code OTHER_TREE

``--parts files`` measures the real file path: the CMS-like data (CMS-2-1's 40 Boolean + 16
numeric attributes unless ``--shape``) written as one CSV with its ``schema.json``, then
``register`` and a charged ``mine`` (MCMCTreePair, InTr 1, MCIter 200: the run's memory, not
its statistics) each in a fresh interpreter importing ``dpcore`` from ``--code``; peak RSS
per row is (peak − the process after its imports and a warm-up run) / rows. ``--kind table``
does the same for an Adult-shaped table (one CSV; the class-marginals floor) and ``--kind
sequences`` for clickstream-like records (a record-per-line file; PFS2, θ 0.05), warmed on a
copy of ``pima_like`` or ``clickstream``; ``--file-steps mine`` mines what the last
registration in ``--work`` left.

Every mining case runs in a fresh subprocess (``--case JSON``), so its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss`` in the child) is its own: kernel warm-up on
tiny data, generation of the CMS-like data (``dpcore.data.samples.generate_cms_like_dataset``,
452 Boolean + 152 numeric attributes, seed 20232), one ``mine()`` with the algorithm's
registry preset named ``paper`` (MCMCTreePair, Serenade) or ``paper-stable`` (AltMCMC,
AltExpM). A row count whose predicted peak (a linear fit of the measured peaks against
rows) exceeds the memory available now is not run: it is reported as extrapolated. Each
figure carries the 1-minute load average (``os.getloadavg``) before and after it: the
machine may be shared. Results go to ``bench/results/scaling.json`` (git-ignored) and a
Markdown summary to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench.settings import CMS_BOOL, CMS_NUMERIC, DATA_SEED, DEFAULT_OUT, REPO_ROOT, RUN_SEED, log
from dpcore.registry import ALTEXPM, ALTMCMC, MCMCTREEPAIR, SERENADE_CS, SERENADE_ES

DEFAULT_ROWS = (115_200, 1_000_000, 5_000_000)
DEFAULT_ALGORITHMS = (MCMCTREEPAIR, ALTMCMC, ALTEXPM, SERENADE_ES, SERENADE_CS)
#: The machine the design is judged for (docs/SCALING.md).
MACHINE_GB = 24.0
CASE_TIMEOUT_S = 3_600


def _load() -> float:
    return os.getloadavg()[0]


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024.0
    return float("inf")


def _setting(algorithm: str) -> dict:
    from bench.settings import settings_for

    settings = settings_for(algorithm)
    chosen = [s for s in settings if s["name"].endswith("-stable")] or settings
    return chosen[0]


# --------------------------------------------------------------------------- child: one case

def case(spec: dict) -> dict:
    """One (rows, algorithm) case in this (fresh) process."""
    from bench.cases import _one_run, _peak_rss_mb, _rss_now_mb, _warm_up
    from bench.settings import params_of

    setting = spec["setting"]
    params = params_of(setting)
    warm_s = _warm_up(setting["algorithm"])
    rss_warm = _rss_now_mb()
    from dpcore.data.samples import generate_cms_like_dataset

    start = time.perf_counter()
    dataset = generate_cms_like_dataset(spec["rows"], n_bool=CMS_BOOL, n_numeric=CMS_NUMERIC,
                                        seed=DATA_SEED)
    data_s = time.perf_counter() - start
    rss_data = _rss_now_mb()
    run = _one_run(dataset, params, RUN_SEED)
    return {"rows": spec["rows"], "setting": setting, "params": params.to_dict(),
            "warmup_s": warm_s, "data_s": data_s, "run": run, "rss_after_warmup_mb": rss_warm,
            "rss_after_data_mb": rss_data, "peak_rss_mb": _peak_rss_mb()}


def run_case(spec: dict) -> dict:
    load_before = _load()
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.scaling", "--case", json.dumps(spec)],
                              cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                              timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CASE_TIMEOUT_S} s", "spec": spec}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        return {"error": f"case exited with {proc.returncode} (killed for memory?)",
                "spec": spec, "process_wall_s": time.perf_counter() - start}
    out = json.loads(lines[-1])
    out["process_wall_s"] = time.perf_counter() - start
    out["load_1min_before"] = load_before
    out["load_1min_after"] = _load()
    return out


def _fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """Least-squares a + b·rows (None with fewer than two sizes)."""
    if len({r for r, _ in points}) < 2:
        return None
    n = len(points)
    mx = sum(r for r, _ in points) / n
    my = sum(v for _, v in points) / n
    b = sum((r - mx) * (v - my) for r, v in points) / sum((r - mx) ** 2 for r, _ in points)
    return my - b * mx, b


# --------------------------------------------------------------------------- the file path

#: One step of the file path in a fresh interpreter that imports ``dpcore`` from ``code``
#: (this checkout, or another tree to compare with), prints a JSON object. Peak RSS is the
#: step's process: ``register`` (the folder → ledger, content digest and partitions or cache)
#: or ``mine`` (a charged MCMCTreePair run through ``charge_and_mine``: registered files →
#: arrays → digest check → prepare → mine → store). ``rss_base_mb`` is the process after
#: its imports (and, for ``mine``, a warm-up run on the 3,000-row ``cms_small`` sample).
_FILE_STEP = r"""
import json, os, resource, secrets, sys, time
sys.path.insert(0, sys.argv[1])
step, folder, ledger_path, rows = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.registration import register_folder


def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0


ledger = Ledger(ledger_path)
kind = sys.argv[7] if len(sys.argv) > 7 else "two_view"
out = {"step": step, "rows": rows, "kind": kind}
if step == "register":
    base = rss_mb()
    start = time.perf_counter()
    register_folder(ledger, folder, cap=1000.0, name="scaling", actor="bench")
else:
    from dpcore.privacy.accounts import hash_password, sign_in
    from dpcore.privacy.policy import Requester
    from dpcore.runs import charge_and_mine

    password = secrets.token_urlsafe(12)
    user = "bench-" + secrets.token_hex(4)     # a mine may follow an earlier one's ledger
    ledger.add_account(user, "owner", actor="bench",
                       password_hash=hash_password(password, n=2**4))
    owner = Requester.signed_in(sign_in(ledger, user, password, client="bench",
                                        entry="api"), actor="bench")
    if kind == "table":
        from dpcore.registry import FLOOR, STRICT
        from dpcore.synthesis.params import SynthesisParams
        params = SynthesisParams(algorithm=FLOOR, mode=STRICT, epsilon=1.0).validate()
        warm = "pima_like"
    elif kind == "sequences":
        from dpcore.registry import PFS2, STRICT
        from dpcore.sequences.params import SequenceMiningParams
        params = SequenceMiningParams(algorithm=PFS2, mode=STRICT, epsilon=1.0,
                                      theta=0.05).validate()
        warm = "clickstream"
    else:
        from dpcore.redescriptions.params import TreeParams
        from dpcore.registry import MCMCTREEPAIR, STRICT
        params = TreeParams(algorithm=MCMCTREEPAIR, mode=STRICT, epsilon=1.0, in_tr=1,
                            mc_iter=int(sys.argv[6])).validate()
        warm = "cms_small"
    import shutil, tempfile
    warm_copy = os.path.join(tempfile.mkdtemp(), warm)   # its partitions stay out of the tree
    shutil.copytree(os.path.join(sys.argv[1], "sample_data", warm), warm_copy)
    warm = "warm-" + secrets.token_hex(4)
    register_folder(ledger, warm_copy, cap=1000.0, name=warm, actor="bench")
    seed = 1 if kind == "two_view" else None   # a seed only on public demo data
    count = sys.argv[8] if len(sys.argv) > 8 else "parts"
    out["count"] = count
    client = None
    if count == "dask":
        from dpcore.distributed.cluster import open_client
        cluster = open_client(None, workers=2, threads_per_worker=1)
        client = cluster.__enter__()

    def data_of(name):
        # sequences: counted per partition here (parts), on 2 Dask workers (dask), or the
        # records loaded whole first (whole: the miner then counts them as one block)
        if kind != "sequences":
            return None
        from dpcore.data.dataset import remember_digest
        from dpcore.data.sequences.dataset import SequenceDataset
        from dpcore.runs import load_registered
        from dpcore.data.sequences import partitions
        from dpcore.sequences.counting import DaskCounting
        if count != "whole":
            partitions.LOAD_WHOLE_UP_TO_RECORDS = 0    # parts, dask: per partition, any size
        data = load_registered(ledger._dataset_record(name))
        if count == "dask":
            return data.with_backend(DaskCounting(client))
        if count == "whole":
            whole = SequenceDataset(data.schema, data.indptr, data.items)
            remember_digest(whole, data.manifest.content_digest)
            return whole
        return data

    charge_and_mine(ledger, warm, params, requester=owner, seed=seed, data=data_of(warm))
    base = rss_mb()
    start = time.perf_counter()
    charge_and_mine(ledger, "scaling", params, requester=owner, seed=seed,
                    data=data_of("scaling"))
    if client is not None:
        out["worker_peak_rss_mb"] = sorted(client.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0).values())
        cluster.__exit__(None, None, None)
out["wall_s"] = time.perf_counter() - start
out["rss_base_mb"] = base
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
out["load_1min"] = os.getloadavg()[0]
print(json.dumps(out))
"""


def write_files_dataset(folder: Path, rows: int, n_bool: int, n_numeric: int) -> dict:
    """The CMS-like data written as one CSV file (id + both views) and its ``schema.json``:
    what an owner registers. Returns the CSV's size in bytes."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from dpcore.data.samples import generate_cms_like
    from dpcore.data.schema import schema_to_dict

    folder.mkdir(parents=True, exist_ok=True)
    schema, left, right, _ = generate_cms_like(rows, n_bool=n_bool, n_numeric=n_numeric,
                                               seed=DATA_SEED)
    table = pa.Table.from_pandas(left.join(right.drop(columns=[schema.id_column])),
                                 preserve_index=False)
    del left, right
    pcsv.write_csv(table, folder / schema.views[0].file)
    (folder / "schema.json").write_text(json.dumps(schema_to_dict(schema)), encoding="utf-8")
    return {"csv_bytes": (folder / schema.views[0].file).stat().st_size}


def write_kind_files(folder: Path, rows: int, kind: str) -> dict:
    """A labelled table (Adult-shaped, ``generate_adult_like``) as one CSV, or a sequence
    dataset (clickstream-like, ``generate_clickstream``) as a record-per-line file, with its
    schema: what an owner registers. Returns the data file's size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "table":
        from dpcore.data.table.schema import schema_to_dict
        from dpcore.synthesis.samples import adult_like_schema, generate_adult_like

        generate_adult_like(rows, seed=DATA_SEED).to_csv(folder / "adult.csv", index=False)
        raw = {**schema_to_dict(adult_like_schema()), "file": "adult.csv", "public_demo": False}
        (folder / "synthesis_schema.json").write_text(json.dumps(raw), encoding="utf-8")
        return {"data_bytes": (folder / "adult.csv").stat().st_size}
    from dpcore.data.sequences.loading import write_alphabet_file, write_record_lines
    from dpcore.data.sequences.schema import save_sequence_schema
    from dpcore.sequences.samples import generate_clickstream

    data = generate_clickstream(rows, DATA_SEED, max_length=2_000)
    schema = replace(data.schema, files={"format": "lines", "records": "records.txt",
                                    "alphabet": "alphabet.txt"}, public_demo=False)
    save_sequence_schema(schema, folder / "sequence_schema.json")
    write_record_lines(data, folder / "records.txt")
    write_alphabet_file(schema, folder / "alphabet.txt")
    return {"data_bytes": (folder / "records.txt").stat().st_size}


def run_file_step(step: str, folder: Path, ledger: Path, rows: int, *, code: Path,
                  mc_iter: int = 200, kind: str = "two_view", count: str = "parts") -> dict:
    """One step of the file path (:data:`_FILE_STEP`) in a fresh interpreter (``count``:
    how a sequence mine counts: ``parts``, ``whole`` or ``dask``)."""
    proc = subprocess.run([sys.executable, "-c", _FILE_STEP, str(code), step, str(folder),
                           str(ledger), str(rows), str(mc_iter), kind, count], cwd=code,
                          capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    if proc.returncode != 0:
        return {"step": step, "rows": rows, "error": proc.stderr[-2000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["kib_per_row"] = (out["peak_rss_mb"] - out["rss_base_mb"]) * 1024.0 / rows
    return out


def measure_file_path(rows_list: list[int], *, code: Path, work: Path, n_bool: int,
                      n_numeric: int, mc_iter: int = 200, kind: str = "two_view",
                      steps: tuple[str, ...] = ("register", "mine"),
                      count: str = "parts") -> list[dict]:
    """Register, then mine, data written as files, at each row count: peak RSS per row of
    each step (a fresh ledger and the folder's partitions removed per row count, so nothing
    built before is reused). ``kind``: the CMS-like two-view data as a CSV (MCMCTreePair),
    an Adult-shaped ``table`` (the class-marginals floor) or clickstream-like ``sequences``
    (PFS2, θ 0.05). ``steps`` without ``register`` mines what an earlier call registered."""
    results = []
    for rows in rows_list:
        if kind == "two_view":
            folder = work / f"cms_{n_bool}x{n_numeric}_{rows}"
            marker, write = folder / "schema.json", ["--shape", f"{n_bool},{n_numeric}"]
        else:
            folder = work / f"{kind}_{rows}"
            marker = folder / ("synthesis_schema.json" if kind == "table"
                               else "sequence_schema.json")
            write = ["--kind", kind]
        if not marker.is_file():
            log(f"writing {rows:,} rows to {folder}")
            subprocess.run([sys.executable, "-m", "bench.scaling", "--write-files", str(folder),
                            "--rows", str(rows), *write], cwd=REPO_ROOT, check=True)
        ledger = work / f"ledger_{rows}.sqlite"
        if "register" in steps:       # nothing built before is reused
            for built in (folder / ".dpcore_parts", folder / ".dpcore_cache"):
                if built.exists():
                    import shutil

                    shutil.rmtree(built)
            ledger.unlink(missing_ok=True)
        for step in steps:
            log(f"{step} {rows:,} rows (load {_load():.2f})")
            out = run_file_step(step, folder, ledger, rows, code=code, mc_iter=mc_iter,
                                kind=kind, count=count)
            out["shape"] = [n_bool, n_numeric]
            out["code"] = str(code)
            log(f"  {json.dumps(out)[:300]}")
            results.append(out)
    return results


# --------------------------------------------------------------------------- communication

def measure_communication(steps: int = 200, leaves: int = 16, partitions: int = 2) -> dict:
    """Per-step cost of reducing a leaf-count array over ``partitions`` worker processes.

    What a row-partitioned MCMC step needs: every partition counts its rows per leaf of the
    proposed tree (here an ``int64`` array of ``leaves × 2`` counts, computed from a
    partition-local array so the compute is negligible), and the counts are summed where
    the acceptance is decided. Two ways are timed per step, each ``steps`` times:

    - ``submit``: one task per partition (pinned to its worker), then ``gather`` and a sum on
      the client (the plain futures API);
    - ``actor``: one Dask actor per partition holding its rows; a step is one method call per
      actor and a sum on the client (the lowest-latency path Dask offers).
    """
    import numpy as np
    from distributed import Client, LocalCluster

    class Partition:
        def __init__(self, rows: int, seed: int):
            rng = np.random.default_rng(seed)
            self.leaf = rng.integers(0, leaves, rows).astype(np.int64)
            self.target = rng.integers(0, 2, rows).astype(np.int64)

        def counts(self, step: int) -> np.ndarray:
            return np.bincount(self.leaf * 2 + self.target, minlength=2 * leaves)

    def counts_task(rows: int, seed: int, step: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        leaf = rng.integers(0, leaves, rows)
        return np.bincount(leaf * 2 + (step & 1), minlength=2 * leaves)

    load_before = _load()
    with LocalCluster(n_workers=partitions, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        workers = list(client.scheduler_info()["workers"])
        actors = [client.submit(Partition, 1_000, seed, actor=True, workers=[w]).result()
                  for seed, w in enumerate(workers)]
        for step in range(10):  # warm the connections
            sum(a.counts(step).result() for a in actors)
        start = time.perf_counter()
        for step in range(steps):
            total = sum(a.counts(step).result() for a in actors)
        actor_s = (time.perf_counter() - start) / steps
        assert int(total.sum()) == 1_000 * partitions
        for step in range(5):
            client.gather([client.submit(counts_task, 1_000, s, step, workers=[w], pure=False)
                           for s, w in enumerate(workers)])
        start = time.perf_counter()
        for step in range(steps):
            parts = client.gather([client.submit(counts_task, 1_000, s, step, workers=[w],
                                                 pure=False)
                                   for s, w in enumerate(workers)])
            total = np.sum(parts, axis=0)
        submit_s = (time.perf_counter() - start) / steps
    return {"steps": steps, "leaves": leaves, "partitions": partitions,
            "actor_s_per_step": actor_s, "submit_s_per_step": submit_s,
            "load_1min_before": load_before, "load_1min_after": _load()}


# --------------------------------------------------------------------------- parent

def _summary(cases: list[dict], comm: dict | None, skipped: list[dict]) -> str:
    lines = ["| rows | setting | wall s | µs per row | trees s | extract s | peak RSS MB | "
             "bytes per row (peak − warm) | load before/after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        if "error" in c:
            lines.append(f"| {c['spec']['rows']:,} | {c['spec']['setting']['label']} | "
                         f"{c['error']} | | | | | | |")
            continue
        run = c["run"]
        per_row = run["wall_s"] / c["rows"] * 1e6
        extra = (c["peak_rss_mb"] - (c["rss_after_warmup_mb"] or 0)) * 2**20 / c["rows"]
        lines.append(f"| {c['rows']:,} | {c['setting']['label']} | {run['wall_s']:.1f} | "
                     f"{per_row:.1f} | {run['phase_s'].get('trees', float('nan')):.1f} | "
                     f"{run['phase_s'].get('extract', float('nan')):.2f} | "
                     f"{c['peak_rss_mb']:,.0f} | {extra:,.0f} | "
                     f"{c['load_1min_before']:.2f} / {c['load_1min_after']:.2f} |")
    for s in skipped:
        lines.append(f"| {s['rows']:,} | {s['label']} | not run: predicted peak "
                     f"{s['predicted_mb']:,.0f} MB > {s['available_mb']:,.0f} MB available | "
                     "| | | | | |")
    if comm:
        lines += ["", f"Reduction of a {comm['leaves']}-leaf × 2 count array over "
                      f"{comm['partitions']} worker processes (LocalCluster), per step: "
                      f"actor calls {comm['actor_s_per_step'] * 1e3:.2f} ms, "
                      f"submit + gather {comm['submit_s_per_step'] * 1e3:.2f} ms "
                      f"({comm['steps']} steps; load {comm['load_1min_before']:.2f} before, "
                      f"{comm['load_1min_after']:.2f} after)."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--rows", default=",".join(str(r) for r in DEFAULT_ROWS))
    parser.add_argument("--algorithms", default=",".join(DEFAULT_ALGORITHMS))
    parser.add_argument("--parts", default="mine,comm", help="mine, comm or both")
    parser.add_argument("--steps", type=int, default=200, help="communication: steps timed")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results folder")
    parser.add_argument("--shape", default="40,16",
                        help="files: Boolean,numeric attributes (default CMS-2-1's 40,16)")
    parser.add_argument("--code", default=str(REPO_ROOT),
                        help="files: the tree whose dpcore registers and mines")
    parser.add_argument("--work", default=str(DEFAULT_OUT / "files"),
                        help="files: where the CSV datasets and ledgers are written")
    parser.add_argument("--mc-iter", type=int, default=200, help="files: MCIter of the mine")
    parser.add_argument("--write-files", help=argparse.SUPPRESS)
    parser.add_argument("--file-steps", default="register,mine",
                        help="files: the steps run (mine alone reuses the last registration)")
    parser.add_argument("--kind", default="two_view", choices=("two_view", "table", "sequences"),
                        help="files: the dataset kind written, registered and mined")
    parser.add_argument("--count", default="parts", choices=("parts", "whole", "dask"),
                        help="files, sequences: count per partition in the mine's process, "
                             "on the records loaded whole, or per partition on 2 Dask workers")
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(case(json.loads(args.case))))
        return 0
    shape = tuple(int(x) for x in args.shape.split(","))
    if args.write_files:
        if args.kind != "two_view":
            print(json.dumps(write_kind_files(Path(args.write_files), int(args.rows),
                                              args.kind)))
            return 0
        print(json.dumps(write_files_dataset(Path(args.write_files), int(args.rows), *shape)))
        return 0
    if args.parts == "files":
        results = measure_file_path(sorted(int(r) for r in args.rows.split(",")),
                                    code=Path(args.code).resolve(), work=Path(args.work),
                                    n_bool=shape[0], n_numeric=shape[1], mc_iter=args.mc_iter,
                                    kind=args.kind, steps=tuple(args.file_steps.split(",")),
                                    count=args.count)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "scaling_files.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
        print("| rows | step | wall s | peak RSS MB | KiB per row (peak − base) | load |")
        print("|---|---|---|---|---|---|")
        for r in results:
            if "error" in r:
                print(f"| {r['rows']:,} | {r['step']} | error | | | |")
                continue
            print(f"| {r['rows']:,} | {r['step']} | {r['wall_s']:.1f} | {r['peak_rss_mb']:,.0f} "
                  f"| {r['kib_per_row']:.2f} | {r['load_1min']:.2f} |")
        return 1 if any("error" in r for r in results) else 0
    parts = set(args.parts.split(","))
    rows_list = sorted(int(r) for r in args.rows.split(","))
    cases, skipped, comm = [], [], None
    if "mine" in parts:
        for algorithm in args.algorithms.split(","):
            setting = _setting(algorithm)
            peaks: list[tuple[int, float]] = []
            for rows in rows_list:
                fit = _fit(peaks)
                available = _available_mb()
                predicted = None if fit is None else fit[0] + fit[1] * rows
                if predicted is not None and predicted > 0.9 * available:
                    log(f"{setting['label']} at {rows:,} rows: predicted {predicted:,.0f} MB "
                        f"> 90 % of {available:,.0f} MB available; extrapolated, not run")
                    skipped.append({"rows": rows, "label": setting["label"],
                                    "predicted_mb": predicted, "available_mb": available})
                    continue
                log(f"{setting['label']} at {rows:,} rows (load {_load():.2f})")
                result = run_case({"rows": rows, "setting": setting})
                cases.append(result)
                if "error" not in result:
                    peaks.append((rows, result["peak_rss_mb"]))
                    log(f"  wall {result['run']['wall_s']:.1f} s, peak "
                        f"{result['peak_rss_mb']:,.0f} MB")
                else:
                    log(f"  {result['error']}")
    if "comm" in parts:
        comm = measure_communication(steps=args.steps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fits = {}
    for algorithm in args.algorithms.split(",") if "mine" in parts else ():
        label = _setting(algorithm)["label"]
        points = [(c["rows"], c["peak_rss_mb"]) for c in cases
                  if "error" not in c and c["setting"]["label"] == label]
        fit = _fit(points)
        if fit:
            fits[label] = {"mb_fixed": fit[0], "mb_per_row": fit[1],
                           "rows_at_machine_gb": (MACHINE_GB * 1024 - fit[0]) / fit[1]}
    (out / "scaling.json").write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cores": os.cpu_count(),
         "cases": cases, "skipped": skipped, "communication": comm, "memory_fits": fits},
        indent=2), encoding="utf-8")
    print(_summary(cases, comm, skipped))
    for label, f in fits.items():
        print(f"- {label}: peak ≈ {f['mb_fixed']:,.0f} MB + {f['mb_per_row'] * 1024:,.2f} kB "
              f"per row → {MACHINE_GB:g} GB at ≈ {f['rows_at_machine_gb']:,.0f} rows")
    return 1 if any("error" in c for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
