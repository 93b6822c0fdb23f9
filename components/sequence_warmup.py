"""Warm the frequent-sequence kernels once per server process, in the background.

The first PFS2 run of a process loads (or, with an empty numba cache, compiles) its numba
kernels, which takes seconds to a minute; afterwards a run on the clickstream sample takes
a fraction of a second. The Sequences page starts this warm-up on its first visit and keeps
Launch disabled, with a progress bar, until it is done — the same loop as the
redescription warm-up: this module only says what to warm up and how the progress line
reads (a :class:`components.warmup.WarmupFamily`).

Each frequent-sequence algorithm runs once per privacy mode on a small *generated*
clickstream (:func:`dpcore.sequences.samples.generate_clickstream`), with a throwaway
accountant: the warm-up never touches the ledger, spends no budget of any dataset, and its
output is discarded (it is not a release of any real data).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import ALGORITHM_LABELS, ALGORITHM_SPECS, SEQUENCES, family_algorithms
from dpcore.sequences.samples import generate_clickstream

from .warmup import WarmupFamily, WarmupState, register_warmup, render_warmup_progress, warmup_state

__all__ = ["SEQUENCE_WARMUP", "sequence_warmup_steps", "sequence_warmup_state",
           "render_sequence_warmup"]


def sequence_warmup_steps() -> list[tuple[str, Callable[[], None]]]:
    """(label, action) of each step: every frequent-sequence algorithm × mode on tiny data."""
    data = generate_clickstream(300, seed=7, max_length=40, name="warm-up")
    steps = []
    for key in family_algorithms(SEQUENCES):
        spec = ALGORITHM_SPECS[key]
        for mode in spec.modes:
            params = spec.resolve("params_type")(algorithm=key, mode=mode, epsilon=10.0,
                                                  theta=0.05)
            miner = spec.resolve("miner")

            def action(params=params, miner=miner, spec=spec) -> None:
                budget = sum(s.epsilon_nano for s in spec.resolve("plan")(params))
                miner(data, params, rng=np.random.default_rng(0),
                      accountant=PrivacyAccountant(budget), run_id=None, seed=None,
                      progress=None)

            steps.append((f"{ALGORITHM_LABELS[key]} ({mode})", action))
    return steps


def _progress_line(state: WarmupState) -> str:
    what = "compiling" if state.cold else "loading"
    return (f"Preparing the sequence miner — {what} its kernels: step "
            f"{min(state.done + 1, state.total)} of {state.total} ({state.step}).")


#: The frequent-sequence miners' warm-up (its steps are built when it starts).
SEQUENCE_WARMUP = register_warmup(WarmupFamily(
    key="sequences", steps=lambda: sequence_warmup_steps(), thread_name="dprm-seq-warmup",
    text=_progress_line))


def sequence_warmup_state() -> WarmupState:
    """The warm-up's state (starting it on the first call in this process)."""
    return warmup_state(SEQUENCE_WARMUP)


def render_sequence_warmup() -> bool:
    """True when the kernels are ready; else show the progress (refreshing itself, rerunning
    the page when done) and return False, so the caller keeps Launch disabled."""
    return render_warmup_progress("Launch", SEQUENCE_WARMUP)
