"""Warm the numba kernels of every mining family once per server process, in the background.

The first call of each kernel compiles it (tens of seconds of CPU with an empty numba
cache, a fraction of a second with a filled one). :func:`start_warmup` starts that work
once per server process in a background thread (held by ``st.cache_resource``) and
returns at once, so the pages that do not mine (Data, Explore, Runs) are usable during a
cold start. The pages that mine call :func:`render_warmup_progress` with their family:
while that family's kernels compile it shows a progress bar with the step, the steps done
and an estimate of the time left, refreshing itself, and it tells the caller to keep
Launch disabled until they are ready.

There is ONE warm-up for all families (redescriptions, frequent sequences, synthetic
data): one thread, one state, one progress line. A page that waits for a family moves that
family's pending steps to the front, so the page the user looks at is served first.

The warm-up runs every miner once per privacy mode on tiny data built in code (the
redescription miners on :func:`dpcore.redescriptions.warmup.tiny_dataset`, the sequence
miners on a generated clickstream, the synthesis miners on a generated Pima-shaped table)
with a throwaway accountant: it never touches the ledger, spends no budget of any
dataset, and its output is discarded (it is not a release of any real data).

The time left is estimated from each step's measured compile CPU
(:data:`STEP_SECONDS`, cold and cached), scaled by how fast the steps done so far went
on this machine; a step that overruns its share raises the estimate of every step after
it, so a loaded machine shows a growing estimate rather than "1 s left" for minutes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st

from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import (
    ALGORITHM_LABELS,
    ALGORITHM_SPECS,
    ALGORITHMS,
    FAMILIES,
    MODES,
    REDESCRIPTIONS,
    SEQUENCES,
    SYNTHESIS,
    family_algorithms,
)

__all__ = ["WarmupStep", "WarmupState", "STEP_SECONDS", "family_steps", "warmup_steps",
           "run_warmup", "start_warmup", "warmup_state", "progress_text",
           "render_warmup_progress"]

_log = logging.getLogger(__name__)

#: CPU seconds of each warm-up step (``algorithm/mode``) in the order of
#: :func:`warmup_steps`: (empty numba cache, filled cache), measured by
#: ``python -m bench.compile_times --warmup`` on a shared 2-core machine at load ≈ 10
#: (bench/README.md; a quiet machine is faster, which the observed pace corrects). A step's
#: cold figure is what it compiles that the steps before it did not (at least 0.05 s).
STEP_SECONDS: dict[str, tuple[float, float]] = {
    "mcmctreepair/strict": (39.78, 0.57),
    "altmcmc/strict": (8.40, 0.07),
    "altexpm/strict": (6.07, 0.04),
    "serenade_es/strict": (13.54, 0.11),
    "serenade_cs/strict": (0.05, 0.01),
    "mcmctreepair/faithful": (18.97, 0.07),
    "altmcmc/faithful": (4.05, 0.06),
    "altexpm/faithful": (0.05, 0.01),
    "serenade_es/faithful": (0.05, 0.04),
    "serenade_cs/faithful": (0.05, 0.03),
    "pfs2/strict": (25.76, 0.09),
    "pfs2/faithful": (10.61, 0.04),
    "pfs2_straightforward/strict": (0.05, 0.02),
    "pfs2_straightforward/faithful": (0.05, 0.02),
    "mcgen/strict": (0.05, 0.05),
    "mcgen/faithful": (7.62, 0.09),
    "class_marginals/strict": (0.05, 0.01),
}
#: A step missing from :data:`STEP_SECONDS` (a new miner): this many CPU seconds.
DEFAULT_STEP_SECONDS = (5.0, 0.2)


@dataclass(frozen=True)
class WarmupStep:
    """One warm-up run: ``action`` compiles (or loads) the kernels of one miner × mode.

    ``key`` is ``algorithm/mode`` (the :data:`STEP_SECONDS` key); ``family`` the mining
    family whose pages wait for it.
    """

    key: str
    label: str
    family: str
    action: Callable[[], None]

    def seconds(self, cold: bool) -> float:
        cold_s, cached_s = STEP_SECONDS.get(self.key, DEFAULT_STEP_SECONDS)
        return cold_s if cold else cached_s


def _redescription_steps() -> list[WarmupStep]:
    from dpcore.redescriptions.mining import mine
    from dpcore.redescriptions.params import plan_budget
    from dpcore.redescriptions.warmup import tiny_dataset, warmup_params

    data = tiny_dataset()
    steps = []
    for mode in MODES:
        for algorithm in ALGORITHMS:            # the miners (not the paid custom queries)
            params = warmup_params(algorithm, mode)

            def action(params=params) -> None:
                budget = sum(s.epsilon_nano for s in plan_budget(params))
                mine(data, params, rng=np.random.default_rng(0),
                     accountant=PrivacyAccountant(budget))

            steps.append(WarmupStep(f"{algorithm}/{mode}",
                                    f"{ALGORITHM_LABELS[algorithm]} ({mode})",
                                    REDESCRIPTIONS, action))
    return steps


def _registry_steps(family: str, data, make_params) -> list[WarmupStep]:
    """A step per algorithm × mode of ``family``, run through the registry's miner."""
    steps = []
    for key in family_algorithms(family):
        spec = ALGORITHM_SPECS[key]
        for mode in spec.modes:
            params = make_params(spec, key, mode)
            miner = spec.resolve("miner")

            def action(params=params, miner=miner, spec=spec) -> None:
                budget = sum(s.epsilon_nano for s in spec.resolve("plan")(params))
                miner(data, params, rng=np.random.default_rng(0),
                      accountant=PrivacyAccountant(budget), run_id=None, seed=None,
                      progress=None)

            steps.append(WarmupStep(f"{key}/{mode}", f"{ALGORITHM_LABELS[key]} ({mode})",
                                    family, action))
    return steps


def _sequence_steps() -> list[WarmupStep]:
    from dpcore.sequences.samples import generate_clickstream

    data = generate_clickstream(300, seed=7, max_length=40, name="warm-up")
    return _registry_steps(SEQUENCES, data, lambda spec, key, mode: spec.resolve(
        "params_type")(algorithm=key, mode=mode, epsilon=10.0, theta=0.05))


def _synthesis_steps() -> list[WarmupStep]:
    from dpcore.synthesis.samples import generate_pima_like, pima_like_schema
    from dpcore.synthesis.table import table_from_frame

    data = table_from_frame(generate_pima_like(300, seed=7), pima_like_schema())
    return _registry_steps(SYNTHESIS, data, lambda spec, key, mode: spec.resolve(
        "params_type")(algorithm=key, mode=mode, epsilon=10.0))


_FAMILY_STEPS = {REDESCRIPTIONS: _redescription_steps, SEQUENCES: _sequence_steps,
                 SYNTHESIS: _synthesis_steps}


def family_steps(family: str) -> list[WarmupStep]:
    """The warm-up steps of one mining family (every algorithm × mode on tiny data)."""
    return _FAMILY_STEPS[family]()


def warmup_steps() -> list[WarmupStep]:
    """Every family's steps, redescriptions first (the app's main path)."""
    return [s for family in FAMILIES for s in family_steps(family)]


def _as_step(step) -> WarmupStep:
    """A :class:`WarmupStep`; a bare ``(label, action)`` pair counts for every family."""
    if isinstance(step, WarmupStep):
        return step
    label, action = step
    return WarmupStep(label, label, "", action)


@dataclass
class WarmupState:
    """Progress of the warm-up (written by its thread, read by the pages).

    ``seconds``: each step's expected CPU seconds on the reference machine; the estimate
    of the time left scales them by this machine's observed speed.
    """

    steps: list[WarmupStep]
    cold: bool
    done_keys: list[str] = field(default_factory=list)
    step: str = "starting"
    error: str | None = None
    finished: bool = False
    started: float = field(default_factory=time.monotonic)
    step_started: float | None = None
    ended: float | None = None
    #: Set by a page waiting for a family: its pending steps run next.
    wanted: str | None = None
    _current: WarmupStep | None = None

    @property
    def total(self) -> int:
        return len(self.steps)

    @property
    def done(self) -> int:
        return len(self.done_keys)

    @property
    def ready(self) -> bool:
        """Every kernel is compiled (or the warm-up failed: runs then compile on first
        use)."""
        return self.finished

    def family_ready(self, family: str | None) -> bool:
        """The steps of ``family`` (None: all) are done, or the warm-up has ended."""
        if self.finished or family is None:
            return self.finished
        done = set(self.done_keys)
        return all(s.key in done for s in self.steps if s.family in (family, ""))

    @property
    def fraction(self) -> float:
        if self.finished:
            return 1.0
        total = sum(s.seconds(self.cold) for s in self.steps)
        done = set(self.done_keys)
        part = sum(s.seconds(self.cold) for s in self.steps if s.key in done)
        return part / total if total > 0 else 0.0

    def seconds_left(self, now: float | None = None, family: str | None = None) -> float:
        """Estimated seconds until every step (or every step of ``family``) is done.

        Expected CPU seconds of the steps left, times this machine's pace: the wall
        seconds the finished steps took per expected second (1 before any step ends),
        raised to the running step's own pace once it overruns its expectation.
        """
        if self.finished:
            return 0.0
        now = time.monotonic() if now is None else now
        done = set(self.done_keys)
        expected_done = sum(s.seconds(self.cold) for s in self.steps if s.key in done)
        step_start = self.step_started if self.step_started is not None else self.started
        pace = (step_start - self.started) / expected_done if expected_done > 0 else 1.0
        pace = max(pace, 0.05)
        in_step = max(0.0, now - step_start)
        current = self._current
        if current is not None:
            expected_now = current.seconds(self.cold)
            if expected_now > 0:
                pace = max(pace, in_step / expected_now)
        left = 0.0
        if current is not None:
            left += max(0.0, current.seconds(self.cold) * pace - in_step)
        for s in self.steps:
            if s.key in done or s is current:
                continue
            if family is None or s.family in (family, ""):
                left += s.seconds(self.cold) * pace
        return max(1.0, left)


def _cache_is_cold() -> bool:
    """Whether the numba cache folder holds no compiled kernel yet (a first start)."""
    try:
        from numba.core.config import CACHE_DIR
        folder = Path(CACHE_DIR) if CACHE_DIR else None
        return folder is None or not any(folder.rglob("*.nbi"))
    except Exception:  # noqa: BLE001 - only an estimate
        return True


def _next_step(state: WarmupState) -> WarmupStep | None:
    done = set(state.done_keys)
    pending = [s for s in state.steps if s.key not in done]
    if not pending:
        return None
    wanted = [s for s in pending if state.wanted and s.family == state.wanted]
    return (wanted or pending)[0]


def run_warmup(state: WarmupState, steps: Sequence | None = None) -> None:
    """Run the steps (those of ``state`` unless given), recording progress in ``state``;
    a family a page waits for (``state.wanted``) goes first. A failure ends the warm-up:
    the kernels then compile on first use."""
    if steps is not None:
        state.steps = [_as_step(s) for s in steps]
    try:
        while (step := _next_step(state)) is not None:
            state.step, state._current = step.label, step
            state.step_started = time.monotonic()
            step.action()
            state.done_keys.append(step.key)
    except Exception as exc:  # noqa: BLE001 - a failed warm-up must not stop the app
        _log.exception("numba warm-up failed")
        state.error = f"{type(exc).__name__}: {exc}"
    finally:
        state._current = None
        state.ended = time.monotonic()
        state.finished = True


@st.cache_resource(show_spinner=False)
def _warmup_once() -> WarmupState:
    """Start the warm-up thread once per server process; return its shared state."""
    state = WarmupState(steps=[_as_step(s) for s in warmup_steps()], cold=_cache_is_cold())
    threading.Thread(target=run_warmup, args=(state,), name="dprm-warmup",
                     daemon=True).start()
    return state


def warmup_state() -> WarmupState:
    """The warm-up's state, starting it if it has not started in this process; never
    waits for it."""
    return _warmup_once()


def start_warmup() -> WarmupState:
    """Start the warm-up if it has not started in this process; never waits."""
    return warmup_state()


def _family_label(family: str | None) -> str:
    return {REDESCRIPTIONS: "redescription", SEQUENCES: "frequent-sequence",
            SYNTHESIS: "synthetic-data"}.get(family or "", "mining")


def progress_text(state: WarmupState, family: str | None = None) -> str:
    """The progress line: what compiles, how many steps are done, about how long is left."""
    if state.finished:
        return ("Mining engine ready." if state.error is None else
                "The mining engine warm-up failed; runs compile on first use.")
    what = ("compiling the mining kernels (first start of the server)" if state.cold
            else "loading the compiled mining kernels")
    left = state.seconds_left(family=family)
    left_text = f"{left:.0f} s" if left < 90 else f"{left / 60:.0f} min"
    return (f"Preparing the mining engine — {what}: step {min(state.done + 1, state.total)} "
            f"of {state.total} ({state.step}), about {left_text} left for the "
            f"{_family_label(family)} miners. The Data, Explore and Runs pages work "
            "meanwhile.")


def render_warmup_progress(what: str = "Launch", family: str | None = REDESCRIPTIONS
                           ) -> bool:
    """On a page that mines: True when ``family``'s kernels are ready (default: the
    redescription miners'); else move that family to the front of the warm-up, show the
    progress (it refreshes itself and reruns the page when done) and return False, so the
    caller keeps ``what`` disabled."""
    state = warmup_state()
    if state.family_ready(family):
        return True
    state.wanted = family
    _progress_fragment(what, family)
    return False


@st.fragment(run_every=1.0)
def _progress_fragment(what: str, family: str | None) -> None:
    state = warmup_state()
    if state.family_ready(family):
        st.rerun(scope="app")                 # enable what waited for the kernels
    st.progress(state.fraction, text=progress_text(state, family))
    st.caption(f"{what} is available as soon as the kernels are ready; nothing is charged "
               "meanwhile.")
