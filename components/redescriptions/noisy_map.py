"""Where a redescription holds, privately (Explore page): a paid noisy map over the
dataset's declared location grid.

Only for datasets whose public schema declares a location grid
(:class:`dpcore.data.schema.Location`). The analyst picks a released redescription (or the
query pair of the custom-query form), sees the ε cost, confirms; the map — noisy counts of
E11, E10 and E01 per cell, one histogram with one ε — is charged, stored as a run and then
drawn with its noise scale. Drawing works offline: each cell is a filled polygon computed
from the declaration (plotly scatter polygons on a blank lon/lat plane, no tile server).
Earlier maps of the dataset are read back at 0 ε.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from components.common.budget_meter import fmt_eps
from components.common.number_fields import number_field
from components.common.session import current_requester, current_role, load_data, set_flash
from components.redescriptions.custom_query import (
    DATASET_KEY,
    QUERY_EPSILON,
    released_redescriptions,
)
from dpcore.errors import BudgetExceededError, DpcoreError
from dpcore.privacy.ledger import DatasetRecord, Ledger
from dpcore.privacy.units import nano_to_epsilon
from dpcore.redescriptions.custom_query import QueryError, editable_text, parse_pair
from dpcore.redescriptions.regions import (
    CATEGORIES,
    RegionMapParams,
    map_counts,
    noise_sd,
)
from dpcore.registry import KIND_TWO_VIEW, REGION_MAP
from dpcore.runs import charge_and_mine, load_result, new_run_id, readable_runs, run_cost

__all__ = ["noisy_map_section", "render_noisy_map", "map_figure", "COLOUR_LEVELS"]

#: Colour levels of the cells (one scatter trace each, so the map stays a handful of traces).
COLOUR_LEVELS = 8
_MEANING = {"E11": "both queries hold", "E10": "only the left query holds",
            "E01": "only the right query holds"}


def map_figure(bounds: np.ndarray, values: np.ndarray, sd: float, title: str) -> go.Figure:
    """Filled cell polygons coloured by noisy count (released values, 0 ε).

    Cells are binned into :data:`COLOUR_LEVELS` equal-width levels between 0 and the
    largest noisy count; negative noisy counts show as 0-level cells. A transparent marker
    at each cell centre carries the hover text and the colour bar.
    """
    top = max(float(values.max()), 1.0)
    levels = np.clip((values / top * COLOUR_LEVELS).astype(int), 0, COLOUR_LEVELS - 1)
    scale = "Viridis"
    colours = _sample_colours(scale, COLOUR_LEVELS)
    fig = go.Figure()
    for level in range(COLOUR_LEVELS):
        cells = np.flatnonzero(levels == level)
        if cells.size == 0:
            continue
        xs, ys = [], []
        for x0, y0, x1, y1 in bounds[cells]:
            xs += [x0, x1, x1, x0, x0, None]
            ys += [y0, y0, y1, y1, y0, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", mode="lines",
                                 fillcolor=colours[level], line=dict(width=0.5, color="white"),
                                 hoverinfo="skip", showlegend=False))
    cx = (bounds[:, 0] + bounds[:, 2]) / 2
    cy = (bounds[:, 1] + bounds[:, 3]) / 2
    text = [f"cell {k}: {lon0:g}–{lon1:g} °E, {lat0:g}–{lat1:g} °N<br>noisy count "
            f"{v:.0f} (± {sd:.1f} rows, 1 sd)"
            for k, ((lon0, lat0, lon1, lat1), v) in enumerate(zip(bounds, values))]
    fig.add_trace(go.Scatter(x=cx, y=cy, mode="markers", text=text, hoverinfo="text",
                             marker=dict(size=6, opacity=0.0, color=values, colorscale=scale,
                                         cmin=0, cmax=top, showscale=True,
                                         colorbar=dict(title="noisy rows")),
                             showlegend=False))
    fig.update_layout(title=title, height=460, margin=dict(l=40, r=20, t=50, b=40),
                      plot_bgcolor="white", xaxis_title="longitude (°E)",
                      yaxis_title="latitude (°N)")
    fig.update_yaxes(scaleanchor="x", scaleratio=1, showgrid=False, zeroline=False)
    fig.update_xaxes(showgrid=False, zeroline=False)
    return fig


def _sample_colours(scale: str, n: int) -> list[str]:
    from plotly.colors import sample_colorscale

    return sample_colorscale(scale, [i / max(n - 1, 1) for i in range(n)])


def _map_runs(ledger: Ledger, dataset: str) -> list:
    return [r for r in reversed(readable_runs(ledger, dataset, current_role()))
            if r.algorithm == REGION_MAP and r.status == "done"]


def _pair_choices(ledger: Ledger, record: DatasetRecord) -> dict[str, tuple[str, str]]:
    """Query pairs the map can be drawn for: the custom-query form's, then released ones."""
    out: dict[str, tuple[str, str]] = {}
    left = st.session_state.get("cq_left", "").strip()
    right = st.session_state.get("cq_right", "").strip()
    if left and right and st.session_state.get(DATASET_KEY) == record.name:
        out[f"the query of the form above: {left}  ⇔  {right}"] = (left, right)
    for label, result, red in released_redescriptions(ledger, record.name):
        texts = (editable_text(result, red.left), editable_text(result, red.right))
        if None not in texts:
            out[label] = texts
    return out


def render_noisy_map(ledger: Ledger, record: DatasetRecord) -> None:
    """The map section: pick a pair, pay, see where it holds (noisy, with its noise scale)."""
    if record.kind != KIND_TWO_VIEW:
        return
    location = record.schema.location
    if location is None:
        st.caption("This dataset's schema declares no location grid, so it has no map "
                   "(the sample `sites` has one).")
        return
    rows, cols = location.shape
    st.caption(f"Public grid: {location.cell_degrees:g}° cells over "
               f"{location.lon_range[0]:g}–{location.lon_range[1]:g} °E × "
               f"{location.lat_range[0]:g}–{location.lat_range[1]:g} °N ({rows * cols} cells, "
               f"from `{location.longitude}`/`{location.latitude}`). One noisy histogram of "
               "E11/E10/E01 per cell costs one ε.")
    choices = _pair_choices(ledger, record)
    if choices:
        label = st.selectbox("Query pair", list(choices), key="map_pair")
        left, right = choices[label]
        try:
            parse_pair(record.schema, left, right)      # a free check of the public schema
        except QueryError as exc:
            st.error(f"Refused, nothing charged: {exc} A map is drawn only for a pair the "
                     "public schema accepts: fix the query above or pick another pair.")
            _show_maps(ledger, record)
            return
        st.session_state.setdefault("map_epsilon", 0.5)
        if number_field(st, "ε for the map", "map_epsilon", QUERY_EPSILON, step=0.1,
                        format="%.3f"):
            return                              # the box says what is wrong; nothing to pay
        epsilon = st.session_state["map_epsilon"]
        params = RegionMapParams(epsilon=float(epsilon), left_query=left, right_query=right)
        cost = run_cost(params)
        remaining = ledger.budget(record.name).remaining_nano
        st.markdown(f"Costs **ε = {fmt_eps(nano_to_epsilon(cost))}** of the remaining "
                    f"{fmt_eps(nano_to_epsilon(remaining))}; each count gets noise of "
                    f"± {noise_sd(float(epsilon)):.1f} rows (1 sd).")
        state = st.session_state.get("map_confirm")
        if state and state.get("key") != (record.name, left, right, cost):
            state = st.session_state["map_confirm"] = None
        if not state:
            if st.button(f"Draw the noisy map (ε = {fmt_eps(nano_to_epsilon(cost))})",
                         key="map_pay", disabled=cost > remaining, type="primary"):
                st.session_state["map_confirm"] = {"key": (record.name, left, right, cost),
                                                   "run_id": new_run_id()}
                st.rerun()
        else:
            box = st.empty()    # emptied once answered: no "Confirm" above the drawn map
            with box.container():
                st.info(f"Confirm: spend ε = {fmt_eps(nano_to_epsilon(cost))} on this map?")
                paid = st.button("Confirm and draw", key="map_confirm_pay", type="primary")
            if paid:
                box.empty()
                _pay(ledger, record, params, state["run_id"])
    else:
        st.caption("No query pair yet: mine a run or write a query above.")
    _show_maps(ledger, record)


def _pay(ledger: Ledger, record: DatasetRecord, params: RegionMapParams, run_id: str) -> None:
    data = load_data(record) if record.public_demo else None
    st.session_state["map_confirm"] = None
    try:
        charge_and_mine(ledger, record.name, params, requester=current_requester(),
                        run_id=run_id, data=data)
    except (QueryError, BudgetExceededError) as exc:
        st.error(f"Refused: {exc}")
        return
    except DpcoreError as exc:
        st.error(f"The map failed: {exc}")
        return
    st.session_state["map_run"] = run_id
    set_flash("success", f"Map paid (ε = {fmt_eps(params.epsilon)}) and stored; it is drawn "
                         "below.")
    st.rerun()


def _show_maps(ledger: Ledger, record: DatasetRecord) -> None:
    runs = _map_runs(ledger, record.name)
    if not runs:
        return
    by_id = {r.run_id: r for r in runs}
    wanted = st.session_state.pop("map_run", None)
    if wanted in by_id:                              # the map just paid for
        st.session_state["map_pick"] = wanted
    elif st.session_state.get("map_pick") not in by_id:
        st.session_state["map_pick"] = runs[0].run_id
    run_id = st.selectbox("Stored maps (0 ε to reopen)", list(by_id), key="map_pick",
                          format_func=lambda rid: _map_label(by_id[rid]))
    try:
        result = load_result(ledger, run_id, requester=current_requester())
        counts = map_counts(result, record.schema)
    except DpcoreError as exc:
        st.warning(f"This map cannot be drawn: {exc}")
        return
    which = st.radio("Show", CATEGORIES, horizontal=True, key="map_category",
                     format_func=lambda c: f"{c} ({_MEANING[c]})")
    column = CATEGORIES.index(which)
    sd = noise_sd(counts.epsilon)
    fig = map_figure(counts.bounds, counts.counts[:, column], sd,
                     f"noisy |{which}| per cell — {counts.left_text}  ⇔  {counts.right_text}")
    st.plotly_chart(fig, key="map_chart")
    st.caption(f"Noisy DP release (ε = {fmt_eps(counts.epsilon)} for the whole map): every "
               f"count carries discrete Laplace noise of ± {sd:.1f} rows (1 sd), so cells "
               "with a few rows are mostly noise; negative noisy counts are drawn as 0. "
               "No base map: the app fetches no map tiles or coastlines (it works offline), "
               "so read the place from the longitude and latitude axes.")


def _map_label(run) -> str:
    """A stored map as the analyst knows it: its query pair, its ε, when, its id."""
    left = _short(str(run.params.get("left_query", "?")))
    right = _short(str(run.params.get("right_query", "?")))
    return (f"{left}  ⇔  {right} · ε = {fmt_eps(run.epsilon)} · "
            f"{run.created_at[:16].replace('T', ' ')} · {run.run_id[:8]}")


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def noisy_map_section(ledger: Ledger, record: DatasetRecord) -> None:
    """Explore's section: a heading over :func:`render_noisy_map`, in a bordered box."""
    if record.kind != KIND_TWO_VIEW:
        return
    st.subheader("Where it holds: a noisy map (paid)")
    with st.container(border=True):
        render_noisy_map(ledger, record)
