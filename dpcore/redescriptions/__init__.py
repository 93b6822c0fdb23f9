"""The redescription family: tree miners (MCMCTreePair, AltMCMC, AltExpM) and Serenade."""
