"""A paid query of the analyst's own (Explore page): write or edit a query pair, see its ε
cost, confirm, receive its noisy 4-cell table.

The query is checked against the dataset's public schema on every keystroke (0 ε: the
check reads only the schema and the text); a refused query shows the reason and cannot be
paid for. Paying goes through :func:`dpcore.runs.charge_and_mine` like any run: charged
before the noise, stored before it is shown, listed with the mined runs. Editing a mined
redescription ("drop this literal", "change this threshold") fills the same form from the
*released* query (post-processing, 0 ε).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.common.budget_meter import fmt_eps
from components.common.number_fields import Bounds, number_field
from components.common.session import current_requester, current_role, load_data, set_flash
from dpcore.data.schema import BOOLEAN, CATEGORICAL, Schema
from dpcore.errors import BudgetExceededError, DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.units import nano_to_epsilon
from dpcore.redescriptions.custom_query import (
    HELP,
    CustomQueryParams,
    QueryError,
    drop_literal,
    editable_text,
    grid_values,
    parse_pair,
    query_table,
)
from dpcore.redescriptions.results import RunResult, SerenadeQuery
from dpcore.registry import CUSTOM_QUERY, KIND_TWO_VIEW, REGION_MAP
from dpcore.runs import charge_and_mine, load_result, new_run_id, readable_runs, run_cost

__all__ = ["custom_query_section", "render_custom_query", "released_redescriptions",
           "paid_table_frame"]

_TEXT_KEYS = ("cq_left", "cq_right")
#: The dataset the form's query texts were written for.
DATASET_KEY = "cq_dataset"
_OPS = {"∧ (and)": " ∧ ", "∨ (or)": " ∨ "}


def released_redescriptions(ledger: Ledger, dataset: str) -> list[tuple[str, RunResult, object]]:
    """(label, run result, redescription) of every finished run this session may read,
    newest first (0 ε: stored releases)."""
    out = []
    for run in reversed(readable_runs(ledger, dataset, current_role())):
        if run.status != "done" or run.algorithm == REGION_MAP:
            continue
        try:
            result = load_result(ledger, run.run_id, requester=current_requester())
        except DpcoreError:
            continue
        for red in getattr(result, "redescriptions", []):
            label = f"{run.run_id[:6]} #{red.id}: {red.text}"
            out.append((label, result, red))
    return out


def paid_table_frame(result: RunResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The released 2×2 table and its statistics as display frames (0 ε)."""
    t = query_table(result)
    e11, e10, e01, e00 = t.cells
    table = pd.DataFrame({"right query holds": [e11, e01], "right query fails": [e10, e00]},
                         index=["left query holds", "left query fails"])
    stats = pd.DataFrame([{"noisy |E11|": t.support_both, "noisy |E10|": e10,
                           "noisy |E01|": e01, "noisy |E00|": e00,
                           "noisy |q_L|": t.support_left, "noisy |q_R|": t.support_right,
                           "noisy J": round(t.jaccard, 4), "noisy p-value": t.pvalue,
                           "ε": result.epsilon}])
    return table, stats


def _literal_builder(schema: Schema, side: int) -> None:
    """Pick an attribute of one view and a public grid value; append it to that side's text."""
    attrs = schema.view_attributes(side)
    key = f"cq_build_{side}"
    c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
    name = c1.selectbox("attribute", [a.name for a in attrs], key=f"{key}_attr")
    attr = next(a for a in attrs if a.name == name)
    if attr.type == BOOLEAN:
        test = c2.selectbox("test", ["holds", "does not hold"], key=f"{key}_bool")
        literal = f"[{name}]" if test == "holds" else f"¬[{name}]"
    elif attr.type == CATEGORICAL:
        value = c2.selectbox("=", list(attr.categories), key=f"{key}_cat")
        literal = f"[{name} = {value}]"
    else:
        op = c2.selectbox("test", ["≤", ">"], key=f"{key}_op")
        grid = [f"{g:.4g}" for g in grid_values(schema, attr)]
        value = c3.selectbox("grid threshold", grid, key=f"{key}_thr",
                             help="Only the schema's public grid thresholds may be used.")
        literal = f"[{name} {op} {value}]"
    join = c4.selectbox("join with", list(_OPS), key=f"{key}_join")
    if st.button(f"Add {literal}", key=f"{key}_add"):
        text = st.session_state.get(_TEXT_KEYS[side], "").strip()
        if text:
            ops = {"∧", "∨"} & set(text)
            wanted = _OPS[join].strip()
            text = f"({text})" if ops and wanted not in ops else text
            text = text + _OPS[join] + literal
        st.session_state[_TEXT_KEYS[side]] = text or literal
        st.rerun()


def _edit_mined(ledger: Ledger, record: DatasetRecord) -> None:
    """Load a released redescription into the form; drop one of its literals (0 ε)."""
    reds = released_redescriptions(ledger, record.name)
    if not reds:
        st.caption("No released redescriptions yet: mine a run, or write a query below.")
        return
    labels = [label for label, _, _ in reds]
    label = st.selectbox("Start from a released redescription", labels, key="cq_source")
    _, result, red = reds[labels.index(label)]
    texts = [editable_text(result, red.left), editable_text(result, red.right)]
    c1, c2 = st.columns(2)
    if c1.button("Load it into the form", key="cq_load"):
        if None in texts:
            set_flash("warning", "This tree query has no left-to-right form in the export's "
                                 "syntax; its text was not loaded — write it by hand.")
        for side, text in enumerate(texts):
            if text is not None:
                st.session_state[_TEXT_KEYS[side]] = text
        st.session_state["cq_edited_from"] = f"run {result.run_id} redescription {red.id}"
        st.rerun()
    choices = [(side, i, t.text()) for side, q in enumerate((red.left, red.right))
               if isinstance(q, SerenadeQuery) and len(q.tests) > 1
               for i, t in enumerate(q.tests)]
    if choices:
        names = [f"{'left' if s == 0 else 'right'}: drop {text}" for s, _, text in choices]
        pick = c2.selectbox("Drop one literal", names, key="cq_drop_pick")
        if c2.button("Drop it and load", key="cq_drop"):
            side, index, _ = choices[names.index(pick)]
            query = red.left if side == 0 else red.right
            st.session_state[_TEXT_KEYS[side]] = drop_literal(query, index)
            other = 1 - side
            if texts[other] is not None:
                st.session_state[_TEXT_KEYS[other]] = texts[other]
            st.session_state["cq_edited_from"] = f"run {result.run_id} redescription {red.id}"
            st.rerun()


def _show_paid(ledger: Ledger, record: DatasetRecord) -> None:
    run_id = st.session_state.get("cq_last_run")
    if not run_id:
        return
    try:
        result = load_result(ledger, run_id, requester=current_requester())
    except DpcoreError as exc:
        st.warning(f"The last paid query cannot be shown: {exc}")
        return
    if result.dataset != record.name or result.algorithm != CUSTOM_QUERY:
        return
    red = result.redescriptions[0]
    st.markdown(f"**Your paid query** (run `{run_id[:8]}`, ε = {fmt_eps(result.epsilon)}):  \n"
                f"`{red.left.text}`  ⇔  `{red.right.text}`")
    table, stats = paid_table_frame(result)
    st.dataframe(table, key="cq_table")
    st.dataframe(stats, hide_index=True, key="cq_stats")
    st.caption("Noisy DP releases: each cell carries discrete Laplace noise of scale 1/ε rows; "
               "the statistics are computed from the four noisy cells (0 ε). The query is "
               "listed with the mined redescriptions above.")


def render_custom_query(ledger: Ledger, record: DatasetRecord) -> None:
    """The form: edit or write a pair, see the check and the cost, confirm, see the table."""
    if record.kind != KIND_TWO_VIEW:
        return
    schema = record.schema
    if st.session_state.get(DATASET_KEY) != record.name:
        # a pair typed for another dataset names that schema's attributes: not offered here
        for key in (*_TEXT_KEYS, "cq_edited_from"):
            st.session_state.pop(key, None)
        st.session_state[DATASET_KEY] = record.name
    st.caption("Write a query pair in the export's syntax, e.g. `([A] ∧ [B = x]) ∨ [C > 2]`, "
               "or build it literal by literal. Only the schema's attributes and public grid "
               "thresholds may be used. Checking costs nothing; the noisy table costs ε.")
    _edit_mined(ledger, record)
    for side in (0, 1):
        st.session_state.setdefault(_TEXT_KEYS[side], "")
        with st.expander(f"Build a literal on {schema.views[side].name!r}", expanded=False):
            _literal_builder(schema, side)
    left = st.text_input(f"Left query ({schema.views[0].name})", key="cq_left",
                         help=HELP["left_query"])
    right = st.text_input(f"Right query ({schema.views[1].name})", key="cq_right",
                          help=HELP["right_query"])
    st.session_state.setdefault("cq_epsilon", 0.1)
    if number_field(st, "ε for this query", "cq_epsilon", QUERY_EPSILON, step=0.05,
                    format="%.3f", help=HELP["epsilon"]):
        _show_paid(ledger, record)            # the box says what is wrong; nothing to pay
        return
    epsilon = st.session_state["cq_epsilon"]
    problem = None
    try:
        parsed = parse_pair(schema, left, right)
    except QueryError as exc:
        parsed, problem = None, str(exc)
    if problem and (left.strip() or right.strip()):
        st.error(f"Refused, nothing charged: {problem}")
    params = CustomQueryParams(epsilon=float(epsilon), left_query=left, right_query=right,
                               edited_from=st.session_state.get("cq_edited_from", ""))
    cost = run_cost(params)
    remaining = ledger.budget(record.name).remaining_nano
    fits = cost <= remaining
    if parsed:
        st.markdown(f"`{parsed[0].text}`  ⇔  `{parsed[1].text}` — costs **ε = "
                    f"{fmt_eps(nano_to_epsilon(cost))}** of the remaining "
                    f"{fmt_eps(nano_to_epsilon(remaining))}.")
    if not fits:
        st.warning("This query does not fit in the remaining budget.")
    state = st.session_state.get("cq_confirm")
    if state and state.get("key") != (record.name, left, right, cost):
        state = st.session_state["cq_confirm"] = None
    if not state:
        if st.button(f"Pay ε = {fmt_eps(nano_to_epsilon(cost))} for the noisy table",
                     key="cq_pay", disabled=not (parsed and fits), type="primary"):
            st.session_state["cq_confirm"] = {"key": (record.name, left, right, cost),
                                              "run_id": new_run_id()}
            st.rerun()
    else:
        box = st.empty()        # emptied once answered: no "Confirm" above the paid table
        with box.container():
            st.info(f"Confirm: spend ε = {fmt_eps(nano_to_epsilon(cost))} of "
                    f"{record.name!r}'s budget on this query? Spent budget is never refunded.")
            c1, c2 = st.columns(2)
            paid = c1.button("Confirm and pay", key="cq_confirm_pay", type="primary")
            if c2.button("Cancel", key="cq_cancel"):
                st.session_state["cq_confirm"] = None
                st.rerun()
        if paid:
            box.empty()
            _pay(ledger, record, params, state["run_id"])
    _show_paid(ledger, record)


def _pay(ledger: Ledger, record: DatasetRecord, params: CustomQueryParams, run_id: str) -> None:
    data = load_data(record) if record.public_demo else None
    try:
        charge_and_mine(ledger, record.name, params, requester=current_requester(),
                        run_id=run_id, data=data)
    except (QueryError, BudgetExceededError) as exc:
        st.session_state["cq_confirm"] = None
        st.error(f"Refused: {exc}")
        return
    except DpcoreError as exc:
        st.session_state["cq_confirm"] = None
        st.error(f"The query failed: {exc}")
        return
    st.session_state["cq_confirm"] = None
    st.session_state["cq_last_run"] = run_id
    set_flash("success", f"Query paid (ε = {fmt_eps(params.epsilon)}) and stored; its noisy "
                         "table is below.")
    st.rerun()


#: What "ε for this query" and "ε for the map" accept (a box without hard bounds says so
#: under the value typed, instead of snapping it back unseen).
QUERY_EPSILON = Bounds(low=0.001, high=10.0, why="ε of one paid query")


def custom_query_section(ledger: Ledger, record: DatasetRecord) -> None:
    """Explore's section: a heading over :func:`render_custom_query`, in a bordered box."""
    if record.kind != KIND_TWO_VIEW:
        return
    st.subheader("Your own query (paid)")
    with st.container(border=True):
        render_custom_query(ledger, record)
