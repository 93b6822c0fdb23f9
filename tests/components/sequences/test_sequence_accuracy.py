"""The Sequences launch form's accuracy statement (components/sequences/sequence_accuracy.py):
it asks for a stated record count, reads only public values, and names what is wrong."""

from __future__ import annotations

from types import SimpleNamespace

from components.sequences.sequence_accuracy import statement
from dpcore.data.sequences.schema import SequenceSchema
from dpcore.sequences.params import SequenceMiningParams


def _record(n_items: int = 17, l1: int = 8):
    schema = SequenceSchema(name="s", alphabet=tuple(f"i{k}" for k in range(n_items)), l1=l1)
    return SimpleNamespace(name="s", schema=schema)


def test_without_a_stated_count_the_form_asks_for_one():
    assert "type the number of records you expect" in statement(
        _record(), SequenceMiningParams(), None)


def test_the_statement_uses_the_schema_and_the_run_l1():
    text = statement(_record(), SequenceMiningParams(epsilon=1.0), 10_000)
    assert text.startswith("**Accuracy to expect") and "θ·N = 200 records" in text
    assert "errs by 19% of θ·N" in text                # 17 items / 0.45 ε / 200 records
    # a run l1 of 1: a single level, which gets the whole pool (0.9 ε)
    one = statement(_record(), SequenceMiningParams(epsilon=1.0, l1=1), 10_000)
    assert "ε = 0.9" in one and "Levels 2 and up" not in one


def test_a_bad_stated_count_is_named_not_raised():
    assert "expected number of records must be a whole number ≥ 1" in statement(
        _record(), SequenceMiningParams(), 0)
