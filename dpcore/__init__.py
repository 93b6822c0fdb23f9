"""dpcore: differentially private mining for the workbench (no Streamlit here).

Layers, lowest first (a module imports only from its own layer or below):

* :mod:`dpcore.errors`, :mod:`dpcore.registry` — typed errors; the names of every
  algorithm, mode and family;
* :mod:`dpcore.data` — public schemas, loading and validation of two-view tables;
* :mod:`dpcore.privacy` — ε units, accountant, mechanisms, roles, the ledger, the policy;
* one package per mining family — :mod:`dpcore.redescriptions` (MCMCTreePair, AltMCMC,
  AltExpM, SerenadeES, SerenadeCS);
* :mod:`dpcore.experiments` — the papers' evaluation grids (owner/teaching, NOT private);
* :mod:`dpcore.runs` and :mod:`dpcore.cli` — charged runs and the command line.

See ``docs/ARCHITECTURE.md`` for the layout and ``docs/PRIVACY.md`` for the privacy model.
"""

import hashlib
import os
from pathlib import Path

__version__ = "0.2.0"


def source_digest() -> str:
    """SHA-256 (16 hex digits) of every Python source of this package.

    numba's on-disk cache does not notice edits to helpers in other files; a cache folder
    named by this digest keeps stale machine code from ever being loaded after an edit or
    an upgrade.
    """
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# Set before any kernel module imports numba; the digest (≈ 15 ms of reading and hashing
# every source) only when the caller has not chosen a folder.
if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = str(Path(__file__).resolve().parent.parent
                                        / ".numba_cache" / f"{__version__}-{source_digest()}")
