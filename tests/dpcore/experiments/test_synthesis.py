"""The synthesis experiment harness (utility report; owner/teaching, NOT private)."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcore.errors import DataError, ParameterError
from dpcore.experiments import synthesis as exp
from dpcore.privacy.ledger import store
from dpcore.registry import FAITHFUL, FLOOR, STRICT
from dpcore.synthesis.utility import CLASSIFIERS, REAL

DIABETES = Path(__file__).resolve().parents[4] / "shared" / "data" / \
    "mcgen_diabetes" / "diabetes_scale.csv"


@pytest.fixture()
def no_ledger(monkeypatch):
    """Any attempt to open a ledger (or any SQLite file) fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the harness opened a ledger")
    monkeypatch.setattr(store.Ledger, "__init__", refuse)
    monkeypatch.setattr(sqlite3, "connect", refuse)


def test_tiny_report_has_every_method_scenario_and_classifier(tmp_path, no_ledger):
    out = tmp_path / "rep"
    metrics = exp.run_synthesis_experiment(out, generated=["pima_like"], rows=240,
                                           epsilons=[1.0], rounds=1, k=20, seed=3)
    (table,) = metrics["tables"]
    assert table["rows"] == 240 and table["faithful_run"]
    kinds = {r["kind"] for r in table["results"]}
    assert kinds == {REAL, STRICT, FAITHFUL, FLOOR}
    assert len(table["results"]) == 2 * 4 * len(CLASSIFIERS)
    for r in table["results"]:
        assert r["scenario"] in (1, 2) and r["classifier"] in CLASSIFIERS
        assert 0.0 <= r["accuracy"] <= 1.0 and r["rounds"] == 1
        assert r["dp"] == (r["kind"] in (STRICT, FLOOR))
        if r["kind"] != REAL:
            assert r["seconds_per_synthesis"] > 0
    # the real baseline trains and tests on real records: far above chance on this table
    real = [r["accuracy"] for r in table["results"] if r["kind"] == REAL]
    assert min(real) > 0.6
    assert len(table["floor_comparison"]) == 2 * len(CLASSIFIERS)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "NOT private" in report and "NOT DP" in report
    assert "| method | SVM | logistic regression | gradient boosting | s |" in report
    assert "MC-GEN-DP against the floor" in report
    saved = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert saved["note"].startswith("NOT private") and saved["peer_failures"] == []


def test_large_tables_skip_faithful_mcgen(tmp_path):
    metrics = exp.run_synthesis_experiment(tmp_path, generated=["pima_like"], rows=120,
                                           epsilons=[10.0], rounds=1, faithful_rows=100)
    kinds = {r["kind"] for r in metrics["tables"][0]["results"]}
    assert FAITHFUL not in kinds and STRICT in kinds
    assert "Faithful MC-GEN not run" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_scaled_csv_gets_declared_bounds_and_bad_files_are_named(tmp_path):
    path = tmp_path / "scaled.csv"
    path.write_text("label,a,b\n1,-1.0,0.5\n-1,0.25,1.0\n1,2.0,0.0\n", encoding="utf-8")
    table = exp.load_experiment_table(path)
    assert [f.bounds for f in table.schema.features] == [(-1.0, 1.0)] * 2
    assert [str(c) for c in table.schema.classes] == ["-1", "1"]
    assert table.clipped["a"] == 1 and table.numeric[:, 0].max() == 1.0
    with pytest.raises(DataError, match="label column 'outcome' is missing"):
        exp.load_experiment_table(path, label="outcome")
    with pytest.raises(DataError, match="no such table"):
        exp.load_experiment_table(tmp_path / "absent.csv")


@pytest.mark.skipif(not DIABETES.is_file(), reason="the shared Diabetes table is absent")
def test_diabetes_table_loads_in_place():
    table = exp.load_experiment_table(DIABETES)
    assert table.n_rows == 768 and table.schema.n_features == 8
    assert np.bincount(table.labels).tolist() == [268, 500]  # −1 diabetic, +1 not


def test_peer_codes_round_trip_stays_in_each_bin():
    table = exp.generated_table("adult_like", 300)
    codes = exp._codes_frame(table, 8)
    back = exp._decode_codes(codes, table, 8, np.random.default_rng(0))
    again = exp._codes_frame(exp.table_from_frame(back, table.schema), 8)
    assert (again.to_numpy() == codes.to_numpy()).all()
    assert codes.drop(columns=table.schema.label).to_numpy().max() < max(
        8, max(len(f.levels) for f in table.schema.features if not f.is_numeric))


def test_a_peer_that_cannot_run_is_reported_not_faked(tmp_path):
    """A Python without smartnoise-synth: the peer yields no rows, NaN accuracies, a note."""
    failures = []
    peer = exp.peer_synthesizer("mst", 1.0, sys.executable, failures=failures)
    table = exp.generated_table("pima_like", 100)
    assert len(peer(table, np.random.default_rng(0))) == 0
    assert failures and failures[0]["peer"] == "MST"
    metrics = exp.run_synthesis_experiment(tmp_path, generated=["pima_like"], rows=100,
                                           epsilons=[1.0], rounds=1, faithful_rows=0,
                                           peers_python=sys.executable)
    peers = [r for r in metrics["tables"][0]["results"] if r["kind"] in exp.PEERS]
    assert peers and all(math.isnan(r["accuracy"]) for r in peers)
    assert "Peer runs that failed" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_bad_parameters_are_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "never"
    with pytest.raises(ParameterError, match="at least one table"):
        exp.run_synthesis_experiment(out)
    with pytest.raises(ParameterError, match="ε"):
        exp.run_synthesis_experiment(out, generated=["pima_like"], epsilons=[0.0])
    with pytest.raises(ParameterError, match="unknown generated table"):
        exp.run_synthesis_experiment(out, generated=["iris"])
    assert not out.exists()
