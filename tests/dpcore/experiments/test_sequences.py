"""The frequent-sequence experiment harness (owner/teaching, NOT private): tiny shapes."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from dpcore.cli import main
from dpcore.errors import ParameterError
from dpcore.experiments.sequences import (
    DPCORE_EXACT,
    PREFIXSPAN,
    SHAPES,
    ground_truth,
    parse_thetas,
    run_sequence_experiment,
    shape_dataset,
)
from dpcore.privacy.ledger import store
from dpcore.registry import PFS2, PFS2_BASELINE
from dpcore.sequences.evaluate import exact_frequent_sequences
from tests.support.accounts_support import owner_in_env_ledger

#: 0.0003 of the MSNBC shape: 297 records (a run takes well under a second).
TINY = 0.0003


@pytest.fixture()
def no_ledger(monkeypatch):
    """Any attempt to open a ledger (or any SQLite file) fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the harness opened a ledger")
    monkeypatch.setattr(store.Ledger, "__init__", refuse)
    monkeypatch.setattr(sqlite3, "connect", refuse)


def test_tiny_grid_reports_both_algorithms_with_scores_in_range(tmp_path, no_ledger):
    out = tmp_path / "rep"
    metrics = run_sequence_experiment(out, shapes=["msnbc"], thetas={"msnbc": [0.05]},
                                      epsilons=[1.0, 0.1], runs=2, scale=TINY,
                                      truth="dpcore", seed=5)
    assert metrics["shapes"][0]["records"] == round(TINY * SHAPES["msnbc"].records)
    assert metrics["shapes"][0]["truth"]["0.05"]["miner"] == DPCORE_EXACT
    cells = metrics["cells"]
    assert {(c["algorithm"], c["epsilon"]) for c in cells} == {
        (a, e) for a in (PFS2, PFS2_BASELINE) for e in (1.0, 0.1)}
    for c in cells:
        assert len(c["runs"]) == 2
        for r in c["runs"]:
            assert 0.0 <= r["f_score"] <= 1.0
            assert r["median_re"] is None or math.isnan(r["median_re"]) or r["median_re"] >= 0
            assert r["charged_epsilon"] == pytest.approx(c["epsilon"])
            assert r["spent_epsilon"] <= r["charged_epsilon"] + 1e-12
            assert 1 <= r["l_f"] <= r["lmax"]
        s = c["summary"]["f_score"]
        assert s["n"] == 2 and 0.0 <= s["mean"] <= 1.0 and s["sd"] >= 0.0
    assert len(metrics["comparison"]) == 2
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "NOT private" in report
    for column in ("| θ | ε | algorithm | F | precision | recall | median RE % | released",
                   "| shape | θ | ε | F PFS2 | F baseline | difference | PFS2 ≥ baseline |"):
        assert column in report
    saved = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert saved["note"].startswith("NOT private") and len(saved["cells"]) == 4


def test_same_seed_same_figures_other_seed_other_noise(tmp_path):
    kw = dict(shapes=["msnbc"], thetas={"msnbc": [0.05]}, epsilons=[0.5], runs=1,
              algorithms=[PFS2], scale=TINY, truth="dpcore")
    a = run_sequence_experiment(tmp_path / "a", seed=1, **kw)["cells"][0]["runs"][0]
    b = run_sequence_experiment(tmp_path / "b", seed=1, **kw)["cells"][0]["runs"][0]
    assert {k: a[k] for k in ("f_score", "released", "median_re")} == \
        {k: b[k] for k in ("f_score", "released", "median_re")}


def test_prefixspan_ground_truth_agrees_with_dpcore_exact_miner():
    pytest.importorskip("prefixspan")
    data = shape_dataset("msnbc", TINY)
    truth, how = ground_truth(data, 0.05, "auto")
    assert how["miner"] == PREFIXSPAN and how["agrees_with_dpcore"] is True
    assert truth == exact_frequent_sequences(data, theta=0.05) and truth


def test_bad_grid_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "never"
    with pytest.raises(ParameterError, match="unknown shape"):
        run_sequence_experiment(out, shapes=["mnist"])
    with pytest.raises(ParameterError, match="θ"):
        run_sequence_experiment(out, shapes=["msnbc"], thetas={"msnbc": [1.5]})
    with pytest.raises(ParameterError, match="runs"):
        run_sequence_experiment(out, shapes=["msnbc"], runs=0)
    with pytest.raises(ParameterError, match="SHAPE"):
        parse_thetas(["bible:0.1"])
    assert parse_thetas(["bible=0.1,0.12"]) == {"bible": [0.1, 0.12]}
    assert not out.exists()


def test_cli_family_sequences_is_owner_only_and_writes_the_report(tmp_path, monkeypatch):
    monkeypatch.setenv("DPRM_LEDGER", str(tmp_path / "ledger.sqlite"))
    owner_in_env_ledger("s3cret")
    args = ["experiment", "--family", "sequences", "--shapes", "msnbc", "--theta",
            "msnbc=0.05", "--epsilons", "1", "--runs", "1", "--scale", str(TINY),
            "--truth", "dpcore", "--algorithms", PFS2_BASELINE, "--out", str(tmp_path / "rep")]
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "wrong")
    with pytest.raises(SystemExit, match="wrong account name or password"):
        main(args)
    assert not (tmp_path / "rep").exists()
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(args) == 0
    report = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "NOT private" in report and "python -m dpcore experiment --family sequences" in report
    cells = json.loads((tmp_path / "rep" / "metrics.json").read_text(encoding="utf-8"))["cells"]
    assert [c["algorithm"] for c in cells] == [PFS2_BASELINE]
    assert main(args[:-2] + ["--runs", "1,2", "--out", str(tmp_path / "x")]) == 2


def test_the_power_run_shapes_are_house_power_sized_windows_in_their_binnings():
    width, quantile = shape_dataset("power_runs_width", 0.01), shape_dataset(
        "power_runs_quantile", 0.01)
    for data in (width, quantile):
        assert data.n_records == round(0.01 * 40_986) and (data.lengths == 50).all()
        assert data.schema.n_items == 21
    # equal-width: the quiet regimes put most readings in the lowest level; quantile: none
    assert (width.items == 0).mean() > 0.4 > (quantile.items == 0).mean()
    assert SHAPES["power_runs_width"].thetas == SHAPES["house_power"].thetas
