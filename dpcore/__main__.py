"""``python -m dpcore``: the command line (see dpcore/cli.py)."""

import sys

from dpcore.cli import main

sys.exit(main())
