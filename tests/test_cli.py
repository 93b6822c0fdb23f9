"""The command line shares the ledger: register (owner only), budget, mine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore.cli import main
from dpcore.ledger import Ledger
from dpcore.roles import hash_password
from dpcore.units import epsilon_to_nano

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
