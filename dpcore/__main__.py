"""``python -m dpcore``: the command line (see dpcore/cli.py)."""

import sys

from .cli import main

sys.exit(main())
