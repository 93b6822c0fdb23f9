"""AppTests of the Explore page's paid sections: the custom-query form (refusals shown and
not payable, cost, confirm, the stored noisy table, the meter) and the noisy map (a sample
with a location grid: paid, stored, drawn; a dataset without a grid says so)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.common.budget_meter import fmt_eps
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.regions import noise_sd
from dpcore.registry import CUSTOM_QUERY, REGION_MAP

pytestmark = pytest.mark.usefixtures("apptest_workarounds")


def run_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def meter(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.sidebar.metric}


def on_sites(at: AppTest) -> AppTest:
    at.selectbox(key="dataset").set_value("sites").run()
    return run_page(ok(at), "pages/redescriptions/explore.py")


def test_a_refused_query_shows_why_and_cannot_be_paid(app, ledger_path):
    on_sites(app)
    app.text_input(key="cq_left").input("[HYP > 1.55]")
    app.text_input(key="cq_right").input("[TMEAN > 10]").run()
    ok(app)
    errors = " ".join(e.value for e in app.error)
    assert "threshold 1.55 of 'HYP' is not on its public grid" in errors
    assert "nothing charged" in errors
    assert app.button(key="cq_pay").disabled
    app.text_input(key="cq_left").input("[TMEAN > 10]").run()
    assert "'TMEAN' is an attribute of the right view" in " ".join(e.value for e in app.error)
    assert Ledger(ledger_path).budget("sites").spent_nano == 0


def test_a_paid_query_is_charged_once_stored_and_shown_with_the_meter(app, ledger_path):
    on_sites(app)
    app.text_input(key="cq_left").input("[HYP > 1.5]")
    app.text_input(key="cq_right").input("[TMEAN > 10]")
    app.number_input(key="cq_epsilon").set_value(0.2).run()
    ok(app)
    assert not app.error
    assert any("costs **ε = 0.2**" in m.value for m in app.markdown)
    app.button(key="cq_pay").click().run()
    ok(app)
    assert Ledger(ledger_path).budget("sites").spent_nano == 0, "nothing before the confirm"
    app.button(key="cq_confirm_pay").click().run()
    ok(app)
    ledger = Ledger(ledger_path)
    [run] = ledger.list_runs("sites")
    assert run.algorithm == CUSTOM_QUERY and run.status == "done"
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.2)
    assert meter(app)["Spent ε"] == fmt_eps(0.2)
    assert any("Query paid" in s.value for s in app.success)
    frames = [f.value for f in app.dataframe]
    table = next(f for f in frames if "right query holds" in f.columns)
    stats = next(f for f in frames if "noisy |E00|" in f.columns)
    assert table.shape == (2, 2) and 0.6 < stats["noisy J"].iloc[0] <= 1.0
    # the paid query is listed with the mined ones (the Explore scatter's run picker)
    assert run.run_id in app.multiselect(key="explore_runs").value
    # its detail is drawn as a literal query (no tree pair to look for)
    assert not any("lacks this redescription's trees" in w.value for w in app.warning)
    # a rerun does not charge again
    app.run()
    assert Ledger(ledger_path).budget("sites").spent_nano == epsilon_to_nano(0.2)


def test_the_literal_builder_writes_grid_literals(app):
    on_sites(app)
    app.selectbox(key="cq_build_1_attr").set_value("TMEAN").run()
    app.selectbox(key="cq_build_1_op").set_value(">")
    app.selectbox(key="cq_build_1_thr").set_value("10").run()
    app.button(key="cq_build_1_add").click().run()
    ok(app)
    assert app.text_input(key="cq_right").value == "[TMEAN > 10]"
    app.selectbox(key="cq_build_1_attr").set_value("PREC").run()
    app.selectbox(key="cq_build_1_op").set_value("≤")
    app.selectbox(key="cq_build_1_thr").set_value("1000")
    app.selectbox(key="cq_build_1_join").set_value("∨ (or)").run()
    app.button(key="cq_build_1_add").click().run()
    ok(app)
    assert app.text_input(key="cq_right").value == "[TMEAN > 10] ∨ [PREC ≤ 1000]"


def test_a_noisy_map_is_paid_stored_and_drawn(app, ledger_path):
    on_sites(app)
    app.text_input(key="cq_left").input("[HYP > 1.5]")
    app.text_input(key="cq_right").input("[TMEAN > 10]").run()
    ok(app)
    assert app.selectbox(key="map_pair").value.startswith("the query of the form above")
    app.number_input(key="map_epsilon").set_value(0.5).run()
    sd = f"± {noise_sd(0.5):.1f} rows"
    assert sd == "± 2.8 rows" and any(sd in m.value for m in app.markdown)
    app.button(key="map_pay").click().run()
    app.button(key="map_confirm_pay").click().run()
    ok(app)
    ledger = Ledger(ledger_path)
    [run] = ledger.list_runs("sites")
    assert run.algorithm == REGION_MAP and run.status == "done"
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.5)
    assert meter(app)["Spent ε"] == fmt_eps(0.5)
    charts = [c for c in app.get("plotly_chart") if c.proto.id and "map_chart" in c.proto.id]
    assert charts, "the map is drawn"
    assert any("discrete Laplace noise" in c.value for c in app.caption)
    app.radio(key="map_category").set_value("E10").run()
    ok(app)


def test_a_dataset_without_a_grid_says_it_has_no_map(app):
    run_page(app, "pages/redescriptions/explore.py")  # clinic
    assert any("declares no location grid" in c.value for c in app.caption)


def test_an_out_of_range_query_epsilon_is_named_and_kept_not_snapped_back(app, ledger_path):
    """Issue 32, point 8: the box kept its old value while the button priced it, and only
    Streamlit's "outside the allowed range" said anything."""
    on_sites(app)
    app.text_input(key="cq_left").input("[HYP > 1.5]")
    app.text_input(key="cq_right").input("[TMEAN > 10]")
    app.number_input(key="cq_epsilon").set_value(50.0).run()
    ok(app)
    assert app.number_input(key="cq_epsilon").value == 50.0
    assert "ε for this query: 50 is refused — it must be at most 10" in \
        " ".join(e.value for e in app.error)
    assert not [b for b in app.button if b.key == "cq_pay"], "nothing to pay"
    assert Ledger(ledger_path).budget("sites").spent_nano == 0


def _buttons(at: AppTest) -> set[str]:
    return {b.key for b in at.button}


def test_the_map_offers_no_other_datasets_query_refuses_a_bad_one_and_shows_the_new_map(
        app, ledger_path):
    """Issue 32, point 4: on ``sites`` the query box offered the previous dataset's query; a
    query off the public grid was refused only after Confirm; *Stored maps* kept showing an
    older map, labelled by id and time only."""
    run_page(app, "pages/redescriptions/explore.py")                        # clinic
    app.text_input(key="cq_left").input("[DX_CHF]")
    app.text_input(key="cq_right").input("[LAB_BNP > 400]").run()
    on_sites(app)
    assert app.text_input(key="cq_left").value == "" == app.text_input(key="cq_right").value
    assert "map_pair" not in {s.key for s in app.selectbox}

    app.text_input(key="cq_left").input("[HYP > 1.55]")                  # off the grid
    app.text_input(key="cq_right").input("[TMEAN > 10]").run()
    ok(app)
    assert app.selectbox(key="map_pair").value.startswith("the query of the form above")
    assert any("not on its public grid" in e.value and "map is drawn only" in e.value
               for e in app.error)
    assert not {"map_pay", "map_confirm_pay"} & _buttons(app)

    ledger = Ledger(ledger_path)
    left = "[HYP > 1.5]"
    app.text_input(key="cq_left").input(left).run()
    for epsilon in (0.5, 0.3):
        app.number_input(key="map_epsilon").set_value(epsilon).run()
        app.button(key="map_pay").click().run()
        app.button(key="map_confirm_pay").click().run()
        ok(app)
        newest = ledger.list_runs("sites")[-1]
        assert newest.epsilon == epsilon and newest.status == "done"
        pick = app.selectbox(key="map_pick")
        assert pick.value == newest.run_id, "the map just paid for is shown"
        label = pick.options[pick.index]
        assert label.startswith(f"{left}  ⇔  [TMEAN > 10] · ε = {fmt_eps(epsilon)} · ")
    assert ledger.budget("sites").spent_nano == epsilon_to_nano(0.8)
    assert any("No base map" in c.value for c in app.caption)     # said, not silently absent
