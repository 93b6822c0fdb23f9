"""Export of the kept redescriptions: CSV and JSON with queries, noisy statistics, run parameters.

Everything exported is a DP release (queries, noisy statistics) or public metadata
(run parameters, the pruning threshold). Exporting costs 0 ε.

Each CSV row also carries the analyst's decision (kept, rejected, undecided), tags and
note from the workspace: what the analyst typed, no statistic.

A statistic the run did not release (faithful Serenade's supports |q_L|, |q_R|
and p-value) is an empty cell in the CSV and ``null`` in the JSON, which is
always strict JSON (no ``NaN``). The JSON gives tree queries by their leaves and
Serenade queries by their literal tests and operators.

The JSON also carries the analyst's workspace (``workspace``: keep/reject decisions,
tags, notes, runs, threshold and list settings — :mod:`dpcore.redescriptions.workspace`),
which the Explore page imports back; it holds no statistic, so it adds nothing to what
is released.

Every released statistic also comes with its 90 % interval (CSV columns ``jaccard_low_90``,
``jaccard_high_90``, …; JSON ``intervals``), computed by
:mod:`dpcore.redescriptions.intervals` from the release alone (0 ε).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

import pandas as pd

from dpcore.redescriptions.intervals import (
    DEFAULT_COVERAGE,
    STATISTICS,
    interval_columns,
    intervals_document,
)
from dpcore.redescriptions.results import Query, RunResult
from dpcore.redescriptions.workspace import (
    ANNOTATION_COLUMNS,
    Workspace,
    annotation_columns,
    workspace_from_dict,
)

from ..common.export import json_safe

__all__ = ["export_table", "export_csv", "export_json", "json_safe"]

#: The 90 % interval of every released statistic (dpcore.redescriptions.intervals, 0 ε).
INTERVAL_COLUMNS = [f"{stat}_{end}_{100 * DEFAULT_COVERAGE:g}" for stat in STATISTICS
                    for end in ("low", "high")]

_CSV_COLUMNS = ["run_id", "id", "left_query", "right_query", *ANNOTATION_COLUMNS,
                "noisy_support_left",
                "noisy_support_right", "noisy_support_both", "noisy_jaccard", "noisy_pvalue",
                "trial", "step", "algorithm", "mode", "epsilon_charged", "epsilon_spent",
                "epsilon_returned", "pruning_threshold", *INTERVAL_COLUMNS,
                "params_json"]


def _query_structure(query: Query) -> dict:
    """How a query is built: its tree leaves, or (Serenade) its literal tests and operators."""
    if query.tests:
        return {"tests": [asdict(t) for t in query.tests], "operators": list(query.operators)}
    return {"tree": query.tree, "leaves": list(query.leaves)}


def _intervals_of(doc: dict, red_id: int) -> dict:
    """``{"coverage": 0.9, "<statistic>": [low, high], …}`` of one redescription (0 ε) from
    its run's :func:`intervals_document`."""
    return {"coverage": doc["coverage"], **doc["redescriptions"][str(red_id)]}


def _run_meta(result: RunResult) -> dict:
    return {"run_id": result.run_id, "dataset": result.dataset, "algorithm": result.algorithm,
            "mode": result.mode, **result.budget_columns(),
            "params": result.params, "version": result.version,
            "created_at": result.created_at, "seed": result.seed}


def _workspace(workspace: Workspace | dict | None) -> Workspace | None:
    """The workspace as a :class:`Workspace` (its dict form is checked in full)."""
    if workspace is None or isinstance(workspace, Workspace):
        return workspace
    return workspace_from_dict(workspace, dataset=workspace.get("dataset"))


def export_table(kept: pd.DataFrame, results: dict[str, RunResult], threshold: float,
                 workspace: Workspace | dict | None = None) -> pd.DataFrame:
    """The kept redescriptions as a flat table (one row each, run parameters repeated).

    Each row also carries the analyst's ``decision`` (kept, rejected, undecided), ``tags``
    and ``note`` from ``workspace`` (a :class:`Workspace` or its ``to_dict()``;
    :func:`dpcore.redescriptions.workspace.annotation_columns`); without one every row is
    undecided.
    """
    ws = _workspace(workspace)
    out = []
    bounds: dict[str, dict] = {}
    for row in kept.itertuples(index=False):
        result = results[row.run_id]
        if row.run_id not in bounds:
            bounds[row.run_id] = interval_columns(result)
        out.append({**bounds[row.run_id][int(row.red_id)], "run_id": row.run_id,
                    "id": int(row.red_id), "left_query": row.left, "right_query": row.right,
                    **annotation_columns(ws, row.run_id, int(row.red_id)),
                    "noisy_support_left": row.support_left,
                    "noisy_support_right": row.support_right,
                    "noisy_support_both": row.support, "noisy_jaccard": row.jaccard,
                    "noisy_pvalue": row.pvalue, "trial": int(row.trial), "step": int(row.step),
                    "algorithm": result.algorithm, "mode": result.mode,
                    **result.budget_columns(), "pruning_threshold": float(threshold),
                    "params_json": json.dumps(result.params, sort_keys=True)})
    return pd.DataFrame(out, columns=_CSV_COLUMNS)


def export_csv(kept: pd.DataFrame, results: dict[str, RunResult], threshold: float,
               workspace: Workspace | dict | None = None) -> str:
    """CSV text of :func:`export_table` (with the workspace's decisions, tags and notes)."""
    return export_table(kept, results, threshold, workspace).to_csv(index=False)


def export_json(dataset: str, kept: pd.DataFrame, results: dict[str, RunResult],
                threshold: float, workspace: dict | None = None) -> str:
    """JSON text: the runs (parameters, mode, ε, version, seed), the kept redescriptions and,
    when given, the workspace (``Workspace.to_dict()``: decisions, tags, notes, settings)."""
    used = [r for r in results.values() if r.run_id in set(kept["run_id"])] if len(kept) \
        else list(results.values())
    reds = []
    docs: dict[str, dict] = {}          # one intervals document per run, not per row
    for row in kept.itertuples(index=False):
        if row.run_id not in docs:
            docs[row.run_id] = intervals_document(results[row.run_id])
        red = next(r for r in results[row.run_id].redescriptions if r.id == int(row.red_id))
        reds.append({"run_id": row.run_id, "id": int(row.red_id),
                     "left_query": row.left, "right_query": row.right,
                     "left_leaves": list(row.left_leaves), "right_leaves": list(row.right_leaves),
                     "left_structure": _query_structure(red.left),
                     "right_structure": _query_structure(red.right),
                     "noisy": {"support_left": row.support_left,
                               "support_right": row.support_right,
                               "support_both": row.support, "jaccard": row.jaccard,
                               "pvalue": row.pvalue},
                     "intervals": _intervals_of(docs[row.run_id], int(row.red_id)),
                     "trial": int(row.trial), "step": int(row.step)})
    doc = {"dataset": dataset,
           "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
           "privacy": "All statistics are noisy DP releases; pruning and export are "
                      "post-processing and cost 0 ε.",
           "not_released": "null: the run did not release this statistic (faithful "
                           "Serenade releases only |E11| and |E10|+|E01|).",
           "pruning": {"threshold": float(threshold),
                       "rule": "kept when noisy support |E11| >= threshold"},
           "runs": [_run_meta(r) for r in used],
           "redescriptions": reds}
    if workspace is not None:
        notes = workspace.get("annotations", {})
        for red in reds:
            key = f"{red['run_id']}:{red['id']}"
            if key in notes:
                red["workspace"] = notes[key]
        doc["workspace"] = workspace
    return json.dumps(json_safe(doc), ensure_ascii=False, indent=2, allow_nan=False)
