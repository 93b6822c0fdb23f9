"""One released redescription, shown readably: its noisy statistics and its queries.

Faithful Serenade releases only the noisy |E11| and |E10|+|E01| of a
redescription, so its supports |q_L|, |q_R| and its p-value are NaN in the
result; they are shown as "not released" (:data:`NOT_RELEASED`), never as
"nan". Serenade queries are literals joined left to right by ∧ / ∨ (no tree
exists), shown as formulas and as a table of their attribute tests. Everything
here reads released fields of a :class:`~dpcore.redescriptions.results.RunResult` only.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dpcore.redescriptions.results import AttributeTest, Query, Redescription
from dpcore.registry import LITERAL_QUERY_ALGORITHMS

__all__ = ["NOT_RELEASED", "is_released", "released_text", "is_serenade_result",
           "statistics_row", "literal_condition", "query_tests_frame", "render_query_formulas"]

NOT_RELEASED = "not released"
_OPERATOR_LABELS = {"and": "∧ (and)", "or": "∨ (or)"}


def is_released(value) -> bool:
    """Whether a released statistic carries a number (NaN / None mean "not released")."""
    if value is None or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def released_text(value, spec: str) -> str:
    """``format(value, spec)``, or :data:`NOT_RELEASED` when the run released no value."""
    return format(float(value), spec) if is_released(value) else NOT_RELEASED


def is_serenade_result(algorithm: str) -> bool:
    """Whether a run of ``algorithm`` has Serenade queries (literal tests, no trees): the
    Serenade miners and the paid custom query."""
    return algorithm in LITERAL_QUERY_ALGORITHMS


def statistics_row(red: Redescription, algorithm: str) -> dict[str, str | int]:
    """The detail table's row: noisy statistics as text, and where the redescription came from.

    Tree miners: its trial and step. Serenade: its initial pair and how many
    extensions were applied to it.
    """
    row: dict[str, str | int] = {
        "noisy |q_L|": released_text(red.support_left, ".0f"),
        "noisy |q_R|": released_text(red.support_right, ".0f"),
        "noisy |E11|": released_text(red.support_both, ".0f"),
        "noisy J": released_text(red.jaccard, ".3f"),
        "noisy p": released_text(red.pvalue, ".2e")}
    if is_serenade_result(algorithm):
        row.update({"initial pair": red.trial, "extensions": red.step})
    else:
        row.update({"trial": red.trial, "step": red.step})
    return row


def literal_condition(test: AttributeTest) -> str:
    """The condition of one literal on its attribute (x = the attribute's value).

    E.g. ``6.5 < x ≤ 15``, ``x > 6.5``, ``x ≤ 15``, ``= yes`` or ``true``.
    """
    if test.kind == "is":
        return "true" if test.value else "false"
    if test.kind == "equals":
        return f"= {test.value}"
    if test.low is not None and test.high is not None:
        return f"{test.low:.4g} < x ≤ {test.high:.4g}"
    if test.low is not None:
        return f"x > {test.low:.4g}"
    if test.high is not None:
        return f"x ≤ {test.high:.4g}"
    return "any value"


def query_tests_frame(query: Query) -> pd.DataFrame:
    """One row per literal of a Serenade query: position, joining operator, attribute, test."""
    rows = []
    for i, test in enumerate(query.tests):
        rows.append({"#": i + 1,
                     "joined by": "" if i == 0 else _OPERATOR_LABELS.get(
                         query.operators[i - 1], query.operators[i - 1]),
                     "attribute": test.attribute, "condition (x = the value)":
                         literal_condition(test), "literal": test.text()})
    return pd.DataFrame(rows, columns=["#", "joined by", "attribute",
                                       "condition (x = the value)", "literal"])


def render_query_formulas(red: Redescription, view_names: tuple[str, str],
                          key_prefix: str) -> None:
    """A Serenade redescription's two queries: formulas and their literals (no trees exist)."""
    st.markdown("**Queries** — literals combined left to right (each ∧ / ∨ applies to "
                "everything before it); Serenade builds no trees.")
    for column, query, name in zip(st.columns(2), (red.left, red.right), view_names):
        with column:
            st.markdown(f"**{name}:** `{query.text}`")
            st.dataframe(query_tests_frame(query), hide_index=True,
                         key=f"{key_prefix}_{'left' if query.side == 0 else 'right'}_tests")
