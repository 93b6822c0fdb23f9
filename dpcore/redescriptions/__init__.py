"""The redescription family: tree miners (MCMCTreePair, AltMCMC, AltExpM) and Serenade."""

from dpcore.redescriptions.contract import FAMILY

__all__ = ["FAMILY"]
