"""Runs charged without a result (their process was killed): say so, and finish them.

A server restart, a killed CLI or a crashed machine leaves a run ``charged`` with no stored
result: its budget is spent and nothing was released. This says "charged, no result" on
the pages that show runs and offers **Finish at no further cost**:
:func:`dpcore.runs.finish_charged_run` mines it again under the same run id with its
recorded parameters, charging nothing (the privacy argument is in docs/PRIVACY.md, §5, "A
run killed before its result was stored"). A run that this server process is mining right
now has a job (:mod:`components.common.jobs`) and is not offered.

Nothing here is a DP release: run metadata (public) and, once stored, the run's result is
read by the pages as any other.
"""

from __future__ import annotations

import time

import streamlit as st

from dpcore.privacy.ledger import DatasetRecord, Ledger, RunRecord
from dpcore.privacy.policy import Requester, can_read
from dpcore.privacy.roles import OWNER
from dpcore.registry import ALGORITHM_LABELS
from dpcore.runs import finish_charged_run

from . import jobs
from .budget_meter import fmt_eps
from .session import can_see_truth, current_requester, set_flash

__all__ = ["NO_RESULT", "unfinished_runs", "status_text", "render_unfinished_runs"]

#: How a run charged without a result (and not running here) is called.
NO_RESULT = "charged, no result"


def _running_here(run_id: str) -> bool:
    job = jobs.get_job(run_id)
    return job is not None and not job.done


def unfinished_runs(ledger: Ledger, dataset: str, requester: Requester) -> list[RunRecord]:
    """The dataset's runs charged without a stored result that no job of this server
    process is mining, whose result ``requester`` may read and which it may finish: its
    own account's runs, or any for the owner (newest first)."""
    return [r for r in reversed(ledger.list_runs(dataset))
            if r.status == "charged" and can_read(r.audience, requester.role)
            and (requester.role == OWNER or r.account == requester.account)
            and not _running_here(r.run_id) and not ledger.has_result(r.run_id)]


def status_text(run: RunRecord) -> str:
    """A run's status as the Runs page shows it (``charged`` alone reads like success)."""
    if run.status == "charged" and not _running_here(run.run_id):
        return NO_RESULT
    return "running" if run.status == "charged" else run.status


def _finish_job(ledger: Ledger, run: RunRecord, requester: Requester) -> jobs.Job:
    def work(progress) -> str:
        finish_charged_run(ledger, run.run_id, requester, progress=progress)
        return run.run_id

    return jobs.start_job(jobs.Job(run_id=run.run_id, dataset=run.dataset,
                                   message="drawing again, no new charge…"), work)


def render_unfinished_runs(ledger: Ledger, record: DatasetRecord, *, key: str) -> None:
    """A warning per unfinished run of ``record`` with a Finish button; the progress of one
    being finished here. ``key`` keeps the buttons apart per page."""
    requester = current_requester()
    for run in reversed(ledger.list_runs(record.name)):
        job = jobs.get_job(run.run_id)
        if run.status == "charged" and job is not None and not job.done \
                and job.message.startswith("drawing again"):
            bar = st.progress(0.0, text=f"Finishing run `{run.run_id[:8]}`…")
            while not job.done:
                bar.progress(min(1.0, max(0.0, job.fraction)),
                             text=f"Finishing run `{run.run_id[:8]}`: {job.message}")
                time.sleep(0.3)
            if job.ok:
                set_flash("success", f"Run `{run.run_id[:8]}` is finished and stored, at no "
                                     "further cost.")
            else:
                set_flash("error", jobs.failure_message(
                    job.error_kind, job.error, ledger, show_data_detail=can_see_truth(record),
                    where="on the Runs page"))
            st.rerun()
    for run in unfinished_runs(ledger, record.name, requester):
        label = ALGORITHM_LABELS.get(run.algorithm, run.algorithm)
        st.warning(
            f"Run `{run.run_id[:8]}` ({label}, ε = {fmt_eps(run.epsilon)}, started "
            f"{run.created_at[:16].replace('T', ' ')}) is **{NO_RESULT}**: its process "
            "stopped before the result was stored, so its budget is spent and nothing was "
            "released. You can finish it at no further cost: the same run id and "
            "parameters, drawn again (the stopped attempt showed nothing).",
            icon=":material/hourglass_disabled:")
        if st.button("Finish at no further cost", key=f"{key}_finish_{run.run_id}"):
            _finish_job(ledger, run, requester)
            st.rerun()
