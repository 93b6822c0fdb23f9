"""Warm the frequent-sequence kernels once per server process, in the background.

The first PFS2 run of a process loads (or, with an empty numba cache, compiles) its numba
kernels, which takes seconds to a minute; afterwards a run on the clickstream sample takes
a fraction of a second. The Sequences page starts this warm-up on its first visit and keeps
Launch disabled, with a progress bar, until it is done — the same pattern as the
redescription warm-up (:mod:`components.warmup`, whose state and step runner it reuses).

Each frequent-sequence algorithm runs once per privacy mode on a small *generated*
clickstream (:func:`dpcore.sequences.samples.generate_clickstream`), with a throwaway
accountant: the warm-up never touches the ledger, spends no budget of any dataset, and its
output is discarded (it is not a release of any real data).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import streamlit as st

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import ALGORITHM_LABELS, ALGORITHM_SPECS, SEQUENCES, family_algorithms
from dpcore.sequences.samples import generate_clickstream

from .warmup import WarmupState, _cache_is_cold, run_warmup

__all__ = ["sequence_warmup_steps", "sequence_warmup_state", "render_sequence_warmup"]


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


@st.cache_resource(show_spinner=False)
def _sequence_warmup_once() -> WarmupState:
    steps = sequence_warmup_steps()
    state = WarmupState(total=len(steps), cold=_cache_is_cold())
    threading.Thread(target=run_warmup, args=(state, steps), name="dprm-seq-warmup",
                     daemon=True).start()
    return state


def sequence_warmup_state() -> WarmupState:
    """The warm-up's state (starting it on the first call in this process)."""
    return _sequence_warmup_once()


def render_sequence_warmup() -> bool:
    """True when the kernels are ready; else show the progress (refreshing itself, rerunning
    the page when done) and return False, so the caller keeps Launch disabled."""
    if sequence_warmup_state().ready:
        return True
    _progress_fragment()
    return False


@st.fragment(run_every=1.0)
def _progress_fragment() -> None:
    state = sequence_warmup_state()
    if state.ready:
        st.rerun(scope="app")
    what = "compiling" if state.cold else "loading"
    st.progress(state.fraction, text=f"Preparing the sequence miner — {what} its kernels: "
                                     f"step {min(state.done + 1, state.total)} of "
                                     f"{state.total} ({state.step}).")
    st.caption("Launch is available as soon as the kernels are ready; nothing is charged "
               "meanwhile.")
