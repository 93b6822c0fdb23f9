"""The experiment harness (dpcore.experiments.harness, ``python -m dpcore experiment``):
fast checks."""

import json

import pytest

from dpcore import cli
from dpcore.data.samples import generate_clinic, write_dataset
from dpcore.experiments.harness import algorithm_params, run_experiment
from dpcore.redescriptions.pruning import suggest_threshold
from dpcore.redescriptions.results import RunResult
from tests.support.accounts_support import owner_in_env_ledger

HTML = ("noisy_vs_true.html", "true_j_hist.html", "abs_error_box.html")


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny_clinic")
    schema, left, right, _ = generate_clinic(n_rows=400, seed=1)
    write_dataset(d, schema, left, right)
    return d


@pytest.fixture
def no_ledger(monkeypatch, tmp_path):
    """Any attempt to charge, or to read a budget, run or result, fails the test.

    The command line's owner gate reads and appends the ledger's login log (the back-off
    is shared by every process); nothing else of the ledger may be touched.
    """

    def refuse(*args, **kwargs):
        raise AssertionError("the experiment harness used the ledger beyond the owner login")
    import dpcore.privacy.ledger
    for name in ("charge", "budget", "_dataset_record", "_dataset_records", "list_runs",
                 "get_run", "get_result", "store_result", "register_dataset"):
        monkeypatch.setattr(dpcore.privacy.ledger.Ledger, name, refuse)
    monkeypatch.setenv("DPRM_LEDGER", str(tmp_path / "login-only.sqlite"))
    owner_in_env_ledger("s3cret")
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")


def _run(data, out, **kw):
    return run_experiment(data, ["mcmctreepair", "altexpm"], [1.0, 0.1], [2], "auto", out,
                          seed=3, mc_iter=200, reference_runs=1, **kw)


def test_end_to_end_auto_prune(tiny_data, tmp_path, no_ledger):
    calls = []
    metrics = _run(tiny_data, tmp_path / "a", progress=lambda d, t, m: calls.append((d, t)))
    out = tmp_path / "a"
    assert calls[-1] == (9, 9) and [d for d, _ in calls] == list(range(1, 10))

    stored = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert stored["cells"] == metrics["cells"]
    for key in ("command", "parameters", "versions", "cells", "comparisons", "note"):
        assert key in stored
    assert set(stored["comparisons"]) == {"1", "0.1"}
    assert {"true_j_kept", "abs_error_kept"} <= set(stored["comparisons"]["1"])
    cells = {(c["algorithm"], c["epsilon"]): c for c in stored["cells"]}
    assert set(cells) == {("mcmctreepair", 1.0), ("mcmctreepair", 0.1), ("altexpm", 1.0),
                          ("altexpm", 0.1), ("nonprivate", None)}
    for cell in cells.values():
        assert {"share_with_output", "n_before", "n_after", "share_significant_kept",
                "spearman_rho", "spearman_p", "median_true_j", "median_abs_error",
                "fp_pruned", "fp_kept"} <= set(cell["summary"])
        # auto threshold = suggest_threshold on the stored released runs only
        results = [RunResult.from_json((out / f).read_text(encoding="utf-8"))
                   for f in cell["run_files"]]
        assert cell["threshold"] == suggest_threshold(results)
        assert all(r.mode == "strict" for r in results)
    assert cells[("altexpm", 1.0)]["runs"] == 2
    # The sandbox accountant spent exactly the planned ε of each run.
    r = RunResult.from_json((out / cells[("altexpm", 0.1)]["run_files"][0]).read_text())
    assert r.epsilon == pytest.approx(0.1)
    assert r.params["in_tr"] == 1 and r.params["rm_iter"] == 4

    report = (out / "report.md").read_text(encoding="utf-8")
    for text in ("## ε = 1", "## ε = 0.1", "non-private reference", "Spearman ρ",
                 "## Pruning thresholds", "Mann–Whitney", "NOT private"):
        assert text in report
    for name in HTML:
        html = (out / name).read_text(encoding="utf-8")
        assert "<html>" in html and "plotly" in html

    # Same seed → same released runs → same thresholds and metrics.
    again = _run(tiny_data, tmp_path / "b")
    assert [c["threshold"] for c in again["cells"]] == [c["threshold"] for c in metrics["cells"]]
    assert [c["summary"] for c in again["cells"]] == [c["summary"] for c in metrics["cells"]]


def test_fixed_threshold_and_variants(tiny_data, tmp_path, no_ledger):
    metrics = run_experiment(tiny_data, ["altexpm-stable", "mcmctreepair-w0.5"], [0.5], [1],
                             25, tmp_path, mc_iter=100, reference_runs=0)
    assert [c["threshold"] for c in metrics["cells"]] == [25.0, 25.0]
    assert algorithm_params("altexpm-stable", 1).in_tr == 4
    assert algorithm_params("altmcmc", 1).rm_iter == 4
    assert algorithm_params("mcmctreepair-w0.5", 1).omega == 0.5


def test_cli_runs_without_ledger(tiny_data, tmp_path, no_ledger, capsys):
    rc = cli.main(["experiment", "--data", str(tiny_data), "--algorithms", "altexpm",
                   "--epsilons", "1", "--runs", "1", "--prune", "auto", "--out",
                   str(tmp_path), "--mc-iter", "50", "--reference-runs", "0"])
    assert rc == 0
    stored = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert stored["command"].startswith("python -m dpcore experiment --data")
    assert "1/1" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--epsilons", "1,0.1", "--runs", "1,2,3"], "one per ε"),
    (["--epsilons", "0", "--runs", "1"], "ε must be"),
    (["--epsilons", "1", "--runs", "0"], "≥ 1"),
    (["--algorithms", "bogus"], "unknown algorithm"),
    (["--prune", "lots"], "prune must be"),
])
def test_cli_rejects_bad_input(tiny_data, tmp_path, no_ledger, capsys, args, message):
    rc = cli.main(["experiment", "--data", str(tiny_data), "--out", str(tmp_path)] + args)
    assert rc == 2
    assert message in capsys.readouterr().err


def test_cli_rejects_unparsable_list(tmp_path):
    with pytest.raises(SystemExit) as exc:
        cli.main(["experiment", "--data", str(tmp_path), "--out", str(tmp_path),
                  "--epsilons", "1,x"])
    assert exc.value.code == 2


def test_report_compares_the_suggested_threshold_with_the_papers(tmp_path, tiny_data, no_ledger):
    from dpcore.experiments.harness import PAPER_THRESHOLDS

    metrics = run_experiment(tiny_data, ["altexpm"], [1.0], [2], "auto", tmp_path / "out",
                             mc_iter=50, reference_runs=0)
    rows = metrics["threshold_comparison"]
    assert len(rows) == 1
    for name, value in PAPER_THRESHOLDS.items():
        cell = rows[0][f"{name} {value}"]
        assert cell["threshold"] == value and cell["kept"] >= 0
    higher = [rows[0][f"{n} {v}"]["kept"] for n, v in PAPER_THRESHOLDS.items()]
    assert higher == sorted(higher, reverse=True), "a higher threshold never keeps more"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Suggested vs the paper's fixed thresholds" in report


def test_serenade_is_compared_with_the_tree_miners_at_equal_epsilon(tiny_data, tmp_path,
                                                                     no_ledger):
    specs = ["altexpm", "serenade_es", "serenade_cs"]
    # prune 0 keeps every released redescription, so each miner with output is compared
    metrics = run_experiment(tiny_data, specs, [1.0, 0.5], [2], 0, tmp_path, seed=3,
                             mc_iter=50, reference_runs=0)
    cells = {(c["algorithm"], c["epsilon"]): c for c in metrics["cells"]}
    assert set(cells) == {(s, e) for s in specs for e in (1.0, 0.5)}
    for (spec, eps), cell in cells.items():
        results = [RunResult.from_json((tmp_path / f).read_text(encoding="utf-8"))
                   for f in cell["run_files"]]
        for r in results:
            assert r.algorithm == spec and r.mode == "strict"
            # equal ε: every run was planned at the cell's ε, Serenade included
            assert r.params["epsilon"] == eps
        if spec.startswith("serenade"):
            assert all(r.trees == [] for r in results)
            assert results[0].params["init_pairs"] == 20
            assert "mc_iter" not in results[0].params, "MCIter is the tree miners' only"
            assert cell["summary"]["n_before"] > 0, "Serenade released redescriptions"
            assert cell["summary"]["median_true_j"] is not None
    assert metrics["parameters"]["mining_params"]["serenade_cs"]["cs_rounds"] == 4
    assert metrics["parameters"]["mining_params"]["serenade_es"]["es_rounds"] == 80
    for eps_text in ("1", "0.5"):
        for metric in ("true_j_kept", "abs_error_kept"):
            comp = metrics["comparisons"][eps_text][metric]
            compared = {comp["best"], *comp["tests"]}
            assert {"serenade_es", "serenade_cs"} <= compared
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    for text in ("SerenadeES (I = 20, K = 80)", "SerenadeCS (I = 20, L = 4)",
                 "AltExpM (InTr = 1, RMIter = 4)", "equal ε", "Mann–Whitney"):
        assert text in report
    json.dumps(metrics, allow_nan=False)


def test_faithful_serenade_nan_pvalues_do_not_break_the_metrics(tiny_data):
    import math

    import numpy as np

    from dpcore.data.loading import load_dataset
    from dpcore.experiments.metrics import compare_methods, score_run, summarize
    from dpcore.redescriptions.evaluate import evaluate
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import family_type

    dataset = load_dataset(tiny_data)
    runs = []
    for algorithm in ("serenade_es", "serenade_cs"):
        result = mine(dataset, family_type(algorithm)(algorithm=algorithm, mode="faithful",
                                            init_pairs=6, es_rounds=12, cs_rounds=2),
                      rng=np.random.default_rng(3), seed=3)
        scored = score_run(result, evaluate(result, dataset))
        assert all(math.isnan(s.noisy_pvalue) for s in scored), "faithful releases no p"
        runs.append(scored)
    assert any(runs), "the faithful runs released something to score"
    for threshold in (0.0, 1e9):
        summary = summarize(runs, threshold)
        json.dumps(summary, allow_nan=False)
        assert summary["n_before"] == sum(len(r) for r in runs)
        assert summary["fp_pruned"] + summary["fp_kept"] <= summary["n_before"]
    kept = [s for r in runs for s in r]
    comp = compare_methods({"faithful": [s.true_jaccard for s in kept], "none": []})
    assert comp["best"] == "faithful" and comp["tests"] == {}


# --------------------------------------------------------------------------- --mode

def test_a_tiny_faithful_grid_runs_and_its_report_says_faithful(tiny_data, tmp_path, no_ledger):
    """experiment --mode faithful (issue 19): the paper's grid as the paper ran it. Every run
    is faithful (the paper's score for MCMCTreePair), charged its plan's honest cost by
    its sandbox accountant, and the report's title and metrics.json name the mode."""
    from dpcore.redescriptions.params import read_params, run_cost_nano
    from dpcore.registry import FAITHFUL, MODE_LABELS, PAPER_SCORE

    out = tmp_path / "f"
    metrics = run_experiment(tiny_data, ["mcmctreepair", "altexpm", "serenade_es"], [1.0],
                             [2], "auto", out, seed=3, mc_iter=200, reference_runs=1,
                             mode=FAITHFUL)
    stored = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert stored["mode"] == metrics["mode"] == FAITHFUL
    assert stored["mode_label"] == MODE_LABELS[FAITHFUL]
    assert stored["parameters"]["mode"] == FAITHFUL
    assert all(p["mode"] == FAITHFUL for p in stored["parameters"]["mining_params"].values())
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.splitlines()[0] == "# Experiment report — faithful mode"
    assert "NOT ε-DP" in report and "NOT private" in report
    for cell in stored["cells"]:
        if cell["algorithm"] == "nonprivate":
            continue
        assert cell["runs"] == 2
        for name in cell["run_files"]:
            result = RunResult.from_json((out / name).read_text(encoding="utf-8"))
            assert result.mode == FAITHFUL
            params = read_params(result.params)
            assert result.epsilon == pytest.approx(run_cost_nano(params) * 1e-9)
            if cell["algorithm"] == "mcmctreepair":
                assert result.params["tree_score"] == PAPER_SCORE
                assert result.epsilon > 1.0          # three noisy histograms per extraction
    # the strict default is named too
    strict = run_experiment(tiny_data, ["altexpm"], [1.0], [1], "auto", tmp_path / "s",
                            mc_iter=100, reference_runs=0)
    assert strict["mode"] == "strict"
    assert (tmp_path / "s" / "report.md").read_text(encoding="utf-8").startswith(
        "# Experiment report — strict mode")


@pytest.mark.parametrize("mode", ["loose", "FAITHFUL", None])
def test_a_bad_mode_is_refused_naming_it_before_anything_runs(tiny_data, tmp_path, mode,
                                                              no_ledger, monkeypatch):
    import dpcore.experiments.harness as harness
    from dpcore.errors import ParameterError

    def never(*args, **kwargs):
        raise AssertionError("a run started")
    monkeypatch.setattr(harness, "run_sandbox", never)
    with pytest.raises(ParameterError, match=f"got {mode!r}"):
        run_experiment(tiny_data, ["altexpm"], [1.0], [1], "auto", tmp_path / "x",
                       mode=mode, reference_runs=1)
    assert not (tmp_path / "x").exists()


def test_faithful_mode_refuses_a_preset_that_picks_the_strict_score(tiny_data, tmp_path,
                                                                     no_ledger):
    from dpcore.errors import ParameterError

    with pytest.raises(ParameterError, match="mcmctreepair-count"):
        run_experiment(tiny_data, ["mcmctreepair-count"], [1.0], [1], "auto",
                       tmp_path / "x", mode="faithful")
    assert not (tmp_path / "x").exists()


def test_cli_mode_flag(tiny_data, tmp_path, no_ledger, capsys):
    base = ["experiment", "--data", str(tiny_data), "--algorithms", "altexpm", "--epsilons",
            "1", "--runs", "1", "--mc-iter", "50", "--reference-runs", "0"]
    with pytest.raises(SystemExit) as exc:
        cli.main(base + ["--out", str(tmp_path / "bad"), "--mode", "loose"])
    assert exc.value.code == 2 and "'loose'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert cli.main(base + ["--out", str(tmp_path / "f"), "--mode", "faithful"]) == 0
    stored = json.loads((tmp_path / "f" / "metrics.json").read_text(encoding="utf-8"))
    assert stored["mode"] == "faithful" and "--mode faithful" in stored["command"]
    assert "faithful mode" in (tmp_path / "f" / "report.md").read_text(encoding="utf-8")
    rc = cli.main(["experiment", "--family", "sequences", "--out", str(tmp_path / "q"),
                   "--mode", "faithful"])
    assert rc == 2 and "redescription grid" in capsys.readouterr().err
