"""The generic background-job registry (components/common/jobs.py) and the Mine page's use of it."""

from __future__ import annotations

import threading
import time

import pytest

from components.common import jobs
from dpcore.errors import BudgetExceededError, DataError, DpcoreError, ParameterError
from dpcore.runs import RunInProgressError, new_run_id


def _wait(job: jobs.Job, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not job.done:
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.01)


def test_a_job_reports_progress_and_keeps_its_outcome():
    gate = threading.Event()
    seen = threading.Event()

    def work(progress):
        progress(0.5, "level 1 of 2")
        seen.set()
        gate.wait(5)
        return {"patterns": 3}

    run_id = new_run_id()
    job = jobs.start_job(jobs.Job(run_id=run_id, dataset="d"), work)
    assert seen.wait(5)
    assert (job.fraction, job.message, job.done) == (0.5, "level 1 of 2", False)
    assert jobs.get_job(run_id) is job
    gate.set()
    _wait(job)
    assert job.ok and job.outcome == {"patterns": 3} and job.error_kind is None
    jobs.forget_job(run_id)
    assert jobs.get_job(run_id) is None


def test_the_same_run_id_starts_its_work_once():
    calls = []
    gate = threading.Event()

    def work(progress):
        calls.append(1)
        gate.wait(5)
        return len(calls)

    run_id = new_run_id()
    first = jobs.start_job(jobs.Job(run_id=run_id, dataset="d"), work)
    second = jobs.start_job(jobs.Job(run_id=run_id, dataset="d"), work)
    assert second is first
    gate.set()
    _wait(first)
    assert calls == [1] and first.outcome == 1
    jobs.forget_job(run_id)


@pytest.mark.parametrize("exc, kind", [
    (BudgetExceededError(1.0, 0.5), "budget"),
    (RunInProgressError("run x is charged"), "in_progress"),
    (DataError("bad row"), "data"),
    (ParameterError("θ must lie in (0, 1)"), "parameter"),
    (DpcoreError("refused"), "error"),
    (ZeroDivisionError("boom"), "crash"),
])
def test_how_a_job_ended_is_classified(exc, kind):
    def work(progress):
        raise exc

    job = jobs.start_job(jobs.Job(run_id=new_run_id(), dataset="d"), work)
    _wait(job)
    assert job.done and not job.ok and job.outcome is None
    assert job.error_kind == kind == jobs.error_kind(exc)
    if kind == "crash":
        assert job.error == "ZeroDivisionError: boom"
    else:
        assert job.error == str(exc)
    jobs.forget_job(job.run_id)


def test_the_mine_page_jobs_are_registry_jobs():
    from components.redescriptions import launcher

    job = launcher.Job(run_id=new_run_id(), dataset="clinic", trial_bars=2)
    assert isinstance(job, jobs.Job) and job.n_redescriptions is None
    job.outcome = 7
    assert job.n_redescriptions == 7
    assert launcher.get_job is jobs.get_job


# --------------------------------------------------------------------------- after a job
# One message per way a run ends badly, shared by the Mine, Sequences and Synthesis
# launchers; none of them may show a server path.

@pytest.fixture
def ledger(tmp_path, monkeypatch):
    from dpcore.privacy.ledger import Ledger

    monkeypatch.setenv("DPRM_DATA_DIR", str(tmp_path / "uploads"))
    return Ledger(tmp_path / "state" / "ledger.sqlite")


@pytest.mark.parametrize("kind, opening", [
    ("budget", "Refused by the ledger: "),
    ("in_progress", ""),
    ("parameter", "The run was refused: "),
    ("error", "The run failed: "),
    ("crash", "The run failed: "),
])
def test_a_failure_message_names_the_file_without_its_server_path(ledger, tmp_path, kind,
                                                                  opening):
    error = (f"OSError: cannot read '{tmp_path / 'srv' / 'private' / 'visits.csv'}' nor "
             f"'{tmp_path / 'uploads' / 'mine' / 'left.csv'}'")
    shown = jobs.failure_message(kind, error, ledger, show_data_detail=True, where="here")
    assert shown.startswith(opening + "OSError: cannot read 'visits.csv'")
    assert "'upload folder/mine/left.csv'" in shown
    assert str(tmp_path) not in shown and "/srv/" not in shown
    if kind == "in_progress":
        assert shown.endswith("Its result will appear here when it is stored.")


def test_a_data_failure_is_detailed_only_to_who_may_see_the_data(ledger, tmp_path):
    error = f"line 7 of file '{tmp_path / 'hidden' / 'labs.csv'}': 'n/a?' is not a number"
    owner = jobs.failure_message("data", error, ledger, show_data_detail=True, where="here")
    assert owner == ("The data could not be loaded; nothing was charged (line 7 of file "
                     "'labs.csv': 'n/a?' is not a number).")
    analyst = jobs.failure_message("data", error, ledger, show_data_detail=False,
                                   where="here")
    assert analyst == ("The data could not be loaded; nothing was charged "
                       f"({jobs.DATA_DETAIL_HIDDEN}).")


def test_every_launcher_reports_failures_through_the_shared_message():
    """The three launchers hold no message table, confirm step, ledger loop, cost line or
    launch blockers of their own."""
    import inspect

    from components.redescriptions import launcher
    from components.sequences import sequence_launch
    from components.synthesis import synthesis_launch

    for module in (launcher, sequence_launch, synthesis_launch):
        source = inspect.getsource(module)
        assert "failure_message(" in source and "follow_in_ledger(" in source
        assert 'error_kind == "budget"' not in source and "ledger.get_run(" not in source
        for shared in ("render_launch_button(", "render_confirm(", "render_running_caption(",
                       "launch_blockers(", "render_launch_gate("):
            assert shared in source, (module.__name__, shared)
        # one implementation of the cost line and the blockers (components/common/family_ui)
        for own in ("def cost_breakdown", "def cost_text", "def launch_blockers",
                    "Launch disabled", "cost_text("):
            assert own not in source, (module.__name__, own)
        assert "Confirm and run" not in source and "new_run_id()" not in source


def _confirm_script():
    """A launcher in miniature: the confirm step, then (confirmed) a run's progress line."""
    import streamlit as st

    from components.common import jobs
    from dpcore.privacy.ledger import DatasetRecord

    record = DatasetRecord.__new__(DatasetRecord)
    object.__setattr__(record, "name", "clinic")
    st.session_state.setdefault("launch", {"stage": "confirm", "run_id": "r" * 32,
                                           "cost_nano": 2_000_000_000})
    if jobs.render_confirm("MCMCTreePair", record, st.session_state["launch"],
                           launch_key="launch", key_prefix="t"):
        st.progress(0.5, text="running")


def test_a_confirmed_launch_leaves_no_question_above_its_progress():
    """Issue 32, point 13: the "Spend ε …?" box and its buttons stood above the progress
    of the run they had started (and, in the browser, above its finished result)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_confirm_script).run()
    assert [w.value for w in at.warning][0].startswith("Spend **ε = 2**")
    assert [b.label for b in at.button] == ["Confirm and run", "Cancel"]
    at.button(key="t_confirm").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [p.proto.text for p in at.get("progress")] == ["running"]
    assert not at.warning and not at.button
