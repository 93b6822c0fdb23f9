"""The command line shares the ledger: register (owner only), budget, mine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore.cli import main
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.units import epsilon_to_nano
from tests.support.accounts_support import owner_in_env_ledger

REPO = Path(__file__).resolve().parents[2]
CLINIC = str(REPO / "sample_data" / "clinic")


@pytest.fixture()
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPRM_LEDGER", str(path))
    owner_in_env_ledger("s3cret")
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
    with pytest.raises(SystemExit, match="wrong account name or password"):
        main(["register", "--data", CLINIC, "--cap", "2"])
    assert Ledger(ledger_path)._dataset_records() == []


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
            # a Serenade query belongs to no tree (format 2 stores no tree field for it)
            assert red[side].get("tree", -1) == -1 and 1 <= len(red[side]["tests"]) <= 3
    # The ledger charged the whole plan before mining; the run spent no more than that, and
    # what a strict run did not spend came back (charged = spent + returned).
    status = Ledger(ledger_path).budget("clinic")
    assert status.spent_nano + status.refunded_nano == epsilon_to_nano(0.5)
    assert result["epsilon_nano"] <= status.spent_nano


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
        with pytest.raises(SystemExit, match="wrong account name or password"):
            main(["register", "--data", CLINIC, "--cap", "2"])
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    with pytest.raises(SystemExit, match="wait"):
        main(["experiment", "--data", CLINIC, "--out", str(ledger_path.parent / "rep")])
    outcomes = [e.outcome for e in Ledger(ledger_path).auth_events()]
    assert outcomes == ["failure"] * 5 + ["throttled"]
    assert b"s3cret" not in ledger_path.read_bytes()
    assert Ledger(ledger_path)._dataset_records() == []


# --------------------------------------------------------------------------- every family
HOUSE_POWER = str(REPO / "sample_data" / "house_power")   # sequences, public demo
PIMA = str(REPO / "sample_data" / "pima_like")            # labelled table, public demo


def _run_id(err: str) -> str:
    return err.split("run ", 1)[1].split(":", 1)[0]


def test_register_takes_every_kind_of_dataset_folder(ledger_path, monkeypatch, capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    for folder in (CLINIC, HOUSE_POWER, PIMA):
        assert main(["register", "--data", folder, "--cap", "2"]) == 0
    assert "(sequence dataset)" in capsys.readouterr().err
    kinds = {d.name: d.kind for d in Ledger(ledger_path)._dataset_records()}
    assert kinds == {"clinic": "two_view", "house_power": "sequences", "pima_like": "table"}
    assert all(d.content_digest for d in Ledger(ledger_path)._dataset_records())


def test_mine_dry_run_states_pfs2_accuracy_and_charges_nothing(ledger_path, monkeypatch,
                                                                capsys):
    from dpcore.registry import PFS2

    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", HOUSE_POWER, "--cap", "3"]) == 0
    capsys.readouterr()
    base = ["mine", "--dataset", "house_power", "--algorithm", PFS2, "--theta", "0.05",
            "--epsilon", "1"]
    assert main(base + ["--dry-run", "--expected-records", "2000"]) == 0
    out = capsys.readouterr().out
    assert "would cost ε = 1; nothing was charged" in out
    # 21 declared levels, θ·N = 100 records, level 1 gets half of the 0.9 pool
    assert "θ·N = 100 records" in out and "Level 1 (ε = 0.45" in out
    # a short lmax would let level 1 prune: the survivors' bound (Δ ≤ 2·lmax − 1) is stated
    assert "may prune first" in out and "noise scale at most 50.0 records" in out
    assert "Levels 2 and up" in out and "not predictable" in out
    assert main(base + ["--dry-run"]) == 0
    assert "give --expected-records N" in capsys.readouterr().out
    # the stated count is read only by a dry run; a bad one is named
    assert main(base + ["--expected-records", "2000"]) == 2
    assert "only with --dry-run" in capsys.readouterr().err
    assert main(base + ["--dry-run", "--expected-records", "0"]) == 2
    assert "expected number of records" in capsys.readouterr().err
    ledger = Ledger(ledger_path)
    assert ledger.list_runs("house_power") == []
    assert ledger.budget("house_power").spent_nano == 0


def test_mine_pfs2_prints_the_run_id_and_exports_patterns(ledger_path, monkeypatch, tmp_path,
                                                         capsys):
    import pandas as pd

    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", HOUSE_POWER, "--cap", "3"]) == 0
    capsys.readouterr()
    out = tmp_path / "patterns.csv"
    assert main(["mine", "--dataset", "house_power", "--algorithm", "pfs2", "--theta", "0.3",
                 "--epsilon", "1", "--seed", "4", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    run_id = _run_id(err)
    assert len(run_id) == 32 and "frequent sequences written to" in err
    table = pd.read_csv(out)
    assert list(table.columns) == ["pattern", "length", "noisy_support", "support_low_90",
                                   "support_high_90", "flags"] and len(table) > 0
    assert (table["support_low_90"] <= table["support_high_90"]).all()
    assert (table["length"] == table["pattern"].str.count("→") + 1).all()
    run = Ledger(ledger_path).get_run(run_id)
    assert run.epsilon_nano == epsilon_to_nano(1)
    spent = run.epsilon_nano - run.refunded_nano
    assert Ledger(ledger_path).budget("house_power").spent_nano == spent
    assert ("returned to 'house_power'" in err) == bool(run.refunded_nano)
    # the stored result again, 0 ε: as JSON and as CSV (the same patterns)
    again = tmp_path / "again.json"
    assert main(["result", run_id, "--out", str(again)]) == 0
    stored = json.loads(again.read_text())
    assert stored["algorithm"] == "pfs2" and stored["params"]["theta"] == 0.3
    assert "diagnostics" not in stored
    assert len(stored["patterns"]) == len(table)
    csv_again = tmp_path / "again.csv"
    assert main(["result", run_id, "--out", str(csv_again)]) == 0
    assert pd.read_csv(csv_again).equals(table)
    assert stored["budget"] == {"charged_nano": epsilon_to_nano(1),
                                "spent_nano": spent, "refunded_nano": run.refunded_nano}
    assert Ledger(ledger_path).budget("house_power").spent_nano == spent


def test_the_straightforward_baseline_runs_from_the_cli(ledger_path, monkeypatch, tmp_path):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", HOUSE_POWER, "--cap", "3"]) == 0
    out = tmp_path / "base.json"
    assert main(["mine", "--dataset", "house_power", "--algorithm", "pfs2_straightforward",
                 "--theta", "0.3", "--epsilon", "0.5", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["algorithm"] == "pfs2_straightforward"
    assert all(level["prune_sensitivity"] == 0 for level in result["levels"])


@pytest.mark.parametrize("command", [["synthesize"], ["mine", "--algorithm", "mcgen"]])
def test_synthesize_exports_the_synthetic_table_as_csv_and_parquet(ledger_path, monkeypatch,
                                                                   tmp_path, capsys, command):
    import pandas as pd

    from dpcore.synthesis.results import SynthesisResult

    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", PIMA, "--cap", "3"]) == 0
    capsys.readouterr()
    out = tmp_path / "synthetic.parquet"
    assert main([*command, "--dataset", "pima_like", "--epsilon", "1", "--k", "50",
                 "--feature-groups", "glucose,insulin;pregnancies,age;blood_pressure,"
                 "skin_thickness,bmi,pedigree", "--out", str(out)]) == 0
    run_id = _run_id(capsys.readouterr().err)
    back = SynthesisResult.read_parquet(out)
    assert back.algorithm == "mcgen" and back.run_id == run_id and len(back.synthetic) > 0
    assert back.feature_groups == [["glucose", "insulin"], ["pregnancies", "age"],
                                   ["blood_pressure", "skin_thickness", "bmi", "pedigree"]]
    csv = tmp_path / "synthetic.csv"
    assert main(["result", run_id, "--out", str(csv)]) == 0
    table = pd.read_csv(csv)
    assert list(table.columns) == list(back.synthetic.columns)
    assert len(table) == len(back.synthetic)
    assert Ledger(ledger_path).budget("pima_like").spent_nano == epsilon_to_nano(1)


def test_the_floor_runs_from_synthesize(ledger_path, monkeypatch, tmp_path):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", PIMA, "--cap", "3"]) == 0
    out = tmp_path / "floor.json"
    assert main(["synthesize", "--dataset", "pima_like", "--algorithm", "class_marginals",
                 "--marginal-bins", "8", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["algorithm"] == "class_marginals" and result["params"]["marginal_bins"] == 8


@pytest.mark.parametrize("args, message", [
    (["mine", "--dataset", "pima_like", "--algorithm", "pfs2"],
     "PFS2 mines a sequence dataset; dataset 'pima_like' is a labelled table"),
    (["mine", "--dataset", "house_power", "--algorithm", "mcgen"],
     "MC-GEN mines a labelled table; dataset 'house_power' is a sequence dataset"),
    (["mine", "--dataset", "house_power", "--algorithm", "pfs2", "--k", "5"],
     "--k: not a parameter of PFS2"),
    (["mine", "--dataset", "house_power", "--algorithm", "pfs2", "--omega", "0.3"],
     "--omega: not a parameter of PFS2"),
    (["mine", "--dataset", "clinic", "--algorithm", "altexpm", "--theta", "0.3"],
     "--theta: not a parameter of AltExpM"),
    (["mine", "--dataset", "house_power", "--algorithm", "pfs2", "--theta", "2"],
     r"theta \(θ\) must lie in \(0, 1\)"),
    (["synthesize", "--dataset", "pima_like", "--algorithm", "class_marginals", "--mode",
      "faithful"], "strict mode only"),
    (["synthesize", "--dataset", "pima_like", "--feature-groups", "glucose;nonsense"],
     "unknown feature.*nonsense"),
    (["mine", "--dataset", "house_power", "--algorithm", "pfs2", "--out", "patterns.parquet"],
     "a sequences result is written as .json, .csv"),
    (["synthesize", "--dataset", "pima_like", "--out", "table.xlsx"],
     "a synthesis result is written as .json, .csv, .parquet"),
])
def test_bad_input_of_the_new_families_is_named_and_charges_nothing(ledger_path, monkeypatch,
                                                                    capsys, tmp_path, args,
                                                                    message):
    import re

    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    monkeypatch.chdir(tmp_path)
    for folder in (CLINIC, HOUSE_POWER, PIMA):
        main(["register", "--data", folder, "--cap", "3"])
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "error: " in err and re.search(message, err), err
    ledger = Ledger(ledger_path)
    assert [ledger.budget(n).spent_nano for n in ("clinic", "house_power", "pima_like")] == \
        [0, 0, 0]
    assert ledger.audit_log() == [] and not list(tmp_path.glob("*.parquet"))


def test_an_unwritable_out_is_refused_before_the_charge(ledger_path, monkeypatch, tmp_path,
                                                        capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    main(["register", "--data", PIMA, "--cap", "3"])
    assert main(["synthesize", "--dataset", "pima_like",
                 "--out", str(tmp_path / "missing" / "t.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert Ledger(ledger_path).budget("pima_like").spent_nano == 0


def test_help_lists_the_new_families_flags_with_their_defaults():
    out = subprocess.run([sys.executable, "-m", "dpcore", "mine", "--help"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    for flag in ("--theta", "--zeta", "--eta", "--l1", "--budget-prune", "--k",
                 "--feature-groups", "--cells", "--marginal-bins"):
        assert flag in out
    assert "pfs2" in out and "class_marginals" in out and "default 0.02" in out
    synth = subprocess.run([sys.executable, "-m", "dpcore", "synthesize", "--help"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout
    assert "--k" in synth and "--theta" not in synth and "--omega" not in synth


# ------------------------------------------------------------- issue 32, point 11 (the walk)

def test_out_to_a_fifo_is_written_in_place_never_replaced(ledger_path, monkeypatch, tmp_path):
    """``mine --out /dev/null`` as root replaced the device with a regular file (a temporary
    file renamed over it). A FIFO stands in for a device: it must stay a FIFO and receive
    the result."""
    import os
    import stat
    import threading

    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "2"]) == 0
    fifo = tmp_path / "sink"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    assert main(["mine", "--dataset", "clinic", "--algorithm", "altexpm", "--epsilon", "0.5",
                 "--stable", "2", "--seed", "3", "--out", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert json.loads(received[0])["algorithm"] == "altexpm"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".sink.")]


@pytest.mark.parametrize("out", ["run.xlsx", "run.csv"])
def test_a_redescription_out_that_is_not_json_is_refused_before_the_charge(
        ledger_path, monkeypatch, tmp_path, capsys, out):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    monkeypatch.chdir(tmp_path)
    assert main(["register", "--data", CLINIC, "--cap", "2"]) == 0
    capsys.readouterr()
    assert main(["mine", "--dataset", "clinic", "--algorithm", "altexpm", "--stable", "2",
                 "--seed", "3", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "a redescriptions result is written as .json" in err and "costs" not in err
    assert Ledger(ledger_path).budget("clinic").spent_nano == 0 and not Path(out).exists()


def test_mine_offers_only_miners(capsys):
    from dpcore.registry import CUSTOM_QUERY, REGION_MAP

    with pytest.raises(SystemExit):
        main(["mine", "--algorithm", CUSTOM_QUERY, "--dataset", "clinic"])
    err = capsys.readouterr().err
    assert "invalid choice" in err and REGION_MAP not in err.split("choose from")[1]
    out = subprocess.run([sys.executable, "-m", "dpcore", "mine", "--help"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert CUSTOM_QUERY not in out and REGION_MAP not in out


def test_a_hash_in_the_secrets_file_grants_nothing(tmp_path, monkeypatch):
    """Issue 29's trust boundary: the owner is an account the ledger keeps; a hash in the
    caller's .streamlit/secrets.toml (main's earlier no-restart route) is not a password."""
    from dpcore.privacy.roles import hash_password

    ledger = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPRM_LEDGER", str(ledger))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(
        f'owner_password_hash = "{hash_password("s3cret", n=2**4)}"\n')
    monkeypatch.setenv("DPRM_PASSWORD", "s3cret")
    with pytest.raises(SystemExit, match="no owner account yet"):
        main(["register", "--data", CLINIC, "--cap", "2"])
    assert Ledger(ledger)._dataset_records() == []
    owner_in_env_ledger("s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "2"]) == 0
    assert [d.name for d in Ledger(ledger)._dataset_records()] == ["clinic"]


def test_synthesize_refuses_a_bad_feature_group_before_printing_the_cost(
        ledger_path, monkeypatch, capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", PIMA, "--cap", "3"]) == 0
    capsys.readouterr()
    assert main(["synthesize", "--dataset", "pima_like", "--feature-groups",
                 "glucose;nonsense"]) == 2
    err = capsys.readouterr().err
    assert "unknown feature(s): nonsense" in err and "costs ε" not in err, err


def test_workspaces_are_listed_and_shared_as_the_signed_in_account(ledger_path, monkeypatch,
                                                                   capsys, clinic_dataset):
    """``workspaces list|share|unshare``: the CLI equivalent of Explore's "Share this
    workspace with a colleague". The account signs in; it shares only its own workspace, and
    a colleague opens it only once shared (0 ε: nothing is charged)."""
    import dataclasses

    from dpcore.errors import ParameterError
    from dpcore.privacy.policy import content_digest
    from tests.support.accounts_support import PASSWORD, make_account

    ledger = Ledger(ledger_path)
    private = dataclasses.replace(clinic_dataset.schema, name="wards", public_demo=False)
    ledger.register_dataset("wards", private, CLINIC, 2.0, actor="owner", confirmed=True,
                            content_digest=content_digest(clinic_dataset))
    for name in ("alice", "bob", "carol"):
        make_account(ledger, name, "analyst")
    ledger.save_workspace("wards", "alice", "study", json.dumps({"dataset": "wards"}))
    monkeypatch.setenv("DPRM_PASSWORD", PASSWORD)
    monkeypatch.delenv("DPRM_USER", raising=False)

    def as_user(name, *argv):
        code = main(["--user", name, "workspaces", *argv])
        return code, capsys.readouterr()

    with pytest.raises(ParameterError, match="not shared with 'bob'"):
        ledger.get_workspace("wards", "alice", "study", reader="bob")
    code, out = as_user("bob", "list", "wards")
    assert code == 0 and "no workspaces of bob" in out.out and "alice" not in out.out
    # bob cannot share alice's workspace: "study" names his own, which does not exist
    code, out = as_user("bob", "share", "wards", "study", "carol")
    assert code == 2 and "'bob' has no workspace 'study'" in out.err
    monkeypatch.setenv("DPRM_PASSWORD", "wrong")
    with pytest.raises(SystemExit, match="wrong account name or password"):
        as_user("alice", "share", "wards", "study", "bob")
    monkeypatch.setenv("DPRM_PASSWORD", PASSWORD)
    with pytest.raises(ParameterError, match="not shared with 'bob'"):
        ledger.get_workspace("wards", "alice", "study", reader="bob")

    code, out = as_user("alice", "share", "wards", "study", "bob")
    assert code == 0 and "bob opens it on Explore as alice/study" in out.err
    assert ledger.get_workspace("wards", "alice", "study", reader="bob").account == "alice"
    code, out = as_user("bob", "list", "wards")
    assert code == 0 and re.search(r"^alice/study +revision 1 .* shared with you$", out.out,
                                   flags=re.MULTILINE), out.out
    code, out = as_user("alice", "list", "wards")
    assert re.search(r"^study +revision 1 .* yours$", out.out, flags=re.MULTILINE), out.out
    with pytest.raises(ParameterError, match="not shared with 'carol'"):
        ledger.get_workspace("wards", "alice", "study", reader="carol")
    code, out = as_user("alice", "share", "wards", "study", "nobody")
    assert code == 2 and "nobody" in out.err

    code, out = as_user("alice", "unshare", "wards", "study", "bob")
    assert code == 0 and "bob no longer opens alice/study" in out.err
    with pytest.raises(ParameterError, match="not shared with 'bob'"):
        ledger.get_workspace("wards", "alice", "study", reader="bob")
    assert ledger.budget("wards").spent_nano == 0


# ------------------------------------------------ issue 34: flags from the field declarations

def _mine_params(*flags):
    from dpcore.cli import _params, build_parser

    return _params(build_parser().parse_args(["mine", "--dataset", "x", *flags]))


def _changed(declared):
    """A valid value other than the default (another choice, or a step inside the range)."""
    if declared.choices:
        return next(c for c in declared.choices if c != declared.default)
    step = 1 if declared.kind is int else 0.01
    value = declared.default + step
    if declared.high is not None and value >= declared.high:
        value = declared.default - step
    return declared.kind(value)


@pytest.mark.parametrize("family", ["tree", "serenade"])
def test_every_declared_redescription_field_is_a_flag_that_reaches_the_parameters(family):
    """The flags are generated from each family type's FIELDS (TreeParams, SerenadeParams):
    each one exists, says its range and default in its help, and sets its field of the
    algorithm's own type (nothing restated by hand can drift). The noise kind has no flag:
    it follows the mode, so no command line asks for float noise."""
    from dpcore.cli import build_parser
    from dpcore.redescriptions.params import SerenadeParams, TreeParams
    from dpcore.registry import ALTMCMC, SERENADE_CS

    params_type, algorithm = {"tree": (TreeParams, ALTMCMC),
                              "serenade": (SerenadeParams, SERENADE_CS)}[family]
    mine = build_parser()._subparsers._group_actions[0].choices["mine"]
    options = {o: a for a in mine._actions for o in a.option_strings}
    assert params_type.FIELDS["noise"].flag not in options
    declared = {n: f for n, f in params_type.FIELDS.items() if n not in ("algorithm", "noise")}
    assert _mine_params("--algorithm", algorithm) == params_type(algorithm=algorithm).validate()
    flags, expected = [], {}
    for name, field in declared.items():
        assert field.flag in options, field.flag
        if not field.choices and name not in ("epsilon",):
            assert f"range {field.bounds_text()}" in options[field.flag].help
        if name in ("mode", "epsilon"):
            continue                                # their values must go together
        expected[name] = _changed(field)
        flags += [field.flag, str(expected[name])]
    if family == "serenade":
        expected["budget_ext"] = 0.44             # keep the split below 1 with budget_init
        flags[flags.index("--budget-ext") + 1] = "0.44"
    params = _mine_params("--algorithm", algorithm, *flags)
    assert type(params) is params_type
    assert {n: getattr(params, n) for n in expected} == expected


@pytest.mark.parametrize(("algorithm", "flag", "value"), [
    ("serenade_es", "--depth", "3"), ("serenade_cs", "--omega", "0.5"),
    ("serenade_es", "--stable", "2"), ("altexpm", "--init-pairs", "5"),
    ("mcmctreepair", "--steepness", "0.02")])
def test_a_flag_of_the_other_redescription_family_is_refused_by_name(algorithm, flag, value):
    """A tree miner's flag given to Serenade (or the reverse) is not silently ignored: it is
    refused, naming the flag and the algorithm's own flags, even at its default value."""
    from dpcore.errors import ParameterError
    from dpcore.registry import algorithm_spec

    label = algorithm_spec(algorithm).label
    with pytest.raises(ParameterError, match=rf"^{flag}: not a parameter of {label}; its "
                                             r"parameters: .*Nothing was charged"):
        _mine_params("--algorithm", algorithm, flag, value)


def test_a_foreign_flag_charges_nothing(ledger_path, monkeypatch, capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "1"]) == 0
    assert main(["mine", "--data", CLINIC, "--algorithm", "serenade_es", "--mc-iter",
                 "100"]) == 2
    assert "--mc-iter: not a parameter of SerenadeES" in capsys.readouterr().err
    assert Ledger(ledger_path).budget("clinic").spent_nano == 0


@pytest.mark.parametrize("name", ["in_tr", "depth", "mc_iter", "max_pvalue", "min_support",
                                  "steepness", "budget_ext", "max_attributes", "omega"])
def test_a_value_out_of_its_declared_range_is_refused_by_name(name):
    from dpcore.errors import ParameterError
    from dpcore.redescriptions.params import FIELDS, TreeParams
    from dpcore.registry import ALTEXPM, SERENADE_ES

    declared = FIELDS[name]
    algorithm = ALTEXPM if name in TreeParams.FIELDS else SERENADE_ES
    bad = declared.high + 1 if declared.high is not None else declared.low - 1
    with pytest.raises(ParameterError, match=rf"^{name}\b.*{re.escape(declared.bounds_text())}"
                                             rf".*got {bad!r}"):
        _mine_params("--algorithm", algorithm, declared.flag, str(bad))


def test_a_redescription_flag_of_another_family_is_refused_even_at_its_default():
    from dpcore.errors import ParameterError

    with pytest.raises(ParameterError, match=r"--in-tr: not a parameter of PFS2"):
        _mine_params("--algorithm", "pfs2", "--in-tr", "4")
    with pytest.raises(ParameterError, match=r"--stable: not a parameter of PFS2"):
        _mine_params("--algorithm", "pfs2", "--stable", "2")
    assert (_mine_params("--algorithm", "altexpm", "--stable", "3").in_tr,
            _mine_params("--algorithm", "altexpm", "--stable", "3").rm_iter) == (3, 1)


def test_prefill_schema_writes_a_reviewable_schema_that_registers(ledger_path, monkeypatch,
                                                                   tmp_path, capsys):
    """Point 11 of the first-minutes walk: the command line prefills a two-view schema from
    the view files (owner only, nothing charged, never overwriting), and the written file
    registers once the view files sit beside it."""
    import shutil

    folder = tmp_path / "clinic_copy"
    folder.mkdir()
    for view in ("diagnoses.csv", "labs.csv"):
        shutil.copy(Path(CLINIC) / view, folder / view)
    out = folder / "schema.json"
    args = ["prefill-schema", "--left", str(folder / "diagnoses.csv"), "--right",
            str(folder / "labs.csv"), "--id-column", "patient_id", "--name", "clinic_copy",
            "--out", str(out)]
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "wrong")
    with pytest.raises(SystemExit, match="wrong account name or password"):
        main(args)
    assert not out.exists()
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(args) == 0
    written = json.loads(out.read_text())
    assert written["name"] == "clinic_copy" and written["id_column"] == "patient_id"
    names = {a["name"] for a in written["attributes"]}
    assert {"SEX", "DX_DIABETES", "LAB_HBA1C"} <= names and "patient_id" not in names
    assert "review" in capsys.readouterr().err
    before = out.read_text()
    assert main(args) == 2                       # never overwrites the owner's edits
    assert "exists" in capsys.readouterr().err and out.read_text() == before
    bad = [*args[:-1], str(tmp_path / "missing" / "schema.json")]
    assert main(bad) == 2 and "does not exist" in capsys.readouterr().err
    assert main(["register", "--data", str(folder), "--cap", "1"]) == 0
    assert Ledger(ledger_path).budget("clinic_copy").spent_nano == 0


def test_register_declares_a_public_row_bound_checked_against_the_data(ledger_path,
                                                                        monkeypatch, capsys):
    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "2", "--max-rows", "100000"]) == 0
    assert Ledger(ledger_path)._dataset_record("clinic").row_bound == 100_000
    capsys.readouterr()
    assert main(["register", "--data", PIMA, "--cap", "2", "--max-rows", "3"]) == 2
    err = capsys.readouterr().err
    assert "more than --max-rows 3; it is registered without a row bound" in err
    assert Ledger(ledger_path)._dataset_record("pima_like").row_bound is None


def test_mine_dry_run_states_redescription_intervals_and_serenades_limit(ledger_path,
                                                                         monkeypatch, capsys):
    from dpcore.registry import MCMCTREEPAIR, SERENADE_ES

    monkeypatch.setenv("DPRM_OWNER_PASSWORD", "s3cret")
    assert main(["register", "--data", CLINIC, "--cap", "3"]) == 0
    capsys.readouterr()
    base = ["mine", "--dataset", "clinic", "--epsilon", "1", "--dry-run"]
    assert main(base + ["--algorithm", MCMCTREEPAIR]) == 0
    out = capsys.readouterr().out
    assert "Intervals to expect (from the parameters alone, 0 ε)" in out
    assert "draws close to random" not in out
    assert main(base + ["--algorithm", SERENADE_ES]) == 0
    out = capsys.readouterr().out
    assert "draws close to random on this dataset at ε = 1" in out and "**" not in out
    assert "644,000 literal pairs" in out
    ledger = Ledger(ledger_path)
    assert ledger.list_runs("clinic") == [] and ledger.budget("clinic").spent_nano == 0
