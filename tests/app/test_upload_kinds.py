"""The Data page's upload of sequence datasets and labelled tables (owners).

A good upload stores the files and the kind's schema file in the upload folder, registers the
dataset with its cap and content digest, and the dataset is mined from the Sequences or
Synthesis page; every bad input shows the loader's message (file, line or row, reason) and
leaves no ledger row and no file in the upload folder. The dpcore pieces (registration, the
alphabet and table prefills) are tested without Streamlit below the page tests.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.data.kinds import load_any_dataset
from dpcore.data.sequences.loading import observed_items
from dpcore.errors import DataError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import content_digest
from dpcore.registry import KIND_SEQUENCES, KIND_TABLE
from tests.support.accounts_support import owner_in_env_ledger

pytestmark = pytest.mark.usefixtures("apptest_workarounds")

PASSWORD = "correct horse battery staple"
RECORDS = b"a b c\nb c\na c d\nd\n"
ALPHABET = b"a\nb\nc\nd\n"
EVENTS = b"visit,t,page\n1,1,home\n1,2,news\n2,1,news\n2,3,sport\n2,2,home\n3,5,home\n"


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _owner_on_data_page(app: AppTest, monkeypatch, kind: str) -> AppTest:
    owner_in_env_ledger(PASSWORD)
    app.text_input(key="account_name").input("owner")
    app.text_input(key="account_password").input(PASSWORD)
    _ok(app.button(key="sign_in").click().run())
    _ok(app.switch_page("pages/workbench/data.py").run())
    return _ok(app.radio(key="up_kind").set_value(kind).run())


def _errors(app: AppTest) -> str:
    return " ".join(e.value for e in app.error)


def _nothing_registered(app: AppTest, ledger_path, tmp_path, name: str, before: set) -> None:
    assert "Nothing was registered" in _errors(app)
    assert {d.name for d in Ledger(ledger_path)._dataset_records()} == before
    datasets = tmp_path / "datasets"
    assert not datasets.exists() or list(datasets.iterdir()) == []


def _lines_upload(app: AppTest, name: str, records: bytes = RECORDS,
                  alphabet: bytes = ALPHABET, l1: int = 6, cap: float = 4.0) -> AppTest:
    app.text_input(key="seq_name").input(name)
    app.file_uploader(key="seq_records").upload("records.txt", records, "text/plain")
    app.file_uploader(key="seq_alphabet").upload("alphabet.txt", alphabet, "text/plain")
    app.number_input(key="seq_l1").set_value(l1)
    app.number_input(key="seq_cap").set_value(cap)
    _ok(app.run())
    if app.button(key="seq_register").disabled:     # a bad or taken name: refused at once
        return app
    return _ok(app.button(key="seq_register").click().run())


# --------------------------------------------------------------------------- sequences

def test_a_records_upload_registers_and_is_offered_on_the_sequences_page(app, ledger_path,
                                                                          monkeypatch,
                                                                          tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    _lines_upload(app, "visits_up")
    assert not app.error, _errors(app)
    record = Ledger(ledger_path)._dataset_record("visits_up")
    assert record.kind == KIND_SEQUENCES and record.confirmed and not record.public_demo
    assert record.schema.alphabet == ("a", "b", "c", "d") and record.schema.l1 == 6
    assert Ledger(ledger_path).budget("visits_up").cap == 4.0
    folder = tmp_path / "datasets" / "visits_up"
    # the owner-only partitions sit beside the files (docs/PRIVACY.md §4)
    assert sorted(p.name for p in folder.iterdir()) == [".dpcore_parts", "alphabet.txt",
                                                        "records.txt", "sequence_schema.json"]
    kind, data = load_any_dataset(folder)          # the CLI's register reads the same folder
    assert kind == KIND_SEQUENCES and data.n_records == 4
    assert record.content_digest == content_digest(data)
    assert app.selectbox(key="dataset").value == "visits_up"
    _ok(app.switch_page("pages/sequences/sequences.py").run())
    captions = " ".join(c.value for c in app.main.caption)
    assert "Dataset `visits_up` · 4 items" in captions and "l1 = 6" in captions
    assert {m.label: m.value for m in app.sidebar.metric}["Total ε"] == "4"


def test_an_event_table_upload_with_the_alphabet_prefilled_from_the_data(app, ledger_path,
                                                                         monkeypatch,
                                                                         tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    app.text_input(key="seq_name").input("events_up")
    _ok(app.radio(key="seq_layout").set_value("events").run())
    _ok(app.file_uploader(key="seq_events").upload("events.csv", EVENTS, "text/csv").run())
    assert app.selectbox(key="seq_rec_col").options == ["visit", "t", "page"]
    app.selectbox(key="seq_rec_col").set_value("visit")
    app.selectbox(key="seq_order_col").set_value("t")
    app.selectbox(key="seq_item_col").set_value("page")
    assert app.button(key="seq_register").disabled             # no alphabet declared yet
    _ok(app.button(key="seq_prefill").click().run())
    assert app.text_area(key="seq_alphabet_text").value == "home\nnews\nsport"
    assert any("PREFILLED FROM THE PRIVATE DATA" in w.value for w in app.warning)
    assert "events_up" not in {d.name for d in Ledger(ledger_path)._dataset_records()}
    _ok(app.button(key="seq_register").click().run())
    assert not app.error, _errors(app)
    record = Ledger(ledger_path)._dataset_record("events_up")
    assert record.schema.alphabet == ("home", "news", "sport")
    assert record.schema.files["format"] == "events"
    data = load_any_dataset(tmp_path / "datasets" / "events_up")[1]
    assert [list(data.record(r)) for r in range(data.n_records)] == [[0, 1], [1, 0, 2], [0]]


def test_an_item_outside_the_alphabet_names_file_and_line(app, ledger_path, monkeypatch,
                                                          tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    _lines_upload(app, "bad_items", records=b"a b\nb zz\n")
    assert "file 'records.txt': line 2: item 'zz' is not in the declared alphabet" \
        in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, "bad_items", before)


@pytest.mark.parametrize("records, alphabet, l1, cap, name, needle", [
    (b"", ALPHABET, 6, 4.0, "empty", "file 'records.txt': the record file holds no records"),
    (RECORDS, b"", 6, 4.0, "empty_alpha", "file 'alphabet.txt': the alphabet file is empty"),
    (RECORDS, ALPHABET, 0, 4.0, "bad_l1", "'l1' must be an integer in [1, 1000]; got 0"),
    (RECORDS, ALPHABET, 6, 0.0, "zero_cap", "the budget cap ε must be a finite number > 0"),
    (RECORDS, ALPHABET, 6, 4.0, "../x", "dataset name '../x' must not contain '/'"),
])
def test_bad_sequence_uploads_register_nothing(app, ledger_path, monkeypatch, tmp_path,
                                               records, alphabet, l1, cap, name, needle):
    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    _lines_upload(app, name, records=records, alphabet=alphabet, l1=l1, cap=cap)
    assert needle in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, name, before)
    assert not (tmp_path / "x").exists()


def test_a_missing_event_column_value_names_its_row(app, ledger_path, monkeypatch, tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    app.text_input(key="seq_name").input("gap")
    _ok(app.radio(key="seq_layout").set_value("events").run())
    bad = b"visit,t,page\n1,1,home\n1,,news\n"
    _ok(app.file_uploader(key="seq_events").upload("events.csv", bad, "text/csv").run())
    app.selectbox(key="seq_order_col").set_value("t")
    app.text_area(key="seq_alphabet_text").input("home\nnews")
    _ok(app.run())
    _ok(app.button(key="seq_register").click().run())
    assert "file 'events.csv', column 't', row 2: missing value" in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, "gap", before)


# --------------------------------------------------------------------------- labelled tables

def _table_bytes(rows: int = 40, stray: str | None = None) -> bytes:
    lines = ["outcome,age,smoker"] + [f"{i % 2},{20 + i},{'yn'[i % 3 == 0]}"
                                      for i in range(rows)]
    if stray is not None:
        lines.append(stray)
    return ("\n".join(lines) + "\n").encode()


def _table_draft(app: AppTest, name: str, content: bytes) -> AppTest:
    app.text_input(key="tab_name").input(name)
    _ok(app.file_uploader(key="tab_file").upload("table.csv", content, "text/csv").run())
    app.selectbox(key="tab_label").set_value("outcome")
    return _ok(app.button(key="tab_prefill").click().run())


def test_a_labelled_table_upload_registers_and_is_offered_on_the_synthesis_page(
        app, ledger_path, monkeypatch, tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_TABLE)
    _table_draft(app, "table_up", _table_bytes())
    assert any("PREFILLED FROM THE PRIVATE DATA" in w.value for w in app.warning)
    assert app.text_input(key="tab_classes").value == "0, 1"
    assert "table_up" not in {d.name for d in Ledger(ledger_path)._dataset_records()}
    app.number_input(key="tab_cap").set_value(3.0)
    _ok(app.button(key="tab_register").click().run())
    assert not app.error, _errors(app)
    record = Ledger(ledger_path)._dataset_record("table_up")
    assert record.kind == KIND_TABLE and record.confirmed
    assert record.schema.classes == ("0", "1")
    assert [(f.name, f.type) for f in record.schema.features] == [("age", "numeric"),
                                                                  ("smoker", "categorical")]
    assert Ledger(ledger_path).budget("table_up").cap == 3.0
    folder = tmp_path / "datasets" / "table_up"
    assert sorted(p.name for p in folder.iterdir()) == [".dpcore_parts",
                                                        "synthesis_schema.json", "table.csv"]
    assert json.loads((folder / "synthesis_schema.json").read_text())["file"] == "table.csv"
    _ok(app.switch_page("pages/synthesis/synthesis.py").run())
    assert app.selectbox(key="dataset").value == "table_up"
    assert {m.label: m.value for m in app.sidebar.metric}["Total ε"] == "3"
    assert not any("labelled table" in i.value and "mined" in i.value for i in app.main.info)


def test_a_class_not_declared_names_its_row_and_registers_nothing(app, ledger_path,
                                                                  monkeypatch, tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_TABLE)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    _table_draft(app, "narrowed", _table_bytes())
    _ok(app.text_input(key="tab_classes").input("0").run())      # the owner drops class 1
    _ok(app.button(key="tab_register").click().run())
    assert "file 'table.csv', column 'outcome', row 2: '1' is not a declared class" \
        in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, "narrowed", before)


@pytest.mark.parametrize("name, label, content, needle", [
    ("../t", "outcome", _table_bytes(), "dataset name '../t' must not contain '/'"),
    ("empty_t", "outcome", b"outcome,age\n", "file 'table.csv': the table has no data rows"),
    ("gap_t", "outcome", _table_bytes(stray=",50,y"),
     "line 42 of file 'table.csv', column 'outcome': missing label value"),
])
def test_bad_table_uploads_register_nothing(app, ledger_path, monkeypatch, tmp_path, name,
                                            label, content, needle):
    _owner_on_data_page(app, monkeypatch, KIND_TABLE)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    _table_draft(app, name, content)
    assert needle in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, name, before)
    assert "tab_register" not in {b.key for b in app.button}


def test_a_table_upload_with_a_zero_cap_registers_nothing(app, ledger_path, monkeypatch,
                                                          tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_TABLE)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    _table_draft(app, "zero", _table_bytes())
    app.number_input(key="tab_cap").set_value(-1.0)
    _ok(app.button(key="tab_register").click().run())
    assert "the budget cap ε must be a finite number > 0; got -1.0" in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, "zero", before)


# --------------------------------------------------------------------------- dpcore pieces

def test_observed_items_reads_the_header_and_the_distinct_items(tmp_path):
    path = tmp_path / "events.csv"
    path.write_bytes(EVENTS)
    assert observed_items(path) == (("visit", "t", "page"), ())
    assert observed_items(path, "page")[1] == ("home", "news", "sport")
    with pytest.raises(DataError, match="column 'item': column not found"):
        observed_items(path, "item")


# --------------------------------------------------------------------------- early checks

def _register_taken(ledger_path, tmp_path) -> None:
    from dpcore.data.sequences.schema import SequenceSchema
    from dpcore.privacy.registration import register_upload

    schema = SequenceSchema(name="taken", alphabet=("a", "b", "c", "d"), l1=4,
                            files={"format": "lines", "records": "r.txt", "alphabet": "a.txt"})
    register_upload(Ledger(ledger_path), tmp_path / "datasets", "taken",
                    {"r.txt": RECORDS, "a.txt": ALPHABET}, schema, cap=1)


def test_a_taken_name_is_refused_at_the_first_step_of_every_kind(app, ledger_path,
                                                                 monkeypatch, tmp_path):
    from dpcore.registry import KIND_TWO_VIEW

    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    _register_taken(ledger_path, tmp_path)
    needle = "a dataset named 'taken' already exists; choose another name"
    _ok(app.text_input(key="seq_name").input("taken").run())
    assert needle in _errors(app)
    app.file_uploader(key="seq_records").upload("records.txt", RECORDS, "text/plain")
    app.file_uploader(key="seq_alphabet").upload("alphabet.txt", ALPHABET, "text/plain")
    assert _ok(app.run()).button(key="seq_register").disabled

    _ok(app.radio(key="up_kind").set_value(KIND_TABLE).run())
    _table_draft(app, "taken", _table_bytes())          # refused at Prefill
    assert needle in _errors(app)
    assert "tab_register" not in {b.key for b in app.button}

    _ok(app.radio(key="up_kind").set_value(KIND_TWO_VIEW).run())
    app.text_input(key="up_name").input("taken")
    app.file_uploader(key="up_left").upload("left.csv", b"pid,x\n1,2\n2,3\n", "text/csv")
    app.file_uploader(key="up_right").upload("right.csv", b"pid,y\n1,a\n2,b\n", "text/csv")
    app.text_input(key="up_id").input("pid")
    _ok(app.button(key="up_read").click().run())        # refused at Read
    assert needle in _errors(app)
    assert "up_prefill" not in {b.key for b in app.button}
    assert [d.name for d in Ledger(ledger_path)._dataset_records()
            if d.name.startswith("taken")] == ["taken"]


def test_gzip_record_files_upload_and_register(app, ledger_path, monkeypatch, tmp_path):
    import gzip

    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    app.text_input(key="seq_name").input("zipped")
    app.file_uploader(key="seq_records").upload("records.seq.gz", gzip.compress(RECORDS),
                                                "application/gzip")
    app.file_uploader(key="seq_alphabet").upload("alphabet.txt", ALPHABET, "text/plain")
    _ok(app.run())
    _ok(app.button(key="seq_register").click().run())
    assert not app.error, _errors(app)
    data = load_any_dataset(tmp_path / "datasets" / "zipped")[1]
    assert data.n_records == 4 and list(data.record(0)) == [0, 1, 2]


def _shown_texts(app: AppTest) -> str:
    return " ".join(e.value for e in [*app.error, *app.caption, *app.warning, *app.info])


def test_an_event_table_upload_shows_no_server_path_and_no_error_before_any_input(
        app, ledger_path, monkeypatch, tmp_path):
    import tempfile

    _owner_on_data_page(app, monkeypatch, KIND_SEQUENCES)
    app.text_input(key="seq_name").input("events_clean")
    _ok(app.radio(key="seq_layout").set_value("events").run())
    _ok(app.file_uploader(key="seq_events").upload("events.csv", EVENTS, "text/csv").run())
    shown = _shown_texts(app)
    assert not app.error and "not valid" not in shown, shown
    assert tempfile.gettempdir() not in shown and str(tmp_path) not in shown
    _ok(app.text_area(key="seq_alphabet_text").input("home\nnews\nhome").run())
    shown = _shown_texts(app)
    assert "file 'alphabet': line 3: item 'home' is declared twice" in shown, shown
    assert tempfile.gettempdir() not in shown
    _ok(app.file_uploader(key="seq_events").upload("events.csv", b"", "text/csv").run())
    assert "file 'events.csv'" in _errors(app) and tempfile.gettempdir() not in _errors(app)


def test_a_semicolon_table_upload_says_which_separator_to_use(app, ledger_path, monkeypatch,
                                                              tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_TABLE)
    before = {d.name for d in Ledger(ledger_path)._dataset_records()}
    app.text_input(key="tab_name").input("semi")
    content = _table_bytes().replace(b",", b";")
    _ok(app.file_uploader(key="tab_file").upload("table.csv", content, "text/csv").run())
    assert "file 'table.csv': line 1 (the header) has no ',' separator but ';'" \
        in _errors(app)
    assert "save it again with ',' between fields" in _errors(app)
    _nothing_registered(app, ledger_path, tmp_path, "semi", before)


def test_an_empty_cell_and_a_single_class_are_said_at_prefill(app, ledger_path, monkeypatch,
                                                              tmp_path):
    _owner_on_data_page(app, monkeypatch, KIND_TABLE)
    content = b"outcome,age,smoker\n1,30,y\n1,,n\n1,41,y\n"
    _table_draft(app, "gappy", content)
    warnings = " ".join(w.value for w in app.warning)
    assert "`outcome` holds one class only" in warnings
    notes = next(d.value for d in app.dataframe if "why it was left out" in d.value.columns)
    assert notes.set_index("column").loc["age", "why it was left out"].startswith(
        "empty cell at line 3")
    assert "gappy" not in {d.name for d in Ledger(ledger_path)._dataset_records()}
