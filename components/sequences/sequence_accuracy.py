"""The Sequences launch form's accuracy statement: what a run will deliver, before it is paid.

The statement (:mod:`dpcore.sequences.accuracy`) reads the parameters, the declared alphabet
and l1 and a record count the analyst states — never the data's. It is post-processing of
public values: 0 ε, shown before the Launch button.
"""

from __future__ import annotations

import streamlit as st

from dpcore.errors import DpcoreError
from dpcore.privacy.ledger import DatasetRecord
from dpcore.sequences.accuracy import accuracy_text

__all__ = ["EXPECTED_KEY", "EXPECTED_LABEL", "statement", "render_sequence_accuracy"]

#: Session-state key of the stated number of records (not a run parameter: never stored).
EXPECTED_KEY = "seq_expected_records"
EXPECTED_LABEL = "Records you expect (public: your estimate, for the accuracy statement)"


def statement(record: DatasetRecord, params, expected: int | None) -> str:
    """The markdown statement for ``params`` on ``record``'s public schema, or why none."""
    if expected is None:
        return ("**Accuracy to expect:** type the number of records you expect above to see "
                "how far the released supports may be from the truth (0 ε: the data are not "
                "read).")
    schema = record.schema
    l1 = int(params.l1 if params.l1 is not None else schema.l1)
    try:
        return accuracy_text(params, schema.n_items, l1, int(expected))
    except DpcoreError as exc:
        return f"**Accuracy to expect:** none — {exc}."


def render_sequence_accuracy(record: DatasetRecord, params) -> None:
    """The stated-N box and the statement for the configured run."""
    expected = st.number_input(EXPECTED_LABEL, key=EXPECTED_KEY, value=None, min_value=1,
                               step=1, placeholder="e.g. 10000",
                               help="A count you state, not one read from the data: the "
                                    "statement uses it for θ·N. A wrong guess makes the "
                                    "statement wrong, not the run less private.")
    st.info(statement(record, params, expected))
