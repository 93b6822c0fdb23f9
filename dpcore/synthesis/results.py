"""Synthesis results: the synthetic table and what else a run releases, with owner-only
diagnostics kept apart.

Everything in :class:`SynthesisResult` except ``diagnostics`` is a DP release or public
metadata (strict mode): the synthetic table (post-processing of DP statistics), the noisy
class counts, the feature groups and their cells (chosen from DP outputs and public
parameters), the noisy feature distances (when the groups were built from data), the
parameters and every mechanism call. In faithful mode several of these are NOT ε-DP;
``not_dp`` lists each step that is not.

``diagnostics`` is computed from the true data and is NOT private: per-feature clip counts,
true class counts, true cell counts, MDAV cluster sizes, timings. It is serialised only when
asked for, and is for owners only.

JSON shape (``to_json()``)::

    {"run_id": ..., "dataset": ..., "algorithm": "mcgen", "mode": ..., "params": {...},
     "version": ..., "created_at": ..., "epsilon_nano": charged, "spent_nano": ...,
     "columns": ["outcome", "pregnancies", ...],
     "synthetic": {"columns": [...], "rows": [[0, 3.0, ...], ...]},
     "noisy_class_counts": {"0": 498, "1": 271},
     "feature_groups": [["glucose", "insulin"], ...],
     "groups": [{"features": [...], "epsilon_nano": ..., "cells": {"0": 4, "1": 2},
                 "grid": {"0": ["glucose"], "1": []}}, ...],
     "feature_distances": [[0.0, 0.8, ...], ...] or null,
     "mechanism_calls": [{"mechanism": ..., "label": ..., "epsilon_nano": ...,
                          "sensitivity": ..., "parallel": ...}, ...],
     "not_dp": [...], "seed": null, "neighbouring": ..., "audience": "everyone",
     "noisy_marginals": [{"feature": "glucose", "counts": {"0": [3, -1, ...]},
                          "edges": [lo, ..., hi]}, ...] (the floor, MC-GEN-DP's tree) or null,
     "intervals": {"coverage": 0.9, "class_counts": {"0": [low, high]},
                   "marginals": [{"feature", "low": {...}, "high": {...}}] or null} or null}

``intervals`` is derived on output (:mod:`dpcore.synthesis.intervals`, 0 ε) and ignored on
input, so files written before it existed load unchanged.

Parquet (:meth:`SynthesisResult.write_parquet`): the synthetic table, with the rest of the
JSON (without the rows) in the file's key-value metadata under ``dpcore.synthesis``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpcore.family import Release
from dpcore.privacy.policy import EVERYONE, NEIGHBOURING_RELATION

__all__ = ["SynthesisDiagnostics", "SynthesisResult", "PARQUET_METADATA_KEY"]

#: Key of the result's JSON in the Parquet file's metadata.
PARQUET_METADATA_KEY = b"dpcore.synthesis"


@dataclass
class SynthesisDiagnostics:
    """NOT differentially private: computed from true data. Owners only.

    Attributes
    ----------
    clipped : dict of str → int
        Per numeric feature, how many values lay outside the public bounds (clipped).
    true_class_counts : dict of str → int
        True records per class.
    true_rows : int
        True number of records.
    true_cells : list of dict
        Per feature group, per class, the true record count of each cell (strict) or the
        MDAV cluster sizes (faithful).
    phase_seconds : dict of str → float
        Wall time of each phase.
    """

    clipped: dict[str, int] = field(default_factory=dict)
    true_class_counts: dict[str, int] = field(default_factory=dict)
    true_rows: int = 0
    true_cells: list[dict[str, list[int]]] = field(default_factory=list)
    phase_seconds: dict[str, float] = field(default_factory=dict)


def _json_value(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        x = float(v)
        return x if math.isfinite(x) else None
    return v


def _frame_to_split(frame: pd.DataFrame) -> dict:
    columns = [str(c) for c in frame.columns]
    cols = [frame[c].to_numpy(dtype=object) for c in frame.columns]
    rows = [[_json_value(v) for v in row] for row in zip(*cols)] if cols else []
    return {"columns": columns, "rows": rows}


def _frame_from_split(data: dict) -> pd.DataFrame:
    columns = list(data["columns"])
    rows = data["rows"]
    out = {}
    for j, name in enumerate(columns):
        values = [r[j] for r in rows]
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            out[name] = np.asarray(values, dtype=np.int64)
        elif all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                 for v in values):
            out[name] = np.asarray([np.nan if v is None else v for v in values],
                                   dtype=np.float64)
        else:
            out[name] = np.asarray(values, dtype=object)
    return pd.DataFrame(out, columns=columns)


@dataclass
class SynthesisResult(Release):
    """Everything one synthesis run released, with its provenance.

    Attributes
    ----------
    run_id, dataset, algorithm, mode : str
        Identity; ``mode`` is ``strict`` or ``faithful`` (faithful is NOT DP).
    params : dict
        :meth:`SynthesisParams.to_dict`.
    version, created_at : str
        dpcore version; UTC ISO time.
    epsilon_nano : int
        What the run was planned (and charged) to spend; ``spent_nano`` what its mechanism
        calls spent (equal for every synthesizer here).
    synthetic : pandas.DataFrame
        The synthetic table: the schema's columns (label first), categoricals decoded.
    noisy_class_counts : dict of str → int
        Rows generated per class (class by its text form). Strict: the noisy counts N̂_y
        (clamped at 0). Faithful: the true counts (listed in ``not_dp``).
    feature_groups : list of list of str
        The groups modelled jointly (faithful groups of encoded columns are shown by the
        encoded column names, e.g. ``sex=F``).
    groups : list of dict
        Per group: ``features``, ``epsilon_nano`` and per class the number of cells
        (``cells``) and the grid's features (``grid``; strict) or MDAV clusters (faithful).
    feature_distances : list of list of float, optional
        The noisy feature distance matrix the groups were built from (strict, groups not
        given), for display; null otherwise.
    noisy_marginals : list of dict, optional
        The floor's (or strict MC-GEN-DP's tree structure's) released noisy class × bin
        histograms, one per feature: ``{"feature", "counts": {class: [count per bin]},
        "edges" | "levels"}`` (ε-DP, raw: may be negative); null for MC-GEN's other
        structures and for results stored before they were kept.
    mechanism_calls : list of dict
        Every (ε, Δ) spent, in nano-ε (see :class:`~dpcore.privacy.accountant.MechanismCall`).
    not_dp : list of str
        The steps that are not ε-DP (faithful mode); empty in strict mode.
    seed : int, optional
        Only on public demo data.
    diagnostics : SynthesisDiagnostics
        Owner-only (not in ``to_json()`` unless asked for).
    neighbouring, audience : str
        The neighbouring relation the ε refers to; who may read the result.
    """

    run_id: str
    dataset: str
    algorithm: str
    mode: str
    params: dict
    version: str
    created_at: str
    epsilon_nano: int
    spent_nano: int
    synthetic: pd.DataFrame
    noisy_class_counts: dict[str, int]
    feature_groups: list[list[str]]
    groups: list[dict]
    mechanism_calls: list[dict]
    feature_distances: list[list[float]] | None = None
    noisy_marginals: list[dict] | None = None
    not_dp: list[str] = field(default_factory=list)
    seed: int | None = None
    diagnostics: SynthesisDiagnostics = field(default_factory=SynthesisDiagnostics)
    neighbouring: str = NEIGHBOURING_RELATION
    audience: str = EVERYONE
    #: charged / spent / returned nano-ε (:class:`~dpcore.privacy.accountant.RunBudget`),
    #: set by the executor.
    budget: dict | None = None

    @property
    def epsilon(self) -> float:
        return self.epsilon_nano / 10**9

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.synthetic.columns]

    def to_dict(self, include_diagnostics: bool = False, include_rows: bool = True) -> dict:
        """Plain JSON-ready dict; diagnostics (non-private) only when asked for."""
        out = {
            "run_id": self.run_id, "dataset": self.dataset, "algorithm": self.algorithm,
            "mode": self.mode, "params": self.params, "version": self.version,
            "created_at": self.created_at, "epsilon_nano": int(self.epsilon_nano),
            "spent_nano": int(self.spent_nano), "columns": self.columns,
            "noisy_class_counts": {str(k): int(v) for k, v in self.noisy_class_counts.items()},
            "feature_groups": [list(g) for g in self.feature_groups],
            "groups": self.groups, "feature_distances": self.feature_distances,
            "mechanism_calls": self.mechanism_calls, "not_dp": list(self.not_dp),
            "seed": self.seed, "neighbouring": self.neighbouring, "audience": self.audience,
            "budget": self.budget, "noisy_marginals": self.noisy_marginals,
        }
        # the released counts' 90 % intervals (0 ε: released values and recorded scales)
        from dpcore.synthesis.intervals import result_intervals

        out["intervals"] = result_intervals(self)
        if include_rows:
            out["synthetic"] = _frame_to_split(self.synthetic)
        if include_diagnostics:
            d = self.diagnostics
            out["diagnostics"] = {"clipped": dict(d.clipped),
                                  "true_class_counts": dict(d.true_class_counts),
                                  "true_rows": int(d.true_rows),
                                  "true_cells": d.true_cells,
                                  "phase_seconds": dict(d.phase_seconds)}
        return out

    def to_json(self, include_diagnostics: bool = False) -> str:
        return json.dumps(self.to_dict(include_diagnostics), ensure_ascii=False,
                          allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict, synthetic: pd.DataFrame | None = None) -> SynthesisResult:
        d = dict(data)
        rows = d.pop("synthetic", None)
        d.pop("columns", None)
        d.pop("intervals", None)  # derived by to_dict, not a stored field
        if synthetic is None:
            synthetic = _frame_from_split(rows) if rows is not None else pd.DataFrame()
        diag = d.pop("diagnostics", None) or {}
        return cls(synthetic=synthetic, diagnostics=SynthesisDiagnostics(**diag), **d)

    @classmethod
    def from_json(cls, text: str) -> SynthesisResult:
        return cls.from_dict(json.loads(text))

    def write_parquet(self, path, include_diagnostics: bool = False) -> None:
        """The synthetic table as Parquet, the rest of the result in its metadata."""
        table = pa.Table.from_pandas(self.synthetic, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[PARQUET_METADATA_KEY] = json.dumps(
            self.to_dict(include_diagnostics, include_rows=False), ensure_ascii=False,
            allow_nan=False).encode("utf-8")
        pq.write_table(table.replace_schema_metadata(meta), path)

    @classmethod
    def read_parquet(cls, path) -> SynthesisResult:
        """Inverse of :meth:`write_parquet`."""
        table = pq.read_table(path)
        meta = (table.schema.metadata or {}).get(PARQUET_METADATA_KEY)
        if meta is None:
            raise ValueError(f"{path}: not a dpcore synthesis result (no metadata)")
        return cls.from_dict(json.loads(meta.decode("utf-8")), synthetic=table.to_pandas())
