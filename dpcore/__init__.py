"""dpcore: differentially private tree-based redescription mining (no Streamlit here).

Algorithms: MCMCTreePair, AltMCMC, AltExpM (Mihelčić & Miettinen, DMKD 2023),
in a ``strict`` (ε-DP, default) and a ``faithful`` (paper-reproducing, not
strictly ε-DP) privacy mode. See README.md and docs/ for the privacy model.
"""

__version__ = "0.1.0"
