"""What every experiment report writes: ``metrics.json`` (strict JSON) and ``report.md``.

The three harnesses (redescriptions, sequences, synthesis) compute different metrics but
write them the same way; this module is that one way. Reports compare noisy releases with
true statistics read from raw data, so nothing written here is DP (owner/teaching only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

__all__ = ["jsonable", "write_report"]


def jsonable(value):
    """``value`` with NumPy scalars as Python numbers, tuples as lists, mapping keys as
    strings and every non-finite float as ``None``, so ``json.dumps(..., allow_nan=False)``
    accepts it (strict JSON: no ``NaN`` or ``Infinity``)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_report(out: Path, metrics: Mapping, markdown: str) -> None:
    """Write ``out/metrics.json`` (``metrics`` through :func:`jsonable`) and
    ``out/report.md`` (``markdown``), UTF-8. ``out`` must exist."""
    out = Path(out)
    (out / "metrics.json").write_text(json.dumps(jsonable(metrics), indent=1, allow_nan=False),
                                      encoding="utf-8")
    (out / "report.md").write_text(markdown, encoding="utf-8")
