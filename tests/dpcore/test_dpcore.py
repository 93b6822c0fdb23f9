"""dpcore/__init__.py: the version, and the source digest that names the numba cache folder."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import dpcore

REPO = Path(__file__).resolve().parents[2]


def test_version_is_semantic():
    assert re.fullmatch(r"\d+\.\d+\.\d+", dpcore.__version__)


def test_source_digest_is_16_hex_and_stable():
    digest = dpcore.source_digest()
    assert re.fullmatch(r"[0-9a-f]{16}", digest)
    assert dpcore.source_digest() == digest


def test_source_digest_changes_when_any_source_changes(tmp_path):
    copy = tmp_path / "dpcore"
    shutil.copytree(REPO / "dpcore", copy, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import dpcore; print(dpcore.source_digest())"

    def digest():
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                             capture_output=True, text=True, env={"NUMBA_CACHE_DIR": "x"})
        return out.stdout.strip()

    before = digest()
    assert before == dpcore.source_digest()  # same sources, same digest anywhere
    nested = copy / "privacy" / "units.py"
    nested.write_text(nested.read_text(encoding="utf-8") + "\n# edit\n", encoding="utf-8")
    assert digest() != before


def test_numba_cache_dir_is_set_on_import():
    out = subprocess.run(
        [sys.executable, "-c", "import os, dpcore; print(os.environ['NUMBA_CACHE_DIR'])"],
        cwd=REPO, check=True, capture_output=True, text=True, env={})
    assert out.stdout.strip().endswith(f"{dpcore.__version__}-{dpcore.source_digest()}")


def test_the_digest_is_computed_only_when_numba_cache_dir_is_unset(tmp_path):
    """Importing dpcore reads every source for the digest only when it must name the cache
    folder (≈ 15 ms of each command-line start otherwise, issue 19). A directory named like
    a source makes reading fail, so the import shows whether the digest was computed."""
    copy = tmp_path / "dpcore"
    shutil.copytree(REPO / "dpcore", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "not_a_file.py").mkdir()
    code = "import os, dpcore; print(os.environ['NUMBA_CACHE_DIR'])"

    def run(env):
        return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, env=env)

    chosen = run({"NUMBA_CACHE_DIR": str(tmp_path / "chosen")})
    assert chosen.returncode == 0 and chosen.stdout.strip() == str(tmp_path / "chosen")
    unset = run({})
    assert unset.returncode != 0 and "IsADirectoryError" in unset.stderr
