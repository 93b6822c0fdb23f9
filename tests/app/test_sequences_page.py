"""The Sequences page: its form, its tables, charts and exports, and the page under AppTest.

The component tests build releases with the PFS2 core and a throwaway accountant on
generated clickstreams (no ledger). The AppTest tests drive the page against a temporary
ledger, through the one run path (dpcore.runs), on the shipped clickstream sample.
"""

from __future__ import annotations

import io
import json
import math
import time

import numpy as np
import pandas as pd
import pytest

from components.common.family_ui import cost_breakdown, cost_text, family_ui
from components.common.family_ui import launch_blockers as shared_launch_blockers
from components.sequences.sequence_form import field_label, read_form, state_key
from components.sequences.sequence_results import (
    ARROW,
    evaluate_against_truth,
    export_csv,
    export_json,
    length_chart,
    level_frame,
    missed_frame,
    pattern_frame,
    prefix_tree,
    top_paths,
    truth_frame,
)
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.ledger import BudgetStatus, DatasetRecord
from dpcore.registry import (
    ALGORITHM_SPECS,
    FAITHFUL,
    KIND_SEQUENCES,
    MODE_LABELS,
    PARAMETER_SYMBOLS,
    SEQUENCES,
    STRICT,
    family_algorithms,
)
from dpcore.runs import run_cost
from dpcore.sequences.evaluate import exact_frequent_sequences
from dpcore.sequences.samples import generate_clickstream
from tests.support.accounts_support import owner_in_env_ledger, role_of, select_dataset, sign_in_app

pytestmark = pytest.mark.usefixtures("apptest_workarounds")

PFS2_KEY = family_algorithms(SEQUENCES)[0]


@pytest.fixture(scope="module")
def clicks():
    return generate_clickstream(3000, seed=5, max_length=200)


@pytest.fixture(scope="module")
def release(clicks):
    spec = ALGORITHM_SPECS[PFS2_KEY]
    params = spec.resolve("params_type")(epsilon=5.0, theta=0.05)
    accountant = PrivacyAccountant(run_cost(params))
    return spec.resolve("miner")(clicks, params, rng=np.random.default_rng(3),
                                 accountant=accountant, run_id="r1", seed=None, progress=None)


# --------------------------------------------------------------------------- form

def test_the_form_shows_the_registry_parameters_with_their_help():
    for key in family_algorithms(SEQUENCES):
        spec = ALGORITHM_SPECS[key]
        for mode in spec.modes:
            reading = read_form({"seq_algorithm": key, "seq_mode": mode})
            assert reading.fields == tuple(n for n in spec.parameters_used(mode)
                                           if n not in ("algorithm", "mode"))
            assert reading.params is not None and reading.cost_nano == run_cost(reading.params)
            for name in reading.fields:
                assert spec.help(name), f"{key}: {name} has no one-line help"
                assert field_label(name).startswith(PARAMETER_SYMBOLS.get(name, name))


@pytest.mark.parametrize("name, typed, needle", [
    ("theta", 1.5, "theta (θ) must lie in (0, 1)"),
    ("theta", 0.0, "theta (θ) must lie in (0, 1)"),
    ("epsilon", -1.0, "epsilon (ε) must be > 0"),
    ("zeta", 2.0, "zeta (ζ) must lie in (0, 1)"),
    ("l1", 0, "l1 must be an integer in [1, 1000]"),
])
def test_a_refused_number_is_named_on_its_own_field(name, typed, needle):
    reading = read_form({state_key(name): typed})
    assert set(reading.problems) == {name} and needle in reading.problems[name]
    assert reading.params is None and reading.cost_nano is None
    assert any(m.startswith(field_label(name)) for m in reading.messages)


def test_budget_shares_refused_together_are_reported_as_such():
    reading = read_form({"seq_budget_records": 0.4, "seq_budget_lengths": 0.4,
                         "seq_budget_prune": 0.3})
    assert reading.params is None
    assert not reading.problems and "budget share" in reading.combined


def test_faithful_reads_as_strict_when_the_policy_does_not_allow_it(ledger_record):
    private, demo = ledger_record
    assert read_form({"seq_mode": FAITHFUL}, private, "analyst").values["mode"] == STRICT
    assert read_form({"seq_mode": FAITHFUL}, demo, "analyst").values["mode"] == FAITHFUL
    assert read_form({"seq_mode": FAITHFUL}, private, "owner").values["mode"] == FAITHFUL


@pytest.fixture
def ledger_record(clicks):
    """A private and a public-demo sequence dataset as the ledger returns them."""
    def record(name, public_demo):
        return DatasetRecord(name=name, schema=clicks.schema, source_path=None,
                             public_demo=public_demo, confirmed=True, sandbox_of=None,
                             created_at="2026-01-01T00:00:00+00:00", kind=KIND_SEQUENCES)

    return record("clicks", False), record("clicks_demo", True)


def test_the_cost_line_names_every_phase_and_sums_to_the_charge():
    params = read_form({"seq_epsilon": 2.0}).params
    parts = cost_breakdown(params)
    assert sum(n for _, n in parts) == run_cost(params) == 2 * 10**9
    assert len(parts) == 5 and "ε = 2" in cost_text(params, run_cost(params))
    baseline = read_form({"seq_algorithm": family_algorithms(SEQUENCES)[1]}).params
    assert len(cost_breakdown(baseline)) == 4             # no pruning phase


def launch_blockers(*args, **kwargs):
    return shared_launch_blockers(family_ui(SEQUENCES), *args, **kwargs)


def test_launch_blockers_name_the_remaining_budget(ledger_record):
    record, _ = ledger_record
    tight = BudgetStatus(cap_nano=10**9, spent_nano=9 * 10**8, remaining_nano=10**8)
    reasons = launch_blockers(tight, 10**9, record)
    assert len(reasons) == 1 and "only ε = 0.1 remains" in reasons[0]
    roomy = BudgetStatus(cap_nano=20 * 10**9, spent_nano=0, remaining_nano=20 * 10**9)
    assert launch_blockers(roomy, 10**9, record) == []
    assert "being prepared" in launch_blockers(roomy, 10**9, record, engine_ready=False)[0]


# --------------------------------------------------------------------------- release views

def test_the_pattern_table_writes_item_names(release, clicks):
    frame = pattern_frame(release)
    assert list(frame.columns) == ["pattern", "length", "noisy support", "support ≥ (90 %)",
                                   "support ≤ (90 %)", "may be noise"]
    assert len(frame) == len(release.patterns) > 5
    by_text = {p.text(ARROW): p for p in release.patterns}
    for row in frame.to_dict("records"):
        p = by_text[row["pattern"]]
        assert row["length"] == p.length == len(row["pattern"].split(ARROW))
        assert row["noisy support"] == p.noisy_support
        assert (row["support ≥ (90 %)"], row["support ≤ (90 %)"]) == (p.support_low,
                                                                     p.support_high)
        assert row["may be noise"] == "; ".join(p.flags)
        assert all(name in clicks.schema.alphabet for name in row["pattern"].split(ARROW))
    assert (frame["length"].diff().dropna() >= 0).all()
    assert any(ARROW in t for t in frame["pattern"])


def test_the_most_frequent_paths_are_the_longer_patterns_with_top_supports(release):
    """Issue 30, point 4: a release flagged as possible noise is never listed above one that
    is not."""
    paths = top_paths(release, n=3)
    longer = sorted((bool(p.flags), -p.noisy_support) for p in release.patterns
                     if p.length >= 2)
    assert [(bool(p.flags), -p.noisy_support) for p in paths] == longer[:3]
    assert all(p.length >= 2 and ARROW in p.text(ARROW) for p in paths)


def test_the_length_chart_counts_patterns_by_length(release):
    bar = length_chart(release).data[0]
    counts = pd.Series([p.length for p in release.patterns]).value_counts().sort_index()
    assert list(bar.x) == list(counts.index) and list(bar.y) == list(counts.values)


def test_the_prefix_tree_hangs_each_pattern_under_its_prefix(release):
    trace = prefix_tree(release).data[0]
    ids, parents = list(trace.ids), list(trace.parents)
    assert len(ids) == len(set(ids)) >= len(release.patterns)
    known = set(ids)
    for node, parent in zip(ids, parents):
        items = node.split()
        assert parent == (" ".join(items[:-1]) if len(items) > 1 else "")
        assert parent == "" or parent in known
    icicle = prefix_tree(release, kind="icicle").data[0]
    assert icicle.type == "icicle" and list(icicle.ids) == ids


def test_the_levels_table_comes_from_dp_outputs(release):
    frame = level_frame(release)
    assert list(frame["length k"]) == [lv.length for lv in release.levels]
    assert (frame["pruned"] == frame["candidates"]
            - frame["kept after pruning"]).all()
    assert frame["frequent (released)"].sum() == len(release.patterns)


def test_exports_hold_the_release_and_not_the_diagnostics(release):
    table = pd.read_csv(io.StringIO(export_csv(release)))
    assert len(table) == len(release.patterns)
    assert set(table["pattern"]) == {p.text(ARROW) for p in release.patterns}
    assert (table["epsilon_charged"] == release.epsilon).all()
    assert (table["epsilon_spent"] + table["epsilon_returned"] <= release.epsilon + 1e-9).all()
    assert list(table["support_low_90"]) == [p.support_low for p in release.patterns]
    doc = json.loads(export_json(release))
    assert doc["run"]["algorithm"] == PFS2_KEY and doc["epsilon_charged"] == 5.0
    assert [p["noisy_support"] for p in doc["patterns"]] == [
        p.noisy_support for p in release.patterns]
    assert [p["support_high_90"] for p in doc["patterns"]] == [
        p.support_high for p in release.patterns]
    assert doc["warnings"] == release.warnings
    text = export_json(release) + export_csv(release)
    assert "true_supports" not in text and "diagnostics" not in text


def test_the_truth_comparison_matches_exact_mining(release, clicks):
    truth = evaluate_against_truth(release, clicks)
    exact = exact_frequent_sequences(clicks, theta=0.05)
    assert truth.exact == exact
    released = set(release.supports())
    assert set(truth.missed) == set(exact) - released
    assert set(truth.false) == released - set(exact)
    correct = len(released & set(exact))
    p, r = correct / len(released), correct / len(exact)
    assert truth.f_score == pytest.approx(2 * p * r / (p + r))
    errors = [abs(s - exact_or(truth, k)) / exact_or(truth, k) for k, s in
              release.supports().items() if exact_or(truth, k) > 0]
    assert truth.median_relative_error == pytest.approx(float(np.median(errors)))
    frame = truth_frame(release, truth)
    assert {"true support", "relative error"} <= set(frame.columns)
    row = frame.iloc[0]
    assert row["relative error"] == pytest.approx(
        abs(row["noisy support"] - row["true support"]) / row["true support"])
    missed = missed_frame(truth, clicks.schema.alphabet)
    assert len(missed) == len(truth.missed)
    assert all(not math.isnan(v) for v in missed["true support"])


def test_the_truth_comparison_stops_before_the_exact_set_explodes(release, clicks,
                                                                   monkeypatch):
    import components.sequences.sequence_results as views

    whole = evaluate_against_truth(release, clicks)
    assert whole.complete and whole.compared_length >= max(len(p) for p in whole.exact)
    monkeypatch.setattr(views, "MAX_EXACT_CANDIDATES", 50)
    cut = views.evaluate_against_truth(release, clicks)
    assert not cut.complete and cut.compared_length == 1
    assert cut.exact == {p: s for p, s in whole.exact.items() if len(p) == 1}
    ones = {p for p in release.supports() if len(p) == 1}
    correct = len(ones & set(cut.exact))
    assert cut.precision == pytest.approx(correct / len(ones))
    assert cut.recall == pytest.approx(correct / len(cut.exact))
    assert all(len(p) == 1 for p in cut.false + cut.missed)
    assert cut.true_supports == whole.true_supports          # every released pattern
    assert cut.median_relative_error == whole.median_relative_error


def exact_or(truth, items):
    return truth.true_supports[items]


# --------------------------------------------------------------------------- the page (AppTest)

PAGE = "pages/sequences/sequences.py"
OWNER_PASSWORD = "correct horse battery staple"


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _sequences_page(at, dataset: str = "clickstream"):
    """Pick ``dataset`` in the sidebar, open the Sequences page, wait for its kernels."""
    _ok(at.switch_page(PAGE).run())
    _ok(select_dataset(at, dataset))                # private clickstream: signs in first
    deadline = time.monotonic() + 180
    while at.button(key="seq_launch_button").disabled:      # the sequence miner warms up
        assert time.monotonic() < deadline, "the sequence kernels did not get ready"
        time.sleep(0.5)
        _ok(at.run())
    return at


def _launch(at):
    _ok(at.button(key="seq_launch_button").click().run())
    _ok(at.button(key="seq_confirm").click().run())
    return at


def _texts(at) -> str:
    out = []
    for node in (*at.main.markdown, *at.main.caption, *at.main.subheader, *at.main.info,
                 *at.main.warning, *at.main.error, *at.main.success):
        out.append(str(node.value))
    out += [f"{m.label} {m.value}" for m in at.main.metric]
    out += [frame.value.to_csv() for frame in at.main.dataframe]
    return "\n".join(out)


def _meter(at) -> dict[str, str]:
    return {m.label: m.value for m in at.sidebar.metric}


def _pattern_table(at) -> pd.DataFrame:
    for frame in at.main.dataframe:
        if list(frame.value.columns)[:3] == ["pattern", "length", "noisy support"]:
            return frame.value
    raise AssertionError("no pattern table on the page")


def test_an_analyst_launches_pfs2_on_the_clickstream_and_reads_named_paths(app, ledger_path):
    from dpcore.privacy.ledger import Ledger

    ledger = Ledger(ledger_path)
    assert ledger._dataset_record("clickstream").public_demo is False
    _sequences_page(app)
    assert app.selectbox(key="seq_mode").options == [MODE_LABELS[STRICT]]   # no faithful
    assert app.selectbox(key="seq_mode").value == STRICT
    cost = run_cost(read_form({}).params)
    assert any("This run costs **ε = 1**" in m.value for m in app.main.markdown)
    _ok(app.number_input(key="seq_epsilon").set_value(2.5).run())   # the meter prices this
    assert _meter(app)["This run ε"] == "2.5"                       # page's run ...
    _ok(app.switch_page("pages/workbench/runs.py").run())
    assert _meter(app)["This run ε"] == "2.5"                       # ... on every page
    _ok(app.switch_page(PAGE).run())
    assert app.number_input(key="seq_epsilon").value == 2.5         # the form kept it
    _ok(app.number_input(key="seq_epsilon").set_value(1.0).run())
    _launch(app)
    assert any("is stored:" in s.value for s in app.success)
    runs = ledger.list_runs("clickstream")
    assert [r.status for r in runs] == ["done"] and runs[0].algorithm == PFS2_KEY
    assert ledger.budget("clickstream").spent_nano == cost          # charged once ...
    _ok(app.run())
    _ok(app.run())
    assert ledger.budget("clickstream").spent_nano == cost          # ... and only once
    assert {m.label: m.value for m in app.sidebar.metric}["Spent ε"] == "1"

    table = _pattern_table(app)
    alphabet = set(ledger._dataset_record("clickstream").schema.alphabet)
    paths = [p for p in table["pattern"] if ARROW in p]
    assert paths, "frequent paths of two pages or more are released"
    assert all(set(p.split(ARROW)) <= alphabet for p in table["pattern"])
    assert len(app.main.get("plotly_chart")) == 2                   # by length, prefix tree
    assert [b.label for b in app.main.get("download_button")] == ["Download CSV",
                                                                  "Download JSON"]
    text = _texts(app)
    for private in ("F-score", "true support", "Median relative error", "Missed"):
        assert private not in text, f"an analyst sees {private!r} on private data"


def test_the_owner_sees_the_truth_and_the_analyst_does_not(app, ledger_path, monkeypatch):

    _sequences_page(app)
    _launch(app)
    assert "F-score" not in _texts(app)
    _ok(app.button(key="sign_out").click().run())           # the analyst signs out first
    owner_in_env_ledger(OWNER_PASSWORD)
    app.text_input(key="account_name").input("owner")
    app.text_input(key="account_password").input(OWNER_PASSWORD)
    _ok(app.button(key="sign_in").click().run())
    assert role_of(app) == "owner"
    _sequences_page(app)                # a sign-in picks the dataset again: back to it
    metrics = {m.label: m.value for m in app.main.metric}
    assert 0.0 <= float(metrics["F-score"]) <= 1.0
    assert metrics["Median relative error"].endswith("%")
    truth = next(f.value for f in app.main.dataframe if "true support" in f.value.columns)
    assert len(truth) == len(_pattern_table(app)) and (truth["true support"] > 0).all()
    assert app.selectbox(key="seq_mode").options == [MODE_LABELS[STRICT],
                                                     MODE_LABELS[FAITHFUL]]


def test_a_bad_theta_is_named_next_to_its_field_and_charges_nothing(app, ledger_path):
    from dpcore.privacy.ledger import Ledger

    _sequences_page(app)
    # the accuracy to expect, before spending: from a count the analyst states (0 ε)
    assert any("type the number of records you expect" in i.value for i in app.main.info)
    _ok(app.number_input(key="seq_expected_records").set_value(10_000).run())
    assert any("errs by 19% of θ·N" in i.value for i in app.main.info)
    _ok(app.number_input(key="seq_theta").set_value(1.5).run())
    assert any("theta (θ) must lie in (0, 1); got 1.5" in e.value for e in app.main.error)
    assert app.button(key="seq_launch_button").disabled
    assert _meter(app)["This run ε"] == "—"
    assert any("configured on the Sequences page is invalid" in w.value
               for w in app.sidebar.warning)
    _ok(app.number_input(key="seq_epsilon").set_value(0.0).run())
    assert any("epsilon (ε) must be > 0" in e.value for e in app.main.error)
    ledger = Ledger(ledger_path)
    assert ledger.list_runs("clickstream") == []
    assert ledger.budget("clickstream").spent_nano == 0


def test_another_kind_of_dataset_points_to_its_page_and_offers_sequence_datasets(app):
    _ok(sign_in_app(app))                              # the private clickstream is listed
    _ok(app.switch_page(PAGE).run())                   # the current dataset is a two-view one
    assert any("use the **Mine** page" in i.value for i in app.main.info)
    picker = app.selectbox(key="seq_dataset_pick")
    assert set(picker.options) >= {"clickstream", "house_power"}
    _ok(picker.set_value("house_power").run())
    assert app.selectbox(key="dataset").value == "house_power"
    assert app.number_input(key="seq_theta").value == pytest.approx(0.02)


def test_a_stored_run_can_be_reopened(app, ledger_path):
    _sequences_page(app)
    _launch(app)
    first = app.selectbox(key="seq_result_run").value
    _ok(app.number_input(key="seq_theta").set_value(0.05).run())
    _launch(app)
    runs = app.selectbox(key="seq_result_run")
    assert len(runs.options) == 2 and runs.value != first          # the newest, just launched
    newest = _pattern_table(app)
    _ok(runs.set_value(first).run())
    assert app.selectbox(key="seq_result_run").value == first
    assert len(_pattern_table(app)) >= len(newest)          # θ = 0.02 keeps at least as many


def test_the_mine_page_points_sequence_and_table_datasets_to_their_pages(app):
    _ok(app.switch_page("pages/redescriptions/mine.py").run())
    assert app.button(key="mine_launch_button")                      # two-view: the form
    for dataset, page in (("clickstream", "Sequences"), ("pima_like", "Synthesis")):
        _ok(select_dataset(app, dataset))
        assert any(f"use the **{page}** page" in i.value for i in app.main.info)
        assert not app.main.button, "no Launch on a dataset the Mine page cannot mine"
        # issue 32, point 13: the page is named AND linked
        links = [(e.proto.label, e.proto.page) for e in app.main.get("page_link")]
        assert links == [(f"Open {page}", page.lower())], links


def test_l1_can_be_blanked_again_after_a_number_was_typed(app):
    """Issue 32, point 8: once a number was typed in l1, Streamlit made 0 the box's own
    default, so clearing it in a browser showed 0 again (and Launch stayed disabled). The
    box's default (what the browser falls back to when cleared) must stay blank."""
    _sequences_page(app)
    key = state_key("l1")
    _ok(app.number_input(key=key).set_value(8).run())
    assert not app.number_input(key=key).proto.HasField("default"), \
        app.number_input(key=key).proto.default
    _ok(app.number_input(key=key).set_value(None).run())
    assert app.number_input(key=key).value is None
    assert not app.button(key="seq_launch_button").disabled
