"""The live noisy-support × noisy-Jaccard scatter (paper Figure 2, analyst view).

One point per released redescription, all in ONE trace (Streamlit de-duplicates
``point_indices`` across traces), the row ids passed as ``customdata`` in a plain
Python list. Kept points (noisy support ≥ threshold) are blue dots, pruned ones
grey diamonds, set per point through marker arrays; when several runs are pooled, each
run's kept dots get their own colour, named in a legend (empty legend-only traces: they
hold no point, so selections still come from the one trace); a dashed vertical line marks
the threshold and an optional dotted one, labelled "suggested", the suggested
threshold. The modebar's box select draws a box (the page keeps every point inside
it, on both axes); the Jaccard axis shows [0, 1], all a Jaccard can take. Everything
plotted is a DP release.

With :func:`interval_rows` joined in, each point carries its 90 % intervals as error bars
(noisy J vertically, noisy |E11| horizontally) and in its tooltip: post-processing of the
release (:mod:`dpcore.redescriptions.intervals`, selection-aware), 0 ε.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from dpcore.redescriptions.intervals import DEFAULT_COVERAGE, redescription_intervals
from dpcore.redescriptions.results import RunResult
from dpcore.registry import ALGORITHM_LABELS

from ..common.runs_view import run_label

__all__ = ["KEPT_COLOR", "PRUNED_COLOR", "RUN_COLORS", "WEBGL_ABOVE", "ROW_COLUMNS",
           "INTERVAL_COLUMNS", "row_id", "redescription_rows", "interval_rows", "run_label",
           "run_colors", "scatter_figure"]

KEPT_COLOR = "#1f77b4"
PRUNED_COLOR = "#9e9e9e"
THRESHOLD_COLOR = "#d62728"
SUGGESTED_COLOR = "#2ca02c"
#: Kept dots' colour per run when runs are pooled (none is the pruned grey, the
#: threshold's red or the suggestion's green); an eighth run reuses the first colour.
RUN_COLORS = (KEPT_COLOR, "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
              "#bcbd22")
#: Above this many points the scatter uses WebGL (``go.Scattergl``).
WEBGL_ABOVE = 1000

ROW_COLUMNS = ["row_id", "run_id", "run", "algorithm", "mode", "epsilon", "red_id", "left",
               "right", "support_left", "support_right", "support", "jaccard", "pvalue",
               "trial", "step", "extraction", "left_tree", "right_tree", "left_leaves",
               "right_leaves"]

#: The interval bounds :func:`interval_rows` adds (Jaccard units; |E11| in rows).
INTERVAL_COLUMNS = ["jaccard_low", "jaccard_high", "support_low", "support_high"]


def row_id(run_id: str, red_id: int) -> str:
    """The id of one redescription of one run (unique when several runs are pooled)."""
    return f"{run_id[:8]}:{red_id}"


def redescription_rows(results: list[RunResult]) -> pd.DataFrame:
    """One row per released redescription of the given runs (pooled), noisy statistics only."""
    rows = []
    for result in results:
        label = run_label(result)
        for red in result.redescriptions:
            rows.append({
                "row_id": row_id(result.run_id, red.id), "run_id": result.run_id, "run": label,
                "algorithm": ALGORITHM_LABELS.get(result.algorithm, result.algorithm),
                "mode": result.mode, "epsilon": result.params.get("epsilon"),
                "red_id": red.id, "left": red.left.text, "right": red.right.text,
                "support_left": float(red.support_left),
                "support_right": float(red.support_right),
                "support": float(red.support_both), "jaccard": float(red.jaccard),
                "pvalue": float(red.pvalue), "trial": red.trial, "step": red.step,
                "extraction": red.extraction, "left_tree": red.left.tree,
                "right_tree": red.right.tree, "left_leaves": tuple(red.left.leaves),
                "right_leaves": tuple(red.right.leaves)})
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def interval_rows(results: list[RunResult], coverage: float = DEFAULT_COVERAGE
                  ) -> pd.DataFrame:
    """Per released redescription (``row_id``), the interval of its noisy J and |E11|.

    From :func:`dpcore.redescriptions.intervals.redescription_intervals`: released values
    only (0 ε), computed once per release and then served from its cache, so a page rerun
    costs a lookup.
    """
    out = []
    for result in results:
        for red_id, iv in redescription_intervals(result, coverage).items():
            out.append({"row_id": row_id(result.run_id, red_id),
                        "jaccard_low": iv.jaccard.low, "jaccard_high": iv.jaccard.high,
                        "support_low": iv.support_both.low,
                        "support_high": iv.support_both.high})
    return pd.DataFrame(out, columns=["row_id", *INTERVAL_COLUMNS])


def _error_bars(values: list[float], low, high) -> dict:
    """Plotly asymmetric error bars from interval bounds (a missing bound draws none)."""
    plus = [max(float(h) - v, 0.0) if math.isfinite(h) else 0.0 for v, h in zip(values, high)]
    minus = [max(v - float(lo), 0.0) if math.isfinite(lo) else 0.0
             for v, lo in zip(values, low)]
    return dict(type="data", symmetric=False, array=plus, arrayminus=minus, thickness=1,
                width=0, color="rgba(31, 119, 180, 0.35)")


def run_colors(rows: pd.DataFrame) -> dict[str, str]:
    """The kept dots' colour of each run label in ``rows`` (first appearance first)."""
    runs = dict.fromkeys(rows["run"]) if len(rows) and "run" in rows else {}
    return {run: RUN_COLORS[i % len(RUN_COLORS)] for i, run in enumerate(runs)}


def _short(text: str, n: int = 70) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _bound(x: float) -> str:
    return f"{x:.0f}" if math.isfinite(x) else "?"


def scatter_figure(rows: pd.DataFrame, threshold: float, *, height: int = 460,
                   title: str | None = None, suggested: float | None = None) -> go.Figure:
    """The support × Jaccard scatter with kept/pruned marks and the threshold line.

    Parameters
    ----------
    rows : pandas.DataFrame
        From :func:`redescription_rows` (needs ``row_id``, ``support``, ``jaccard``,
        ``left``, ``right``).
    threshold : float
        Noisy support below which a redescription is pruned.
    suggested : float, optional
        The suggested threshold, drawn as a dotted vertical line labelled "suggested".

    When ``rows`` has the :data:`INTERVAL_COLUMNS` (:func:`interval_rows` merged in), every
    point gets its intervals as error bars and in its tooltip.
    """
    supports = [float(s) for s in rows["support"]] if len(rows) else []
    jaccards = [float(j) for j in rows["jaccard"]] if len(rows) else []
    kept = [s >= threshold for s in supports]
    hover = [f"{_short(l_)}<br>⇔ {_short(r_)}" for l_, r_ in zip(rows.get("left", []),
                                                                   rows.get("right", []))]
    colors = run_colors(rows)
    pooled = len(colors) > 1
    kept_color = [colors[r] for r in rows["run"]] if pooled else [KEPT_COLOR] * len(kept)
    if pooled:
        hover = [f"{h}<br>{run}" for h, run in zip(hover, rows["run"])]
    bars = {}
    if len(rows) and all(c in rows for c in INTERVAL_COLUMNS):
        bars = {"error_y": _error_bars(jaccards, rows["jaccard_low"], rows["jaccard_high"]),
                "error_x": _error_bars(supports, rows["support_low"], rows["support_high"])}
        hover = [f"{DEFAULT_COVERAGE:.0%} interval: J {jl:.2f}–{jh:.2f}, "
                 f"|E11| {_bound(sl)}–{_bound(sh)}<br>{h}"
                 for h, jl, jh, sl, sh in zip(hover, rows["jaccard_low"], rows["jaccard_high"],
                                              rows["support_low"], rows["support_high"])]
    trace_type = go.Scattergl if len(supports) > WEBGL_ABOVE else go.Scatter
    fig = go.Figure(trace_type(
        x=supports,
        y=jaccards,
        mode="markers", **bars,
        customdata=[str(r) for r in rows["row_id"]] if len(rows) else [],
        text=hover,
        marker=dict(color=[c if k else PRUNED_COLOR for c, k in zip(kept_color, kept)],
                    symbol=["circle" if k else "diamond" for k in kept],
                    size=[9 if k else 8 for k in kept],
                    line=dict(color="white", width=0.5)),
        hovertemplate=("<b>%{customdata}</b><br>noisy |E11| = %{x:.0f}<br>noisy J = %{y:.3f}"
                       "<br>%{text}<extra></extra>"),
        showlegend=False))
    for label, color in colors.items() if pooled else ():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label,
                                 marker=dict(color=color, size=9), hoverinfo="skip"))
    # A line far right of every point (a typed 1e9) would stretch the axis and squash the
    # points at 0: it is drawn at the right edge instead, and its label says where it is.
    edge = max(supports, default=0.0) * 1.05 + 1.0
    beyond = threshold > edge
    line = dict(line_dash="dash", line_color=THRESHOLD_COLOR, line_width=2)
    if beyond:
        where = f"{threshold:,.0f}" if threshold >= 1e4 else f"{threshold:g}"
        fig.add_vline(x=edge, **line, annotation_text=f"threshold {where} →",
                      annotation_position="bottom left", annotation_font_color=THRESHOLD_COLOR)
    else:
        fig.add_vline(x=threshold, **line)
    if suggested is not None:
        fig.add_vline(x=suggested, line_dash="dot", line_color=SUGGESTED_COLOR, line_width=2,
                      annotation_text="suggested", annotation_position="top right",
                      annotation_font_color=SUGGESTED_COLOR)
    n_kept = sum(kept)
    heading = (f"<span style='color:{KEPT_COLOR}'>●</span> kept {n_kept}   "
               f"<span style='color:{PRUNED_COLOR}'>◆</span> pruned {len(kept) - n_kept}   "
               f"<span style='color:{THRESHOLD_COLOR}'>┆</span> threshold {threshold:g}")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10),
                      title=dict(text=f"{title}<br>{heading}" if title else heading,
                                 font=dict(size=13), x=0.01, xanchor="left"),
                      xaxis_title="noisy support |E11|", yaxis_title="noisy Jaccard",
                      clickmode="event+select", hovermode="closest",
                      showlegend=pooled,
                      legend=dict(title_text="kept, by run", orientation="h", x=0, y=-0.15,
                                  yanchor="top", itemclick=False, itemdoubleclick=False))
    fig.update_yaxes(range=[-0.02, 1.02])          # a Jaccard lies in [0, 1]
    fig.update_xaxes(rangemode="tozero")
    return fig
