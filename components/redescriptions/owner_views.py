"""Owner & teaching views: true statistics beside the noisy ones (NOT private).

Shown only when :func:`dpcore.privacy.roles.can_see_true_statistics` allows it: to the
owner, or to everyone on a ``public_demo`` dataset. Otherwise the page shows an
explanation and nothing derived from raw data.

* true vs noisy Jaccard, coloured by true significance, kept/pruned marked (paper Fig. 2);
* true-Jaccard histograms of pruned vs kept redescriptions (Fig. 4);
* MCMC convergence: the chains' score traces (Fig. 8), from the owner-only diagnostics;
  for Serenade runs instead the true quality f of each chosen extension per round and
  the final true quality per initial pair (also owner-only diagnostics), and the
  time each phase took;
* the ledger's audit log (owner only);
* an ε trade-off demo: one algorithm at ε = 0.01 / 0.1 / 1, charged to a fresh
  SANDBOX budget (:meth:`dpcore.privacy.ledger.Ledger.create_sandbox`), never the real one.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.data.dataset import TwoViewDataset
from dpcore.errors import DataError, DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.units import nano_to_epsilon
from dpcore.redescriptions.evaluate import TrueStatistics, evaluate
from dpcore.redescriptions.results import RunResult
from dpcore.registry import ALGORITHM_LABELS, ALGORITHMS, SERENADE_ALGORITHMS
from dpcore.runs import load_result, new_run_id, run_cost

from ..common.budget_meter import fmt_eps
from ..common.data_locations import hide_server_paths
from ..common.session import can_see_truth, current_requester, current_role, is_owner, load_data
from ..common.warmup import render_warmup_progress
from .explore_view import done_runs, get_threshold, two_view_only
from .launcher import get_job, start_job
from .params_form import demo_seed_from_state, params_from_state
from .scatter import KEPT_COLOR, PRUNED_COLOR, THRESHOLD_COLOR, run_label

__all__ = ["TRADEOFF_EPSILONS", "SIGNIFICANCE", "render_teaching", "truth_frame",
           "true_vs_noisy_figure", "true_j_histograms", "score_trace_figure",
           "serenade_trace_figures", "phase_times_text", "audit_frame", "tradeoff_scatter",
           "FINAL_QUALITY_TRACE", "login_frame", "LOGIN_ROWS"]

TRADEOFF_EPSILONS = (0.01, 0.1, 1.0)
#: True p-value at or below which a redescription counts as truly significant.
SIGNIFICANCE = 0.01
_SIG_COLOR = "#2ca02c"
_NONSIG_COLOR = "#d62728"
#: Serenade's diagnostics trace holding the true quality of each redescription at the end.
FINAL_QUALITY_TRACE = "final true quality"

EXPLANATION = (
    "This page puts the released, noisy statistics next to exact values computed from the "
    "raw data, shows how the samplers converged, and lists the ledger's audit log. Exact "
    "values are not differentially private, so the page is open only to the data owner "
    "(log in from the sidebar) and, on public demo datasets (synthetic or public data), to "
    "everyone. On this dataset you see only differentially private outputs, on the other "
    "pages.")


# --------------------------------------------------------------------------- frames & figures

def truth_frame(result: RunResult, truth: list[TrueStatistics], threshold: float
                ) -> pd.DataFrame:
    """Noisy and true statistics per redescription, with the kept/pruned flag."""
    by_id = {t.id: t for t in truth}
    rows = []
    for red in result.redescriptions:
        t = by_id[red.id]
        rows.append({"id": red.id, "query": red.text, "noisy support": red.support_both,
                     "noisy J": red.jaccard, "true support": t.support_both,
                     "true J": t.jaccard, "true p": t.pvalue,
                     "truly significant": t.pvalue <= SIGNIFICANCE,
                     "kept": red.support_both >= threshold})
    return pd.DataFrame(rows)


def true_vs_noisy_figure(frame: pd.DataFrame, title: str = "") -> go.Figure:
    """True J (x) vs noisy J (y); colour = true significance, symbol = kept/pruned (Fig. 2)."""
    fig = go.Figure()
    for sig in (True, False):
        for kept in (True, False):
            part = frame[(frame["truly significant"] == sig) & (frame["kept"] == kept)]
            if part.empty:
                continue
            fig.add_trace(go.Scatter(
                x=list(part["true J"]), y=list(part["noisy J"]), mode="markers",
                name=f"{'significant' if sig else 'not significant'} (true p "
                     f"{'≤' if sig else '>'} {SIGNIFICANCE}), {'kept' if kept else 'pruned'}",
                marker=dict(color=_SIG_COLOR if sig else _NONSIG_COLOR,
                            symbol="circle" if kept else "diamond-open", size=9),
                text=list(part["query"]),
                hovertemplate="true J %{x:.3f}<br>noisy J %{y:.3f}<br>%{text}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="noisy = true",
                             line=dict(color="#999999", dash="dot")))
    fig.update_layout(title=title, height=420, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="true Jaccard", yaxis_title="noisy Jaccard",
                      legend=dict(orientation="h", y=-0.2))
    return fig


def true_j_histograms(frame: pd.DataFrame) -> go.Figure:
    """Histograms of the true Jaccard of pruned vs kept redescriptions (Fig. 4)."""
    fig = go.Figure()
    for kept, color in ((True, KEPT_COLOR), (False, PRUNED_COLOR)):
        part = frame[frame["kept"] == kept]
        fig.add_trace(go.Histogram(x=list(part["true J"]), name="kept" if kept else "pruned",
                                   marker_color=color, opacity=0.7,
                                   xbins=dict(start=0, end=1, size=0.05)))
    fig.update_layout(barmode="overlay", height=360, margin=dict(l=10, r=10, t=40, b=10),
                      title="True Jaccard: kept vs pruned", xaxis_title="true Jaccard",
                      yaxis_title="redescriptions")
    return fig


def score_trace_figure(traces: dict[str, list[float]]) -> go.Figure:
    """The MCMC chains' scores per (subsampled) iteration (Fig. 8)."""
    fig = go.Figure()
    for label, values in traces.items():
        fig.add_trace(go.Scatter(y=list(values), mode="lines", name=label))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10),
                      title="MCMC convergence (scores computed from the raw data)",
                      xaxis_title="iteration (subsampled)", yaxis_title="chain score")
    return fig


def serenade_trace_figures(traces: dict[str, list[float]]) -> list[go.Figure]:
    """Serenade's owner-only traces (true qualities, NOT private) as figures.

    Returns
    -------
    list of plotly.graph_objects.Figure
        The true quality f of the extension chosen in each round (one line per trace:
        ES has one, CS one per redescription), then a bar chart of the final true
        quality per initial pair, each only if its traces exist.
    """
    figures = []
    rounds = {label: values for label, values in traces.items()
              if label != FINAL_QUALITY_TRACE}
    if rounds:
        fig = go.Figure()
        longest = max(len(v) for v in rounds.values())
        for label, values in rounds.items():
            fig.add_trace(go.Scatter(x=list(range(1, len(values) + 1)), y=list(values),
                                     mode="lines+markers", name=label))
        fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10),
                          title="Serenade: true quality f of the chosen extension per round "
                                "(computed from the raw data)",
                          xaxis_title="extension round", yaxis_title="true quality f")
        fig.update_xaxes(tick0=1, dtick=_integer_tick_step(longest))
        figures.append(fig)
    final = traces.get(FINAL_QUALITY_TRACE)
    if final:
        fig = go.Figure(go.Bar(x=list(range(len(final))), y=list(final),
                               marker_color=KEPT_COLOR))
        fig.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10),
                          title="Serenade: final true quality per initial pair (before the "
                                "constraints Γ)",
                          xaxis_title="initial pair", yaxis_title="true quality f")
        fig.update_xaxes(tick0=0, dtick=_integer_tick_step(len(final)))
        figures.append(fig)
    return figures


def _integer_tick_step(n_values: int) -> int:
    """A whole-number tick step giving at most about ten ticks for ``n_values`` positions."""
    return max(1, math.ceil(n_values / 10))


def phase_times_text(phase_seconds: dict[str, float]) -> str:
    """One line of the run's phase timings (owner-only diagnostics), e.g. ``prepare 0.01 s``."""
    return " · ".join(f"{name} {seconds:.2f} s" for name, seconds in phase_seconds.items())


def audit_frame(ledger: Ledger, record: DatasetRecord) -> pd.DataFrame:
    """The audit log of the dataset and of its sandboxes (owner only)."""
    names = [record.name] + [d.name for d in ledger.list_datasets()
                             if d.sandbox_of == record.name]
    entries = [e for n in names for e in ledger.audit_log(n)]
    entries.sort(key=lambda e: e.charge_id)
    return pd.DataFrame([{"charge": e.charge_id, "when": e.created_at[:19].replace("T", " "),
                          "account": e.account or "", "actor": e.actor,
                          "dataset": e.dataset, "run": e.run_id[:8],
                          "algorithm": ALGORITHM_LABELS.get(e.algorithm, e.algorithm),
                          "ε": e.epsilon, "status": e.status, "error": e.error or ""}
                         for e in entries])


#: How many of the latest owner-login attempts the audit section lists.
LOGIN_ROWS = 50


def login_frame(ledger: Ledger, limit: int = LOGIN_ROWS) -> pd.DataFrame:
    """The latest owner-login attempts from every entry point, newest first (owner only)."""
    events = ledger.auth_events()[-limit:][::-1]
    return pd.DataFrame([{"when": e.created_at[:19].replace("T", " "), "entry": e.entry,
                          "outcome": e.outcome, "account": e.account or "",
                          "client": e.client or e.actor, "detail": e.detail or ""}
                         for e in events],
                        columns=["when", "entry", "outcome", "account", "client", "detail"])


def tradeoff_scatter(result: RunResult, truth: list[TrueStatistics], threshold: float,
                     title: str) -> go.Figure:
    """Noisy support × noisy J of one trade-off run; colour = true significance."""
    by_id = {t.id: t for t in truth}
    reds = result.redescriptions
    sig = [by_id[r.id].pvalue <= SIGNIFICANCE for r in reds]
    kept = [r.support_both >= threshold for r in reds]
    fig = go.Figure(go.Scatter(
        x=[r.support_both for r in reds], y=[r.jaccard for r in reds], mode="markers",
        marker=dict(color=[_SIG_COLOR if s else _NONSIG_COLOR for s in sig],
                    symbol=["circle" if k else "diamond" for k in kept], size=8),
        text=[f"true J {by_id[r.id].jaccard:.2f}" for r in reds],
        hovertemplate="noisy |E11| %{x:.0f}<br>noisy J %{y:.3f}<br>%{text}<extra></extra>",
        showlegend=False))
    fig.add_vline(x=threshold, line_dash="dash", line_color=THRESHOLD_COLOR)
    fig.update_layout(title=f"{title}: {len(reds)} redescriptions, "
                            f"{sum(sig)} truly significant",
                      height=360, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis_title="noisy support |E11|", yaxis_title="noisy Jaccard",
                      title_font_size=13)
    return fig


# --------------------------------------------------------------------------- page

def render_teaching(ledger: Ledger, record: DatasetRecord) -> None:
    """Draw the Owner & teaching page (or only the explanation when not allowed; on a
    sequence or table dataset only a pointer to the page that mines it)."""
    if not two_view_only(record, "Owner & teaching is for two-view datasets: it compares "
                                 "true and noisy redescriptions. The family pages show "
                                 "owners (and everyone on public demo data) true beside "
                                 "noisy values."):
        return
    if not can_see_truth(record):
        st.info(EXPLANATION)
        return
    who = "you are the data owner" if is_owner() else "this is a public demo dataset"
    st.warning(f"NOT differentially private: this page shows exact values computed from the "
               f"raw data, because {who}.")
    if not render_warmup_progress("This page (it evaluates runs on the raw data and mines "
                                  "the trade-off demo)"):
        return
    try:
        data = load_data(record)
    except DataError as exc:
        st.error(hide_server_paths(str(exc), ledger))
        return
    threshold = get_threshold(record.name)
    runs = done_runs(ledger, record.name)
    if runs:
        _run_section(ledger, record, data, runs, threshold)
    else:
        st.info("No finished run yet: launch one on the Mine page, or try the ε trade-off demo "
                "below (it spends a sandbox budget, not this dataset's).")
    _tradeoff_section(ledger, record, data, threshold)
    _experiment_report_section()
    if is_owner():
        st.subheader("Audit log: who spent what, when")
        st.dataframe(audit_frame(ledger, record), hide_index=True, key="teach_audit")
        st.caption("Owner logins: the latest attempts from the app and the command line "
                   "(failed and throttled ones included; UTC).")
        st.dataframe(login_frame(ledger), hide_index=True, key="teach_logins")


def _experiment_report_section() -> None:
    """Show a report written by ``python -m dpcore experiment`` (its report.md)."""
    st.subheader("Experiment report (paper Section 5)")
    st.caption("Run `python -m dpcore experiment --data … --out report_dir` (see the README), "
               "then open its `report.md` here. Reports compare noisy with true statistics: "
               "NOT private.")
    upload = st.file_uploader("report.md of an experiment", type=["md"], key="teach_report")
    if upload is not None:
        st.markdown(upload.getvalue().decode("utf-8", errors="replace"))


def _run_section(ledger: Ledger, record: DatasetRecord, data: TwoViewDataset, runs: list,
                 threshold: float) -> None:
    labels = {r.run_id: run_label(r) for r in runs}
    options = [r.run_id for r in runs]
    if st.session_state.get("teach_run") not in options:
        st.session_state["teach_run"] = options[0]
    run_id = st.selectbox("Run", options, key="teach_run", format_func=labels.get)
    result = load_result(ledger, run_id, role=current_role(), include_diagnostics=True)
    truth = evaluate(result, data)
    frame = truth_frame(result, truth, threshold)
    if frame.empty:
        st.info("This run released no redescription.")
    else:
        st.caption(f"Kept / pruned at the Explore threshold {threshold:g}.")
        c1, c2 = st.columns(2)
        c1.plotly_chart(true_vs_noisy_figure(frame, "True vs noisy Jaccard"),
                        key="teach_true_vs_noisy")
        c2.plotly_chart(true_j_histograms(frame), key="teach_hist")
        with st.expander("Noisy and exact statistics per redescription"):
            st.dataframe(frame, hide_index=True, key="teach_table")
    traces = result.diagnostics.score_traces
    if result.algorithm in SERENADE_ALGORITHMS:
        figures = serenade_trace_figures(traces)
        for i, figure in enumerate(figures):
            st.plotly_chart(figure, key=f"teach_serenade_traces_{i}")
        if not figures:
            st.caption("This run stored no quality traces.")
    elif traces:
        st.plotly_chart(score_trace_figure(traces), key="teach_traces")
    else:
        st.caption("No MCMC chain in this run (AltExpM uses the exponential mechanism).")
    if result.diagnostics.phase_seconds:
        st.caption("Time per phase: " + phase_times_text(result.diagnostics.phase_seconds))


def _wait(job, label: str) -> None:
    bar = st.progress(0.0, text=label)
    while not job.done:
        bar.progress(min(1.0, max(0.0, job.fraction)), text=f"{label}: {job.message}")
        time.sleep(0.15)
    bar.progress(1.0, text=f"{label}: done" if job.ok else f"{label}: {job.error}")


def _tradeoff_section(ledger: Ledger, record: DatasetRecord, data: TwoViewDataset,
                      threshold: float) -> None:
    st.subheader("ε trade-off demo (sandbox budget)")
    base = params_from_state()
    st.caption("Runs one algorithm, with the other parameters from the Mine page, at "
               + " / ".join(f"ε = {e:g}" for e in TRADEOFF_EPSILONS) + ". Each demo opens a "
               "fresh sandbox with its own budget, so the dataset's real budget is untouched.")
    if st.session_state.get("teach_alg") not in ALGORITHMS:
        st.session_state["teach_alg"] = base.algorithm
    algorithm = st.selectbox("Algorithm", ALGORITHMS, key="teach_alg",
                             format_func=ALGORITHM_LABELS.get)
    try:
        plans = [replace(base, algorithm=algorithm, epsilon=e).validate()
                 for e in TRADEOFF_EPSILONS]
        costs = [run_cost(p) for p in plans]
    except DpcoreError as exc:
        st.error(f"These parameters cannot run: {exc}")
        return
    store = dict(st.session_state.get("teach_tradeoff", {}))
    if st.button(f"Run the trade-off demo (sandbox ε = {fmt_eps(nano_to_epsilon(sum(costs)))})",
                 key="teach_tradeoff_run"):
        sandbox = f"{record.name}~sandbox-{uuid.uuid4().hex[:8]}"
        try:
            ledger.create_sandbox(record.name, sandbox, nano_to_epsilon(sum(costs)) * 1.001
                                  + 1e-6, actor=current_role())
        except DpcoreError as exc:
            st.error(f"No sandbox could be created: {exc}")
            return
        seed = demo_seed_from_state(record)
        entries = []
        for eps, params in zip(TRADEOFF_EPSILONS, plans):
            run_id = new_run_id()
            job = start_job(ledger, sandbox, data, params, run_id,
                            requester=current_requester(), seed=seed)
            _wait(job, f"ε = {eps:g}")
            entries.append((eps, run_id, job.ok, job.error))
        store[record.name] = {"sandbox": sandbox, "algorithm": algorithm, "runs": entries}
        st.session_state["teach_tradeoff"] = store
    demo = store.get(record.name)
    if not demo:
        return
    st.caption(f"Sandbox `{demo['sandbox']}` · {ALGORITHM_LABELS[demo['algorithm']]} · "
               "colour: green = truly significant (true p ≤ 0.01), red = not; ● kept, ◆ pruned "
               f"at threshold {threshold:g}.")
    cols = st.columns(len(demo["runs"]))
    for col, (eps, run_id, _ok, error) in zip(cols, demo["runs"]):
        with col:
            job = get_job(run_id)
            if job is not None and not job.done:
                st.info(f"ε = {eps:g}: still running")
                continue
            try:
                result = load_result(ledger, run_id, role=current_role())
            except DpcoreError:
                st.error(f"ε = {eps:g}: "
                         f"{hide_server_paths(error, ledger) if error else 'no stored result'}")
                continue
            col.plotly_chart(tradeoff_scatter(result, evaluate(result, data), threshold,
                                              f"ε = {eps:g}"), key=f"teach_tradeoff_{eps:g}")
