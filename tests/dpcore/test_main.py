"""``python -m dpcore`` (dpcore/__main__.py): one OpenBLAS thread unless the caller chose a
count (issue 19), then the command line. The commands themselves: tests/dpcore/test_cli*.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore.__main__ import BLAS_THREAD_VARIABLES, one_blas_thread_unless_chosen

REPO = Path(__file__).resolve().parents[2]


#: ``python -m dpcore`` as a test can watch it: the entry point runs, then the BLAS libraries
#: the process loaded and their thread counts are printed.
_RUN_ENTRY_POINT = (
    "import contextlib, io, json, runpy, sys\n"
    "sys.argv = ['dpcore', 'mine', '--help']\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try:\n"
    "        runpy.run_module('dpcore', run_name='__main__', alter_sys=True)\n"
    "    except SystemExit:\n"
    "        pass\n"
    "import numpy, scipy.linalg\n"
    "from threadpoolctl import threadpool_info\n"
    "print(json.dumps([i['num_threads'] for i in threadpool_info()\n"
    "                  if i['internal_api'] == 'openblas']))\n")


@pytest.mark.parametrize("chosen, expected", [
    ({}, 1),
    ({"OPENBLAS_NUM_THREADS": "2"}, 2),
    ({"OMP_NUM_THREADS": "2"}, 2),
])
def test_python_m_dpcore_asks_for_one_blas_thread_unless_the_caller_chose(chosen, expected):
    """OpenBLAS starts its thread pool when NumPy (and SciPy, for numba) load it; one thread
    saves a warm ``mine`` 0.1–0.2 s of CPU. A count the caller set is kept."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", _RUN_ENTRY_POINT], cwd=REPO, check=True,
                         capture_output=True, text=True, env={**env, **chosen}).stdout
    counts = json.loads(out.strip().splitlines()[-1])
    assert counts and set(counts) == {expected}


def test_one_blas_thread_unless_chosen_only_fills_an_unset_count():
    environ = {"PATH": "/bin"}
    assert one_blas_thread_unless_chosen(environ)
    assert environ == {"PATH": "/bin", "OPENBLAS_NUM_THREADS": "1"}
    for name in BLAS_THREAD_VARIABLES:
        environ = {name: "4"}
        assert not one_blas_thread_unless_chosen(environ)
        assert environ == {name: "4"}
