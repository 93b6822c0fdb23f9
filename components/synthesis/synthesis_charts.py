"""Figures and files of a synthesis run: association heat maps, histograms, downloads.

Pure functions (no Streamlit), so they can be tested on results made by the core.

What each input is
------------------
* The **synthetic table** (:attr:`SynthesisResult.synthetic`) is a DP release in strict mode
  (post-processing of noisy statistics): anything computed from it alone — its histograms,
  its association matrix, the CSV and Parquet files — is a DP release too.
* The **released feature distances** (:attr:`SynthesisResult.feature_distances`, strict runs
  that built their groups from data) are DP: :func:`released_association` only turns them
  back into association strengths √s = 1 − distance.
* The **real table** is private unless the dataset is a public demo: the functions that take
  it (:func:`association_matrix` on real data, :func:`histogram_figure` with ``real``) are
  called by the view only where :func:`components.common.session.can_see_truth` allows it.

Association, on a scale [0, 1], is the measure the strict grouping uses (docs/ALGORITHMS.md,
MC-GEN): |Pearson r| between two numeric features, the correlation ratio η between a
categorical and a numeric one, Cramér's V between two categoricals. Computed on the encoded
columns (numeric scaled to [−1, 1] by the public bounds, categoricals one-hot), so the
synthetic table's matrix and the released one are on the same scale.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpcore.data.table.schema import TableSchema
from dpcore.synthesis.grouping import association_distance
from dpcore.synthesis.intervals import result_intervals
from dpcore.synthesis.results import SynthesisResult
from dpcore.synthesis.utility import frame_features

__all__ = ["REAL_COLOR", "SYNTHETIC_COLOR", "association_matrix", "released_association",
           "marginal_table", "LOW_COLUMN", "HIGH_COLUMN",
           "group_order", "association_heatmap", "histogram_figure", "csv_bytes",
           "parquet_bytes", "download_name", "class_count_table"]

REAL_COLOR = "#7f7f7f"
SYNTHETIC_COLOR = "#1f77b4"
_OUTLINE_COLOR = "#d62728"


def association_matrix(frame: pd.DataFrame, schema: TableSchema) -> np.ndarray:
    """Association strength (p × p, in [0, 1], 1 on the diagonal) between the features of a
    table in the schema's columns. A DP release when ``frame`` is the synthetic table.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of the table (label and features, as :attr:`SynthesisResult.synthetic`).
    schema : TableSchema
        Its public schema (bounds, levels).

    Returns
    -------
    numpy.ndarray of float64, shape (p, p)
        Features in schema order. With fewer than two rows every off-diagonal entry is 0.
    """
    p = schema.n_features
    if len(frame) < 2:
        return np.eye(p)
    x, _ = frame_features(frame, schema)
    cov = np.cov(x, rowvar=False, bias=True).reshape(schema.width, schema.width)
    out = 1.0 - association_distance(cov, schema, x.mean(axis=0))
    np.fill_diagonal(out, 1.0)
    return np.clip(out, 0.0, 1.0)


def released_association(result: SynthesisResult) -> np.ndarray | None:
    """The association strengths the run released (1 − its DP feature distances), or None
    when it released none (groups given by the owner, the floor, faithful mode)."""
    if result.feature_distances is None:
        return None
    out = 1.0 - np.asarray(result.feature_distances, dtype=np.float64)
    np.fill_diagonal(out, 1.0)
    return np.clip(out, 0.0, 1.0)


def group_order(schema: TableSchema, groups: list[list[str]]
                ) -> tuple[list[int], list[tuple[int, int]]]:
    """Feature indices with each group's features next to each other, and each group's
    (first position, size) in that order. Names that are not features (faithful groups of
    encoded columns such as ``sex=F``) are mapped to their feature; features no group names
    come last, alone."""
    names = list(schema.feature_names)
    order: list[int] = []
    spans: list[tuple[int, int]] = []
    for group in groups:
        members = []
        for name in group:
            base = name if name in names else str(name).split("=", 1)[0]
            if base in names and names.index(base) not in order + members:
                members.append(names.index(base))
        if members:
            spans.append((len(order), len(members)))
            order += members
    for i in range(len(names)):
        if i not in order:
            spans.append((len(order), 1))
            order.append(i)
    return order, spans


def association_heatmap(matrix: np.ndarray, schema: TableSchema, *, title: str,
                        groups: list[list[str]] | None = None) -> go.Figure:
    """A heat map of an association matrix (features in schema order), rows and columns
    reordered so that each feature group is a block, each block outlined."""
    if groups:
        order, spans = group_order(schema, groups)
    else:
        order, spans = list(range(schema.n_features)), []
    names = [schema.feature_names[i] for i in order]
    values = np.asarray(matrix, dtype=np.float64)[np.ix_(order, order)]
    fig = go.Figure(go.Heatmap(
        z=values, x=names, y=names, zmin=0.0, zmax=1.0, colorscale="Blues",
        colorbar={"title": "association"},
        hovertemplate="%{y} – %{x}: %{z:.2f}<extra></extra>"))
    for start, size in spans:
        fig.add_shape(type="rect", x0=start - 0.5, x1=start + size - 0.5, y0=start - 0.5,
                      y1=start + size - 0.5, line={"color": _OUTLINE_COLOR, "width": 3})
    fig.update_layout(title=title, height=420, margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      yaxis={"autorange": "reversed"})
    return fig


def histogram_figure(feature: str, schema: TableSchema, synthetic: pd.DataFrame,
                     real: pd.DataFrame | None = None) -> go.Figure:
    """Histogram of one feature of the synthetic table, with the real table's overlaid when
    ``real`` is given (owners and public demos only: it is computed from true data).

    Numeric features share equal-width bins over the public bounds; categoricals show one bar
    per declared level. Both tables as shares of their rows, so sizes do not matter.
    """
    f = schema.features[schema.feature_index(feature)]
    fig = go.Figure()
    tables = [("synthetic", synthetic, SYNTHETIC_COLOR)]
    if real is not None:
        tables.append(("real", real, REAL_COLOR))
    for name, frame, color in tables:
        if f.is_numeric:
            lo, hi = f.bounds
            fig.add_trace(go.Histogram(
                x=frame[feature], name=name, marker_color=color, histnorm="probability",
                opacity=0.6 if real is not None else 1.0,
                xbins={"start": lo, "end": hi, "size": (hi - lo) / 20}))
        else:
            levels = [str(v) for v in f.levels]
            counts = frame[feature].astype(str).value_counts()
            total = max(len(frame), 1)
            fig.add_trace(go.Bar(x=levels, y=[counts.get(v, 0) / total for v in levels],
                                 name=name, marker_color=color,
                                 opacity=0.6 if real is not None else 1.0))
    unit = f" ({f.unit})" if f.unit else ""
    fig.update_layout(title=f"{feature}{unit}", barmode="overlay", height=260,
                      showlegend=real is not None, yaxis_title="share of rows",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


#: Column names of the 90 % interval bounds in the synthesis tables.
LOW_COLUMN, HIGH_COLUMN = "true rows ≥ (90 %)", "true rows ≤ (90 %)"


def class_count_table(result: SynthesisResult, true_counts: dict[str, int] | None = None
                      ) -> pd.DataFrame:
    """Rows generated per class (strict: the noisy class counts N̂_y, a DP release), with the
    90 % interval of each true count (:func:`dpcore.synthesis.intervals.result_intervals`,
    0 ε) when the run released noisy counts, and the true counts beside them when given
    (owner diagnostics: NOT private)."""
    rows = [{"class": k, "synthetic rows": int(v)} for k, v in
            result.noisy_class_counts.items()]
    frame = pd.DataFrame(rows, columns=["class", "synthetic rows"])
    intervals = result_intervals(result)
    if intervals is not None:
        bounds = intervals["class_counts"]
        frame[LOW_COLUMN] = [int(bounds[k][0]) for k in frame["class"]]
        frame[HIGH_COLUMN] = [int(bounds[k][1]) for k in frame["class"]]
    if true_counts is not None:
        frame["true rows (not private)"] = [int(true_counts.get(k, 0)) for k in frame["class"]]
    return frame


def marginal_table(result: SynthesisResult) -> pd.DataFrame | None:
    """The floor's released class × bin histograms, one row per (feature, class, bin): the
    noisy count (a DP release, raw: may be negative) and the 90 % interval of the true count
    (0 ε); None when the run released none (MC-GEN, faithful, older results)."""
    intervals = result_intervals(result)
    if intervals is None or not intervals["marginals"] or not result.noisy_marginals:
        return None
    by_feature = {m["feature"]: m for m in intervals["marginals"]}
    rows = []
    for marginal in result.noisy_marginals:
        bounds = by_feature.get(marginal["feature"])
        if bounds is None:
            continue
        for cls, counts in marginal["counts"].items():
            for i, count in enumerate(counts):
                rows.append({"feature": marginal["feature"], "class": cls,
                             "bin": _bin_label(marginal, i), "noisy count": int(count),
                             LOW_COLUMN: int(bounds["low"][cls][i]),
                             HIGH_COLUMN: int(bounds["high"][cls][i])})
    return pd.DataFrame(rows, columns=["feature", "class", "bin", "noisy count", LOW_COLUMN,
                                       HIGH_COLUMN])


def _bin_label(marginal: dict, i: int) -> str:
    if marginal.get("edges"):
        edges = marginal["edges"]
        return f"{edges[i]:.4g} – {edges[i + 1]:.4g}"
    levels = marginal.get("levels") or []
    return str(levels[i]) if i < len(levels) else str(i)


def csv_bytes(result: SynthesisResult) -> bytes:
    """The synthetic table as UTF-8 CSV (label first; a DP release in strict mode)."""
    return result.synthetic.to_csv(index=False, lineterminator="\n").encode("utf-8")


def parquet_bytes(result: SynthesisResult) -> bytes:
    """The synthetic table as Parquet, the run's parameters, ε, noisy class counts and
    mechanism calls in its metadata (never the owner diagnostics)."""
    buffer = io.BytesIO()
    result.write_parquet(buffer, include_diagnostics=False)
    return buffer.getvalue()


def download_name(result: SynthesisResult, extension: str) -> str:
    """``<dataset>_synthetic_<run id prefix>.<extension>``."""
    return f"{result.dataset}_synthetic_{result.run_id[:8]}.{extension}"
