"""Ledger size and store / read time of a large synthetic result, inline JSON vs the results
store (:mod:`dpcore.privacy.ledger.result_store`).

An Adult-shaped synthetic table (default 39,073 rows: the class, 6 numeric columns as
full-precision floats, 8 categorical columns as level names; random values, so it
compresses less than a real synthesizer's output) is stored ``--runs`` times in a fresh
SQLite ledger, once with every table kept inline (as before the store existed) and once
with the store, then read back with :meth:`Ledger.get_result_data`. Each run's table is
different (no two files alike). Prints one Markdown row per way, with the 1-minute load.

    .venv/bin/python -m bench.result_store [--rows 39073] [--runs 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.privacy.ledger import Ledger

_SCHEMA = Schema(name="adult", attributes=(Attribute("A", 0, "boolean"),
                                           Attribute("B", 1, "boolean")),
                 views=(ViewSpec("l", "l.csv"), ViewSpec("r", "r.csv")), id_column="id")
_LEVELS = {"workclass": 8, "education": 16, "marital": 7, "occupation": 14,
           "relationship": 6, "race": 5, "sex": 2, "country": 41}
COLUMNS = ["income", "age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
           "hours_per_week", *_LEVELS]


def adult_rows(rows: int, seed: int) -> list[list]:
    """An Adult-shaped synthetic table as JSON rows (class, 6 floats, 8 level names)."""
    rng = np.random.default_rng(seed)
    numeric = np.column_stack([rng.uniform(17, 90, rows), rng.uniform(1e4, 1.5e6, rows),
                               rng.integers(1, 17, rows).astype(float),
                               rng.exponential(1000, rows), rng.exponential(90, rows),
                               rng.uniform(1, 99, rows)])
    labels = rng.integers(0, 2, rows)
    codes = {k: rng.integers(0, v, rows) for k, v in _LEVELS.items()}
    return [[int(labels[i]), *(float(x) for x in numeric[i]),
             *(f"{k}_{int(codes[k][i])}" for k in _LEVELS)] for i in range(rows)]


def measure(folder: Path, *, rows: int, runs: int, inline: bool) -> dict:
    """Store ``runs`` results in a new ledger in ``folder``; sizes (bytes) and median times."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    ledger = Ledger(folder / "ledger.sqlite")
    ledger.register_dataset("adult", _SCHEMA, None, 1000.0, actor="owner", confirmed=True)
    texts = [json.dumps({"result_format": 2, "family": "synthesis", "run_id": f"r{i}",
                         "dataset": "adult",
                         "synthetic": {"columns": COLUMNS, "rows": adult_rows(rows, i)}})
             for i in range(runs)]
    keep_inline = mock.patch("dpcore.privacy.ledger.store.externalise",
                             lambda release, store_for: (release, []))
    stored, read = [], []
    with keep_inline if inline else mock.patch.dict(os.environ, {}):
        for i, text in enumerate(texts):
            ledger.charge(f"r{i}", "adult", "bench", [10**8], {}, actor="bench")
            start = time.perf_counter()
            ledger.store_result(f"r{i}", text)
            stored.append(time.perf_counter() - start)
    for i, text in enumerate(texts):
        start = time.perf_counter()
        release, _ = ledger.get_result_data(f"r{i}")
        read.append(time.perf_counter() - start)
        assert release == json.loads(text), "read back differs from what was stored"
    files = folder / "ledger.sqlite.results"
    return {"way": "inline" if inline else "store", "rows": rows, "runs": runs,
            "json_bytes_per_run": len(texts[0]),
            "ledger_bytes": sum(p.stat().st_size for p in folder.glob("ledger.sqlite*")
                                if p.is_file()),
            "store_bytes": sum(p.stat().st_size for p in files.glob("*.parquet"))
            if files.is_dir() else 0,
            "store_s": statistics.median(stored), "read_s": statistics.median(read),
            "load": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m bench.result_store", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=39_073)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None, help="folder for the ledgers (default: temp)")
    args = parser.parse_args(argv)
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="result-store-"))
    results = [measure(root / way, rows=args.rows, runs=args.runs, inline=way == "inline")
               for way in ("inline", "store")]
    print("| way | JSON per run MB | ledger file MB | store files MB | store s | read s | "
          "load (1 min) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['way']} | {r['json_bytes_per_run'] / 1e6:.2f} | "
              f"{r['ledger_bytes'] / 1e6:.2f} | {r['store_bytes'] / 1e6:.2f} | "
              f"{r['store_s']:.2f} | {r['read_s']:.2f} | {r['load']:.1f} |")
    if not args.out:
        shutil.rmtree(root, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
