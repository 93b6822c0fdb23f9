"""The synthetic-data family as a typed object (:class:`dpcore.family.Family`): ``FAMILY``.

Its dataset kind is the labelled table (:mod:`~dpcore.data.table.schema`,
:mod:`~dpcore.data.table.table`); its algorithms are MC-GEN and the floor
(:mod:`~dpcore.synthesis.miner`). The code behind each method is imported when it is first
called (the table and result modules need pandas).
"""

from __future__ import annotations

from dpcore.data.kinds import KINDS
from dpcore.family import AlgorithmBase, Checked
from dpcore.registry import ALGORITHM_SPECS, KIND_TABLE, SYNTHESIS

__all__ = ["FAMILY", "Synthesizer"]


class Synthesizer(AlgorithmBase):
    """MC-GEN or the floor: ``prepare`` checks everything (nothing to build), ``mine``
    runs :func:`~dpcore.synthesis.miner.synthesize`."""

    def __init__(self, key: str):
        self.key = key

    @property
    def params_type(self) -> type:
        from dpcore.synthesis.params import SynthesisParams

        return SynthesisParams

    @property
    def result_type(self) -> type:
        from dpcore.synthesis.results import SynthesisResult

        return SynthesisResult

    @property
    def help_texts(self):
        from dpcore.synthesis.params import HELP

        return HELP

    def plan(self, params):
        from dpcore.synthesis import params as module

        return module.plan_budget(params)

    def prepare(self, data, params):
        from dpcore.synthesis import miner

        miner.check_runnable(data, params)
        return Checked(data, params)

    def mine(self, prepared, *, rng, accountant, run_id=None, seed=None, progress=None):
        from dpcore.synthesis import miner

        return miner.synthesize(prepared.data, prepared.params, rng=rng, accountant=accountant,
                                run_id=run_id, seed=seed, progress=progress)


class _SynthesisFamily:
    key = SYNTHESIS
    kind = KINDS[KIND_TABLE]

    def __init__(self):
        self.algorithms = {k: Synthesizer(k) for k, s in ALGORITHM_SPECS.items()
                           if s.family == SYNTHESIS}

    @property
    def specs(self):
        return tuple(ALGORITHM_SPECS[k] for k in self.algorithms)


#: The synthetic-data family (MC-GEN and the floor on a labelled table).
FAMILY = _SynthesisFamily()
