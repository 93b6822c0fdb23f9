"""The command line starts fast: a command imports only what it needs (issue 19).

Behaviour tests, not timings: each runs a fresh interpreter and checks which modules it
imported and which numba kernels it loaded. ``import dpcore.cli`` (what ``--help``,
``budget``, ``runs`` pay for) must not pull in pandas, SciPy, numba, plotly, Dask,
scikit-learn, psycopg, pyarrow, Streamlit or tqdm; a redescription ``mine`` of registered
data pays for numba, its own kernels and ``scipy.special`` (the p-values), never for
pandas (the data come from the columnar cache written at registration), ``scipy.stats`` or
another family's modules. (``python -m dpcore``'s BLAS thread count: tests/dpcore/test_main.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dpcore.privacy.ledger import Ledger
from tests.support.accounts_support import make_account

REPO = Path(__file__).resolve().parents[2]
CMS_SMALL = str(REPO / "sample_data" / "cms_small")

#: Heavy libraries no command needs just to start.
HEAVY = ("pandas", "scipy", "numba", "plotly", "dask", "distributed", "sklearn", "psycopg",
         "pyarrow", "streamlit", "tqdm", "randomgen")

#: Libraries of other commands or families than a redescription ``mine``, and the two
#: import-heavy libraries a ``mine`` of registered data no longer needs (issue 19).
NOT_FOR_MINE = ("plotly", "dask", "distributed", "sklearn", "psycopg", "pyarrow",
                "streamlit", "dpcore.sequences.miner", "dpcore.synthesis.miner",
                "dpcore.experiments.harness", "dpcore.redescriptions.serenade", "pandas",
                "scipy.stats")

#: What a seeded mine on public demo data does not need either (only unseeded runs draw
#: from randomgen's ChaCha20).
NOT_FOR_SEEDED_MINE = (*NOT_FOR_MINE, "randomgen")


#: Modules whose kernels a strict tree mine may call (Serenade's are not even imported).
MINE_KERNEL_MODULES = ("dpcore.privacy.mechanisms.", "dpcore.redescriptions.bitset_mcmc.",
                       "dpcore.redescriptions.kernels.")


def _imported(code: str, env: dict | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; it prints a JSON object last."""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True, env={**os.environ, **(env or {})}).stdout
    return json.loads(out.strip().splitlines()[-1])


def _loaded(names, modules) -> list[str]:
    """Which of ``names`` (top-level packages or modules) are in ``modules``."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


def test_importing_the_cli_pulls_in_no_heavy_library():
    modules = _imported("import json, sys, dpcore.cli; print(json.dumps(sorted(sys.modules)))")
    assert "dpcore.cli" in modules
    assert _loaded(HEAVY, modules) == []


def test_help_and_budget_import_no_heavy_library(tmp_path):
    code = (
        "import contextlib, io, json, sys\n"
        "from dpcore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    for argv in (['--help'], ['mine', '--help'], ['query', '--help']):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit:\n"
        "            pass\n"
        "    main(['budget', 'nothing'])\n"
        "    main(['runs', 'nothing'])\n"
        "print(json.dumps(sorted(sys.modules)))\n")
    modules = _imported(code, {"DPRM_LEDGER": str(tmp_path / "ledger.sqlite")})
    assert _loaded(HEAVY, modules) == []


def test_a_redescription_mine_loads_only_its_own_family_and_kernels(tmp_path):
    """MCMCTreePair on cms_small, registered by another process: numba and
    ``scipy.special`` are needed; pandas and ``scipy.stats`` are not (the registered data
    come from the columnar cache), nor Serenade's or any other family's module or a
    plotting or cluster library; and of the numba kernels of dpcore only those the miner
    calls are loaded (the others it imports stay untouched)."""
    ledger = tmp_path / "ledger.sqlite"
    out = tmp_path / "run.json"
    env = {"DPRM_LEDGER": str(ledger), "DPRM_OWNER_PASSWORD": "pw"}
    make_account(Ledger(ledger), "owner", "owner", "pw")
    _imported("import json\n"
              "from dpcore.cli import main\n"
              f"assert main(['register', '--data', {CMS_SMALL!r}, '--cap', '5']) == 0\n"
              "print(json.dumps(0))\n", env)      # writes the cache unless it is there
    code = (
        "import json, sys\n"
        "from dpcore.cli import main\n"
        "assert main(['mine', '--dataset', 'cms_small', '--algorithm', 'mcmctreepair',\n"
        "             '--epsilon', '1', '--mc-iter', '50', '--seed', '1',\n"
        f"             '--out', {str(out)!r}]) == 0\n"
        "from numba.core.registry import CPUDispatcher\n"
        "loaded, idle = [], []\n"
        "for name, module in list(sys.modules.items()):\n"
        "    if not name.startswith('dpcore.'):\n"
        "        continue\n"
        "    for attr, value in vars(module).items():\n"
        "        if isinstance(value, CPUDispatcher) and value.__module__ == name:\n"
        "            (loaded if value.signatures else idle).append(name + '.' + attr)\n"
        "print(json.dumps({'modules': sorted(sys.modules), 'loaded': sorted(loaded),\n"
        "                  'idle': sorted(idle)}))\n")
    seen = _imported(code, env)
    assert json.loads(out.read_text())["algorithm"] == "mcmctreepair"
    assert _loaded(NOT_FOR_SEEDED_MINE, seen["modules"]) == []
    assert "numba" in seen["modules"] and "scipy.special" in seen["modules"]
    assert any(k.startswith("dpcore.redescriptions.bitset_mcmc.") for k in seen["loaded"])
    assert not [k for k in seen["loaded"] if not k.startswith(MINE_KERNEL_MODULES)]
    assert any(k.startswith("dpcore.privacy.mechanisms.") for k in seen["idle"]), \
        "the check must see kernels imported but never called to mean anything"


def test_python_m_dpcore_exits_with_mains_status_and_writes_everything(tmp_path):
    """``python -m dpcore`` ends through ``run_and_exit`` (the final collection skipped):
    the exit status is main's, stdout and stderr arrive whole, and a mine's result is
    stored and written before the process ends."""
    from dpcore.cli import build_parser

    env = {**os.environ, "DPRM_LEDGER": str(tmp_path / "ledger.sqlite"),
           "DPRM_OWNER_PASSWORD": "pw"}
    make_account(Ledger(tmp_path / "ledger.sqlite"), "owner", "owner", "pw")

    def dpcore(*argv):
        return subprocess.run([sys.executable, "-m", "dpcore", *argv], cwd=REPO, env=env,
                              capture_output=True, text=True)

    shown = dpcore("--help")
    assert shown.returncode == 0
    assert shown.stdout == build_parser().format_help()
    refused = dpcore("budget", "nothing")
    assert refused.returncode == 2 and "unknown dataset 'nothing'" in refused.stderr
    assert dpcore("register", "--data", str(REPO / "sample_data" / "sites"),
                  "--cap", "5").returncode == 0
    out = tmp_path / "run.json"
    mined = dpcore("mine", "--dataset", "sites", "--algorithm", "altexpm", "--epsilon", "1",
                   "--seed", "3", "--out", str(out))
    assert mined.returncode == 0, mined.stderr
    run_id = json.loads(out.read_text())["run_id"]
    assert mined.stderr.rstrip().endswith(f"written to {out}")
    again = dpcore("result", run_id, "--out", "-")
    assert again.returncode == 0 and json.loads(again.stdout) == json.loads(out.read_text())

