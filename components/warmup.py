"""Warm the numba kernels once per server process, in the background, with visible progress.

The first call of each kernel compiles it (about a minute with an empty numba cache,
seconds with a filled one). :func:`start_warmup` starts that work once per server
process in a background thread (held by ``st.cache_resource``) and returns at once,
so the pages that do not mine (Data, Explore, Runs) are usable during a cold start.
The pages that mine call :func:`render_warmup_progress`: while the kernels compile it
shows a progress bar with the step, the kernels done and an estimate of the time left,
refreshing itself, and it tells the caller to keep Launch disabled until they are ready.

The warm-up runs every miner once, in both privacy modes, on the tiny synthetic dataset
of :mod:`dpcore.redescriptions.warmup` with a throwaway accountant: it never touches
the ledger, spends no budget of any dataset, and its output is discarded (it is not a
release of any real data).

One loop serves every mining family: a family's warm-up is a :class:`WarmupFamily` (its
steps, its thread name, its progress line), registered with :func:`register_warmup`; the
background thread, the shared state and the self-refreshing progress bar are the same for
all (:mod:`components.sequence_warmup` is the frequent-sequence family's).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.redescriptions.mining import mine
from dpcore.redescriptions.params import plan_budget
from dpcore.redescriptions.warmup import tiny_dataset, warmup_params
from dpcore.registry import ALGORITHM_LABELS, ALGORITHMS, MODES

__all__ = ["WarmupState", "WarmupFamily", "register_warmup", "warmup_steps", "run_warmup",
           "start_warmup", "warmup_state", "progress_text", "render_warmup_progress",
           "REDESCRIPTION_WARMUP", "COLD_START_SECONDS"]

_log = logging.getLogger(__name__)
#: A cold start (empty numba cache) on the reference machine (2 cores): about this long.
COLD_START_SECONDS = 60.0
#: A start with a filled numba cache: about this long.
WARM_CACHE_SECONDS = 5.0


@dataclass
class WarmupState:
    """Progress of the warm-up (written by its thread, read by the pages)."""

    total: int
    cold: bool
    done: int = 0
    step: str = "starting"
    error: str | None = None
    finished: bool = False
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    @property
    def ready(self) -> bool:
        """The kernels are compiled (or the warm-up failed: runs then compile on first use)."""
        return self.finished

    @property
    def fraction(self) -> float:
        return 1.0 if self.finished else (self.done / self.total if self.total else 0.0)

    def seconds_left(self, now: float | None = None) -> float:
        """A rough estimate of the time left, from the steps done so far (or the usual
        duration of a cold or warm start before the first step ends)."""
        if self.finished:
            return 0.0
        elapsed = (time.monotonic() if now is None else now) - self.started
        if self.done == 0:
            usual = COLD_START_SECONDS if self.cold else WARM_CACHE_SECONDS
            return max(1.0, usual - elapsed)
        per_step = elapsed / self.done
        return max(1.0, per_step * (self.total - self.done))


def warmup_steps() -> list[tuple[str, Callable[[], None]]]:
    """(label, action) of each warm-up step: every algorithm × mode once on tiny data."""
    data = tiny_dataset()
    steps = []
    for mode in MODES:
        for algorithm in ALGORITHMS:
            params = warmup_params(algorithm, mode)

            def action(params=params) -> None:
                budget = sum(s.epsilon_nano for s in plan_budget(params))
                mine(data, params, rng=np.random.default_rng(0),
                     accountant=PrivacyAccountant(budget))

            steps.append((f"{ALGORITHM_LABELS[algorithm]} ({mode})", action))
    return steps


def _cache_is_cold() -> bool:
    """Whether the numba cache folder holds no compiled kernel yet (a first start)."""
    try:
        from numba.core.config import CACHE_DIR
        folder = Path(CACHE_DIR) if CACHE_DIR else None
        return folder is None or not any(folder.rglob("*.nbi"))
    except Exception:  # noqa: BLE001 - only an estimate
        return True


def run_warmup(state: WarmupState, steps: list[tuple[str, Callable[[], None]]]) -> None:
    """Run the steps, recording progress in ``state`` (a failure ends the warm-up: the
    kernels then compile on first use)."""
    try:
        for label, action in steps:
            state.step = label
            action()
            state.done += 1
    except Exception as exc:  # noqa: BLE001 - a failed warm-up must not stop the app
        _log.exception("numba warm-up failed")
        state.error = f"{type(exc).__name__}: {exc}"
    finally:
        state.ended = time.monotonic()
        state.finished = True


Steps = list[tuple[str, Callable[[], None]]]


@dataclass(frozen=True)
class WarmupFamily:
    """The family-specific parts of a warm-up; the loop, thread and progress bar are shared.

    Attributes
    ----------
    key : str
        Names the warm-up (one background thread per key and server process).
    steps : callable() -> list of (label, action)
        Builds the steps (called once, when the warm-up starts).
    thread_name : str
        Name of the background thread (for the server's thread dumps).
    text : callable(WarmupState) -> str
        The progress line shown while the kernels compile.
    """

    key: str
    steps: Callable[[], Steps]
    thread_name: str
    text: Callable[[WarmupState], str]


_FAMILIES: dict[str, WarmupFamily] = {}


def register_warmup(family: WarmupFamily) -> WarmupFamily:
    """Make ``family`` known to :func:`warmup_state` and :func:`render_warmup_progress`."""
    _FAMILIES[family.key] = family
    return family


@st.cache_resource(show_spinner=False)
def _warmup_once(key: str) -> WarmupState:
    """Start the warm-up thread of ``key`` once per server process; return its shared state."""
    family = _FAMILIES[key]
    steps = family.steps()
    state = WarmupState(total=len(steps), cold=_cache_is_cold())
    threading.Thread(target=run_warmup, args=(state, steps), name=family.thread_name,
                     daemon=True).start()
    return state


def warmup_state(family: WarmupFamily | None = None) -> WarmupState:
    """The state of ``family``'s warm-up (default: the redescription kernels), starting it
    if it has not started in this process; never waits for it."""
    return _warmup_once((family or REDESCRIPTION_WARMUP).key)


def start_warmup() -> WarmupState:
    """Start the redescription warm-up if it has not started in this process; never waits."""
    return warmup_state()


def progress_text(state: WarmupState) -> str:
    """The progress line: what compiles, how many steps are done, about how long is left."""
    if state.finished:
        return ("Mining engine ready." if state.error is None else
                "The mining engine warm-up failed; runs compile on first use.")
    what = ("compiling the mining kernels (first start of the server: about a minute)"
            if state.cold else "loading the compiled mining kernels")
    return (f"Preparing the mining engine — {what}: step {min(state.done + 1, state.total)} "
            f"of {state.total} ({state.step}), about {state.seconds_left():.0f} s left. "
            "The Data, Explore and Runs pages work meanwhile.")


def render_warmup_progress(what: str = "Launch", family: WarmupFamily | None = None
                           ) -> bool:
    """On a page that mines: True when ``family``'s kernels are ready (default: the
    redescription kernels); else show the progress (it refreshes itself and reruns the page
    when done) and return False, so the caller keeps ``what`` disabled."""
    family = family or REDESCRIPTION_WARMUP
    if warmup_state(family).ready:
        return True
    _progress_fragment(family.key, what)
    return False


@st.fragment(run_every=1.0)
def _progress_fragment(key: str, what: str) -> None:
    family = _FAMILIES[key]
    state = warmup_state(family)
    if state.ready:
        st.rerun(scope="app")                 # enable what waited for the kernels
    st.progress(state.fraction, text=family.text(state))
    st.caption(f"{what} is available as soon as the kernels are ready; nothing is charged "
               "meanwhile.")


#: The redescription miners' warm-up (every algorithm × mode on tiny data). Its steps are
#: looked up when it starts, so a test can replace :func:`warmup_steps`.
REDESCRIPTION_WARMUP = register_warmup(WarmupFamily(
    key="redescriptions", steps=lambda: warmup_steps(), thread_name="dprm-warmup",
    text=progress_text))
