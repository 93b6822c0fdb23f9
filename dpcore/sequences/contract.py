"""The frequent-sequence family as a typed object (:class:`dpcore.family.Family`): ``FAMILY``.

Its dataset kind is the sequence dataset (:class:`dpcore.data.kinds.SequenceKind`:
:mod:`dpcore.data.sequences`); its algorithms are PFS2 and the straightforward baseline
(:mod:`~dpcore.sequences.miner`). The code behind each method is imported when it is first called.
"""

from __future__ import annotations

from dpcore.data.kinds import KINDS
from dpcore.family import AlgorithmBase, Checked
from dpcore.registry import ALGORITHM_SPECS, KIND_SEQUENCES, SEQUENCES

__all__ = ["FAMILY", "SequenceMiner"]


class SequenceMiner(AlgorithmBase):
    """PFS2 or its baseline: ``prepare`` checks everything (nothing to build), ``mine``
    runs :func:`~dpcore.sequences.miner.mine_frequent_sequences`."""

    def __init__(self, key: str):
        self.key = key

    @property
    def params_type(self) -> type:
        from dpcore.sequences.params import SequenceMiningParams

        return SequenceMiningParams

    @property
    def result_type(self) -> type:
        from dpcore.sequences.results import SequenceRunResult

        return SequenceRunResult

    @property
    def help_texts(self):
        from dpcore.sequences.params import HELP

        return HELP

    def plan(self, params):
        from dpcore.sequences import params as module

        return module.plan_budget(params)

    def refundable(self, params) -> bool:
        """Strict runs return what they leave unspent: every level's budget, every stop
        (no candidates, the noise would drown θ·N̂, the pool ran out) is decided from
        public parameters and earlier DP outputs only (:mod:`dpcore.sequences.miner`,
        docs/PRIVACY.md "Charged = spent: refunds"). Faithful runs are not ε-DP: their
        nominal charge is kept whole."""
        from dpcore.registry import STRICT

        return params.mode == STRICT

    def prepare(self, data, params):
        from dpcore.sequences import miner

        miner.check_runnable(data, params)
        return Checked(data, params)

    def mine(self, prepared, *, rng, accountant, run_id=None, seed=None, progress=None):
        from dpcore.sequences import miner

        return miner.mine_frequent_sequences(prepared.data, prepared.params, rng=rng,
                                             accountant=accountant, run_id=run_id, seed=seed,
                                             progress=progress)


class _SequenceFamily:
    key = SEQUENCES
    kind = KINDS[KIND_SEQUENCES]

    def __init__(self):
        self.algorithms = {k: SequenceMiner(k) for k, s in ALGORITHM_SPECS.items()
                           if s.family == SEQUENCES}

    @property
    def specs(self):
        return tuple(ALGORITHM_SPECS[k] for k in self.algorithms)


#: The frequent-sequence family (PFS2 and its baseline on a sequence dataset).
FAMILY = _SequenceFamily()
