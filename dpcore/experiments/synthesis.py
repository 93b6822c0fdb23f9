"""Synthetic-data experiments (MC-GEN utility report): OWNER / TEACHING ONLY, NOT private.

:func:`run_synthesis_experiment` runs the MC-GEN paper's two classifier scenarios
(:mod:`dpcore.synthesis.utility`: 1 = train on real, test on synthetic; 2 = train on
synthetic, test on real) with SVM, logistic regression and gradient boosting on each given
table, for these methods side by side:

* the real-data baseline (the seed table itself);
* MC-GEN-DP (strict, ε-DP) at every ε;
* faithful MC-GEN (the published pipeline, labelled NOT DP) at every ε, on tables small
  enough for its quadratic MDAV clustering;
* the floor — class-conditional independent noisy marginals (strict, ε-DP) — at every ε;
* optionally the peers MST and AIM of ``smartnoise-synth`` (the ``peers`` extra), run in
  another Python environment (``peers_python``) because they pull torch/JAX wheels. They
  see the table with every numeric feature cut into equal-width bins over its public bounds
  (0 ε) and categorical codes over the declared levels; their output bins are drawn back
  uniformly within the bin. Both are (ε, δ)-DP with δ = 10⁻⁹, not pure ε-DP.

It writes ``metrics.json`` and ``report.md`` into an output folder. On the Diabetes table the
report sets the real-data baseline beside the paper's Table 1 (:data:`PAPER_TABLE_1`).

Sandbox budget
--------------
Every synthetic run gets its own in-memory :class:`~dpcore.privacy.accountant.PrivacyAccountant`
(inside :func:`dpcore.synthesis.utility.standard_methods`' synthesizers); the harness never
opens, reads or charges a ledger. The accuracies are measured on real records, so nothing in
the report is a DP release: show it to data owners, or on public demo data only.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore import __version__
from dpcore.data.table.schema import SCHEMA_FILE_NAME, schema_from_dict
from dpcore.data.table.table import SynthesisTable, load_synthesis_dataset, table_from_frame
from dpcore.errors import DataError, ParameterError
from dpcore.executor import run_sandbox
from dpcore.experiments.report import write_report
from dpcore.registry import FAITHFUL, FLOOR, MCGEN, STRICT
from dpcore.synthesis.params import SynthesisParams
from dpcore.synthesis.samples import (
    adult_like_schema,
    generate_adult_like,
    generate_pima_like,
    pima_like_schema,
)
from dpcore.synthesis.utility import CLASSIFIERS, REAL, SCENARIOS, Synthesizer, utility_report

__all__ = ["GENERATED", "PAPER_TABLE_1", "PEERS", "PEER_BINS", "NOT_PRIVATE_NOTE",
           "load_experiment_table", "generated_table", "experiment_methods",
           "peer_synthesizer", "run_synthesis_experiment", "report_markdown"]

Progress = Callable[[int, int, str], None]

NOT_PRIVATE_NOTE = ("NOT private: accuracies are measured on real records (owner/teaching "
                    "only). Sandbox budget: every synthetic run had its own in-memory "
                    "accountant; no ledger was used.")

#: Generated tables (no real record): name → (generator(rows or None), schema).
GENERATED = {
    "pima_like": (lambda rows: generate_pima_like(rows or 768), pima_like_schema),
    "adult_like": (lambda rows: generate_adult_like(rows or 48_842), adult_like_schema),
}

#: The MC-GEN paper's Table 1: accuracy on the original Diabetes data (real-data baseline),
#: scenario → classifier → accuracy.
PAPER_TABLE_1 = {1: {"SVM": 0.80, "logistic regression": 0.78, "gradient boosting": 0.75},
                 2: {"SVM": 0.82, "logistic regression": 0.80, "gradient boosting": 0.85}}

#: The peers (smartnoise-synth synthesizer names) and their labels.
PEERS = {"mst": "MST", "aim": "AIM"}
#: Equal-width bins per numeric feature (over its public bounds) the peers see.
PEER_BINS = 16
#: Seconds one peer synthesis may take before it is reported as over time.
PEER_TIMEOUT_S = 600.0


# ----------------------------------------------------------------------------- tables

def load_experiment_table(path, *, label: str = "label") -> SynthesisTable:
    """A labelled table from a dataset folder or a [-1, 1]-scaled CSV (NOT private).

    Parameters
    ----------
    path : str or Path
        A folder holding a synthesis schema and its table, or a CSV in the LIBSVM "scale"
        layout (the MC-GEN authors' Diabetes file): the label column and numeric features
        min–max scaled to [−1, 1], which are their declared bounds. The file is read in
        place, never copied.
    label : str
        The label column of a CSV. Its classes are the distinct values in the file, sorted
        (read from the data: fine for this owner-only harness, never for a release).
    """
    path = Path(path)
    if path.is_dir():
        if not (path / SCHEMA_FILE_NAME).is_file():
            raise DataError(f"the folder has no {SCHEMA_FILE_NAME}", file=str(path))
        return load_synthesis_dataset(path)
    if not path.is_file():
        raise DataError("no such table file or dataset folder", file=str(path))
    frame = pd.read_csv(path)
    frame.columns = [str(c).strip() for c in frame.columns]
    if label not in frame.columns:
        raise DataError(f"the label column {label!r} is missing (columns: "
                        f"{', '.join(frame.columns[:20])})", file=str(path), column=label)
    classes = sorted(pd.unique(frame[label]).tolist())
    schema = schema_from_dict({
        "kind": "labelled_table", "name": path.stem, "public_demo": False,
        "description": f"{path.name}: features scaled to [-1, 1] (LIBSVM scale layout)",
        "label": {"name": label, "classes": classes},
        "features": [{"name": c, "type": "numeric", "bounds": [-1.0, 1.0]}
                     for c in frame.columns if c != label]}, file=str(path))
    return table_from_frame(frame, schema, file=str(path))


def generated_table(name: str, rows: int | None = None) -> SynthesisTable:
    """A generated table of :data:`GENERATED` (synthetic, public demo) with ``rows`` rows."""
    if name not in GENERATED:
        raise ParameterError(f"unknown generated table {name!r}; choose from "
                             f"{', '.join(GENERATED)}")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 50):
        raise ParameterError(f"rows must be an integer ≥ 50; got {rows!r}")
    make, schema = GENERATED[name]
    return table_from_frame(make(rows), schema(), file=f"<generated {name}>")


# ----------------------------------------------------------------------------- methods

def _dp_synthesizer(params: SynthesisParams) -> Synthesizer:
    params.validate()

    def run(seed_table: SynthesisTable, rng: np.random.Generator) -> pd.DataFrame:
        # A sandbox: the executor's in-memory accountant capped at the plan, no ledger.
        return run_sandbox(params, seed_table, rng=rng).synthetic
    return run


def _codes_frame(table: SynthesisTable, bins: int) -> pd.DataFrame:
    """The table as integer codes: label, numeric bins over the public bounds, level codes."""
    data = {table.schema.label: table.labels.astype(np.int64)}
    num = cat = 0
    for f in table.schema.features:
        if f.is_numeric:
            lo, hi = f.bounds
            x = (table.numeric[:, num] - lo) / (hi - lo)
            data[f.name] = np.clip(np.floor(x * bins), 0, bins - 1).astype(np.int64)
            num += 1
        else:
            data[f.name] = table.categorical[:, cat].astype(np.int64)
            cat += 1
    return pd.DataFrame(data)


def _decode_codes(codes: pd.DataFrame, table: SynthesisTable, bins: int,
                  rng: np.random.Generator) -> pd.DataFrame:
    """Integer codes back to values: a uniform draw inside each numeric bin (post-processing)."""
    schema = table.schema
    n = len(codes)
    labels = codes[schema.label].to_numpy(dtype=np.int64)
    numeric = np.empty((n, sum(f.is_numeric for f in schema.features)))
    categorical = np.empty((n, schema.n_features - numeric.shape[1]), dtype=np.int32)
    num = cat = 0
    for f in schema.features:
        c = codes[f.name].to_numpy(dtype=np.int64)
        if f.is_numeric:
            lo, hi = f.bounds
            numeric[:, num] = lo + (c + rng.random(n)) * (hi - lo) / bins
            num += 1
        else:
            categorical[:, cat] = c
            cat += 1
    return SynthesisTable(schema, numeric, categorical, labels.astype(np.int32)).to_frame()


#: Runs in the peers' Python: fit one smartnoise-synth synthesizer on integer codes whose
#: domains (0 … card − 1) are declared, so no budget goes to inferring them.
_PEER_SCRIPT = r"""
import json, sys
import numpy as np, pandas as pd
from snsynth import Synthesizer
from snsynth.transform.label import LabelTransformer
from snsynth.transform.table import TableTransformer
spec = json.loads(sys.stdin.read())
np.random.seed(spec["seed"])
data = pd.read_csv(spec["input"])
cards = spec["cardinalities"]
domain = pd.DataFrame({c: [i % k for i in range(max(cards.values()))] for c, k in cards.items()})
tt = TableTransformer([LabelTransformer(nullable=False) for _ in data.columns])
tt.fit(domain[list(data.columns)])
synth = Synthesizer.create(spec["synth"], epsilon=float(spec["epsilon"]), verbose=False)
synth.fit(data, transformer=tt, preprocessor_eps=0.0)
synth.sample(int(spec["rows"])).to_csv(spec["output"], index=False)
"""


def peer_synthesizer(name: str, epsilon: float, python: str, *, bins: int = PEER_BINS,
                     timeout: float = PEER_TIMEOUT_S, failures: list | None = None
                     ) -> Synthesizer:
    """A smartnoise-synth peer (``mst`` or ``aim``) at ``epsilon``, run by ``python``.

    The seed table goes to the peer as integer codes over public domains (numeric features
    in ``bins`` equal-width bins over their bounds); its output is decoded by a uniform draw
    inside each bin. The peer returns as many rows as the seed table has (as the paper's
    comparison does). A failure or a run over ``timeout`` seconds yields an empty table
    (NaN accuracies) and is appended to ``failures``.
    """
    if name not in PEERS:
        raise ParameterError(f"unknown peer {name!r}; choose from {', '.join(PEERS)}")

    def run(seed_table: SynthesisTable, rng: np.random.Generator) -> pd.DataFrame:
        codes = _codes_frame(seed_table, bins)
        cards = {seed_table.schema.label: seed_table.schema.n_classes}
        for f in seed_table.schema.features:
            cards[f.name] = bins if f.is_numeric else len(f.levels)
        with tempfile.TemporaryDirectory(prefix="dpcore-peer-") as tmp:
            src, dst = Path(tmp) / "seed.csv", Path(tmp) / "synthetic.csv"
            codes.to_csv(src, index=False)
            spec = {"synth": name, "epsilon": epsilon, "rows": seed_table.n_rows,
                    "input": str(src), "output": str(dst), "cardinalities": cards,
                    "seed": int(rng.integers(2**31))}
            try:
                proc = subprocess.run([python, "-c", _PEER_SCRIPT], input=json.dumps(spec),
                                      capture_output=True, text=True, timeout=timeout,
                                      check=False)
            except subprocess.TimeoutExpired:
                proc = None
            if proc is None or proc.returncode != 0 or not dst.is_file():
                if failures is not None:
                    failures.append({"peer": PEERS[name], "epsilon": epsilon,
                                     "reason": f"over {timeout:.0f} s" if proc is None
                                     else proc.stderr.strip().splitlines()[-1:]})
                return seed_table.subset(np.zeros(0, dtype=np.int64)).to_frame()
            synthetic = pd.read_csv(dst)
        return _decode_codes(synthetic, seed_table, bins, rng)
    return run


#: Runs in a peers' Python: its smartnoise-synth and mbi versions, and whether mbi's sampler
#: has the upstream fix of mbi PR #145 (sampling each column conditioned on the junction
#: tree's maximal cliques, and a shuffle inside each parent group before the rank rounding).
_PEER_PROBE = r"""
import importlib.metadata as m, inspect, json
out = {"smartnoise-synth": m.version("smartnoise-synth"), "mbi": m.version("mbi")}
try:
    from mbi.markov_random_field import MarkovRandomField
    src = inspect.getsource(MarkovRandomField.synthetic_data)
    out["sampler_fix"] = "jtree.nodes" in src and "shuffle(perm[" in src
except Exception:
    out["sampler_fix"] = False
print(json.dumps(out))
"""


def peer_environment(python: str) -> dict:
    """``{"smartnoise-synth", "mbi", "sampler_fix"}`` of a peers' Python (``{}`` if it fails)."""
    proc = subprocess.run([python, "-c", _PEER_PROBE], capture_output=True, text=True,
                          check=False)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {}


def _peer_tag(env: dict) -> str:
    if not env:
        return "smartnoise-synth, version unknown"
    fix = "with the upstream sampler fix, mbi PR #145" if env.get("sampler_fix") \
        else "as installed, sampler without mbi PR #145"
    return f"smartnoise-synth {env['smartnoise-synth']}, mbi {env['mbi']} {fix}"


def _label(kind: str, epsilon: float | None, k: int | None = None, tag: str | None = None
           ) -> str:
    if kind == REAL:
        return REAL
    if kind == STRICT:
        return f"MC-GEN-DP ({STRICT}, k = {k}, ε = {epsilon:g})"
    if kind == FAITHFUL:
        return f"MC-GEN ({FAITHFUL}, NOT DP, k = {k}, ε = {epsilon:g})"
    if kind == FLOOR:
        return f"floor: independent marginals ({STRICT}, ε = {epsilon:g})"
    return f"{PEERS[kind]} ({tag or 'smartnoise-synth'}, (ε, δ = 1e-9)-DP, ε = {epsilon:g})"


def _pythons(peers_python) -> list[str]:
    if not peers_python:
        return []
    return [peers_python] if isinstance(peers_python, (str, os.PathLike)) \
        else [str(p) for p in peers_python]


def experiment_methods(epsilons: Sequence[float], *, k: int = 100, faithful: bool = True,
                       peers_python: str | Sequence[str] | None = None,
                       failures: list | None = None, peers: Sequence[str] = tuple(PEERS),
                       environments: Mapping[str, dict] | None = None
                       ) -> tuple[dict[str, Synthesizer], dict[str, dict]]:
    """The methods of one table's report and what each is: ``(name → synthesizer,
    name → {"kind", "epsilon", "dp"})``. ``kind`` is ``REAL``, the strict / faithful mode
    (MC-GEN), the floor's registry key, or a key of :data:`PEERS`.

    ``peers_python`` may name several peers' Pythons (e.g. smartnoise-synth with mbi as
    installed, and one with mbi's upstream sampler fix): each runs every peer of ``peers``,
    labelled with its versions (``environments``: python → :func:`peer_environment`)."""
    for peer in peers:
        if peer not in PEERS:
            raise ParameterError(f"unknown peer {peer!r}; choose from {', '.join(PEERS)}")
    environments = dict(environments or {})
    methods: dict[str, Synthesizer] = {REAL: lambda seed_table, rng: seed_table.to_frame()}
    info = {REAL: {"kind": REAL, "epsilon": None, "dp": False}}
    for eps in epsilons:
        entries = [(STRICT, SynthesisParams(algorithm=MCGEN, mode=STRICT, epsilon=eps, k=k))]
        if faithful:
            entries.append((FAITHFUL, SynthesisParams(algorithm=MCGEN, mode=FAITHFUL,
                                                      epsilon=eps, k=k)))
        entries.append((FLOOR, SynthesisParams(algorithm=FLOOR, epsilon=eps)))
        for kind, params in entries:
            name = _label(kind, eps, k)
            methods[name] = _dp_synthesizer(params)
            info[name] = {"kind": kind, "epsilon": eps, "dp": kind != FAITHFUL}
        for python in _pythons(peers_python):
            if python not in environments:
                environments[python] = peer_environment(python)
            env = environments[python]
            for peer in peers:
                name = _label(peer, eps, tag=_peer_tag(env))
                methods[name] = peer_synthesizer(peer, eps, python, failures=failures)
                info[name] = {"kind": peer, "epsilon": eps, "dp": True,
                              "sampler_fix": bool(env.get("sampler_fix"))}
    return methods, info


def _timed(method: Synthesizer, seconds: list) -> Synthesizer:
    def run(seed_table, rng):
        started = time.perf_counter()
        try:
            return method(seed_table, rng)
        finally:
            seconds.append(time.perf_counter() - started)
    return run


# ----------------------------------------------------------------------------- the grid

def _check(epsilons, rounds, k, faithful_rows) -> None:
    if not epsilons:
        raise ParameterError("give at least one ε")
    for e in epsilons:
        if not (isinstance(e, (int, float)) and math.isfinite(e) and e > 0):
            raise ParameterError(f"every ε must be a finite number > 0; got {e!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ParameterError(f"rounds must be an integer ≥ 1; got {rounds!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ParameterError(f"k must be an integer ≥ 1; got {k!r}")
    if isinstance(faithful_rows, bool) or not isinstance(faithful_rows, int) \
            or faithful_rows < 0:
        raise ParameterError(f"faithful_rows must be an integer ≥ 0; got {faithful_rows!r}")


def _experiment_tables(tables: Sequence, generated: Sequence[str], rows: int | None
                       ) -> list[tuple[str, SynthesisTable, str]]:
    """``(name, table, source)`` of every table to measure: ``tables`` read in place (or
    given loaded as ``(name, table)``), then the ``generated`` ones (``rows`` rows each).
    ParameterError if there is none."""
    loaded: list[tuple[str, SynthesisTable, str]] = []
    for t in tables:
        if isinstance(t, tuple):
            loaded.append((t[0], t[1], "given"))
        else:
            loaded.append((Path(t).stem, load_experiment_table(t), str(t)))
    for name in generated:
        loaded.append((name, generated_table(name, rows), "generated (no real record)"))
    if not loaded:
        raise ParameterError("give at least one table (--table) or generated table "
                             "(--generated)")
    return loaded


def _table_report(table: SynthesisTable, methods: Mapping[str, Synthesizer],
                  info: Mapping[str, dict], *, scenarios, rounds: int, seed: int,
                  progress) -> dict:
    """One table's :func:`utility_report`, each row with its method's ``info`` and mean
    seconds per synthesis: ``{"results": rows, "seconds": wall time}`` (NOT private)."""
    seconds = {m: [] for m in methods}
    timed = {m: _timed(f, seconds[m]) for m, f in methods.items()}
    started = time.perf_counter()
    frame = utility_report(table, timed, scenarios=scenarios, rounds=rounds, seed=seed,
                           progress=progress)
    rows_out = []
    for rec in frame.to_dict("records"):
        meta = info[rec["method"]]
        rows_out.append({**rec, **meta,
                         "seconds_per_synthesis": float(np.mean(seconds[rec["method"]]))
                         if seconds[rec["method"]] else None})
    return {"results": rows_out, "seconds": time.perf_counter() - started}


def run_synthesis_experiment(out_dir, *, tables: Sequence = (), generated: Sequence[str] = (),
                             epsilons: Sequence[float] = (0.1, 1.0, 10.0), rounds: int = 3,
                             k: int = 100, rows: int | None = None, faithful_rows: int = 5000,
                             peers_python: str | Sequence[str] | None = None, seed: int = 0,
                             progress: Progress | None = None,
                             command: str | None = None, peers: Sequence[str] = tuple(PEERS),
                             scenarios: Sequence[int] = tuple(SCENARIOS)) -> dict:
    """The utility report of every table × method × ε; writes ``metrics.json`` and
    ``report.md`` into ``out_dir`` and returns the metrics (NOT private).

    Parameters
    ----------
    out_dir : path
    tables : sequence of path or (name, SynthesisTable)
        Tables read in place (:func:`load_experiment_table`), or already loaded.
    generated : sequence of str
        Keys of :data:`GENERATED`, built with ``rows`` rows (default: full size).
    epsilons : sequence of float
        Total ε of each synthetic run (> 0).
    rounds : int
        Random seed splits per scenario (the paper: 100).
    k : int
        Records per cell (MC-GEN-DP) and MDAV cluster size (faithful), in records.
    faithful_rows : int
        Faithful MC-GEN runs only on tables of at most this many rows (MDAV is quadratic);
        0 = never.
    peers_python : str or sequence of str, optional
        Python interpreters with ``smartnoise-synth``: the ``peers`` join, once per
        interpreter, labelled with its smartnoise-synth / mbi versions and whether mbi's
        sampler has the upstream fix (:func:`peer_environment`).
    seed : int
        Seeds the splits, synthesizers and classifiers (reproducible teaching figures).
    progress : callable(done, total, message), optional
    command : str, optional
        Recorded in the report.
    peers : sequence of str
        Keys of :data:`PEERS` to run (default both: MST and AIM).
    scenarios : sequence of int
        The paper's scenarios to measure (default both; the utility target is scenario 2).
    """
    epsilons = [float(e) for e in epsilons] if epsilons else []
    _check(epsilons, rounds, k, faithful_rows)
    scenarios = tuple(int(x) for x in scenarios)
    if not scenarios or any(x not in SCENARIOS for x in scenarios):
        raise ParameterError(f"scenarios must be among {', '.join(map(str, SCENARIOS))}; "
                             f"got {scenarios!r}")
    loaded = _experiment_tables(tables, generated, rows)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started_all = time.perf_counter()
    failures: list[dict] = []
    plans = []
    environments = {python: peer_environment(python) for python in _pythons(peers_python)}
    for name, table, source in loaded:
        methods, info = experiment_methods(epsilons, k=k,
                                           faithful=table.n_rows <= faithful_rows,
                                           peers_python=peers_python, failures=failures,
                                           peers=peers, environments=environments)
        plans.append((name, table, source, methods, info))
    total = sum(len(scenarios) * rounds * len(p[3]) for p in plans)
    done_before = 0
    reports = []
    for name, table, source, methods, info in plans:
        steps = len(scenarios) * rounds * len(methods)

        def step(fraction, message, _base=done_before, _steps=steps, _name=name):
            if progress:
                progress(_base + round(fraction * _steps), total, f"{_name}: {message}")
        report = _table_report(table, methods, info, scenarios=scenarios, rounds=rounds,
                               seed=seed, progress=step)
        done_before += steps
        reports.append({"table": name, "source": source, "rows": table.n_rows,
                        "features": table.schema.n_features,
                        "columns_one_hot": table.schema.width,
                        "classes": [str(c) for c in table.schema.classes],
                        "faithful_run": table.n_rows <= faithful_rows,
                        "seconds": report["seconds"],
                        "paper_table_1": PAPER_TABLE_1 if name.startswith("diabetes") else None,
                        "results": report["results"],
                        "floor_comparison": _floor_comparison(report["results"])})
    metrics = {"note": NOT_PRIVATE_NOTE, "command": command,
               "parameters": {"epsilons": epsilons, "rounds": rounds, "k": k, "rows": rows,
                              "faithful_rows": faithful_rows, "peers": bool(environments),
                              "peer_names": list(peers) if environments else [],
                              "scenarios": list(scenarios),
                              "peer_bins": PEER_BINS, "seed": seed},
               "versions": _versions(environments), "machine": _machine(),
               "seconds": time.perf_counter() - started_all, "tables": reports,
               "peer_failures": failures}
    write_report(out, metrics, report_markdown(metrics))
    return metrics


def _floor_comparison(rows: list[dict]) -> list[dict]:
    """Per scenario, ε and classifier: MC-GEN-DP's mean accuracy minus the floor's."""
    by = {(r["scenario"], r["kind"], r["epsilon"], r["classifier"]): r for r in rows}
    out = []
    for (scenario, kind, eps, clf), r in by.items():
        if kind != STRICT:
            continue
        floor = by.get((scenario, FLOOR, eps, clf))
        if floor is None:
            continue
        diff = r["accuracy"] - floor["accuracy"]
        out.append({"scenario": scenario, "epsilon": eps, "classifier": clf,
                    "mcgen_dp": r["accuracy"], "floor": floor["accuracy"],
                    "difference": diff if math.isfinite(diff) else None,
                    "beats_floor": bool(diff >= 0) if math.isfinite(diff) else None})
    return out


def _versions(environments: Mapping[str, dict]) -> dict:
    import sklearn
    out = {"dpcore": __version__, "python": platform.python_version(),
           "numpy": np.__version__, "pandas": pd.__version__, "scikit-learn": sklearn.__version__}
    for i, env in enumerate(environments.values()):
        out[f"peers {i + 1}"] = _peer_tag(env)
    return out


def _machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu_count": os.cpu_count(), "loadavg": load, "platform": sys.platform}


def _acc(r: dict | None) -> str:
    if r is None or r["accuracy"] is None or not math.isfinite(r["accuracy"]):
        return "–"
    if r["rounds"] > 1:
        return f"{r['accuracy']:.3f} ± {r['std']:.3f}"
    return f"{r['accuracy']:.3f}"


def report_markdown(metrics: dict) -> str:
    """The Markdown report of :func:`run_synthesis_experiment`'s metrics."""
    p = metrics["parameters"]
    lines = ["# Synthetic-data utility report", "",
             "**NOT private — owner/teaching only.** Classifier accuracies are measured on "
             "real records. Sandbox budget: each synthetic run had its own in-memory "
             "accountant; no ledger was read or charged. Faithful MC-GEN is the published "
             "pipeline and is NOT differentially private.", "",
             f"- command: `{metrics['command']}`" if metrics["command"] else "- command: (API)",
             f"- ε: {', '.join(f'{e:g}' for e in p['epsilons'])}; rounds (random splits) per "
             f"scenario: {p['rounds']}; k = {p['k']}; seed {p['seed']}",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in metrics["versions"].items()),
             f"- wall time: {metrics['seconds']:.1f} s", "",
             "Scenario 1: " + SCENARIOS[1][1] + ". Scenario 2: " + SCENARIOS[2][1] + ". "
             "Cells: mean ± sd of the accuracy over the rounds (sd over rounds, population). "
             "s = mean seconds per synthesis.", ""]
    for t in metrics["tables"]:
        lines += [f"## {t['table']} ({t['rows']:,} rows, {t['features']} features, "
                  f"{t['columns_one_hot']} encoded columns; {t['source']})", ""]
        if not t["faithful_run"]:
            lines += ["Faithful MC-GEN not run: " + (
                f"more than {p['faithful_rows']:,} rows (MDAV is quadratic)."
                if p["faithful_rows"] else "faithful_rows = 0."), ""]
        results = t["results"]
        methods = list(dict.fromkeys(r["method"] for r in results))
        by = {(r["scenario"], r["method"], r["classifier"]): r for r in results}
        for scenario in sorted({r["scenario"] for r in results}):
            lines += [f"### Scenario {scenario}: {SCENARIOS[scenario][1]}", "",
                      "| method | " + " | ".join(CLASSIFIERS) + " | s |",
                      "|---|" + "---|" * (len(CLASSIFIERS) + 1)]
            for m in methods:
                s = by[(scenario, m, CLASSIFIERS[0])]["seconds_per_synthesis"]
                lines.append(f"| {m} | " + " | ".join(_acc(by.get((scenario, m, c)))
                                                     for c in CLASSIFIERS)
                             + f" | {'–' if s is None else format(s, '.2f')} |")
            if t["paper_table_1"]:
                lines.append("| paper Table 1 (original data) | " + " | ".join(
                    f"{t['paper_table_1'][scenario][c]:.2f}" for c in CLASSIFIERS) + " | |")
            lines.append("")
        if t["floor_comparison"]:
            lines += ["### MC-GEN-DP against the floor (mean accuracy)", "",
                      "| scenario | ε | classifier | MC-GEN-DP | floor | difference | beats "
                      "the floor |", "|---|---|---|---|---|---|---|"]
            for r in t["floor_comparison"]:
                verdict = {None: "–", True: "yes", False: "NO"}[r["beats_floor"]]
                diff = "–" if r["difference"] is None else f"{r['difference']:+.3f}"
                lines.append(f"| {r['scenario']} | {r['epsilon']:g} | {r['classifier']} | "
                             f"{r['mcgen_dp']:.3f} | {r['floor']:.3f} | {diff} | {verdict} |")
            lines.append("")
    if metrics["peer_failures"]:
        lines += ["## Peer runs that failed", ""]
        lines += [f"- {f['peer']} at ε = {f['epsilon']:g}: {f['reason']}"
                  for f in metrics["peer_failures"]]
        lines.append("")
    return "\n".join(lines)
