"""Run the authors' Java code of the three tree miners as an oracle for faithful mode.

The Java code of Mihelčić & Miettinen (2023) is public but carries no licence, so nothing of it
is part of this project: the user checks it out somewhere and passes ``--java-src PATH``; this
script compiles it there-outside (into ``--work DIR``) against Weka 3.9 and commons-math3,
writes the two views of one of our datasets as ARFF plus a settings file, runs one miner
(one JVM per run) and reads the ReReMi-style ``.queries`` file it writes. Each query is then
evaluated on our rows, so the Java output gets the same true Jaccard / p-value scoring as a
``dpcore`` run (:mod:`dpcore.experiments.metrics`).

NOT private: this is a research bench for owners / public data. The Java runs draw from an
unseeded ``java.util.Random``; they cannot be reproduced run for run.

Usage (from the repository root)::

    .venv/bin/python -m bench.javaref.run --java-src ~/src/dp-trees --dataset cms:7200:40:16 \\
        --algorithm altexpm --runs 3 --dpcore-runs 3 --out /tmp/javaref

Weka: ``--weka-jar`` or, by default, ``weka.jar`` from the ``python-weka-wrapper3`` source
distribution (downloaded once with ``pip download`` into the work directory). commons-math3:
``--math-jar`` or Debian's ``/usr/share/java/commons-math3.jar`` (package
``libcommons-math3-java``).
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

from dpcore.registry import ALTEXPM, ALTMCMC, FAITHFUL, MCMCTREEPAIR

ALGORITHMS = (MCMCTREEPAIR, ALTMCMC, ALTEXPM)
#: main class and extra argument of the Java program for each miner
MAIN_CLASS = {
    MCMCTREEPAIR: ("dptressexpm.twotreesEM.TestRedescriptionMining", []),
    ALTEXPM: ("generaldpalgos.TestRedescriptionMiningImproved", ["0"]),
    ALTMCMC: ("generaldpalgos.TestRedescriptionMiningImproved", ["1"]),
}
SOURCE_DIRS = ("twotreesEM", "generaldpalgos")
DEBIAN_MATH_JAR = "/usr/share/java/commons-math3.jar"


# --------------------------------------------------------------------------- writers

def _arff_name(text: str) -> str:
    """Quote an ARFF identifier or nominal value (single quotes, backslash escapes)."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def attribute_token(j: int) -> str:
    """ARFF name of attribute ``j`` of a view: ``v<j>``, the name the Java code's ReReMi
    output uses too (``v`` + Weka attribute index), so parsing needs no name table."""
    return f"v{j}"


def category_token(c: int) -> str:
    """ARFF value of category code ``c``: ``k<c>`` (no spaces, no operators)."""
    return f"k{c}"


def write_arff(dataset, view: int, path) -> None:
    """Write one view of a :class:`~dpcore.data.dataset.TwoViewDataset` as ARFF.

    Attributes are named ``v0, v1, …`` in the view's order; Boolean ones are nominal
    ``{0,1}`` (the Java code writes them as ``v3`` / ``! v3``), categorical ones nominal
    ``{k0,…}`` (codes in declared order), numeric ones ``numeric``; a missing value is ``?``.
    Rows keep the dataset's order. Raw data: the file is as private as the dataset.
    """
    vd = dataset.views[view]
    lines = [f"@relation view{view + 1}", ""]
    for j, at in enumerate(vd.attributes):
        if at.type == "boolean":
            kind = "{0,1}"
        elif at.type == "categorical":
            kind = "{" + ",".join(category_token(c) for c in range(len(at.categories))) + "}"
        else:
            kind = "numeric"
        lines.append(f"@attribute {attribute_token(j)} {kind}")
    lines += ["", "@data"]
    cols = []
    for j, at in enumerate(vd.attributes):
        col = vd.values[j]
        miss = np.isnan(col)
        if at.type == "numeric":
            txt = np.array([repr(float(x)) for x in col], dtype=object)
        elif at.type == "boolean":
            txt = np.where(col == 1.0, "1", "0").astype(object)
        else:
            txt = np.array([category_token(int(x)) if x == x else "?" for x in col], dtype=object)
        txt[miss] = "?"
        cols.append(txt)
    n = dataset.n_rows
    body = [",".join(c[i] for c in cols) for i in range(n)] if cols else [""] * n
    Path(path).write_text("\n".join(lines + body) + "\n", encoding="utf-8")


@dataclasses.dataclass(frozen=True)
class JavaSettings:
    """The settings file of the Java programs (key = value lines).

    Supports: ``min_supp`` > 1 is rows, ≤ 1 a share of N (the Java code's rule); ``max_supp``
    ≤ 1 a share of N. ``n_iterations`` is the number of trials (MCMCTreePair) or of
    alternation steps of the single chain (AltMCMC / AltExpM); ``weight_split`` is ω.
    """

    input1: str
    input2: str
    output: str
    epsilon: float = 1.0
    n_iterations: int = 4
    depth: int = 4
    mc_iter: int = 10_000
    sigma: float = 0.005
    min_supp: float = 10
    max_supp: float = 0.8
    min_jaccard: float = 0.1
    max_pval: float = 0.01
    max_clauses: int = 3
    weight_split: float = 0.1

    def text(self) -> str:
        pairs = [
            ("inputFile1", self.input1), ("inputFile2", self.input2),
            ("outputFile", self.output), ("numIterations", self.n_iterations),
            ("numInitTrials", 1), ("maxTreeDepth", self.depth),
            ("maxMCMCIteration", self.mc_iter), ("equilibriumTreshold", self.sigma),
            ("maxRedSupport", self.max_supp), ("minRedSupport", self.min_supp),
            ("minJaccard", self.min_jaccard), ("maxPval", self.max_pval),
            ("totalPrivacyBudget", self.epsilon), ("maxNumClauses", self.max_clauses),
            ("weightSplit", self.weight_split), ("weightNoise", 1.0 - self.weight_split),
        ]
        for _, v in pairs:
            if isinstance(v, str) and ("\n" in v or "=" in v):
                raise ValueError(f"a settings value may not contain '=' or a newline: {v!r}")
        return "".join(f"{k} = {v}\n" for k, v in pairs)

    def write(self, path) -> None:
        Path(path).write_text(self.text(), encoding="utf-8")


# --------------------------------------------------------------------------- reader

@dataclasses.dataclass(frozen=True)
class JavaRedescription:
    """One line of a ``.queries`` file: queries as text and the Java code's noisy statistics
    (Jaccard, p-value, |qL|, |qR|, |E11|, rows in neither; the last uses the true N)."""

    left: str
    right: str
    jaccard: float
    pvalue: float
    support_left: float
    support_right: float
    support_both: float
    support_neither: float


def read_queries(path) -> list[JavaRedescription]:
    """Read a ``.queries`` file (tab-separated, header ``rid query_LHS query_RHS acc pval
    card_Exo card_Eox card_Exx card_Eoo``). A missing or empty file means no redescription."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for k, line in enumerate(p.read_text(encoding="utf-8").splitlines()):
        if not line.strip() or (k == 0 and line.startswith("rid")):
            continue
        f = line.rstrip("\n").split("\t")
        if len(f) < 9:
            raise ValueError(f"{p}: line {k + 1} has {len(f)} fields, expected 9")
        out.append(JavaRedescription(f[1].strip(), f[2].strip(), float(f[3]), float(f[4]),
                                     float(f[5]), float(f[6]), float(f[7]), float(f[8])))
    return out


_TOKEN = re.compile(r"\s*(\(|\)|!|&|\||[^\s()!&|]+)")


def _tokens(text: str) -> list[str]:
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot read query {text!r} at {pos}")
        out.append(m.group(1))
        pos = m.end()
    return out


def query_mask(text: str, dataset, view: int) -> np.ndarray:  # noqa: C901
    """Rows of ``dataset`` satisfying a ReReMi-style query of the Java output on ``view``.

    Grammar: ``|`` (or) of ``&`` (and) of atoms; an atom is ``( query )``, ``! atom``,
    ``vJ`` (Boolean true), ``vJ = kC`` (category C), ``vJ < t`` (the tree's left branch,
    x ≤ t in Weka's split) or ``t < vJ`` (x > t). A missing value satisfies no atom; ``!``
    complements (so a negated leaf contains the rows with missing values, as the Java code's
    complement of a leaf's row set does). NOT private: reads raw data.
    """
    vd = dataset.views[view]
    n = dataset.n_rows
    toks = _tokens(text)
    if not toks:
        return np.zeros(n, dtype=bool)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take(expected=None):
        nonlocal pos
        if pos >= len(toks):
            raise ValueError(f"query {text!r} ends early")
        t = toks[pos]
        if expected is not None and t != expected:
            raise ValueError(f"query {text!r}: expected {expected!r}, got {t!r}")
        pos += 1
        return t

    def column(tok):
        if not re.fullmatch(r"v\d+", tok):
            raise ValueError(f"query {text!r}: {tok!r} is not an attribute")
        j = int(tok[1:])
        if j >= vd.n_attributes:
            raise ValueError(f"query {text!r}: view {view} has no attribute {tok}")
        return vd.values[j]

    def atom():
        t = peek()
        if t == "(":
            take("(")
            m = disj()
            take(")")
            return m
        if t == "!":
            take("!")
            return ~atom()
        t = take()
        if t.startswith("v") and re.fullmatch(r"v\d+", t):
            col = column(t)
            present = ~np.isnan(col)
            if peek() == "=":
                take("=")
                val = take()
                if not re.fullmatch(r"k\d+", val):
                    raise ValueError(f"query {text!r}: unknown category {val!r}")
                return present & (col == int(val[1:]))
            if peek() == "<":
                take("<")
                thr = float(take())
                return present & (col <= thr)
            return present & (col == 1.0)
        thr = float(t)                      # "t < vJ"
        take("<")
        col = column(take())
        return ~np.isnan(col) & (col > thr)

    def conj():
        m = atom()
        while peek() == "&":
            take("&")
            m = m & atom()
        return m

    def disj():
        m = conj()
        while peek() == "|":
            take("|")
            m = m | conj()
        return m

    out = disj()
    if pos != len(toks):
        raise ValueError(f"query {text!r}: unexpected {toks[pos]!r}")
    return out


def score_java(reds, dataset, run: str):
    """True statistics of Java redescriptions, as :class:`ScoredRedescription` (NOT DP)."""
    from dpcore.experiments.metrics import ScoredRedescription
    from dpcore.redescriptions.evaluate import marg_pvalue

    out = []
    for r in reds:
        lm, rm = query_mask(r.left, dataset, 0), query_mask(r.right, dataset, 1)
        both = int(np.count_nonzero(lm & rm))
        union = int(np.count_nonzero(lm | rm))
        tj = both / union if union else 0.0
        tp = marg_pvalue(int(lm.sum()), int(rm.sum()), both, dataset.n_rows)
        out.append(ScoredRedescription(float(r.support_both), float(r.jaccard), float(r.pvalue),
                                       float(tj), float(tp), run))
    return out


# --------------------------------------------------------------------------- build and run

def weka_jar(work: Path, given: str | None) -> Path:
    """The Weka 3.9 jar: ``given``, or the one inside python-weka-wrapper3's sdist."""
    if given:
        return Path(given)
    target = work / "weka.jar"
    if target.exists():
        return target
    dl = work / "pww"
    dl.mkdir(parents=True, exist_ok=True)
    if not glob.glob(str(dl / "python_weka_wrapper3-*.tar.gz")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", "-d", str(dl), "python-weka-wrapper3"], check=True,
                       stdout=subprocess.DEVNULL)
    sdist = sorted(glob.glob(str(dl / "python_weka_wrapper3-*.tar.gz")))[-1]
    with tarfile.open(sdist) as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith("/weka/lib/weka.jar"))
        with tf.extractfile(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return target


def math_jar(given: str | None) -> Path:
    p = Path(given or DEBIAN_MATH_JAR)
    if not p.exists():
        raise SystemExit(f"commons-math3 jar not found at {p}: install Debian's "
                         "libcommons-math3-java or pass --math-jar")
    return p


def build(java_src: Path, work: Path, classpath: str) -> Path:
    """Compile the Java checkout's two packages into ``work/classes`` (once)."""
    classes = work / "classes"
    marker = classes / ".built"
    if marker.exists():
        return classes
    sources = [str(p) for d in SOURCE_DIRS for p in sorted((java_src / d).glob("*.java"))]
    if not sources:
        raise SystemExit(f"{java_src} has no {'/ or '.join(SOURCE_DIRS)}/*.java: "
                         "point --java-src at a checkout of the authors' repository")
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", classpath,
                    "-d", str(classes), *sources], check=True)
    marker.write_text("ok\n")
    return classes


def _timed(cmd, **kw):
    """Run ``cmd``; return (completed, wall s, CPU s of the child, peak RSS of children KiB)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cp = subprocess.run(cmd, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cp, wall, cpu, after.ru_maxrss


def run_java(algorithm: str, settings_path: Path, classpath: str, cwd: Path,
             heap: str = "4g", stdout_path: Path | None = None):
    """One whole JVM run of a miner; returns (completed process, wall, CPU, peak RSS KiB).

    The program's standard output is discarded, or written to ``stdout_path``."""
    main, extra = MAIN_CLASS[algorithm]
    cmd = ["java", f"-Xmx{heap}", "-cp", classpath, main, str(settings_path), *extra]
    if stdout_path is None:
        return _timed(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                      text=True)
    with open(stdout_path, "w", encoding="utf-8") as out:
        return _timed(cmd, cwd=cwd, stdout=out, stderr=subprocess.PIPE, text=True)


_ITERATION_LINE = re.compile(r"^iteration: (\d+)\s*$")


def java_chain_iterations(lines) -> list[int]:
    """Iterations of each tree-pair chain of a Java MCMCTreePair run, from its standard output.

    The Java tree-pair chain prints ``iteration: k`` after its iteration k (k = 0, 1, …); a
    line ``iteration: 0`` starts the next chain, so a chain ran (its last k) + 1 iterations.
    (An iteration that finds no split to propose prints nothing; one at a chain's very end is
    not counted.) The alternating miners' Java chains print no such line: the list is empty.
    """
    counts: list[int] = []
    for line in lines:
        m = _ITERATION_LINE.match(line)
        if not m:
            continue
        k = int(m.group(1))
        if k == 0 or not counts:
            counts.append(0)
        counts[-1] = k + 1
    return counts


class ChainLengths:
    """Records the iteration count of every MCMC chain of the dpcore runs made inside it.

    Bench instrument (not private): wraps ``mining._Run.keep_trace``, which receives each
    chain's full score trace (one value per iteration) before it is thinned for the owner
    diagnostics; ``counts`` lists (label, iterations) in the order the chains ran.
    """

    def __init__(self):
        self.counts: list[tuple[str, int]] = []

    def __enter__(self):
        from dpcore.redescriptions import mining

        self._cls = mining._Run
        self._orig = self._cls.keep_trace
        orig, counts = self._orig, self.counts

        def keep_trace(run, label, trace):
            counts.append((str(label), int(np.asarray(trace).size)))
            return orig(run, label, trace)

        self._cls.keep_trace = keep_trace
        return self

    def __exit__(self, *exc):
        self._cls.keep_trace = self._orig
        return False


# --------------------------------------------------------------------------- datasets

def load_dataset_spec(spec: str):
    """``cms:ROWS[:N_BOOL:N_NUMERIC[:SEED]]`` (generated CMS-2-k shape), ``desynpuf[:ROWS]`` or a
    schema / dataset path understood by :func:`dpcore.data.loading.load_dataset`."""
    if spec.startswith("cms:"):
        from dpcore.data.samples import generate_cms_like_dataset

        parts = [int(x) for x in spec.split(":")[1:]]
        rows = parts[0]
        n_bool, n_num = (parts[1], parts[2]) if len(parts) >= 3 else (452, 152)
        seed = parts[3] if len(parts) >= 4 else 20232
        return generate_cms_like_dataset(rows, n_bool=n_bool, n_numeric=n_num, seed=seed)
    if spec == "desynpuf" or spec.startswith("desynpuf:"):
        from bench.desynpuf import load_desynpuf
        from dpcore.data.dataset import TwoViewDataset

        d = load_desynpuf()
        if ":" not in spec:
            return d
        n = int(spec.split(":")[1])       # the first n rows (the 2008 year has 10,000)
        return TwoViewDataset.from_arrays(d.schema, d.views[0].values[:, :n],
                                          d.views[1].values[:, :n], d.ids[:n])
    from dpcore.data.loading import load_dataset

    return load_dataset(spec)


def dpcore_params(algorithm: str, args) -> dict:
    """Faithful dpcore parameters matching the Java settings.

    MCMCTreePair: InTr = ``--iterations`` (the Java trials). AltMCMC / AltExpM: the Java
    ``TestRedescriptionMiningImproved`` runs one chain of ``numIterations`` alternation steps
    (``numIterations`` + 1 trees, ``numIterations`` extractions, ε/(2·numIterations + 1) per
    tree), which is createRedsAlt with InTr = 1, RMIter = ``--iterations``; that is the default
    here. ``--alt-trials`` runs InTr = ``--iterations``, RMIter = 1 instead (what the Java
    ``…ImprovedStable`` variant does with ``numIterations`` = 1).
    """
    p = dict(algorithm=algorithm, mode=FAITHFUL, epsilon=args.epsilon, depth=args.depth,
             mc_iter=args.mc_iter, sigma=args.sigma, min_support=args.min_supp,
             max_support=args.max_supp, min_jaccard=args.min_jaccard,
             max_pvalue=args.max_pval,
             max_clauses=args.max_clauses, in_tr=args.iterations)
    if algorithm == MCMCTREEPAIR:
        p["omega"] = args.omega
    elif getattr(args, "alt_trials", False):
        p["rm_iter"] = 1
    else:
        p["in_tr"], p["rm_iter"] = 1, args.iterations
    return p


def run_dpcore(dataset, algorithm: str, args, seed: int):
    """One faithful dpcore run in this process; returns (scored list, seconds)."""
    from dpcore.experiments.metrics import score_run
    from dpcore.redescriptions.evaluate import evaluate
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import TreeParams

    params = TreeParams(**dpcore_params(algorithm, args))
    t0 = time.perf_counter()
    res = mine(dataset, params, rng=np.random.default_rng(seed), seed=seed)
    dt = time.perf_counter() - t0
    return score_run(res, evaluate(res, dataset)), dt


def _summary(runs, threshold: float) -> dict:
    from dpcore.experiments.metrics import summarize

    if not runs:
        return {"runs": 0}
    s = summarize(runs, threshold)
    s["n_per_run"] = [len(r) for r in runs]
    keys = ("share_significant_kept", "spearman_rho", "median_true_j", "median_abs_error")
    s["per_run"] = [{k: summarize([r], threshold)[k] for k in keys} if r else {}
                    for r in runs]
    errs = [r.noisy_jaccard - r.true_jaccard for run in runs for r in run]
    s["mean_signed_error_all"] = float(np.mean(errs)) if errs else None
    return s


def parser() -> argparse.ArgumentParser:
    """The command line of :func:`main`."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--java-src", required=True, help="checkout of the authors' Java code")
    ap.add_argument("--dataset", default="cms:7200:40:16")
    ap.add_argument("--algorithm", choices=ALGORITHMS, action="append")
    ap.add_argument("--runs", type=int, default=3, help="Java runs per miner")
    ap.add_argument("--dpcore-runs", type=int, default=3, help="seeded faithful dpcore runs")
    ap.add_argument("--work", default=None, help="build / data directory (default: --out)")
    ap.add_argument("--out", default="/tmp/javaref")
    ap.add_argument("--weka-jar"), ap.add_argument("--math-jar")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--iterations", type=int, default=4,
                    help="Java numIterations: dpcore InTr (MCMCTreePair) or RMIter with "
                         "InTr = 1 (AltMCMC / AltExpM)")
    ap.add_argument("--alt-trials", action="store_true",
                    help="AltMCMC / AltExpM in dpcore: InTr = --iterations, RMIter = 1 "
                         "(not the Java chain's setting)")
    ap.add_argument("--dpcore-seed", type=int, default=1000,
                    help="first dpcore seed (runs use seed, seed + 1, …)")
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--mc-iter", type=int, default=10_000)
    ap.add_argument("--sigma", type=float, default=0.005)
    ap.add_argument("--min-supp", type=float, default=10)
    ap.add_argument("--max-supp", type=float, default=0.8)
    ap.add_argument("--min-jaccard", type=float, default=0.1)
    ap.add_argument("--max-pval", type=float, default=0.01)
    ap.add_argument("--max-clauses", type=int, default=3)
    ap.add_argument("--omega", type=float, default=0.1)
    ap.add_argument("--prune", type=float, default=0.0, help="noisy-support pruning threshold")
    ap.add_argument("--chains", action="store_true",
                    help="record each MCMC chain's iterations: dpcore's, and Java "
                         "MCMCTreePair's from its output (kept as WORK/<miner>_<k>.stdout)")
    return ap


def chain_summary(per_run: list[list[int]], mc_iter: int) -> dict:
    """Iterations per chain pooled over runs: chains, median, quartiles, range, and the share
    stopped by the σ rule before ``mc_iter``."""
    flat = np.asarray([c for run in per_run for c in run], dtype=float)
    if flat.size == 0:
        return {"chains": 0}
    q1, med, q3 = np.percentile(flat, [25, 50, 75])
    return {"chains": int(flat.size), "median": float(med), "q1": float(q1), "q3": float(q3),
            "min": int(flat.min()), "max": int(flat.max()),
            "share_stopped_early": float(np.mean(flat < mc_iter))}


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    algorithms = args.algorithm or list(ALGORITHMS)
    out = Path(args.out)
    work = Path(args.work) if args.work else out
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    cp = f"{weka_jar(work, args.weka_jar)}{os.pathsep}{math_jar(args.math_jar)}"
    classes = build(Path(args.java_src).expanduser(), work, cp)
    cp = f"{classes}{os.pathsep}{cp}"
    dataset = load_dataset_spec(args.dataset)
    write_arff(dataset, 0, work / "view1.arff")
    write_arff(dataset, 1, work / "view2.arff")
    report = {"dataset": args.dataset, "rows": dataset.n_rows, "epsilon": args.epsilon,
              "load": os.getloadavg(), "miners": {}}
    for alg in algorithms:
        java_runs, times, java_chains, dp_chains = [], [], [], []
        for k in range(args.runs):
            rr = work / f"{alg}_{k}.rr"
            for f in (rr, rr.with_suffix(".queries")):
                f.unlink(missing_ok=True)
            st = JavaSettings(str(work / "view1.arff"), str(work / "view2.arff"), str(rr),
                              epsilon=args.epsilon, n_iterations=args.iterations,
                              depth=args.depth, mc_iter=args.mc_iter, sigma=args.sigma,
                              min_supp=args.min_supp, max_supp=args.max_supp,
                              min_jaccard=args.min_jaccard, max_pval=args.max_pval,
                              max_clauses=args.max_clauses, weight_split=args.omega)
            sp = work / f"{alg}_{k}.settings"
            st.write(sp)
            log = work / f"{alg}_{k}.stdout" if args.chains else None
            proc, wall, cpu, _ = run_java(alg, sp, cp, work, stdout_path=log)
            if log is not None:
                with open(log, encoding="utf-8", errors="replace") as fh:
                    java_chains.append(java_chain_iterations(fh))
            if proc.returncode != 0 or "Exception" in (proc.stderr or ""):
                print(f"[java {alg} {k}] rc={proc.returncode}\n{proc.stderr[-2000:]}",
                      file=sys.stderr)
            reds = read_queries(rr.with_suffix(".queries"))
            if rr.with_suffix(".queries").exists():     # kept: the work dir is reused
                shutil.copy(rr.with_suffix(".queries"), out / f"java_{alg}_{k}.queries")
            java_runs.append(score_java(reds, dataset, f"java-{alg}-{k}"))
            times.append(wall)
            print(f"java {alg} run {k}: {len(reds)} redescriptions, {wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU", file=sys.stderr)
        dp_runs = []
        for k in range(args.dpcore_runs):
            seed = args.dpcore_seed + k
            with ChainLengths() as chains:
                scored, dt = run_dpcore(dataset, alg, args, seed=seed)
            dp_runs.append(scored)
            dp_chains.append([n for _, n in chains.counts])
            print(f"dpcore {alg} seed {seed}: {len(scored)} redescriptions, {dt:.2f} s",
                  file=sys.stderr)
        report["miners"][alg] = {"java": _summary(java_runs, args.prune),
                                 "dpcore_faithful": _summary(dp_runs, args.prune),
                                 "java_wall_s": times,
                                 "dpcore_params": dpcore_params(alg, args)}
        if args.chains:
            report["miners"][alg]["chain_iterations"] = {
                "java": java_chains, "dpcore_faithful": dp_chains,
                "java_summary": chain_summary(java_chains, args.mc_iter),
                "dpcore_summary": chain_summary(dp_chains, args.mc_iter)}
    report["load_after"] = os.getloadavg()
    text = json.dumps(report, indent=1, default=lambda x: None if isinstance(x, float)
                      and math.isnan(x) else str(x))
    (out / "javaref.json").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
