"""The warm-up's compile workers (issue 32: the app launches every miner within 60 s of a
first start): steps sharing kernels stay on one worker, the family a page waits for goes
first, the server counts a step done only after loading it itself, and a worker that fails
or dies leaves its steps to the server."""

from __future__ import annotations

import io
import queue
import threading

import pytest

from components.common import warmup
from components.common.warmup import WarmupState, WarmupStep, run_warmup
from components.common.warmup_worker import serve


class FakeWorkers:
    """In-thread stand-ins for the worker processes: each runs a step's ``compile``
    callable for the keys it is sent and answers like ``warmup_worker.serve``."""

    instances: list[FakeWorkers] = []

    def __init__(self, n: int, compile_step, broken=()):
        self.events = queue.Queue()
        self.sent = {i: [] for i in range(n)}
        self.compile_step, self.broken = compile_step, set(broken)
        FakeWorkers.instances.append(self)

    def send(self, i: int, key: str) -> bool:
        self.sent[i].append(key)

        def answer():
            if i in self.broken:
                self.events.put((i, None))               # the process died
                return
            seconds = self.compile_step(i, key)
            self.events.put((i, f"done {key} {seconds}"))
        threading.Thread(target=answer).start()
        return True

    def close(self) -> None:
        pass


def _steps(log):
    """Two families; "fam1" has two compile groups (like tree miners vs Serenade)."""
    def step(key, family, group):
        return WarmupStep(key, key, family, lambda: log.append(("server", key)), group)
    return [step("t1/s", "fam1", "fam1:T"), step("s1/s", "fam1", "fam1:S"),
            step("t2/s", "fam1", "fam1:T"), step("s2/s", "fam1", "fam1:S"),
            step("p/s", "fam2", "fam2:P"), step("t1/f", "fam1", "fam1:T")]


def _use_fakes(monkeypatch, broken=()):
    log = []

    def compile_step(i, key):
        log.append((i, key))
        return 0.5
    monkeypatch.setattr(warmup, "_Workers",
                        lambda n: FakeWorkers(n, compile_step, broken))
    return log


def test_groups_stay_on_one_worker_and_the_server_loads_each_step_after_it(monkeypatch):
    compiled = _use_fakes(monkeypatch)
    served = []
    state = WarmupState(steps=_steps(served), cold=True)
    run_warmup(state, workers=2)
    assert state.ready and state.error is None and sorted(state.done_keys) == sorted(
        s.key for s in state.steps)
    sent = FakeWorkers.instances[-1].sent
    groups = [{next(s.compile_group for s in state.steps if s.key == k) for k in keys}
              for keys in sent.values()]
    assert not groups[0] & groups[1]                     # no group compiled twice
    assert {"fam1:T"} <= groups[0] and "fam1:S" in groups[1]
    assert len(compiled) == len(state.steps)             # each step compiled once, by a worker
    assert [k for _, k in served] == state.done_keys     # then loaded here, and only then done
    assert state.durations["t1/s"] == 0.5 and state.workers == 1 and not state.running


def test_the_family_a_page_waits_for_goes_to_the_next_free_worker(monkeypatch):
    _use_fakes(monkeypatch)
    state = WarmupState(steps=_steps([]), cold=True)
    state.wanted = "fam2"
    run_warmup(state, workers=2)
    first = [keys[0] for keys in FakeWorkers.instances[-1].sent.values()]
    assert "p/s" in first


def test_a_dead_worker_leaves_its_steps_to_the_server(monkeypatch):
    compiled = _use_fakes(monkeypatch, broken={1})
    served = []
    state = WarmupState(steps=_steps(served), cold=True)
    run_warmup(state, workers=2)
    assert state.ready and state.error is None
    assert sorted(state.done_keys) == sorted(s.key for s in state.steps)
    assert all(i == 0 for i, _ in compiled)
    assert len(FakeWorkers.instances[-1].sent[1]) == 1    # it got one step, then nothing


def test_a_warm_cache_or_one_core_compiles_in_the_server(monkeypatch):
    def no_workers(n):
        raise AssertionError("no worker expected")
    monkeypatch.setattr(warmup, "_Workers", no_workers)
    for cold, workers in ((False, 2), (True, 1)):
        served = []
        state = WarmupState(steps=_steps(served), cold=cold)
        run_warmup(state, workers=workers)
        assert state.ready and state.error is None and len(served) == 6


def test_parallel_estimate_divides_the_work_left_among_the_workers(monkeypatch):
    monkeypatch.setattr(warmup, "STEP_SECONDS", {"a/x": (10.0, 1.0), "b/x": (30.0, 1.0),
                                                 "c/y": (20.0, 1.0)})
    steps = [WarmupStep("a/x", "a", "f1", lambda: None), WarmupStep("b/x", "b", "f1",
                                                                   lambda: None),
             WarmupStep("c/y", "c", "f2", lambda: None)]
    state = WarmupState(steps=steps, cold=True, started=0.0, workers=2)
    state.running += [(steps[0], 0.0), (steps[2], 0.0)]
    assert state.step == "a and c"
    assert state.seconds_left(now=0.0) == pytest.approx(60.0 / 2)
    assert state.seconds_left(now=0.0, family="f1") == pytest.approx(40.0)


def test_the_worker_answers_each_step_and_names_an_unknown_one():
    answers = io.StringIO()
    assert serve(io.StringIO("class_marginals/strict\n\nno-such/step\n"), answers) == 0
    lines = answers.getvalue().splitlines()
    assert lines[0].startswith("done class_marginals/strict ")
    assert float(lines[0].split()[2]) >= 0
    assert lines[1].startswith("error no-such/step KeyError")


@pytest.mark.slow
def test_a_real_worker_process_compiles_a_step_and_ends_when_stdin_closes():
    workers = warmup._Workers(1)
    try:
        assert workers.send(0, "class_marginals/strict")
        i, line = workers.events.get(timeout=300)
        assert i == 0 and line.startswith("done class_marginals/strict ")
    finally:
        workers.close()
    assert workers.procs[0].returncode == 0
    assert workers.events.get(timeout=10) == (0, None)
