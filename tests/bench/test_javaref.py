"""bench/javaref: the writers (ARFF, settings) and readers (.queries, ReReMi-style queries)
used to run the authors' Java code as an oracle. No Java is needed: everything is checked on
small constructed text and a tiny dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.javaref.run import (
    JavaSettings,
    dpcore_params,
    query_mask,
    read_queries,
    score_java,
    write_arff,
)
from dpcore.redescriptions.warmup import tiny_dataset


@pytest.fixture(scope="module")
def data():
    d = tiny_dataset(n_rows=40, seed=4)
    d.views[0].values[2, :3] = np.nan   # x1 missing in rows 0-2
    d.views[0].values[1, 3] = np.nan    # c1 missing in row 3
    return d


def test_arff_declares_types_and_writes_every_row(data, tmp_path):
    p = tmp_path / "v1.arff"
    write_arff(data, 0, p)
    lines = p.read_text().splitlines()
    assert "@attribute v0 {0,1}" in lines            # boolean b1
    assert "@attribute v1 {k0,k1,k2}" in lines       # categorical c1 (a, b, c)
    assert "@attribute v2 numeric" in lines          # numeric x1
    rows = lines[lines.index("@data") + 1:]
    assert len(rows) == data.n_rows
    cells = [r.split(",") for r in rows]
    assert all(len(c) == 3 for c in cells)
    vals = data.views[0].values
    for i, c in enumerate(cells):
        assert c[0] == ("1" if vals[0, i] == 1 else "0")
        assert c[1] == ("?" if np.isnan(vals[1, i]) else f"k{int(vals[1, i])}")
        assert c[2] == "?" if np.isnan(vals[2, i]) else float(c[2]) == vals[2, i]


def test_settings_text_has_the_java_keys(tmp_path):
    s = JavaSettings("a.arff", "b.arff", "out.rr", epsilon=0.5, n_iterations=7,
                     weight_split=0.25)
    kv = dict(line.split(" = ") for line in s.text().splitlines())
    assert kv["inputFile1"] == "a.arff" and kv["outputFile"] == "out.rr"
    assert float(kv["totalPrivacyBudget"]) == 0.5 and int(kv["numIterations"]) == 7
    assert float(kv["weightSplit"]) == 0.25 and float(kv["weightNoise"]) == 0.75
    assert float(kv["minRedSupport"]) == 10 and float(kv["maxRedSupport"]) == 0.8
    with pytest.raises(ValueError, match="may not contain"):
        JavaSettings("a=b.arff", "b.arff", "out.rr").text()


def test_dpcore_alternating_runs_the_java_chain_setting():
    """The Java alternating miners run one chain of numIterations steps: dpcore gets InTr = 1,
    RMIter = numIterations (same trees, extractions and ε per tree); --alt-trials the other."""
    from dpcore.redescriptions.params import TreeParams, plan_budget

    args = main_args(["--iterations", "4"])
    for alg in ("altmcmc", "altexpm"):
        p = dpcore_params(alg, args)
        assert (p["in_tr"], p["rm_iter"]) == (1, 4)
        plan = plan_budget(TreeParams(**p))
        trees = [s for s in plan if s.role == "tree"]
        assert len(trees) == 5                     # numIterations + 1 trees, as in Java
        assert {s.epsilon_nano for s in trees} <= {111_111_111, 111_111_112}   # ε/9 each
    p = dpcore_params("altmcmc", main_args(["--iterations", "4", "--alt-trials"]))
    assert (p["in_tr"], p["rm_iter"]) == (4, 1)
    p = dpcore_params("mcmctreepair", args)
    assert p["in_tr"] == 4 and p["omega"] == 0.1 and "rm_iter" not in p


def main_args(extra):
    """The parsed command line of ``bench.javaref.run`` (nothing runs)."""
    from bench.javaref.run import parser

    return parser().parse_args(["--java-src", "x", *extra])


QUERIES = ("rid\tquery_LHS\tquery_RHS\tacc\tpval\tcard_Exo\tcard_Eox\tcard_Exx\tcard_Eoo\t\n"
           "r1\t( v0 & v1 = k2 )\t3.5 < v1\t0.5\t0.001\t12\t14\t9\t20\n"
           "r2\t! ( v0 & v2 < 5.0 ) | v1 = k0\t! v0\t0.25\t0.0\t30\t10\t8.0\t1\n")


def test_read_queries(tmp_path):
    p = tmp_path / "x.queries"
    p.write_text(QUERIES)
    reds = read_queries(p)
    assert len(reds) == 2
    assert reds[0].left == "( v0 & v1 = k2 )" and reds[0].right == "3.5 < v1"
    assert (reds[0].jaccard, reds[0].pvalue) == (0.5, 0.001)
    assert (reds[0].support_left, reds[0].support_right, reds[0].support_both) == (12, 14, 9)
    assert reds[1].support_neither == 1
    assert read_queries(tmp_path / "absent.queries") == []
    (tmp_path / "bad.queries").write_text("rid\tx\nr1\tv0\tv1\t0.5\n")
    with pytest.raises(ValueError, match="fields"):
        read_queries(tmp_path / "bad.queries")


def test_query_mask_semantics(data):
    b1, c1, x1 = data.views[0].values
    b2, x2, _ = data.views[1].values
    np.testing.assert_array_equal(query_mask("( v0 & v1 = k2 )", data, 0), (b1 == 1) & (c1 == 2))
    np.testing.assert_array_equal(query_mask("3.5 < v1", data, 1), x2 > 3.5)
    np.testing.assert_array_equal(query_mask("v1 < 3.5", data, 1), x2 <= 3.5)
    # the left branch of a split is x <= t; a missing value satisfies no test ...
    m = query_mask("v2 < 5.0", data, 0)
    assert not m[:3].any()
    np.testing.assert_array_equal(m[3:], x1[3:] <= 5.0)
    # ... and a negated leaf holds every row outside the leaf, missing ones included
    neg = query_mask("! ( v0 & v2 < 5.0 )", data, 0)
    np.testing.assert_array_equal(neg, ~((b1 == 1) & (x1 <= 5.0)))
    assert neg[:3].all()
    either = query_mask("! ( v0 & v2 < 5.0 ) | v1 = k0", data, 0)
    np.testing.assert_array_equal(either, neg | (c1 == 0))
    np.testing.assert_array_equal(query_mask("! v0", data, 1), b2 != 1)
    # a contradictory leaf (the Java trees can repeat a test on a path) is empty
    assert not query_mask("( ! v0 & v0 )", data, 0).any()


@pytest.mark.parametrize("bad", ["v9", "( v0", "v0 = x1", "v0 & & v1", "v0 )"])
def test_query_mask_rejects_bad_text(data, bad):
    with pytest.raises(ValueError):
        query_mask(bad, data, 0)


def test_score_java_gives_true_statistics(data, tmp_path):
    p = tmp_path / "x.queries"
    p.write_text(QUERIES)
    scored = score_java(read_queries(p), data, "java-0")
    lm = query_mask("( v0 & v1 = k2 )", data, 0)
    rm = query_mask("3.5 < v1", data, 1)
    both, union = int((lm & rm).sum()), int((lm | rm).sum())
    assert scored[0].true_jaccard == pytest.approx(both / union if union else 0.0)
    assert (scored[0].noisy_jaccard, scored[0].noisy_support) == (0.5, 9.0)
    assert 0.0 <= scored[1].true_pvalue <= 1.0 and scored[1].run == "java-0"


def test_dataset_spec_and_arff_of_generated_data(tmp_path):
    from bench.javaref.run import load_dataset_spec

    d = load_dataset_spec("cms:60:8:4:7")
    assert d.n_rows == 60 and d.views[0].n_attributes == 8
    write_arff(d, 1, tmp_path / "v2.arff")
    text = (tmp_path / "v2.arff").read_text().splitlines()
    assert text.count("@data") == 1 and len(text) - text.index("@data") - 1 == 60


def test_timed_process_measures_the_child_alone():
    import sys

    from bench.javaref.speed import timed_process

    busy = timed_process([sys.executable, "-c", "x = bytearray(200 * 2**20); "
                          "s = sum(range(3_000_000))"])
    assert busy["rc"] == 0 and busy["wall_s"] > 0
    assert busy["peak_rss_mib"] >= 200          # the 200 MiB buffer, not this process's RSS
    assert 0 < busy["cpu_s"] <= busy["wall_s"] * 2 + 0.5
    failed = timed_process([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert failed["rc"] == 3


def test_speed_prepares_a_ledger_whose_owner_can_mine_faithfully(tmp_path):
    """The speed bench's dpcore side signs in as the owner of its own ledger (it had kept
    the environment of before accounts, and its register exited 1)."""
    import subprocess
    import sys

    from bench.javaref.speed import dpcore_env, prepare_ledger
    from dpcore.privacy.ledger import Ledger

    env = dpcore_env(tmp_path)
    clinic = Path(__file__).resolve().parents[2] / "sample_data" / "clinic"
    prepare_ledger(tmp_path, clinic, env)
    assert [c.name for c in Ledger(tmp_path / "ledger.sqlite").list_dataset_cards()] == ["clinic"]
    done = subprocess.run([sys.executable, "-m", "dpcore", "users", "list"],   # owner-only
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "javaref-owner" in done.stdout, done.stderr
    prepare_ledger(tmp_path, clinic, env)                                 # idempotent


@pytest.mark.parametrize("alg", ["mcmctreepair", "altmcmc", "altexpm"])
def test_speed_runs_dpcore_with_the_java_settings(alg, tmp_path):
    """The speed bench's ``mine`` flags, parsed by the real CLI, give the parameters of the
    quality comparison (``dpcore_params``) for the Java settings it writes — so both sides
    of a timing do the same work (the Alt* chain: InTr 1, RMIter = numIterations)."""
    from bench.javaref.speed import dpcore_mine_flags
    from dpcore.cli import _params, build_parser
    from dpcore.redescriptions.params import TreeParams

    settings = JavaSettings("a.arff", "b.arff", "out.rr", epsilon=0.5, n_iterations=3,
                            depth=3, mc_iter=777, sigma=0.01)
    cli = _params(build_parser().parse_args(["mine", "--dataset", "x",
                                              *dpcore_mine_flags(alg, settings)]))
    args = main_args(["--iterations", "3", "--epsilon", "0.5", "--depth", "3",
                      "--mc-iter", "777", "--sigma", "0.01"])
    assert cli == TreeParams(**dpcore_params(alg, args)).validate()
    assert (cli.in_tr, cli.rm_iter) == ((3, 1) if alg == "mcmctreepair" else (1, 3))
    assert cli.mode == "faithful" and cli.mc_iter == 777 and cli.epsilon == 0.5


def test_java_chain_iterations_reads_the_tree_pair_lines():
    """Each Java tree-pair chain prints ``iteration: k`` after iteration k; a 0 starts the
    next chain. Other lines (scores, variances, the outer ``Iteration: i/ n``) are ignored."""
    from bench.javaref.run import java_chain_iterations

    out = ["Iteration: 0/ 4", "0.51", "iteration: 0", "final score: 0.5", "iteration: 1",
           "Variance: 0.001", "iteration: 2", "Iteration: 1/ 4", "iteration: 0",
           "iteration: 1", "iteration: 2", "iteration: 3", "iteration: 4", "iteration: 0",
           "  iteration: 7"]
    assert java_chain_iterations(out) == [3, 5, 1]
    assert java_chain_iterations(["Budget markov: 0.11", "Iteration: 0/ 4"]) == []


@pytest.mark.parametrize("alg", ["altmcmc", "mcmctreepair"])
def test_chain_lengths_records_every_faithful_chain(alg):
    """ChainLengths sees each chain's full trace: one count per MCMC tree (Alt: InTr·(RMIter
    + 1) trees; tree pair: one chain per trial), each at most MCIter and summing to the run's
    mcmc_iterations; the wrapper is removed on exit. The tree-pair score lies in [0, 1], so
    with σ = 0.5 every pair chain stops as soon as 500 proposals have been accepted."""
    from bench.javaref.run import ChainLengths
    from dpcore.redescriptions import mining
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import TreeParams

    d = tiny_dataset(n_rows=120, seed=2)
    extra = {"in_tr": 2} if alg == "mcmctreepair" else {"in_tr": 1, "rm_iter": 2}
    base = dict(algorithm=alg, mode="faithful", epsilon=1.0, depth=3, mc_iter=3000, **extra)
    before = mining._Run.keep_trace
    with ChainLengths() as chains:
        res = mine(d, TreeParams(**base, sigma=1e-9), rng=np.random.default_rng(5), seed=5)
    assert mining._Run.keep_trace is before
    n = [c for _, c in chains.counts]
    assert len(n) == (2 if alg == "mcmctreepair" else 3)
    assert all(1 <= c <= 3000 for c in n)
    assert sum(n) == res.diagnostics.mcmc_iterations
    if alg == "mcmctreepair":
        with ChainLengths() as chains:
            mine(d, TreeParams(**base, sigma=0.5), rng=np.random.default_rng(5), seed=5)
        assert len(chains.counts) == 2
        assert all(500 <= c < 3000 for _, c in chains.counts)


def test_chain_summary_pools_runs():
    from bench.javaref.run import chain_summary

    s = chain_summary([[500, 10_000], [700], []], 10_000)
    assert (s["chains"], s["median"], s["min"], s["max"]) == (3, 700.0, 500, 10_000)
    assert s["share_stopped_early"] == pytest.approx(2 / 3)
    assert chain_summary([[], []], 10_000) == {"chains": 0}
