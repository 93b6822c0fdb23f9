"""The Data page for every dataset kind: the card (kind, public demo flag, budget, what the
owner declared public) and the owner tools (cap, schema confirmation) on sequence datasets
and labelled tables, as on two-view tables.

Each AppTest uses its own temporary ledger; the sequence dataset is a small generated
clickstream registered as PRIVATE data, so what an analyst may not see is checked.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from components.common.budget_meter import fmt_eps
from components.common.data_locations import declared_files
from components.common.dataset_card import feature_table, released_row_count
from dpcore.data.sequences.loading import load_registered_sequences
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester, content_digest
from dpcore.privacy.units import epsilon_to_nano
from dpcore.registry import ALGORITHM_SPECS, SEQUENCES, family_algorithms
from dpcore.runs import charge_and_mine
from dpcore.sequences.samples import generate_clickstream, write_sample
from tests.support.accounts_support import owner_in_env_ledger, role_of, sign_in_app, signed_in

pytestmark = pytest.mark.usefixtures("apptest_workarounds")

PAGE = "pages/workbench/data.py"
PASSWORD = "correct horse battery staple"
VISITS = "visits"           # the private sequence dataset of these tests
N_VISITS = 2000


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _data_page(at: AppTest, dataset: str) -> AppTest:
    listed = [o.removesuffix(" (public demo)") for o in at.selectbox(key="dataset").options]
    if dataset not in listed and role_of(at) == "analyst":      # private: sign in first
        _ok(sign_in_app(at))
    _ok(at.selectbox(key="dataset").set_value(dataset).run())
    return _ok(at.switch_page(PAGE).run())


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.main.metric}


def _owner(at: AppTest, monkeypatch) -> None:
    if "sign_out" in [b.key for b in at.sidebar.button]:       # signed in as an analyst
        _ok(at.button(key="sign_out").click().run())
    owner_in_env_ledger(PASSWORD)
    at.text_input(key="account_name").input("owner")
    at.text_input(key="account_password").input(PASSWORD)
    _ok(at.button(key="sign_in").click().run())
    assert role_of(at) == "owner"


def _texts(at: AppTest) -> str:
    out = [str(n.value) for n in (*at.main.markdown, *at.main.caption, *at.main.info,
                                  *at.main.warning, *at.main.error, *at.main.success)]
    out += [f"{m.label} {m.value}" for m in at.main.metric]
    out += [frame.value.to_csv() for frame in at.main.dataframe]
    return "\n".join(out)


def _write_visits(folder):
    data = generate_clickstream(N_VISITS, seed=9, max_length=60, name=VISITS)
    write_sample(data, folder, title="Visits")
    return data


@pytest.fixture
def visits(ledger_path, tmp_path):
    """A private sequence dataset, registered and confirmed, cap ε = 10."""
    folder = tmp_path / "server" / "visits"
    data = _write_visits(folder)
    assert data.schema.public_demo is False
    loaded = load_registered_sequences(folder, data.schema)
    Ledger(ledger_path).register_dataset(VISITS, data.schema, str(folder), 10.0, actor="test",
                                         confirmed=True, content_digest=content_digest(loaded))
    return folder


# --------------------------------------------------------------------------- pieces

def test_declared_files_are_named_for_every_kind(visits, ledger_path):
    from components.common.bootstrap import register_sample_datasets

    ledger = Ledger(ledger_path)
    register_sample_datasets(ledger)
    assert declared_files(ledger._dataset_record(VISITS).schema) == ["alphabet.txt",
                                                                 "records.txt"]
    table = ledger._dataset_record("pima_like").schema
    assert table.file and declared_files(table) == [table.file]
    clinic = ledger._dataset_record("clinic").schema
    assert declared_files(clinic) == sorted({v.file for v in clinic.views})
    assert released_row_count(ledger, ledger._dataset_record("clinic"), Requester()) is None
    assert released_row_count(ledger, ledger._dataset_record(VISITS), Requester()) is None


def test_the_feature_table_lists_the_declared_bounds_and_levels():
    from dpcore.synthesis.samples import pima_like_schema

    schema = pima_like_schema()
    frame = feature_table(schema)
    assert list(frame["feature"]) == list(schema.feature_names)
    first = schema.features[0]
    assert frame.loc[0, "declared bounds / levels"] == (
        f"[{first.bounds[0]:g}, {first.bounds[1]:g}]" if first.is_numeric
        else ", ".join(map(str, first.levels)))


# --------------------------------------------------------------------------- sequences

def test_an_analyst_sees_the_sequence_card_and_a_released_noisy_count_only(visits, app,
                                                                           ledger_path):
    ledger = Ledger(ledger_path)
    schema = ledger._dataset_record(VISITS).schema
    _data_page(app, VISITS)
    caption = " ".join(c.value for c in app.main.caption)
    assert "sequence dataset" in caption and "private dataset" in caption
    assert "schema confirmed" in caption
    shown = _metrics(app)
    assert shown["Alphabet size (declared, public)"] == str(schema.n_items)
    assert shown["l1: record length bound (items, public)"] == str(schema.l1)
    assert (shown["Budget cap ε"], shown["Spent ε"], shown["Remaining ε"]) == ("10", "0", "10")
    assert not any(label.startswith(("Rows", "Records")) for label in shown)
    assert "Raw data preview" not in " ".join(e.label for e in app.main.expander)
    assert any("What is public on this card" in i.value for i in app.main.info)
    assert not app.main.get("text_area") and not app.main.button   # no owner tools

    pfs2 = family_algorithms(SEQUENCES)[0]
    params = ALGORITHM_SPECS[pfs2].resolve("params_type")(epsilon=1.0, theta=0.05)
    analyst = signed_in(ledger, "analyst", "analyst")
    result = charge_and_mine(ledger, VISITS, params, requester=analyst, seed=None)
    assert released_row_count(ledger, ledger._dataset_record(VISITS), Requester()) == (
        result.noisy_records, result.run_id)
    _ok(app.run())
    shown = _metrics(app)
    assert shown["Records, noisy (a DP release)"] == f"≈ {result.noisy_records:,.0f}"
    # charged 1; a strict PFS2 run that stopped early returned what it left unspent
    status = ledger.budget(VISITS)
    assert status.spent_nano + status.refunded_nano == epsilon_to_nano(1.0)
    assert (shown["Spent ε"], shown["Remaining ε"]) == (fmt_eps(status.spent),
                                                      fmt_eps(status.remaining))
    assert not any(label.startswith("Rows") for label in shown)


def test_the_owner_sees_the_records_and_changes_the_cap_of_a_sequence_dataset(
        visits, app, ledger_path, monkeypatch, tmp_path):
    ledger = Ledger(ledger_path)
    _owner(app, monkeypatch)
    _data_page(app, VISITS)
    assert _metrics(app)["Rows (owner only)"] == str(N_VISITS)
    preview = next(f.value for f in app.main.dataframe if "items" in f.value.columns)
    assert len(preview) == 20 and preview["items"].str.contains("→").any()
    text = _texts(app)
    assert "Data (owner only): a folder on the server (its path is not shown) " \
           "(`alphabet.txt`, `records.txt`)" in text
    assert str(tmp_path) not in text

    app.number_input(key=f"cap_{VISITS}").set_value(7.5)
    _ok(app.button(key=f"set_cap_{VISITS}").click().run())
    assert ledger.budget(VISITS).cap == 7.5
    assert any(f"Cap of `{VISITS}` set to ε = 7.5" in s.value for s in app.success)
    assert _metrics(app)["Budget cap ε"] == "7.5"

    pfs2 = family_algorithms(SEQUENCES)[0]
    params = ALGORITHM_SPECS[pfs2].resolve("params_type")(epsilon=2.0, theta=0.05)
    charge_and_mine(ledger, VISITS, params, requester=signed_in(ledger, "analyst", "analyst"))
    _ok(app.run())
    spent = ledger.budget(VISITS).spent                 # 2 charged, less what it returned
    assert 0 < spent <= 2.0
    app.number_input(key=f"cap_{VISITS}").set_value(round(spent / 2, 3))  # below the spent
    _ok(app.button(key=f"set_cap_{VISITS}").click().run())
    assert any("already spent" in e.value for e in app.main.error)
    assert ledger.budget(VISITS).cap == 7.5                       # nothing changed
    assert fmt_eps(ledger.budget(VISITS).remaining) == _metrics(app)["Remaining ε"] \
        == fmt_eps(7.5 - spent)


def test_the_owner_edits_and_confirms_a_sequence_declaration(visits, app, ledger_path,
                                                             monkeypatch):
    ledger = Ledger(ledger_path)
    _owner(app, monkeypatch)
    _data_page(app, VISITS)
    app.text_area(key=f"declare_{VISITS}_desc").input("Visits to a news site, one per line.")
    _ok(app.button(key=f"confirm_schema_{VISITS}").click().run())
    record = ledger._dataset_record(VISITS)
    assert record.confirmed and record.schema.description == \
        "Visits to a news site, one per line."
    assert record.public_demo is False
    assert any("is confirmed" in s.value for s in app.success)


def test_a_sequence_declaration_the_data_do_not_fit_is_not_confirmed(ledger_path,
                                                                     tmp_path_factory,
                                                                     monkeypatch):
    """The refusal names the file and line, not the server folder (outside the ledger's)."""
    from tests.support.apptest_support import APP

    folder = tmp_path_factory.mktemp("hidden-mount") / "visits"
    data = _write_visits(folder)
    records = folder / "records.txt"
    records.write_text(records.read_text(encoding="utf-8") + "frontpage not-an-item\n",
                       encoding="utf-8")
    ledger = Ledger(ledger_path)
    ledger.register_dataset(VISITS, data.schema, str(folder), 10.0, actor="test")
    at = AppTest.from_file(APP, default_timeout=120)
    _ok(at.run())
    _owner(at, monkeypatch)
    _data_page(at, VISITS)
    assert "schema NOT confirmed yet" in " ".join(c.value for c in at.main.caption)
    _ok(at.button(key=f"confirm_schema_{VISITS}").click().run())
    errors = [e.value for e in at.main.error]
    refusal = next(e for e in errors if e.startswith("Not confirmed:"))
    assert "file 'records.txt': line 2001" in refusal and "not-an-item" in refusal
    assert "hidden-mount" not in refusal and str(folder) not in refusal
    assert ledger._dataset_record(VISITS).confirmed is False


# --------------------------------------------------------------------------- labelled tables

def test_the_table_card_shows_label_features_and_public_demo_rows(app, ledger_path):
    ledger = Ledger(ledger_path)
    record = ledger._dataset_record("pima_like")
    schema = record.schema
    assert record.public_demo
    _data_page(app, "pima_like")
    caption = " ".join(c.value for c in app.main.caption)
    assert "labelled table" in caption and "public demo" in caption
    text = _texts(app)
    assert f"**Label:** `{schema.label}` — {schema.n_classes} declared classes" in text
    assert f"**Features:** {schema.n_features} (" in text
    features = next(f.value for f in app.main.dataframe if "feature" in f.value.columns)
    assert list(features["feature"]) == list(schema.feature_names)
    shown = _metrics(app)
    assert shown["Rows (public demo)"] == "768"
    assert shown["Budget cap ε"] == fmt_eps(ledger.budget("pima_like").cap)
    preview = next(f.value for f in app.main.dataframe if schema.label in f.value.columns)
    assert list(preview.columns) == list(schema.columns) and len(preview) == 20


def test_the_owner_changes_the_cap_of_a_table_dataset(app, ledger_path, monkeypatch):
    ledger = Ledger(ledger_path)
    _owner(app, monkeypatch)
    _data_page(app, "pima_like")
    assert any(e.label == "Review and confirm the public schema" for e in app.main.expander)
    app.number_input(key="cap_pima_like").set_value(33.0)
    _ok(app.button(key="set_cap_pima_like").click().run())
    assert ledger.budget("pima_like").cap == 33.0
    assert _metrics(app)["Budget cap ε"] == "33"
    assert not re.search(r"read two-view\s+schemas only", _texts(app))


def test_a_cap_below_zero_is_named_and_cannot_be_set(app, ledger_path, monkeypatch):
    """Issue 32, point 8: the owner's cap box snapped a refused value back unseen."""
    ledger = Ledger(ledger_path)
    _owner(app, monkeypatch)
    _data_page(app, "pima_like")
    before = ledger.budget("pima_like").cap
    app.number_input(key="cap_pima_like").set_value(-5.0).run()
    assert app.number_input(key="cap_pima_like").value == -5.0
    assert "-5 is refused — it must be above 0" in " ".join(e.value for e in app.error)
    assert app.button(key="set_cap_pima_like").disabled
    assert ledger.budget("pima_like").cap == before
