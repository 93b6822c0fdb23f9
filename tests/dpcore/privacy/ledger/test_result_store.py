"""dpcore.privacy.ledger.result_store: large result tables as Parquet files beside the
ledger, exact to the JSON value, written before the run is marked done, checked by digest on
every read; a PostgreSQL ledger without a store charges nothing."""

from __future__ import annotations

import hashlib
import json

import pytest

from dpcore.data.schema import Attribute, Schema, ViewSpec
from dpcore.errors import DataError, ParameterError
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.ledger.result_store import (
    MARKER,
    THRESHOLD_BYTES,
    ResultStore,
    ResultStoreMissing,
    decode_table,
    encode_table,
    externalise,
    references,
    resolve,
)


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    """These tests' tables are ≈ 100 KiB: store from 64 KiB (the default is 1 MiB; the
    behaviour is the same at any threshold)."""
    from dpcore.privacy.ledger import result_store

    monkeypatch.setattr(result_store, "THRESHOLD_BYTES", 64 * 1024)


SCHEMA = Schema(name="d", attributes=(Attribute("A", 0, "boolean"), Attribute("B", 1, "boolean")),
                views=(ViewSpec("l", "l.csv"), ViewSpec("r", "r.csv")), id_column="id")
ROWS = [[i % 3, i / 7, None if i % 5 == 0 else f"s{i}", i % 2 == 0] for i in range(5000)]
PATTERNS = [{"items": [i, i + 1], "names": ["a", "b"], "noisy_support": float(i), "length": 2}
            for i in range(2000)]


def _release(run_id="r1"):
    return {"run_id": run_id, "dataset": "d", "result_format": 2, "family": "x",
            "synthetic": {"columns": ["c", "x", "s", "b"], "rows": ROWS},
            "patterns": PATTERNS, "small": [[1, 2], [3, 4]], "values": list(range(100))}


def _charged(tmp_path, run_id="r1") -> Ledger:
    led = Ledger(tmp_path / "ledger.sqlite")
    if not led._dataset_records():
        led.register_dataset("d", SCHEMA, None, 5.0, actor="owner", confirmed=True)
    led.charge(run_id, "d", "algo", [10**8], {}, actor="ana")
    return led


@pytest.mark.parametrize("table", [
    ROWS, PATTERNS,
    [[1, 2.0], [3.5, None], ["s", [1, {"k": None}]]],           # mixed and nested columns
    [[2**70, 1], [-(2**63), 2]],                                  # beyond int64: JSON text
    [[1], [2, 3]], [{"a": 1}, {"b": 2}], [{"a": 1, "b": 2}, {"b": 2, "a": 1}],  # ragged
    [[None, None], [None, None]], [[], []], [[float("inf"), -0.0], [1e-300, 2.5]],
])
def test_a_table_reads_back_as_the_very_same_json(table):
    back = decode_table(encode_table(table))
    assert back == table
    assert json.dumps(back) == json.dumps(table)         # types too: 3.0 stays 3.0, 1 stays 1


def test_only_tables_at_or_above_the_threshold_leave_the_release(tmp_path):
    store = ResultStore(tmp_path / "s", create=True)
    release = _release()
    kept, digests = externalise(release, lambda: store)
    assert len(digests) == 2 and references(kept) == digests
    assert kept["synthetic"]["rows"] == {MARKER: {"sha256": digests[0], "rows": 5000,
                                                  "bytes": len(json.dumps(ROWS))}}
    assert kept["small"] == [[1, 2], [3, 4]] and kept["values"] == list(range(100))
    assert len(json.dumps(kept)) < 1000
    assert resolve(kept, lambda: store) == release
    for digest in digests:
        assert hashlib.sha256(store.path(digest).read_bytes()).hexdigest() == digest
    below = [[i, i] for i in range(10)]
    assert len(json.dumps(below)) < THRESHOLD_BYTES
    assert externalise({"t": below}, lambda: pytest.fail("no store needed")) == ({"t": below},
                                                                                 [])


def test_a_release_using_the_reserved_key_is_refused():
    for bad in ({"x": {MARKER: {}}}, {"t": [[{MARKER: 1}], [2]]}):
        with pytest.raises(ParameterError, match="reserves for its stored tables"):
            externalise(bad, lambda: pytest.fail("nothing is stored"))


def test_the_ledger_keeps_a_small_row_and_reads_the_whole_release_back(tmp_path):
    led = _charged(tmp_path)
    text = json.dumps(_release())
    led.store_result("r1", text, '{"true_rows": 5000}')
    import sqlite3

    with sqlite3.connect(led.path) as con:
        (row,) = con.execute("SELECT result_json FROM results WHERE run_id = 'r1'").fetchone()
    assert len(row) < 1000 < len(text) and MARKER in row
    assert len(list(led.results_store.folder.glob("*.parquet"))) == 2
    assert led.results_store.folder == tmp_path / "ledger.sqlite.results"
    got, diagnostics = led.get_result("r1")
    assert json.loads(got) == _release() and diagnostics == '{"true_rows": 5000}'
    assert led.get_result_data("r1") == (_release(), '{"true_rows": 5000}')
    assert led.get_run("r1").status == "done" and led.has_result("r1")
    led.store_result("r1", text, '{"true_rows": 5000}')         # the same again: a no-op
    with pytest.raises(ParameterError, match="already has a stored result"):
        led.store_result("r1", json.dumps({**_release(), "values": []}))


def test_small_and_old_inline_results_read_exactly_as_stored(tmp_path):
    led = _charged(tmp_path)
    text = '{"run_id": "r1", "rows": [[1, 2], [3, 4]],   "é": "ü"}'   # spacing kept
    led.store_result("r1", text)
    assert led.get_result("r1") == (text, None)
    assert not list(led.results_store.folder.glob("*.parquet"))


def test_a_changed_or_missing_file_is_refused_by_name(tmp_path):
    led = _charged(tmp_path)
    led.store_result("r1", json.dumps(_release()))
    first, second = sorted(led.results_store.folder.glob("*.parquet"))
    data = first.read_bytes()
    first.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    with pytest.raises(DataError, match=rf"run 'r1'.*{first.name}.*no longer matches its "
                                        "SHA-256"):
        led.get_result("r1")
    first.write_bytes(data)
    assert json.loads(led.get_result("r1")[0]) == _release()
    second.unlink()
    with pytest.raises(DataError, match=rf"run 'r1'.*{second.name}, which is missing"):
        led.get_result_data("r1")


def test_the_files_are_written_before_the_run_is_marked_done(tmp_path, monkeypatch):
    """A store that fails (a full disk) leaves the run charged without a result: no row
    ever refers to a file that is not there, and the run can be stored again later."""
    led = _charged(tmp_path)

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultStore, "put_bytes", full)
    with pytest.raises(OSError, match="No space"):
        led.store_result("r1", json.dumps(_release()))
    assert led.get_run("r1").status == "charged" and led.get_result("r1") is None
    assert not led.has_result("r1")
    monkeypatch.undo()
    led.store_result("r1", json.dumps(_release()))
    assert led.get_run("r1").status == "done"


def test_a_postgresql_ledger_without_a_store_charges_nothing(postgres_server, monkeypatch,
                                                             tmp_path):
    url = postgres_server.new_database()
    monkeypatch.delenv("DPRM_RESULTS_DIR", raising=False)
    led = Ledger(url)
    led.register_dataset("d", SCHEMA, None, 5.0, actor="owner", confirmed=True)
    with pytest.raises(ResultStoreMissing, match="has no results store: set DPRM_RESULTS_DIR"):
        led.charge("r1", "d", "algo", [10**8], {}, actor="ana")
    missing = Ledger(url, results_dir=tmp_path / "not-there")
    with pytest.raises(ResultStoreMissing, match="not-there does not exist"):
        missing.charge("r1", "d", "algo", [10**8], {}, actor="ana")
    assert led.audit_log() == [] and led.budget("d").spent_nano == 0
    (tmp_path / "shared").mkdir()
    good = Ledger(url, results_dir=tmp_path / "shared")
    good.charge("r1", "d", "algo", [10**8], {}, actor="ana")
    good.store_result("r1", json.dumps(_release()))
    assert len(list((tmp_path / "shared").glob("*.parquet"))) == 2
    assert json.loads(good.get_result("r1")[0]) == _release()
    with pytest.raises(ResultStoreMissing):        # the row is there, the store is not
        led.get_result("r1")
    with pytest.raises(ParameterError, match="results_dir is for PostgreSQL"):
        Ledger(tmp_path / "x.sqlite", results_dir=tmp_path)
