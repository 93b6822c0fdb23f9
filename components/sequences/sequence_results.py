"""What a frequent-sequence run released, as tables, charts and export files (no Streamlit).

Everything built here from a :class:`~dpcore.sequences.results.SequenceRunResult` alone is a
DP release or public metadata: the patterns (item names from the public alphabet), their
noisy supports, their lengths, the per-level counts and thresholds (derived from DP outputs),
the run's parameters. Tables, charts and exports are post-processing and cost 0 ε.

The comparison with the truth (:func:`evaluate_against_truth`) reads the true data and is
NOT private: the page calls it only for owners and on public demo data
(:func:`components.common.session.can_see_truth`); see docs/PRIVACY.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go

from dpcore.sequences.dataset import SequenceDataset
from dpcore.sequences.evaluate import (
    exact_frequent_sequences,
    f_score,
    median_relative_error,
    support_threshold,
    true_supports,
)
from dpcore.sequences.results import FrequentSequence, SequenceRunResult, pattern_key

from ..redescriptions.export import json_safe

__all__ = ["ARROW", "PATTERN", "LENGTH", "NOISY", "TRUE", "REL_ERROR", "pattern_text",
           "pattern_frame", "top_paths", "level_frame", "length_chart", "prefix_tree",
           "export_frame", "export_csv", "export_json", "TruthComparison",
           "MAX_EXACT_CANDIDATES", "evaluate_against_truth", "truth_frame", "missed_frame"]

#: How a pattern is written: its item names in order, joined by this arrow.
ARROW = " → "
#: Column names of the pattern table.
PATTERN, LENGTH, NOISY = "pattern", "length", "noisy support"
TRUE, REL_ERROR = "true support", "relative error"


def pattern_text(names) -> str:
    """A pattern written with its item names, e.g. ``home → news → sports``."""
    return ARROW.join(names)


def pattern_frame(result: SequenceRunResult) -> pd.DataFrame:
    """One row per released pattern: pattern text, length (items), noisy support (records).

    Ordered by length, then by decreasing noisy support (the table sorts by any column).
    """
    rows = [{PATTERN: pattern_text(p.names), LENGTH: int(p.length),
             NOISY: float(p.noisy_support)} for p in result.patterns]
    frame = pd.DataFrame(rows, columns=[PATTERN, LENGTH, NOISY])
    if len(frame):
        frame = frame.sort_values([LENGTH, NOISY], ascending=[True, False],
                                  kind="stable").reset_index(drop=True)
    return frame


def top_paths(result: SequenceRunResult, n: int = 5) -> list[FrequentSequence]:
    """The ``n`` released patterns of two items or more with the largest noisy supports."""
    paths = [p for p in result.patterns if p.length >= 2]
    return sorted(paths, key=lambda p: (-p.noisy_support, p.items))[:n]


def level_frame(result: SequenceRunResult) -> pd.DataFrame:
    """Per level k: candidates, kept after pruning, frequent, cap and stop (all DP-derived).

    The relaxed and verification thresholds are in records (computed from N̂ and public
    parameters); a blank threshold is one the level did not use (a level that does not
    prune: strict PFS2 prunes only where it pays, the baseline never). "dropped by the cap"
    counts sequences past the level's cap M_k (the smallest noisy values).
    """
    rows = []
    for lv in result.levels:
        rows.append({"length k": lv.length, "candidates": lv.candidates,
                     "kept after pruning": lv.kept_after_pruning,
                     "pruned": lv.candidates - lv.kept_after_pruning,
                     "frequent (released)": lv.frequent,
                     "dropped by the cap": lv.capped,
                     "note": lv.note,
                     "pruning threshold θ′ (records)": lv.relaxed_threshold,
                     "verification threshold θ·N̂ (records)": lv.verify_threshold})
    return pd.DataFrame(rows)


def length_chart(result: SequenceRunResult) -> go.Figure:
    """Bar chart: how many frequent patterns were released at each length."""
    counts: dict[int, int] = {}
    for p in result.patterns:
        counts[p.length] = counts.get(p.length, 0) + 1
    lengths = sorted(counts)
    fig = go.Figure(go.Bar(x=lengths, y=[counts[k] for k in lengths],
                           text=[counts[k] for k in lengths], textposition="outside",
                           hovertemplate="length %{x}: %{y} patterns<extra></extra>"))
    fig.update_layout(title="Frequent patterns by length (released)",
                      xaxis_title="length (items)", yaxis_title="patterns",
                      xaxis={"dtick": 1}, height=340, margin={"t": 50, "b": 40})
    return fig


def _prefix_nodes(patterns: list[FrequentSequence]):
    """(ids, parents, labels, noisy supports, released?) of the prefix tree of ``patterns``.

    A prefix that was not released itself (possible when its noisy support missed the
    threshold) is kept as an unlabelled inner node so that its extensions hang below it.
    """
    released = {p.items: p for p in patterns}
    nodes: dict[tuple[int, ...], str] = {}
    names: dict[tuple[int, ...], str] = {}
    for p in patterns:
        for k in range(1, p.length + 1):
            nodes.setdefault(p.items[:k], pattern_key(p.items[:k]))
            names.setdefault(p.items[:k], p.names[k - 1])
    order = sorted(nodes, key=lambda items: (len(items), items))
    ids = [nodes[i] for i in order]
    parents = [nodes[i[:-1]] if len(i) > 1 else "" for i in order]
    labels = [names[i] for i in order]
    supports = [released[i].noisy_support if i in released else math.nan for i in order]
    return ids, parents, labels, supports, [i in released for i in order], order, released


def prefix_tree(result: SequenceRunResult, kind: str = "sunburst") -> go.Figure:
    """The prefix tree of the released frequent set (a sunburst, or an icicle).

    Each sector is one released pattern, drawn under the pattern one item shorter that
    starts it; colour is the noisy support (records). Sectors are sized by how many
    released patterns they start (supports of sequences overlap, so they do not add up).
    """
    ids, parents, labels, supports, is_released, order, released = _prefix_nodes(
        result.patterns)
    hover = [f"{pattern_text(released[i].names)}<br>noisy support {released[i].noisy_support:g}"
             if ok else "(not released itself)" for i, ok in zip(order, is_released)]
    finite = [s for s in supports if not math.isnan(s)]
    colors = [s if not math.isnan(s) else (min(finite) if finite else 0.0) for s in supports]
    trace_type = go.Icicle if kind == "icicle" else go.Sunburst
    trace = trace_type(ids=ids, parents=parents, labels=labels, hovertext=hover,
                       hoverinfo="text", marker={"colors": colors, "colorscale": "Blues",
                                                 "showscale": True,
                                                 "colorbar": {"title": "noisy support"}})
    fig = go.Figure(trace)
    fig.update_layout(title="Prefix tree of the frequent patterns (centre: first item)",
                      height=520, margin={"t": 50, "l": 10, "r": 10, "b": 10})
    return fig


# --------------------------------------------------------------------------- export

_EXPORT_COLUMNS = ["run_id", "pattern", "items_json", "length", "noisy_support", "algorithm",
                   "mode", "epsilon_charged", "theta", "params_json"]


def export_frame(result: SequenceRunResult) -> pd.DataFrame:
    """The released patterns as a flat table (one row each, run parameters repeated)."""
    params = json.dumps(result.params, sort_keys=True)
    rows = [{"run_id": result.run_id, "pattern": pattern_text(p.names),
             "items_json": json.dumps(list(p.names), ensure_ascii=False),
             "length": int(p.length), "noisy_support": float(p.noisy_support),
             "algorithm": result.algorithm, "mode": result.mode,
             "epsilon_charged": result.epsilon, "theta": result.params.get("theta"),
             "params_json": params} for p in result.patterns]
    return pd.DataFrame(rows, columns=_EXPORT_COLUMNS)


def export_csv(result: SequenceRunResult) -> str:
    """CSV text of :func:`export_frame`."""
    return export_frame(result).to_csv(index=False)


def export_json(result: SequenceRunResult) -> str:
    """JSON text: the run (parameters, mode, ε, version, seed, levels) and its patterns.

    Only the release: the owner diagnostics (true counts) are never exported here.
    """
    release = result.to_dict(include_diagnostics=False)
    doc = {"dataset": result.dataset,
           "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
           "privacy": "All supports are noisy DP releases; exporting is post-processing and "
                      "costs 0 ε.",
           "run": {k: release[k] for k in ("run_id", "algorithm", "mode", "params",
                                            "version", "created_at", "seed", "not_dp")},
           "epsilon_charged": result.epsilon,
           "noisy_records": result.noisy_records,
           "lmax": result.lmax, "max_frequent_length": result.max_frequent_length,
           "levels": release["levels"],
           "patterns": [{"pattern": pattern_text(p.names), "items": list(p.names),
                         "length": int(p.length), "noisy_support": float(p.noisy_support)}
                        for p in result.patterns]}
    return json.dumps(json_safe(doc), ensure_ascii=False, indent=2, allow_nan=False)


# --------------------------------------------------------------------------- truth (NOT DP)

#: The exact frequent set is enumerated one length at a time while the next length can hold
#: at most this many candidates (frequent (k−1)-sequences × frequent items); beyond it the
#: comparison stops at the last length enumerated (dense data at a low θ would otherwise
#: enumerate millions of sequences on every page view).
MAX_EXACT_CANDIDATES = 200_000


@dataclass(frozen=True)
class TruthComparison:
    """A release compared with the exact frequent set — NOT private (owners, public demos).

    Attributes
    ----------
    true_supports : dict of tuple → int
        True support (records) of every released pattern.
    exact : dict of tuple → int
        The exact frequent set at the run's θ (true |D|) with true supports, of length at
        most ``compared_length``.
    threshold : int
        The exact support threshold ⌈θ·|D|⌉ (records).
    compared_length : int
        The longest length compared (items).
    complete : bool
        True when ``exact`` holds every frequent sequence (no longer one exists); False
        when the enumeration stopped at :data:`MAX_EXACT_CANDIDATES`.
    missed : list of tuple
        Truly frequent patterns (up to ``compared_length``) that were not released (pruned,
        below the noisy verification threshold, or past a level's cap).
    false : list of tuple
        Released patterns (up to ``compared_length``) that are not truly frequent.
    precision, recall, f_score : float
        Of the release against ``exact``, both up to ``compared_length`` (NaN where
        undefined).
    median_relative_error : float
        Median of |noisy − true| / true over every released pattern.
    """

    true_supports: dict
    exact: dict
    threshold: int
    compared_length: int
    complete: bool
    missed: list
    false: list
    precision: float
    recall: float
    f_score: float
    median_relative_error: float


def _bounded_exact(data: SequenceDataset, theta: float, limit: int
                   ) -> tuple[dict, int, bool]:
    """(exact frequent set up to some length k, k, whether it is the whole set)."""
    exact: dict = {}
    n_items = 0
    for k in range(1, limit + 1):
        previous = sum(1 for p in exact if len(p) == k - 1)
        if k > 1 and previous * n_items > MAX_EXACT_CANDIDATES:
            return exact, k - 1, False
        exact = exact_frequent_sequences(data, theta=theta, max_length=k)
        if k == 1:
            n_items = len(exact)
        if not any(len(p) == k for p in exact):
            return exact, k, True
    return exact, limit, True


def evaluate_against_truth(result: SequenceRunResult, data: SequenceDataset
                           ) -> TruthComparison:
    """Compare ``result`` with the exact frequent sequences of ``data`` (NOT private).

    The exact set uses the run's θ and the true record count. Every length is compared
    unless the exact set grows past :data:`MAX_EXACT_CANDIDATES` candidates at some length;
    then lengths up to the last one enumerated are compared (``complete`` is False).
    """
    longest = int(data.lengths.max()) if data.n_records else 0
    exact, compared, complete = _bounded_exact(data, float(result.params["theta"]),
                                               max(longest, 1))
    stored = {tuple(int(x) for x in k.split()): int(v)
              for k, v in (result.diagnostics.true_supports or {}).items()}
    noisy = result.supports()
    known = dict(stored)
    missing = [p for p in noisy if p not in known]
    if missing:
        known.update(true_supports(data, missing))
    error = median_relative_error(noisy, supports=known)
    score = f_score(noisy, exact, max_length=compared)
    return TruthComparison(
        true_supports={p: known[p] for p in noisy}, exact=exact,
        threshold=support_threshold(float(result.params["theta"]), data.n_records),
        compared_length=compared,
        complete=complete,
        missed=sorted((p for p in exact if p not in noisy), key=lambda p: (len(p), -exact[p])),
        false=sorted((p for p in noisy if p not in exact and len(p) <= compared),
                     key=lambda p: (len(p), p)),
        precision=score.precision, recall=score.recall, f_score=score.f_score,
        median_relative_error=error)


def truth_frame(result: SequenceRunResult, truth: TruthComparison) -> pd.DataFrame:
    """The pattern table with true supports and relative errors (NOT private)."""
    rows = []
    for p in result.patterns:
        items = p.items
        true = truth.true_supports.get(items, 0)
        rows.append({PATTERN: pattern_text(p.names), LENGTH: int(p.length),
                     NOISY: float(p.noisy_support), TRUE: int(true),
                     REL_ERROR: abs(p.noisy_support - true) / true if true else math.nan,
                     "truly frequent": true >= truth.threshold})
    frame = pd.DataFrame(rows, columns=[PATTERN, LENGTH, NOISY, TRUE, REL_ERROR,
                                        "truly frequent"])
    if len(frame):
        frame = frame.sort_values([LENGTH, NOISY], ascending=[True, False],
                                  kind="stable").reset_index(drop=True)
    return frame


def missed_frame(truth: TruthComparison, alphabet) -> pd.DataFrame:
    """Truly frequent patterns the run did not release, with their true supports (NOT
    private); ``alphabet`` names the item codes (the public schema's)."""
    rows = [{PATTERN: pattern_text(alphabet[i] for i in items), LENGTH: len(items),
             TRUE: int(truth.exact[items])} for items in truth.missed]
    return pd.DataFrame(rows, columns=[PATTERN, LENGTH, TRUE])
