"""AppTests of the uploads' shared last step (components.common.upload_register): a refused
registration says why with server paths hidden and keeps the draft; a registered one drops
the draft, selects the dataset and leaves a success message for the next run."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("apptest_workarounds")


def _page():
    import os

    import streamlit as st

    from components.common.data_locations import data_root
    from components.common.upload_register import register_and_announce
    from dpcore.errors import DataError, ParameterError
    from dpcore.privacy.ledger import Ledger

    ledger = Ledger(os.environ["DPRM_LEDGER"])
    if "calls" not in st.session_state:         # the draft exists before the first click
        st.session_state.setdefault("draft", "the owner's draft")
    outcome = st.session_state.get("outcome")

    def register() -> str:
        st.session_state["calls"] = st.session_state.get("calls", 0) + 1
        if outcome == "data":
            raise DataError(f"line 3 of file {data_root(ledger) / 'seqs' / 'r.txt'}: "
                            "item 'zz' is not in the declared alphabet")
        if outcome == "parameter":
            raise ParameterError("a dataset named 'seqs' is already registered")
        if outcome == "other":
            raise RuntimeError("a bug, not a refusal")
        return "seqs"

    if st.button("Register", key="go"):
        st.session_state["returned"] = register_and_announce(
            ledger, register, success=lambda name: f"`{name}` is registered.",
            clear=("draft",))


def _clicked(ledger_path, outcome: str) -> AppTest:
    at = AppTest.from_function(_page, default_timeout=30)
    at.session_state["outcome"] = outcome
    at.run()
    at.button(key="go").click().run()
    return at


@pytest.mark.parametrize("outcome", ["data", "parameter"])
def test_a_refusal_is_shown_with_paths_hidden_and_changes_nothing(ledger_path, outcome):
    at = _clicked(ledger_path, outcome)
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert error.startswith("Nothing was registered. ")
    if outcome == "data":
        assert "upload folder/seqs/r.txt" in error and "not in the declared alphabet" in error
        assert str(ledger_path.parent) not in error            # no server path shown
    else:
        assert "already registered" in error
    assert at.session_state["calls"] == 1
    assert at.session_state["returned"] is False
    assert at.session_state["draft"] == "the owner's draft"    # the draft stays
    assert "_select_dataset" not in at.session_state
    assert "_flash" not in at.session_state


def test_an_unexpected_error_is_not_swallowed(ledger_path):
    at = _clicked(ledger_path, "other")
    assert [e.value for e in at.exception] and "a bug" in at.exception[0].value
    assert "_flash" not in at.session_state and not at.error


def test_a_registration_drops_the_draft_selects_the_dataset_and_flashes(ledger_path):
    at = _clicked(ledger_path, "ok")
    assert not at.exception and not at.error
    assert at.session_state["calls"] == 1
    assert "draft" not in at.session_state
    assert at.session_state["_select_dataset"] == "seqs"
    assert at.session_state["_flash"] == ("success", "`seqs` is registered.")
    assert "returned" not in at.session_state                 # the page reran instead
