"""``python -m dpcore query``: a paid query pair (or its noisy map) from the command line.

It shows the canonical pair and its cost, charges only after a yes (``--yes`` or the
terminal), goes through the same policy and ledger as ``mine``, and refuses bad text with
the parser's reason, charging nothing.
"""

from __future__ import annotations

import io
import json

import pytest

from dpcore.cli import main
from dpcore.data.kinds import load_any_schema, sample_data_dir
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.units import epsilon_to_nano
from dpcore.registry import CUSTOM_QUERY, REGION_MAP
from tests.support.accounts_support import owner_in_env_ledger

SITES = str(sample_data_dir() / "sites")
CLINIC = str(sample_data_dir() / "clinic")
PAIR = ["--left", "[HYP > 1.5]", "--right", "[TMEAN > 10]"]


class _Terminal(io.StringIO):
    """stdin of a person at a terminal, who types ``answer``."""

    def isatty(self) -> bool:
        return True


@pytest.fixture()
def ledger(tmp_path, monkeypatch, capsys):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPRM_LEDGER", str(path))
    owner_in_env_ledger("s3cret")
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    for folder in (SITES, CLINIC):
        assert main(["register", "--data", folder, "--cap", "2"]) == 0
    monkeypatch.delenv("DPRM_OWNER_PASSWORD")
    capsys.readouterr()
    return Ledger(path)


def test_a_paid_query_is_charged_stored_and_printed(ledger, capsys):
    assert main(["query", "--dataset", "sites", "--left", "[HYP>1.5]", "--right",
                 "[ TMEAN > 10 ]", "--epsilon", "0.25", "--yes"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "[HYP > 1.5]  ⇔  [TMEAN > 10]" in captured.err, "the canonical pair is shown"
    assert "costs ε = 0.25" in captured.err
    assert (out["left"], out["right"], out["epsilon"]) == ("[HYP > 1.5]", "[TMEAN > 10]", 0.25)
    assert set(out["cells"]) == {"E11", "E10", "E01", "E00"}
    assert out["support_both"] == max(out["cells"]["E11"], 0.0)
    assert 0.0 <= out["jaccard"] <= 1.0 and 0.0 <= out["pvalue"] <= 1.0
    # The planted rule holds on about half of the 1,200 rows, far above the noise (sd ≈ 5.6
    # rows at ε = 0.25): E11 dominates the rows where only one side holds.
    assert out["cells"]["E11"] > 2 * (out["cells"]["E10"] + out["cells"]["E01"])
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.25)
    run = ledger.get_run(out["run_id"])
    assert run.algorithm == CUSTOM_QUERY and run.status == "done"
    assert main(["budget", "sites"]) == 0
    assert "spent ε = 0.25" in capsys.readouterr().out
    # stored like any run: fetched again for 0 ε
    assert main(["result", out["run_id"]]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["algorithm"] == CUSTOM_QUERY and stored["params"]["left_query"] == "[HYP>1.5]"
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.25)


def test_the_default_epsilon_and_out_file(ledger, tmp_path):
    out = tmp_path / "table.json"
    assert main(["query", "--dataset", "sites", *PAIR, "--yes", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["epsilon"] == 0.1
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.1)


def test_without_a_terminal_or_yes_the_query_is_refused(ledger, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["query", "--dataset", "sites", *PAIR]) == 2
    assert "--yes" in capsys.readouterr().err
    assert ledger.budget("sites").spent_nano == 0 and ledger.list_runs("sites") == []


@pytest.mark.parametrize("answer, status, spent", [("n\n", 1, 0), ("\n", 1, 0),
                                                   ("yes\n", 0, epsilon_to_nano(0.1))])
def test_the_terminal_asks_before_paying(ledger, monkeypatch, capsys, answer, status, spent):
    monkeypatch.setattr("sys.stdin", _Terminal(answer))
    assert main(["query", "--dataset", "sites", *PAIR]) == status
    err = capsys.readouterr().err
    assert "spend ε = 0.1 of 'sites'? [y/N]" in err
    assert ledger.budget("sites").spent_nano == spent
    assert len(ledger.list_runs("sites")) == (1 if spent else 0)
    if not spent:
        assert "nothing was charged" in err


@pytest.mark.parametrize("left, right, message", [
    ("[HYP > 1.55]", "[TMEAN > 10]", "threshold 1.55 of 'HYP' is not on its public grid"),
    ("[TMEAN > 10]", "[TMEAN > 10]", "'TMEAN' is an attribute of the right view"),
    ("[HYP > 1.5]", "[site_id = S00001]", "'site_id' is the id column"),
    ("[HYP > 1.5] ∧", "[TMEAN > 10]", "ends where a literal"),
    ("[NOPE]", "[TMEAN > 10]", "unknown attribute 'NOPE'"),
])
def test_bad_text_is_named_and_charges_nothing(ledger, capsys, left, right, message):
    assert main(["query", "--dataset", "sites", "--left", left, "--right", right,
                 "--yes"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert ledger.budget("sites").spent_nano == 0 and ledger.audit_log() == []


def test_a_bad_epsilon_or_unknown_dataset_charges_nothing(ledger, capsys):
    assert main(["query", "--dataset", "sites", *PAIR, "--epsilon", "-1", "--yes"]) == 2
    assert "ε must be a positive number" in capsys.readouterr().err
    assert main(["query", "--dataset", "nothing", *PAIR, "--yes"]) == 2
    assert main(["query", "--dataset", "sites", *PAIR, "--epsilon", "5", "--yes"]) == 2
    assert "exceeded" in capsys.readouterr().err
    assert ledger.budget("sites").spent_nano == 0 and ledger.audit_log() == []


def test_map_on_the_sites_sample(ledger, capsys):
    location = load_any_schema(SITES)[1].location
    assert main(["query", "--dataset", "sites", *PAIR, "--map", "--yes"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon"] == 0.5 and len(out["cells"]) == location.n_cells
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.5)
    assert ledger.get_run(out["run_id"]).algorithm == REGION_MAP
    first = out["cells"][0]
    assert (first["lon_lo"], first["lat_lo"]) == (location.lon_range[0], location.lat_range[0])
    assert first["lon_hi"] - first["lon_lo"] == location.cell_degrees
    assert out["noise_sd_rows"] > 0
    # E11 (HYP > 1.5 and TMEAN > 10) is planted in the warm south: far more of it below 36°N.
    south = sum(c["E11"] for c in out["cells"] if c["lat_hi"] <= 36)
    north = sum(c["E11"] for c in out["cells"] if c["lat_lo"] >= 36)
    assert south > north + 100, (south, north)


def test_map_of_a_dataset_without_a_grid_is_refused(ledger, capsys):
    assert main(["query", "--dataset", "clinic", "--left", "[DX_CHF]", "--right",
                 "[LAB_BNP > 400]", "--map", "--yes"]) == 2
    assert "declares no location grid" in capsys.readouterr().err
    assert ledger.budget("clinic").spent_nano == 0 and ledger.audit_log() == []


def test_a_seed_repeats_a_public_demo_query(ledger, capsys):
    cells = []
    for _ in range(2):
        assert main(["query", "--dataset", "sites", *PAIR, "--seed", "7", "--yes"]) == 0
        cells.append(json.loads(capsys.readouterr().out)["cells"])
    assert cells[0] == cells[1]
    assert ledger.budget("sites").spent_nano == 2 * epsilon_to_nano(0.1), "each run is paid"
