"""What every family's export shares: strict JSON of released values.

A statistic a run did not release is NaN in its result; exports write it as an empty CSV
cell or JSON ``null`` (strict JSON has no ``NaN``). Exporting costs 0 ε.
"""

from __future__ import annotations

import math

__all__ = ["json_safe"]


def json_safe(value):
    """``value`` with every non-finite float (NaN: not released, ±inf) replaced by None.

    Walks dicts, lists and tuples (tuples become lists); other values are returned as is.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
