"""dpcore: differentially private tree-based redescription mining (no Streamlit here).

Algorithms: MCMCTreePair, AltMCMC, AltExpM (Mihelčić & Miettinen, DMKD 2023),
in a ``strict`` (ε-DP, default) and a ``faithful`` (paper-reproducing, not
strictly ε-DP) privacy mode. See README.md for the privacy model.
"""

import os
from pathlib import Path

__version__ = "0.1.0"

# numba's on-disk cache does not notice edits to helpers in other files; a
# version-named folder keeps stale machine code from surviving an upgrade.
# Set before any kernel module imports numba.
os.environ.setdefault("NUMBA_CACHE_DIR",
                      str(Path(__file__).resolve().parent.parent / ".numba_cache" / __version__))
