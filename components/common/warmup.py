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

On a first start (empty numba cache) on a machine with more than one core, the steps are
compiled by worker processes (:mod:`components.common.warmup_worker`, one per core, at most
:data:`MAX_COMPILE_WORKERS`): numba compiles under one lock per process, so threads cannot
share the work, but processes can, and they write the kernels to the shared numba cache.
Steps that share kernels (one *compile group*: a family's algorithms with the same
parameter type and privacy mode) stay on one worker, so few kernels compile twice. As each
worker finishes a step, the server runs that step itself, which now only loads the kernels
from the cache, and only then counts it done. A worker that fails or dies leaves its steps
to the server, which compiles them itself as before.

The time left is estimated from each step's measured compile CPU
(:data:`STEP_SECONDS`, cold and cached), scaled by how fast the steps done so far went
on this machine; a step that overruns its share raises the estimate of every step after
it, so a loaded machine shows a growing estimate rather than "1 s left" for minutes.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit as st

from dpcore.family import algorithm as algorithm_impl
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.registry import ALGORITHM_LABELS, ALGORITHM_SPECS, REDESCRIPTIONS, family_algorithms

from .family_ui import family_ui, family_uis

__all__ = ["WarmupStep", "WarmupState", "STEP_SECONDS", "MAX_COMPILE_WORKERS",
           "compile_group", "compile_workers", "registry_steps", "family_steps",
           "warmup_steps", "run_warmup", "start_warmup", "warmup_state", "progress_text",
           "render_warmup_progress"]

_log = logging.getLogger(__name__)

#: CPU seconds of each warm-up step (``algorithm/mode``) in the order of
#: :func:`warmup_steps`: (empty numba cache, filled cache), measured by
#: ``python -m bench.compile_times --warmup`` on a quiet 2-core machine (load ≈ 1, 2026-11-29;
#: bench/README.md; a busier machine is slower, which the observed pace corrects). A step's
#: cold figure is what it compiles that the steps before it did not (at least 0.05 s).
STEP_SECONDS: dict[str, tuple[float, float]] = {
    "mcmctreepair/strict": (49.90, 0.84),
    "altmcmc/strict": (8.10, 0.06),
    "altexpm/strict": (8.90, 0.04),
    "serenade_es/strict": (10.60, 0.14),
    "serenade_cs/strict": (0.05, 0.01),
    "mcmctreepair/faithful": (26.60, 0.08),
    "altmcmc/faithful": (3.80, 0.06),
    "altexpm/faithful": (0.05, 0.01),
    "serenade_es/faithful": (0.05, 0.04),
    "serenade_cs/faithful": (0.05, 0.03),
    # the intervals' bootstrap kernel alone, fresh cache (load 2–4, 2026-11-29: 19.6–20.5 s)
    "intervals/bootstrap": (20.00, 0.80),
    "pfs2/strict": (24.40, 0.09),
    "pfs2/faithful": (17.40, 0.05),
    "pfs2_straightforward/strict": (0.05, 0.02),
    "pfs2_straightforward/faithful": (0.05, 0.01),
    "mcgen/strict": (0.05, 0.03),
    "mcgen/faithful": (7.90, 0.07),
    "class_marginals/strict": (0.05, 0.01),
}
#: A step missing from :data:`STEP_SECONDS` (a new miner): this many CPU seconds.
DEFAULT_STEP_SECONDS = (5.0, 0.2)
#: At most this many compile worker processes on a first start (one per core up to it).
MAX_COMPILE_WORKERS = 2
_REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class WarmupStep:
    """One warm-up run: ``action`` compiles (or loads) the kernels of one miner × mode.

    ``key`` is ``algorithm/mode`` (the :data:`STEP_SECONDS` key); ``family`` the mining
    family whose pages wait for it; ``group`` the steps sharing its kernels
    (:func:`compile_group`; empty: the family), which one compile worker takes together.
    """

    key: str
    label: str
    family: str
    action: Callable[[], None]
    group: str = ""

    @property
    def compile_group(self) -> str:
        return self.group or self.family

    def seconds(self, cold: bool) -> float:
        cold_s, cached_s = STEP_SECONDS.get(self.key, DEFAULT_STEP_SECONDS)
        return cold_s if cold else cached_s


def compile_group(family: str, params, mode: str) -> str:
    """The compile group of a step: its family, parameter type and privacy mode. The
    algorithms of one family with one parameter type run mostly the same kernels (e.g. the
    three tree miners); the two modes mostly different ones (strict draws exact discrete
    noise, faithful the paper's floating-point noise), so they may compile side by side."""
    return f"{family}:{type(params).__name__}:{mode}"


def registry_steps(family: str, data, make_params) -> list[WarmupStep]:
    """A step per algorithm × mode of ``family``: its ``run`` (prepare, then mine) on
    ``data`` with ``make_params(spec, key, mode)``, under a throwaway accountant."""
    steps = []
    for key in family_algorithms(family):
        spec, algorithm = ALGORITHM_SPECS[key], algorithm_impl(key)
        for mode in spec.modes:
            params = make_params(spec, key, mode)

            def action(params=params, algorithm=algorithm) -> None:
                budget = sum(s.epsilon_nano for s in algorithm.plan(params))
                algorithm.run(data, params, rng=np.random.default_rng(0),
                              accountant=PrivacyAccountant(budget))

            steps.append(WarmupStep(f"{key}/{mode}", f"{ALGORITHM_LABELS[key]} ({mode})",
                                    family, action, compile_group(family, params, mode)))
    return steps


def family_steps(family: str) -> list[WarmupStep]:
    """The warm-up steps of one mining family (every algorithm × mode on tiny data)."""
    return family_ui(family).warmup_steps()


def warmup_steps() -> list[WarmupStep]:
    """Every family's steps, in navigation order (redescriptions first: the app's main
    path)."""
    return [s for ui in family_uis().values() for s in ui.warmup_steps()]


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
    of the time left scales them by this machine's observed speed. ``running``: the steps
    being compiled now with their start (``time.monotonic``); ``durations``: the wall
    seconds each finished step took; ``workers``: how many steps compile at once.
    """

    steps: list[WarmupStep]
    cold: bool
    done_keys: list[str] = field(default_factory=list)
    error: str | None = None
    finished: bool = False
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    #: Set by a page waiting for a family: its pending steps run next.
    wanted: str | None = None
    running: list[tuple[WarmupStep, float]] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    workers: int = 1

    @property
    def total(self) -> int:
        return len(self.steps)

    @property
    def done(self) -> int:
        return len(self.done_keys)

    @property
    def step(self) -> str:
        """What compiles now (the running steps' labels)."""
        running = list(self.running)
        return " and ".join(s.label for s, _ in running) if running else "starting"

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
        raised to a running step's own pace once it overruns its expectation. Every step
        left is divided among the workers; a family's steps are not (its kernels compile
        on one worker).
        """
        if self.finished:
            return 0.0
        now = time.monotonic() if now is None else now
        done = set(self.done_keys)
        expected_done = sum(s.seconds(self.cold) for s in self.steps if s.key in self.durations)
        pace = sum(self.durations.values()) / expected_done if expected_done > 0 else 1.0
        pace = max(pace, 0.05)
        running = list(self.running)
        for step, started in running:
            expected_now = step.seconds(self.cold)
            if expected_now > 0:
                pace = max(pace, (now - started) / expected_now)
        counted = (lambda s: True) if family is None else (lambda s: s.family in (family, ""))
        left = sum(max(0.0, step.seconds(self.cold) * pace - (now - started))
                   for step, started in running if counted(step))
        running_keys = {step.key for step, _ in running}
        left += sum(s.seconds(self.cold) * pace for s in self.steps
                    if s.key not in done and s.key not in running_keys and counted(s))
        lanes = max(1, self.workers) if family is None else 1
        return max(1.0, left / lanes)


def _cache_is_cold() -> bool:
    """Whether the numba cache folder holds no compiled kernel yet (a first start)."""
    try:
        from numba.core.config import CACHE_DIR
        folder = Path(CACHE_DIR) if CACHE_DIR else None
        return folder is None or not any(folder.rglob("*.nbi"))
    except Exception:  # noqa: BLE001 - only an estimate
        return True


def _wanted_first(state: WarmupState, candidates: list[WarmupStep]) -> WarmupStep | None:
    wanted = [s for s in candidates if state.wanted and s.family == state.wanted]
    return (wanted or candidates or [None])[0]


def _pending(state: WarmupState) -> list[WarmupStep]:
    taken = set(state.done_keys) | {s.key for s, _ in state.running}
    return [s for s in state.steps if s.key not in taken]


def _next_step(state: WarmupState) -> WarmupStep | None:
    return _wanted_first(state, _pending(state))


def _next_step_for(state: WarmupState, own: set[str], taken: set[str]) -> WarmupStep | None:
    """The next step for a compile worker owning the groups ``own`` (``taken``: every
    worker's): the wanted family first, then its own groups, then a group nobody has."""
    pending = _pending(state)
    mine = [s for s in pending if s.compile_group in own]
    free = [s for s in pending if s.compile_group not in taken]
    for candidates in ([s for s in mine + free if state.wanted and s.family == state.wanted],
                       mine, free):
        if candidates:
            return candidates[0]
    return None


def _run_step(state: WarmupState, step: WarmupStep) -> None:
    """Run ``step`` in this process and count it done."""
    entry = (step, time.monotonic())
    state.running.append(entry)
    try:
        step.action()
    finally:
        state.running.remove(entry)
    state.durations.setdefault(step.key, time.monotonic() - entry[1])
    state.done_keys.append(step.key)


def compile_workers() -> int:
    """How many compile worker processes a first start uses (1: compile in the server)."""
    return max(1, min(MAX_COMPILE_WORKERS, os.cpu_count() or 1))


class _Workers:
    """The compile worker processes and the queue their output lines arrive on."""

    def __init__(self, n: int):
        self.events: queue.Queue = queue.Queue()
        self.procs = []
        try:
            for i in range(n):
                proc = subprocess.Popen(
                    [sys.executable, "-m", "components.common.warmup_worker"],
                    cwd=_REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, text=True, bufsize=1)
                threading.Thread(target=self._forward, args=(i, proc.stdout), daemon=True,
                                 name=f"dprm-warmup-worker-{i}").start()
                self.procs.append(proc)
        except OSError:
            self.close()                  # the ones that started end at end of input
            raise

    def _forward(self, i: int, stream) -> None:
        with stream:
            for line in stream:
                self.events.put((i, line.strip()))
        self.events.put((i, None))                       # the worker ended

    def send(self, i: int, key: str) -> bool:
        try:
            self.procs[i].stdin.write(key + "\n")
            self.procs[i].stdin.flush()
            return True
        except OSError:
            return False

    def close(self) -> None:
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:                          # each ends at end of input
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _compile_in_workers(state: WarmupState, n: int) -> None:
    """Have ``n`` worker processes compile the steps into the numba cache; as each step
    ends there, run it here (a cache load) and count it done. A worker that fails a step
    or dies gets no more work; what it left is done by the caller in this process."""
    workers = _Workers(n)
    state.workers = n
    own: list[set[str]] = [set() for _ in range(n)]
    busy: dict[int, tuple[WarmupStep, float]] = {}
    alive = set(range(n))
    try:
        while True:
            for i in sorted(alive - set(busy)):
                taken = set().union(*own)
                step = _next_step_for(state, own[i], taken)
                if step is None:
                    continue
                if not workers.send(i, step.key):
                    alive.discard(i)
                    own[i].clear()
                    continue
                own[i].add(step.compile_group)
                busy[i] = (step, time.monotonic())
                state.running.append(busy[i])
            if not busy:
                return
            i, line = workers.events.get()
            if i not in busy:
                continue
            entry = busy.pop(i)
            state.running.remove(entry)
            verb, _, rest = (line or "").partition(" ")
            key, _, seconds = rest.partition(" ")
            if verb != "done" or key != entry[0].key:
                alive.discard(i)                         # failed or died: no more work
                own[i].clear()
                _log.warning("warm-up worker %d stopped at %s: %s", i, entry[0].key, line)
                continue
            state.durations[key] = float(seconds)
            _run_step(state, entry[0])                   # loads what the worker compiled
    finally:
        state.workers = 1
        workers.close()


def run_warmup(state: WarmupState, steps: Sequence | None = None, *,
               workers: int | None = None) -> None:
    """Run the steps (those of ``state`` unless given), recording progress in ``state``;
    a family a page waits for (``state.wanted``) goes first. On a cold cache with
    ``workers`` > 1 (default :func:`compile_workers`), worker processes compile first.
    A failure ends the warm-up: the kernels then compile on first use."""
    if steps is not None:
        state.steps = [_as_step(s) for s in steps]
    workers = compile_workers() if workers is None else workers
    try:
        if state.cold and workers > 1:
            try:
                _compile_in_workers(state, workers)
            except OSError:
                _log.exception("warm-up workers could not start; compiling here")
        while (step := _next_step(state)) is not None:
            _run_step(state, step)
    except Exception as exc:  # noqa: BLE001 - a failed warm-up must not stop the app
        _log.exception("numba warm-up failed")
        state.error = f"{type(exc).__name__}: {exc}"
    finally:
        state.running.clear()
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
    ui = family_uis().get(family or "")
    return ui.miners_noun if ui is not None else "mining"


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
