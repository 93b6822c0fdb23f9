"""The Synthesis page: its figures and files (on results made by the core with a throwaway
accountant), its form helpers, and the page under AppTest with a temporary ledger."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from components.synthesis.synthesis_charts import (
    HIGH_COLUMN,
    LOW_COLUMN,
    association_heatmap,
    association_matrix,
    class_count_table,
    csv_bytes,
    group_order,
    histogram_figure,
    marginal_table,
    parquet_bytes,
    released_association,
)
from components.synthesis.synthesis_form import format_groups, parse_groups
from dpcore.data.table.schema import schema_from_dict
from dpcore.data.table.table import load_synthesis_dataset
from dpcore.errors import ParameterError
from dpcore.privacy.accountant import PrivacyAccountant
from dpcore.privacy.policy import Requester
from dpcore.synthesis.miner import synthesize
from dpcore.synthesis.params import CORRELATION_GROUPS, SynthesisParams, run_cost_nano
from dpcore.synthesis.results import PARQUET_METADATA_KEY, SynthesisResult
from tests.support.accounts_support import owner_in_env_ledger, role_of, select_dataset

pytestmark = pytest.mark.usefixtures("apptest_workarounds")

REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- core results

@pytest.fixture(scope="module")
def pima():
    return load_synthesis_dataset(REPO_ROOT / "sample_data" / "pima_like")


def _synthesize(table, **overrides) -> SynthesisResult:
    """A run on a throwaway accountant (tests only: the app charges through the ledger)."""
    params = SynthesisParams(**{"epsilon": 1.0, **overrides})
    return synthesize(table, params, rng=np.random.default_rng(5),
                      accountant=PrivacyAccountant(run_cost_nano(params)))


@pytest.fixture(scope="module")
def dp_groups_result(pima):
    # the groups structure, always releasing the noisy correlations (at ε = 1 on 768 rows
    # the default rule skips them; the default structure is the tree)
    return _synthesize(pima, max_correlation_noise=1e6, structure=CORRELATION_GROUPS)


def _mixed_schema():
    return schema_from_dict({
        "name": "mixed", "label": {"name": "y", "classes": [0, 1]},
        "features": [{"name": "a", "type": "numeric", "bounds": [-5, 5]},
                     {"name": "b", "type": "numeric", "bounds": [-5, 5]},
                     {"name": "c", "type": "numeric", "bounds": [-5, 5]},
                     {"name": "colour", "type": "categorical",
                      "levels": ["red", "green", "blue"]}]})


# --------------------------------------------------------------------------- figures

def test_association_matrix_measures_what_the_grouping_measures():
    rng = np.random.default_rng(0)
    n = 4_000
    a = rng.uniform(-2, 2, n)
    colour = rng.integers(0, 3, n)
    frame = pd.DataFrame({"y": rng.integers(0, 2, n), "a": a, "b": -2 * a + 1,
                          "c": rng.uniform(-2, 2, n) + 0.0 * a,
                          "colour": np.array(["red", "green", "blue"])[colour]})
    frame["c"] = frame["c"] + np.array([-3.0, 0.0, 3.0])[colour] * 0.5
    m = association_matrix(frame, _mixed_schema())
    assert m.shape == (4, 4) and np.allclose(m, m.T) and np.allclose(np.diag(m), 1.0)
    assert m[0, 1] == pytest.approx(1.0, abs=1e-6)      # b = −2a + 1: |r| = 1
    assert m[0, 2] < 0.05                                 # independent
    assert m[2, 3] > 0.5                                  # c's mean moves with the colour
    assert m[0, 3] < 0.05
    assert ((0.0 <= m) & (m <= 1.0)).all()


def test_released_association_is_the_runs_dp_distances(dp_groups_result, pima):
    released = released_association(dp_groups_result)
    distances = np.asarray(dp_groups_result.feature_distances)
    p = pima.schema.n_features
    assert released.shape == (p, p)
    off = ~np.eye(p, dtype=bool)
    assert np.allclose(released[off], np.clip(1.0 - distances[off], 0, 1))
    given = _synthesize(pima, feature_groups=[list(pima.schema.feature_names[:4]),
                                              list(pima.schema.feature_names[4:])])
    assert given.feature_distances is None and released_association(given) is None


def test_the_heat_map_outlines_each_chosen_group(pima):
    schema = pima.schema
    groups = [["glucose", "insulin"], ["bmi", "skin_thickness", "age"]]
    order, spans = group_order(schema, groups)
    names = [schema.feature_names[i] for i in order]
    assert names[:5] == ["glucose", "insulin", "bmi", "skin_thickness", "age"]
    assert sorted(order) == list(range(schema.n_features))
    assert spans[:2] == [(0, 2), (2, 3)] and all(size == 1 for _, size in spans[2:])
    fig = association_heatmap(np.eye(schema.n_features), schema, groups=groups, title="t")
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == len(spans)
    assert (rects[1].x0, rects[1].x1) == (1.5, 4.5)
    assert list(fig.data[0].x) == names
    # faithful groups name encoded columns (sex=F): they map to their feature
    assert group_order(_mixed_schema(), [["colour=red", "colour=blue", "a"]])[0][:2] == [3, 0]


def test_histograms_overlay_the_real_table_only_when_given(dp_groups_result, pima):
    synthetic_only = histogram_figure("glucose", pima.schema, dp_groups_result.synthetic)
    assert len(synthetic_only.data) == 1 and synthetic_only.data[0].name == "synthetic"
    both = histogram_figure("glucose", pima.schema, dp_groups_result.synthetic,
                            pima.to_frame())
    assert [t.name for t in both.data] == ["synthetic", "real"]
    assert both.data[0].xbins.start == 0 and both.data[0].xbins.end == 250   # public bounds


def test_downloads_hold_the_synthetic_table_and_never_the_diagnostics(dp_groups_result):
    result = dp_groups_result
    assert result.diagnostics.true_rows == 768           # the run has owner diagnostics …
    back = pd.read_csv(io.BytesIO(csv_bytes(result)))
    assert list(back.columns) == result.columns
    assert len(back) == len(result.synthetic) == sum(result.noisy_class_counts.values())
    assert np.allclose(back.to_numpy(dtype=float), result.synthetic.to_numpy(dtype=float))
    table = pq.read_table(io.BytesIO(parquet_bytes(result)))
    assert table.num_rows == len(result.synthetic)
    meta = json.loads(table.schema.metadata[PARQUET_METADATA_KEY])
    assert meta["run_id"] == result.run_id and meta["epsilon_nano"] == result.epsilon_nano
    assert "diagnostics" not in meta                     # … the files do not


def test_class_counts_show_true_rows_only_when_given(dp_groups_result):
    noisy = class_count_table(dp_groups_result)
    assert list(noisy.columns) == ["class", "synthetic rows", LOW_COLUMN, HIGH_COLUMN]
    both = class_count_table(dp_groups_result, {"0": 500, "1": 268})
    assert list(both["true rows (not private)"]) == [500, 268]


def test_class_counts_and_floor_marginals_show_their_90_percent_intervals(dp_groups_result,
                                                                          pima):
    from dpcore.registry import FLOOR
    from dpcore.synthesis.intervals import result_intervals

    noisy = class_count_table(dp_groups_result)
    expected = result_intervals(dp_groups_result)["class_counts"]
    assert [[lo, hi] for lo, hi in zip(noisy[LOW_COLUMN], noisy[HIGH_COLUMN])] == [
        expected[c] for c in noisy["class"]]
    assert (noisy[LOW_COLUMN] <= noisy["synthetic rows"]).all()
    assert (noisy["synthetic rows"] <= noisy[HIGH_COLUMN]).all()
    assert marginal_table(dp_groups_result) is None        # MC-GEN releases no histogram
    floor = _synthesize(pima, algorithm=FLOOR)
    table = marginal_table(floor)
    first = floor.noisy_marginals[0]
    assert len(table) == sum(len(floor.noisy_marginals[i]["counts"][c])
                             for i in range(len(floor.noisy_marginals))
                             for c in floor.noisy_marginals[i]["counts"])
    row = table.iloc[0]
    assert row["feature"] == first["feature"] and row["bin"].count("–") == 1
    assert row[LOW_COLUMN] == max(row["noisy count"] - (row[HIGH_COLUMN] - row["noisy count"]),
                                  0)


# --------------------------------------------------------------------------- form helpers

def test_feature_groups_parse_and_name_what_is_wrong():
    names = ("a", "b", "c")
    assert parse_groups("", names) is None and parse_groups("  ", names) is None
    assert parse_groups("a, b; c", names) == [["a", "b"], ["c"]]
    assert format_groups([["a", "b"], ["c"]]) == "a, b; c"
    for text, words in [("a, x; b, c", "unknown feature(s) x"), ("a, b; b, c", "b named more"),
                        ("a, b", "missing: c"), ("a;; b, c", "empty group")]:
        with pytest.raises(ParameterError, match=re.escape(words)):
            parse_groups(text, names)


def test_the_cost_line_names_what_each_part_of_epsilon_pays_for():
    from components.common.family_ui import cost_breakdown, cost_text, family_ui, launch_blockers
    from dpcore.privacy.ledger import BudgetStatus, DatasetRecord
    from dpcore.registry import FAITHFUL, SYNTHESIS, family_algorithms
    from dpcore.runs import run_cost

    mcgen, floor = family_algorithms(SYNTHESIS)
    tree = cost_breakdown(SynthesisParams(algorithm=mcgen, epsilon=2.0))
    assert [p for p, _ in tree] == ["the noisy class counts",
                                    "the choice of the tree's feature pairs",
                                    "the noisy per-class histograms and pair tables"]
    assert [n for _, n in tree] == [600_000_000, 300_000_000, 1_100_000_000]
    strict = SynthesisParams(algorithm=mcgen, epsilon=2.0, structure=CORRELATION_GROUPS,
                             budget_classes=0.1)
    parts = cost_breakdown(strict)
    assert [p for p, _ in parts] == ["the noisy class counts",
                                     "the noisy correlations that build the feature groups",
                                     "the cells' noisy counts, sums and second moments"]
    assert [n for _, n in parts] == [200_000_000, 300_000_000, 1_500_000_000]
    assert sum(n for _, n in parts) == run_cost(strict)
    assert cost_text(strict, run_cost(strict)).startswith("This run costs **ε = 2**: ε = 0.2 ")
    given = SynthesisParams(algorithm=mcgen, feature_groups=[["a"], ["b"]])
    assert len(cost_breakdown(given)) == 2                    # given groups cost nothing
    assert cost_breakdown(SynthesisParams(algorithm=floor))[-1][0] == \
        "the noisy per-class histograms"
    faithful = SynthesisParams(algorithm=mcgen, mode=FAITHFUL)
    assert [p for p, _ in cost_breakdown(faithful)] == ["the clusters' noisy means and "
                                                         "covariances"]
    assert "not ε-DP" in cost_text(faithful, run_cost(faithful))

    record = DatasetRecord(name="t", schema=None, source_path=None, public_demo=False,
                           confirmed=True, sandbox_of=None, created_at="")
    fits = BudgetStatus(cap_nano=3 * 10**9, spent_nano=0, remaining_nano=3 * 10**9)
    short = BudgetStatus(cap_nano=3 * 10**9, spent_nano=2_500_000_000,
                         remaining_nano=500_000_000)
    ui = family_ui(SYNTHESIS)
    assert launch_blockers(ui, fits, run_cost(strict), record) == []
    (reason,) = launch_blockers(ui, short, run_cost(strict), record)
    assert launch_blockers(ui, fits, run_cost(strict), record, engine_ready=False) == []
    assert "costs ε = 2 but only ε = 0.5 remains on `t`" in reason


# --------------------------------------------------------------------------- the page (AppTest)

PAGE = "pages/synthesis/synthesis.py"
OWNER_PASSWORD = "correct horse battery staple"
SAMPLE = "pima_like"


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _open_sample(at):
    """The Synthesis page on the sample table, chosen the way a new user does: the page
    says the current dataset is not a table and offers the table datasets."""
    _ok(at.switch_page(PAGE).run())
    if at.session_state["dataset"] != SAMPLE:
        assert any("page for it" in i.value and "labelled tables" in i.value
                   for i in at.main.info)
        at.selectbox(key="syn_table_pick").set_value(SAMPLE)
        _ok(at.button(key="syn_use_table").click().run())
    assert at.session_state["dataset"] == SAMPLE
    assert at.sidebar.selectbox(key="dataset").value == SAMPLE      # the meter follows
    return at


def _launch(at):
    _ok(at.button(key="syn_launch_button").click().run())
    pending = dict(at.session_state["syn_launch"])
    _ok(at.button(key="syn_confirm").click().run())
    return pending


def _meter(at) -> dict[str, str]:
    return {m.label: m.value for m in at.sidebar.metric}


def _owner(at, monkeypatch):
    """Sign the owner in (signing an analyst out first) and stay on the chosen dataset
    (a sign-in picks the dataset again among what the account may see)."""
    dataset = at.sidebar.selectbox(key="dataset").value
    if "sign_out" in [b.key for b in at.sidebar.button]:       # signed in as an analyst
        _ok(at.button(key="sign_out").click().run())
    owner_in_env_ledger(OWNER_PASSWORD)
    at.text_input(key="account_name").input("owner")
    at.text_input(key="account_password").input(OWNER_PASSWORD)
    _ok(at.button(key="sign_in").click().run())
    assert role_of(at) == "owner"
    if at.sidebar.selectbox(key="dataset").value != dataset:
        _ok(select_dataset(at, dataset, sidebar=True))


def _frames(at) -> list[pd.DataFrame]:
    return [f.value for f in at.dataframe]


@pytest.fixture
def media_storages(monkeypatch) -> list:
    """AppTest's in-memory media storages (one per script run), kept so a download button's
    file can be read after the run (AppTest drops its mock runtime when a run ends)."""
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    kept = []

    class _Kept(MemoryMediaFileStorage):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)

    monkeypatch.setattr(app_test_module, "MemoryMediaFileStorage", _Kept)
    return kept


def _media_file(storages: list, url: str) -> bytes:
    """The bytes behind a download button's URL (``/mock/media/<id>.<ext>``)."""
    file_id = url.rsplit("/", 1)[-1].split(".", 1)[0]
    return storages[-1].get_file(file_id).content


def test_an_analyst_synthesises_the_sample_sees_the_preview_and_downloads_csv(
        media_storages, app, ledger_path):
    from dpcore.privacy.ledger import Ledger
    from dpcore.runs import load_result

    _open_sample(app)
    app.number_input(key="syn_epsilon").set_value(2.0)
    _ok(app.run())
    assert any("This run costs **ε = 2**" in m.value for m in app.main.markdown)
    assert _meter(app)["This run ε"] == "2"                # the meter prices this page's run
    pending = _launch(app)
    ledger = Ledger(ledger_path)
    runs = ledger.list_runs(SAMPLE)
    assert [r.status for r in runs] == ["done"] and runs[0].run_id == pending["run_id"]
    assert ledger.budget(SAMPLE).spent == pytest.approx(2.0)
    assert _meter(app)["Spent ε"] == "2"
    assert any("is stored: a synthetic table of" in s.value for s in app.success)

    result = load_result(ledger, pending["run_id"], requester=Requester())
    preview = next(f for f in _frames(app) if list(f.columns) == result.columns)
    assert len(preview) == min(200, len(result.synthetic))
    assert np.allclose(preview.to_numpy(dtype=float),
                       result.synthetic.head(200).to_numpy(dtype=float))
    labels = [b.label for b in app.get("download_button")]
    assert labels == ["Download CSV", "Download Parquet"]
    csv_button = app.get("download_button")[0]
    downloaded = _media_file(media_storages, csv_button.proto.url)
    assert downloaded == csv_bytes(result)
    assert len(pd.read_csv(io.BytesIO(downloaded))) == sum(result.noisy_class_counts.values())
    # The same confirm step again (a second click, a second tab with the same run id).
    spent = ledger.budget(SAMPLE).spent_nano
    app.session_state["syn_launch"] = pending
    _ok(app.run())
    _ok(app.button(key="syn_confirm").click().run())
    assert ledger.budget(SAMPLE).spent_nano == spent
    assert len(ledger.list_runs(SAMPLE)) == 1


PRIVATE = "clinic_table"


@pytest.fixture
def private_table(ledger_path, tmp_path, pima):
    """The sample's rows registered as a PRIVATE table (not a public demo) in the ledger."""
    from dpcore.data.table.schema import SCHEMA_FILE_NAME, save_table_schema, schema_to_dict
    from dpcore.data.table.table import load_registered_table
    from dpcore.privacy.ledger import Ledger
    from dpcore.privacy.policy import content_digest

    folder = tmp_path / PRIVATE
    folder.mkdir()
    schema = schema_from_dict({**schema_to_dict(pima.schema), "name": PRIVATE,
                               "public_demo": False})
    pima.to_frame().to_csv(folder / schema.file, index=False)
    save_table_schema(schema, folder / SCHEMA_FILE_NAME)
    data = load_registered_table(folder, schema)
    Ledger(ledger_path).register_dataset(PRIVATE, schema, str(folder), 20.0, actor="test",
                                         confirmed=True, content_digest=content_digest(data))
    return PRIVATE


def _truth_shown(at) -> bool:
    return (any("not private" in m.value for m in at.main.markdown)
            or any("true rows (not private)" in f.columns for f in _frames(at))
            or any(b.key == "syn_utility_button" for b in at.button))


def test_the_owner_sees_the_utility_report_an_analyst_does_not(private_table, app,
                                                                ledger_path, monkeypatch):
    """On a private table an analyst gets the DP release only; the owner also sees the real
    table's histograms and associations, the true class counts and the utility report."""
    from dpcore.privacy.ledger import Ledger

    _ok(select_dataset(app, private_table, sidebar=True))      # private: signs in first
    _ok(app.switch_page(PAGE).run())
    from dpcore.registry import MODE_LABELS, STRICT

    mode = app.selectbox(key="syn_mode")                               # faithful: owner only
    assert mode.options == [MODE_LABELS[STRICT]] and mode.disabled
    _launch(app)
    assert [r.status for r in Ledger(ledger_path).list_runs(private_table)] == ["done"]
    assert [b.label for b in app.get("download_button")] == ["Download CSV", "Download Parquet"]
    assert not _truth_shown(app)

    _owner(app, monkeypatch)
    _ok(app.switch_page(PAGE).run())
    assert _truth_shown(app)
    assert len(app.selectbox(key="syn_mode").options) == 2        # faithful offered, labelled
    assert any("true rows (not private)" in f.columns for f in _frames(app))
    _ok(app.button(key="syn_utility_button").click().run())
    report = next(f for f in _frames(app) if "SVM" in f.columns)
    methods = set(report["method"])
    assert any(m.startswith("real data") for m in methods)
    assert any(m.startswith("floor") for m in methods)
    assert set(report["scenario"]) == {1, 2}
    assert ((report["SVM"] >= 0) & (report["SVM"] <= 1)).all()
    assert len(Ledger(ledger_path).list_runs(private_table)) == 1    # the report charged nothing


@pytest.mark.parametrize("typed", [0.0, -1.0])
def test_a_bad_epsilon_is_named_next_to_its_box_and_charges_nothing(app, ledger_path, typed):
    from dpcore.privacy.ledger import Ledger

    _open_sample(app)
    app.number_input(key="syn_epsilon").set_value(typed)
    _ok(app.run())
    assert app.number_input(key="syn_epsilon").value == typed            # not snapped back
    errors = [e.value for e in app.main.error]
    assert any(e.startswith(f"ε (privacy budget of this run): {typed:g} is refused")
               for e in errors), errors
    assert app.button(key="syn_launch_button").disabled
    ledger = Ledger(ledger_path)
    assert ledger.budget(SAMPLE).spent_nano == 0 and ledger.list_runs(SAMPLE) == []


def test_an_epsilon_above_the_remaining_budget_disables_launch(app, ledger_path):
    from dpcore.privacy.ledger import Ledger

    _open_sample(app)
    app.number_input(key="syn_epsilon").set_value(50.0)
    _ok(app.run())
    assert any("ε = 50 is more than the ε = 20 that remains" in e.value for e in app.main.error)
    assert app.button(key="syn_launch_button").disabled
    assert Ledger(ledger_path).list_runs(SAMPLE) == []


def test_bad_feature_groups_are_named_and_charge_nothing(app, ledger_path):
    from dpcore.privacy.ledger import Ledger

    _open_sample(app)
    app.text_input(key="syn_feature_groups").input("glucose, insulin; nonsense")
    _ok(app.run())
    assert any("unknown feature(s) nonsense" in e.value for e in app.main.error)
    assert app.button(key="syn_launch_button").disabled
    assert Ledger(ledger_path).list_runs(SAMPLE) == []


def test_a_stored_run_can_be_reopened(app, ledger_path):
    _open_sample(app)
    first = _launch(app)["run_id"]
    from dpcore.registry import SYNTHESIS, family_algorithms

    app.selectbox(key="syn_algorithm").set_value(family_algorithms(SYNTHESIS)[1])  # the floor
    _ok(app.run())
    second = _launch(app)["run_id"]
    picker = app.selectbox(key="syn_run_pick")
    assert picker.value == second                                # the new run is shown
    assert second[:8] in picker.options[0] and first[:8] in picker.options[1]
    picker.set_value(first)
    _ok(app.run())
    assert any(first[:8] in c.value for c in app.main.caption)


def test_the_form_comes_back_as_it_was_left(app):
    _open_sample(app)
    app.number_input(key="syn_epsilon").set_value(3.0)
    app.number_input(key="syn_k").set_value(50)
    _ok(app.run())
    _ok(app.switch_page("pages/workbench/runs.py").run())
    assert _meter(app)["This run ε"] == "3"                   # priced from the saved form
    _ok(app.switch_page(PAGE).run())
    assert app.number_input(key="syn_epsilon").value == 3.0
    assert app.number_input(key="syn_k").value == 50


@pytest.mark.parametrize("role", ["analyst", "owner"])
def test_every_page_renders_on_the_sample_table(app, monkeypatch, role):
    """A new user who picks the table in the sidebar on any page gets that page (or its
    pointer to the Synthesis page), never a crash."""
    if role == "owner":
        _owner(app, monkeypatch)
    _ok(app.sidebar.selectbox(key="dataset").set_value(SAMPLE).run())
    for page in ("pages/workbench/data.py", "pages/redescriptions/mine.py",
                 "pages/redescriptions/explore.py", "pages/workbench/runs.py",
                 "pages/sequences/sequences.py", "pages/workbench/teaching.py", PAGE):
        _ok(app.switch_page(page).run())
