"""dpcore: differentially private tree-based redescription mining (no Streamlit here).

Algorithms: MCMCTreePair, AltMCMC, AltExpM (Mihelčić & Miettinen, DMKD 2023),
in a ``strict`` (ε-DP, default) and a ``faithful`` (paper-reproducing, not
strictly ε-DP) privacy mode. See README.md for the privacy model.
"""

import hashlib
import os
from pathlib import Path

__version__ = "0.1.0"

# numba's on-disk cache does not notice edits to helpers in other files; a folder
# named by a hash of this package's sources keeps stale machine code from ever
# being loaded after an edit or an upgrade. Set before any kernel module imports numba.
def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parent.parent
                                             / ".numba_cache" / f"{__version__}-{_source_digest()}"))
