"""``python -m dpcore``: the command line (see dpcore/cli.py)."""

from dpcore.cli import run_and_exit

run_and_exit()
