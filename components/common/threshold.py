"""The pruning threshold of a dataset in this session, shared by Explore and the Runs page.

Explore chooses (or suggests) a threshold for the runs it shows; the Runs page counts what
each run keeps at that threshold, and every other run at its own suggested one. Pruning is
post-processing of released values only: 0 ε.
"""

from __future__ import annotations

import streamlit as st

from dpcore.redescriptions.pruning import suggest_threshold
from dpcore.redescriptions.results import RunResult

__all__ = ["TOLERANCE_KEY", "DEFAULT_TOLERANCE", "get_threshold", "set_threshold",
           "threshold_runs", "set_threshold_runs", "suggested_threshold"]

#: Session key of Explore's tolerance box.
TOLERANCE_KEY = "explore_tolerance"
#: The tolerance of the suggested threshold (an error of a Jaccard, in [0, 1]).
DEFAULT_TOLERANCE = 0.1
#: dataset → the (sorted) run ids the threshold in ``prune_thresholds`` was set for.
_THRESHOLD_RUNS_KEY = "prune_threshold_runs"


def get_threshold(dataset: str) -> float:
    """The pruning threshold of ``dataset`` in this session (0 = keep everything)."""
    return float(st.session_state.get("prune_thresholds", {}).get(dataset, 0.0))


def set_threshold(dataset: str, value: float) -> None:
    """Remember the pruning threshold of ``dataset`` (never negative)."""
    thresholds = dict(st.session_state.get("prune_thresholds", {}))
    thresholds[dataset] = max(0.0, float(value))
    st.session_state["prune_thresholds"] = thresholds


def threshold_runs(dataset: str) -> tuple[str, ...]:
    """The runs the dataset's threshold (:func:`get_threshold`) was chosen or suggested for
    on Explore (other runs have their own suggested threshold on the Runs page)."""
    return tuple(st.session_state.get(_THRESHOLD_RUNS_KEY, {}).get(dataset, ()))


def set_threshold_runs(dataset: str, selection_key: tuple[str, ...]) -> None:
    """Remember the runs the dataset's threshold was chosen or suggested for."""
    mapping = dict(st.session_state.get(_THRESHOLD_RUNS_KEY, {}))
    mapping[dataset] = tuple(selection_key)
    st.session_state[_THRESHOLD_RUNS_KEY] = mapping


def suggested_threshold(results: dict[str, RunResult], tolerance: float) -> float | None:
    """:func:`dpcore.redescriptions.pruning.suggest_threshold` of the pooled runs (0 ε), or
    None if unavailable."""
    try:
        return float(suggest_threshold(list(results.values()), tolerance))
    except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError):
        return None  # e.g. a stored result without the mechanism calls it needs
