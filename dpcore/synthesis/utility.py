"""Utility report: the MC-GEN paper's two classifier scenarios — owner/teaching, NOT private.

This module reads the real table (splits it, trains and tests classifiers on it) and reports
accuracies computed from real data: nothing it returns is a DP release. Use it on public
demo data, or as the data owner; never show its numbers to analysts of private data.

Scenarios (Li, Zhuang & Chang 2022, §5.1; splits per class with ``⌊fraction·N_y⌋`` seed
records, as the authors' code):

1. **train on real, test on synthetic** — 20 % of each class is the seed the synthesizer
   sees; classifiers train on the other 80 % (real) and are tested on the synthetic table.
2. **train on synthetic, test on real** — 80 % is the seed; classifiers train on the
   synthetic table and are tested on the held-out 20 % (real).

The real-data baseline is the identity "synthesizer" (the seed itself). Classifiers are
scikit-learn's with default hyperparameters, as the paper assumes — ``SVC()``,
``LogisticRegression(max_iter=1000)`` (the default 100 iterations do not always converge)
and ``GradientBoostingClassifier()`` — on the encoded features (numeric scaled to [−1, 1]
by the public bounds, categoricals one-hot). Metric: accuracy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC

from dpcore.data.table.schema import TableSchema, value_text
from dpcore.data.table.table import SynthesisTable
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import FAITHFUL, STRICT
from dpcore.synthesis.miner import synthesize
from dpcore.synthesis.params import FLOOR, MCGEN, SynthesisParams, run_cost_nano

__all__ = ["SCENARIOS", "CLASSIFIERS", "REAL", "make_classifiers", "split_seed",
           "frame_features", "accuracies", "Synthesizer", "standard_methods",
           "utility_report", "summary_table"]

#: Scenario → (seed fraction, description).
SCENARIOS = {1: (0.2, "train on real (80 %), test on synthetic (from 20 %)"),
             2: (0.8, "train on synthetic (from 80 %), test on real (20 %)")}
CLASSIFIERS = ("SVM", "logistic regression", "gradient boosting")
#: Name of the real-data baseline method.
REAL = "real data (baseline)"

#: A synthesizer for the report: (seed table, rng) → synthetic DataFrame.
Synthesizer = Callable[[SynthesisTable, np.random.Generator], pd.DataFrame]


def make_classifiers(seed: int = 0) -> dict:
    """The paper's three classifiers with scikit-learn defaults (LR: max_iter 1000)."""
    return {"SVM": SVC(),
            "logistic regression": LogisticRegression(max_iter=1000),
            "gradient boosting": GradientBoostingClassifier(random_state=seed)}


def split_seed(table: SynthesisTable, fraction: float, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per class, a random ⌊fraction·N_y⌋ records as the seed; returns (seed rows, rest)."""
    seed, rest = [], []
    for y in range(table.schema.n_classes):
        rows = rng.permutation(np.flatnonzero(table.labels == y))
        cut = int(fraction * rows.shape[0])
        seed.append(rows[:cut])
        rest.append(rows[cut:])
    return np.sort(np.concatenate(seed)), np.sort(np.concatenate(rest))


def frame_features(frame: pd.DataFrame, schema: TableSchema) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a table in the schema's columns: numeric scaled by the public bounds (not
    clipped: faithful MC-GEN's output may leave them), categoricals one-hot, class codes."""
    n = len(frame)
    x = np.zeros((n, schema.width))
    for i, f in enumerate(schema.features):
        cols = schema.columns_of(i)
        if f.is_numeric:
            lo, hi = f.bounds
            x[:, cols.start] = 2.0 * (frame[f.name].to_numpy(dtype=np.float64) - lo) \
                / (hi - lo) - 1.0
        else:
            lookup = {value_text(v): j for j, v in enumerate(f.levels)}
            codes = np.array([lookup[value_text(v)] for v in frame[f.name]], dtype=np.int64)
            x[np.arange(n), cols.start + codes] = 1.0
    classes = {value_text(c): j for j, c in enumerate(schema.classes)}
    y = np.array([classes[value_text(v)] for v in frame[schema.label]], dtype=np.int64)
    return x, y


def accuracies(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], *,
               seed: int = 0) -> dict[str, float]:
    """Accuracy of each classifier trained on ``train`` and tested on ``test`` ((X, y) pairs).

    A training set with a single class predicts that class; an empty one or an empty test
    set gives NaN.
    """
    (x_tr, y_tr), (x_te, y_te) = train, test
    out = {}
    for name, model in make_classifiers(seed).items():
        if y_tr.size == 0 or y_te.size == 0:
            out[name] = float("nan")
            continue
        if np.unique(y_tr).size < 2:
            out[name] = float(np.mean(y_te == y_tr[0]))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x_tr, y_tr)
            out[name] = float(np.mean(model.predict(x_te) == y_te))
    return out


def _synthesizer(params: SynthesisParams) -> Synthesizer:
    def run(seed_table: SynthesisTable, rng: np.random.Generator) -> pd.DataFrame:
        accountant = PrivacyAccountant(run_cost_nano(params))  # a sandbox: no ledger
        return synthesize(seed_table, params, rng=rng, accountant=accountant).synthetic
    return run


def standard_methods(epsilon: float, *, k: int = 100, faithful_k: int | None = None,
                     feature_groups=None, include_faithful: bool = True
                     ) -> dict[str, Synthesizer]:
    """The report's usual methods: the real data, MC-GEN-DP, faithful MC-GEN, the floor.

    Each synthetic run gets its own sandbox accountant (this is a teaching report, not a
    charged run).
    """
    methods: dict[str, Synthesizer] = {
        REAL: lambda seed_table, rng: seed_table.to_frame(),
        f"MC-GEN-DP ({STRICT}, ε = {epsilon:g})": _synthesizer(SynthesisParams(
            algorithm=MCGEN, epsilon=epsilon, mode=STRICT, k=k, feature_groups=feature_groups)),
    }
    if include_faithful:
        methods[f"MC-GEN ({FAITHFUL}, NOT DP, ε = {epsilon:g})"] = _synthesizer(SynthesisParams(
            algorithm=MCGEN, epsilon=epsilon, mode=FAITHFUL, k=faithful_k or k,
            feature_groups=feature_groups))
    methods[f"floor: independent marginals (ε = {epsilon:g})"] = _synthesizer(
        SynthesisParams(algorithm=FLOOR, epsilon=epsilon))
    return methods


def utility_report(table: SynthesisTable, methods: Mapping[str, Synthesizer], *,
                   scenarios=(1, 2), rounds: int = 5, seed: int = 0, progress=None
                   ) -> pd.DataFrame:
    """Accuracy of every (scenario, method, classifier), mean and standard deviation over
    ``rounds`` random seed splits. NOT private (see the module docstring).

    Parameters
    ----------
    table : SynthesisTable
        The real table.
    methods : mapping of name → synthesizer
        ``(seed table, rng) → synthetic DataFrame`` (see :func:`standard_methods`).
    scenarios : iterable of int
        1 and/or 2 (:data:`SCENARIOS`).
    rounds : int
        Random splits per scenario (the paper: 100).
    seed : int
        Seeds the splits, the synthesizers and the classifiers (teaching data: reproducible).
    progress : callable(fraction, message), optional

    Returns
    -------
    pandas.DataFrame
        Columns ``scenario``, ``method``, ``classifier``, ``accuracy`` (mean), ``std``,
        ``rounds``, ``rows`` (mean synthetic rows), in scenario and method order.
    """
    schema = table.schema
    real_x, real_y = frame_features(table.to_frame(), schema)
    rng = np.random.default_rng(seed)
    records = []
    steps = max(len(tuple(scenarios)) * rounds * len(methods), 1)
    done = 0
    for scenario in scenarios:
        fraction, _ = SCENARIOS[scenario]
        scores = {m: {c: [] for c in CLASSIFIERS} for m in methods}
        sizes = {m: [] for m in methods}
        for r in range(rounds):
            seed_rows, rest_rows = split_seed(table, fraction, rng)
            seed_table = table.subset(seed_rows)
            rest = (real_x[rest_rows], real_y[rest_rows])
            for name, method in methods.items():
                if progress is not None:
                    progress(done / steps, f"scenario {scenario}, round {r + 1}: {name}")
                synthetic = frame_features(method(seed_table, np.random.default_rng(
                    [seed, scenario, r, len(sizes[name])])), schema)
                sizes[name].append(synthetic[1].size)
                train, test = (rest, synthetic) if scenario == 1 else (synthetic, rest)
                for c, acc in accuracies(train, test, seed=seed + r).items():
                    scores[name][c].append(acc)
                done += 1
        for name in methods:
            for c in CLASSIFIERS:
                vals = np.asarray(scores[name][c], dtype=np.float64)
                ok = vals[np.isfinite(vals)]
                records.append({"scenario": scenario, "method": name, "classifier": c,
                                "accuracy": float(ok.mean()) if ok.size else float("nan"),
                                "std": float(ok.std()) if ok.size else float("nan"),
                                "rounds": int(ok.size),
                                "rows": float(np.mean(sizes[name]))})
    if progress is not None:
        progress(1.0, "done")
    return pd.DataFrame.from_records(records, columns=["scenario", "method", "classifier",
                                                       "accuracy", "std", "rounds", "rows"])


def summary_table(report: pd.DataFrame) -> pd.DataFrame:
    """One row per (scenario, method), one column per classifier (mean accuracy)."""
    wide = report.pivot_table(index=["scenario", "method"], columns="classifier",
                              values="accuracy", sort=False)
    return wide[[c for c in CLASSIFIERS if c in wide.columns]]
