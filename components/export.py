"""Export of the kept redescriptions: CSV and JSON with queries, noisy statistics, run parameters.

Everything exported is a DP release (queries, noisy statistics) or public metadata
(run parameters, the pruning threshold). Exporting costs 0 ε.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pandas as pd

from dpcore.results import RunResult

__all__ = ["export_table", "export_csv", "export_json"]

_CSV_COLUMNS = ["run_id", "id", "left_query", "right_query", "noisy_support_left",
                "noisy_support_right", "noisy_support_both", "noisy_jaccard", "noisy_pvalue",
                "trial", "step", "algorithm", "mode", "epsilon_charged", "pruning_threshold",
                "params_json"]


def _run_meta(result: RunResult) -> dict:
    return {"run_id": result.run_id, "dataset": result.dataset, "algorithm": result.algorithm,
            "mode": result.mode, "epsilon_charged": result.epsilon,
            "params": result.params, "version": result.version,
            "created_at": result.created_at, "seed": result.seed}


def export_table(kept: pd.DataFrame, results: dict[str, RunResult],
                 threshold: float) -> pd.DataFrame:
    """The kept redescriptions as a flat table (one row each, run parameters repeated)."""
    out = []
    for row in kept.itertuples(index=False):
        result = results[row.run_id]
        out.append({"run_id": row.run_id, "id": int(row.red_id), "left_query": row.left,
                    "right_query": row.right, "noisy_support_left": row.support_left,
                    "noisy_support_right": row.support_right,
                    "noisy_support_both": row.support, "noisy_jaccard": row.jaccard,
                    "noisy_pvalue": row.pvalue, "trial": int(row.trial), "step": int(row.step),
                    "algorithm": result.algorithm, "mode": result.mode,
                    "epsilon_charged": result.epsilon, "pruning_threshold": float(threshold),
                    "params_json": json.dumps(result.params, sort_keys=True)})
    return pd.DataFrame(out, columns=_CSV_COLUMNS)


def export_csv(kept: pd.DataFrame, results: dict[str, RunResult], threshold: float) -> str:
    """CSV text of :func:`export_table`."""
    return export_table(kept, results, threshold).to_csv(index=False)


def export_json(dataset: str, kept: pd.DataFrame, results: dict[str, RunResult],
                threshold: float) -> str:
    """JSON text: the runs (parameters, mode, ε, version, seed) and the kept redescriptions."""
    used = [r for r in results.values() if r.run_id in set(kept["run_id"])] if len(kept) \
        else list(results.values())
    reds = []
    for row in kept.itertuples(index=False):
        reds.append({"run_id": row.run_id, "id": int(row.red_id),
                     "left_query": row.left, "right_query": row.right,
                     "left_leaves": list(row.left_leaves), "right_leaves": list(row.right_leaves),
                     "noisy": {"support_left": row.support_left,
                               "support_right": row.support_right,
                               "support_both": row.support, "jaccard": row.jaccard,
                               "pvalue": row.pvalue},
                     "trial": int(row.trial), "step": int(row.step)})
    doc = {"dataset": dataset,
           "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "privacy": "All statistics are noisy DP releases; pruning and export are "
                      "post-processing and cost 0 ε.",
           "pruning": {"threshold": float(threshold),
                       "rule": "kept when noisy support |E11| >= threshold"},
           "runs": [_run_meta(r) for r in used],
           "redescriptions": reds}
    return json.dumps(doc, ensure_ascii=False, indent=2)
