"""bench.result_store on a small table: both ways read back what they stored, and the
store keeps the ledger file smaller than inline JSON does."""

from __future__ import annotations

import pytest

from bench.result_store import COLUMNS, adult_rows, main


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    """These tests' tables are ≈ 100 KiB: store from 64 KiB (the default is 1 MiB; the
    behaviour is the same at any threshold)."""
    from dpcore.privacy.ledger import result_store

    monkeypatch.setattr(result_store, "THRESHOLD_BYTES", 64 * 1024)



def test_the_store_keeps_the_ledger_small_and_reads_back_the_same(tmp_path, capsys):
    assert len(adult_rows(3, 0)[0]) == len(COLUMNS)
    inline, stored = main(["--rows", "3000", "--runs", "2", "--out", str(tmp_path)])
    assert (inline["way"], stored["way"]) == ("inline", "store")
    assert inline["store_bytes"] == 0 and stored["store_bytes"] > 0
    assert stored["ledger_bytes"] < inline["ledger_bytes"]
    assert "| store |" in capsys.readouterr().out
