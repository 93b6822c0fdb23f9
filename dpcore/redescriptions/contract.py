"""The redescription family as a typed object (:class:`dpcore.family.Family`): ``FAMILY``.

Its dataset kind is the two-view table (:mod:`dpcore.data`); its algorithms are the tree
miners and Serenade (:mod:`~dpcore.redescriptions.mining`), the custom query
(:mod:`~dpcore.redescriptions.custom_query`) and the noisy map
(:mod:`~dpcore.redescriptions.regions`). The code behind each method is imported when it is
first called, so importing this package loads no miner and no kernel.
"""

from __future__ import annotations

from dpcore.data.kinds import KINDS
from dpcore.family import AlgorithmBase, Checked
from dpcore.registry import (
    ALGORITHM_SPECS,
    CUSTOM_QUERY,
    KIND_TWO_VIEW,
    REDESCRIPTION_ALGORITHMS,
    REDESCRIPTIONS,
    REGION_MAP,
)

__all__ = ["FAMILY", "RedescriptionMiner", "QueryAlgorithm"]


class _RedescriptionAlgorithm(AlgorithmBase):
    def __init__(self, key: str):
        self.key = key

    @property
    def result_type(self) -> type:
        from dpcore.redescriptions.results import RunResult

        return RunResult


class RedescriptionMiner(_RedescriptionAlgorithm):
    """A tree miner or Serenade: ``prepare`` codes the views on the public grid (strict
    mode), ``mine`` consumes exactly that (:class:`~dpcore.redescriptions.mining.PreparedRun`)."""

    @property
    def params_type(self) -> type:
        """:class:`~dpcore.redescriptions.params.TreeParams` (MCMCTreePair, AltMCMC,
        AltExpM) or :class:`~dpcore.redescriptions.params.SerenadeParams` (SerenadeES/CS)."""
        from dpcore.redescriptions.params import family_type

        return family_type(self.key)

    @property
    def help_texts(self):
        from dpcore.redescriptions.params import HELP

        return HELP

    def plan(self, params):
        from dpcore.redescriptions import params as module

        return module.plan_budget(params)

    def refundable(self, params) -> bool:
        """Strict SerenadeCS returns what it leaves unspent: a redescription stops being
        extended when its *noisy* Jaccard falls below the minimum accuracy, a DP output
        (:meth:`dpcore.redescriptions.serenade.miner._Miner.extend_cs`, docs/PRIVACY.md
        "Charged = spent: refunds"). Faithful runs keep their nominal charge; the other
        miners spend all of it."""
        from dpcore.registry import SERENADE_CS, STRICT

        return params.algorithm == SERENADE_CS and params.mode == STRICT

    def prepare(self, data, params):
        from dpcore.redescriptions import mining

        return mining.check_runnable(data, params)

    def mine(self, prepared, *, rng, accountant, run_id=None, seed=None, progress=None):
        from dpcore.redescriptions import mining

        return mining.mine(prepared.dataset, prepared.params, rng=rng, accountant=accountant,
                           run_id=run_id, seed=seed, progress=progress, prepared=prepared)


class QueryAlgorithm(_RedescriptionAlgorithm):
    """A paid query of the analyst's own (the custom query's 4-cell table, the noisy map)."""

    @property
    def _module(self):
        if self.key == REGION_MAP:
            from dpcore.redescriptions import regions

            return regions
        from dpcore.redescriptions import custom_query

        return custom_query

    @property
    def params_type(self) -> type:
        return (self._module.RegionMapParams if self.key == REGION_MAP
                else self._module.CustomQueryParams)

    @property
    def help_texts(self):
        from dpcore.redescriptions.custom_query import HELP

        return HELP

    def plan(self, params):
        return self._module.plan_budget(params)

    def prepare(self, data, params):
        module = self._module
        (module.check_map_run if self.key == REGION_MAP else module.check_query_run)(data,
                                                                                    params)
        return Checked(data, params)

    def mine(self, prepared, *, rng, accountant, run_id=None, seed=None, progress=None):
        module = self._module
        run = module.run_region_map if self.key == REGION_MAP else module.run_custom_query
        return run(prepared.data, prepared.params, rng=rng, accountant=accountant,
                   run_id=run_id, seed=seed, progress=progress)


class _RedescriptionFamily:
    key = REDESCRIPTIONS
    kind = KINDS[KIND_TWO_VIEW]

    def __init__(self):
        self.algorithms = {**{k: RedescriptionMiner(k) for k in REDESCRIPTION_ALGORITHMS},
                           CUSTOM_QUERY: QueryAlgorithm(CUSTOM_QUERY),
                           REGION_MAP: QueryAlgorithm(REGION_MAP)}

    @property
    def specs(self):
        return tuple(ALGORITHM_SPECS[k] for k in self.algorithms)


#: The redescription family (redescriptions of a two-view table).
FAMILY = _RedescriptionFamily()
