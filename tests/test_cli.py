"""The command line shares the ledger: register (owner only), budget, mine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore.cli import main
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.roles import hash_password
from dpcore.privacy.units import epsilon_to_nano

REPO = Path(__file__).resolve().parent.parent
CLINIC = str(REPO / "sample_data" / "clinic")


@pytest.fixture()
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPRM_LEDGER", str(path))
    monkeypatch.setenv("DPRM_OWNER_PASSWORD_HASH", hash_password("s3cret", n=2**10))
    return path


def test_help_explains_every_parameter():
    out = subprocess.run([sys.executable, "-m", "dpcore", "mine", "--help"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    for flag in ("--epsilon", "--omega", "--mode", "--in-tr", "--rm-iter", "--stable",
                 "--mc-iter", "--min-jaccard", "--out"):
        assert flag in out
    assert "NOT strictly ε-DP" in out


def test_register_needs_the_owner_password(ledger_path, monkeypatch):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "wrong")
    with pytest.raises(SystemExit, match="owner password"):
        main(["register", "--data", CLINIC, "--cap", "2"])
    assert Ledger(ledger_path).list_datasets() == []


def test_mine_charges_the_ledger_and_writes_the_result(ledger_path, monkeypatch, tmp_path,
                                                       capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "2"]) == 0
    out = tmp_path / "run.json"
    assert main(["mine", "--data", CLINIC, "--algorithm", "altexpm", "--epsilon", "0.5",
                 "--stable", "2", "--seed", "3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["algorithm"] == "altexpm" and result["params"]["in_tr"] == 2
    assert "diagnostics" not in result, "owner diagnostics never go to the output file"
    status = Ledger(ledger_path).budget("clinic")
    assert status.spent_nano == epsilon_to_nano(0.5)
    assert "[" in capsys.readouterr().err, "progress is reported on stderr"
    assert main(["budget", "clinic"]) == 0
    assert "remaining ε = 1.5" in capsys.readouterr().out


def test_bad_input_is_refused_and_charges_nothing(ledger_path, monkeypatch, capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    main(["register", "--data", CLINIC, "--cap", "1"])
    assert main(["mine", "--data", CLINIC, "--epsilon", "-1"]) == 2
    assert "epsilon" in capsys.readouterr().err
    assert main(["mine", "--data", CLINIC, "--epsilon", "1.5"]) == 2
    assert "exceeded" in capsys.readouterr().err
    assert Ledger(ledger_path).budget("clinic").spent_nano == 0


def test_help_explains_the_serenade_parameters():
    out = subprocess.run([sys.executable, "-m", "dpcore", "mine", "--help"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    for flag in ("--init-pairs", "--es-rounds", "--cs-rounds", "--steepness", "--budget-init",
                 "--budget-ext", "--min-acc", "--memo-age", "--max-attributes"):
        assert flag in out
    assert "serenade_es" in out and "serenade_cs" in out
    assert "10 % of the rows" in out, "the steepness help text reaches the user unmangled"


@pytest.mark.parametrize("algorithm, rounds", [("serenade_es", ["--es-rounds", "6"]),
                                               ("serenade_cs", ["--cs-rounds", "2"])])
def test_mine_serenade_charges_the_ledger(ledger_path, monkeypatch, tmp_path, algorithm,
                                          rounds):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "2"]) == 0
    out = tmp_path / "run.json"
    assert main(["mine", "--data", CLINIC, "--algorithm", algorithm, "--epsilon", "0.5",
                 "--init-pairs", "5", *rounds, "--steepness", "0.03", "--budget-init", "0.4",
                 "--budget-ext", "0.4", "--max-attributes", "3", "--seed", "3",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["algorithm"] == algorithm
    params = result["params"]
    assert (params["init_pairs"], params["steepness"], params["budget_init"],
            params["budget_ext"], params["max_attributes"]) == (5, 0.03, 0.4, 0.4, 3)
    assert params[rounds[0][2:].replace("-", "_")] == int(rounds[1])
    assert result["trees"] == [] and result["extractions"] == []
    assert len(result["redescriptions"]) <= 5, "at most I redescriptions"
    for red in result["redescriptions"]:
        assert red["extraction"] == -1
        for side in ("left", "right"):
            assert red[side]["tree"] == -1 and 1 <= len(red[side]["tests"]) <= 3
    # The ledger charged the whole plan before mining; the run spent no more than that.
    status = Ledger(ledger_path).budget("clinic")
    assert status.spent_nano == epsilon_to_nano(0.5)
    assert result["epsilon_nano"] <= epsilon_to_nano(0.5)


@pytest.mark.parametrize("flags, name", [
    (["--budget-init", "0.7", "--budget-ext", "0.5"], "budget_init"),
    (["--init-pairs", "0"], "init_pairs"),
    (["--steepness", "2"], "steepness"),
    (["--min-acc", "1.5"], "min_acc"),
])
def test_bad_serenade_parameter_is_named_and_charges_nothing(ledger_path, monkeypatch, capsys,
                                                             flags, name):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    main(["register", "--data", CLINIC, "--cap", "1"])
    capsys.readouterr()
    assert main(["mine", "--data", CLINIC, "--algorithm", "serenade_es", "--epsilon", "0.5",
                 *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and name in err
    assert Ledger(ledger_path).budget("clinic").spent_nano == 0


def test_owner_commands_back_off_after_repeated_wrong_passwords(ledger_path, monkeypatch):
    """The CLI shares the app's login log: after five failures even the right password
    waits, and every attempt is in the ledger (never the password)."""
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "wrong")
    for _ in range(5):
        with pytest.raises(SystemExit, match="owner password"):
            main(["register", "--data", CLINIC, "--cap", "2"])
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    with pytest.raises(SystemExit, match="wait"):
        main(["experiment", "--data", CLINIC, "--out", str(ledger_path.parent / "rep")])
    outcomes = [e.outcome for e in Ledger(ledger_path).auth_events()]
    assert outcomes == ["failure"] * 5 + ["throttled"]
    assert b"s3cret" not in ledger_path.read_bytes() and Ledger(ledger_path).list_datasets() == []
