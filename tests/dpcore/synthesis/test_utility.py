"""The utility report (owner/teaching, NOT private): splits, scenarios, classifiers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpcore.data.table.table import load_synthesis_dataset
from dpcore.synthesis.utility import (
    CLASSIFIERS,
    REAL,
    accuracies,
    frame_features,
    split_seed,
    standard_methods,
    summary_table,
    utility_report,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def pima():
    return load_synthesis_dataset(REPO / "sample_data" / "pima_like")


def test_seed_split_takes_the_floor_of_each_class_share(pima):
    seed, rest = split_seed(pima, 0.2, np.random.default_rng(0))
    assert len(seed) == int(0.2 * 500) + int(0.2 * 268) == 153
    assert len(np.intersect1d(seed, rest)) == 0 and len(seed) + len(rest) == 768
    assert np.bincount(pima.labels[seed]).tolist() == [100, 53]


def test_single_class_training_predicts_that_class():
    x = np.zeros((4, 2))
    got = accuracies((x, np.array([1, 1, 1, 1])), (x, np.array([1, 0, 1, 1])))
    assert got == {c: 0.75 for c in CLASSIFIERS}
    empty = accuracies((x[:0], np.array([], dtype=int)), (x, np.array([1, 0, 1, 1])))
    assert all(np.isnan(v) for v in empty.values())


def test_report_has_both_scenarios_every_method_and_classifier(pima):
    methods = standard_methods(1.0)
    seen = []
    report = utility_report(pima, methods, rounds=1, seed=3,
                            progress=lambda f, m: seen.append(f))
    assert len(report) == 2 * len(methods) * 3
    assert set(report["scenario"]) == {1, 2} and set(report["classifier"]) == set(CLASSIFIERS)
    real = report[report.method == REAL]
    assert (real["accuracy"] > 0.6).all()  # the generated table carries a real signal
    assert report["accuracy"].between(0, 1).all()
    rows = report.groupby(["scenario", "method"])["rows"].first()
    assert rows[(2, REAL)] == 614 and rows[(1, REAL)] == 153
    assert seen[-1] == 1.0 and seen == sorted(seen)
    wide = summary_table(report)
    assert list(wide.columns) == list(CLASSIFIERS) and len(wide) == 2 * len(methods)


def test_features_are_scaled_by_public_bounds_not_clipped(pima):
    frame = pima.to_frame().head(3).copy()
    frame.loc[0, "glucose"] = 500  # beyond the bound [0, 250]: kept (faithful output may)
    x, y = frame_features(frame, pima.schema)
    assert x[0, 1] == pytest.approx(3.0) and y.tolist() == pima.labels[:3].tolist()
