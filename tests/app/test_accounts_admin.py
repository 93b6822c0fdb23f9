"""The app's accounts (issue 29), through Streamlit's AppTest: a server of private data shows
a visitor who did not sign in nothing but the sign-in; a signed-in analyst sees the private
dataset and the meter's "yours" beside the dataset's; an owner adds an analyst with a share
on the Data page (components/common/accounts_admin.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import content_digest
from tests.support.accounts_support import PASSWORD, make_account
from tests.support.apptest_support import APP

pytestmark = pytest.mark.usefixtures("apptest_workarounds")

CLINIC = Path(__file__).resolve().parents[2] / "sample_data" / "clinic"


@pytest.fixture
def private_server(ledger_path, monkeypatch, clinic_dataset) -> Ledger:
    monkeypatch.setenv("DPRM_SAMPLE_DATA", "off")
    led = Ledger(ledger_path)
    private = dataclasses.replace(clinic_dataset.schema, name="wards", public_demo=False)
    led.register_dataset("wards", private, str(CLINIC), 3.0, actor="owner", confirmed=True,
                         content_digest=content_digest(clinic_dataset))
    make_account(led, "boss", "owner")
    make_account(led, "alice", "analyst")
    led.set_quota("wards", "alice", 1.0, actor="boss")
    return led


def _texts(at) -> str:
    return " ".join(str(e.value) for e in [*at.markdown, *at.info, *at.caption, *at.error,
                                          *at.sidebar.markdown])


def _sign_in(at, name: str, password: str = PASSWORD):
    at.text_input(key="account_name").input(name)
    at.text_input(key="account_password").input(password)
    at.button(key="sign_in").click().run()
    assert not at.exception, at.exception
    return at


def test_an_unsigned_visitor_of_a_private_server_sees_only_the_sign_in(private_server):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert "private data only" in _texts(at)
    assert [s.label for s in at.sidebar.selectbox] == []          # no dataset names
    assert "wards" not in _texts(at)
    _sign_in(at, "alice", "wrong")
    assert any("wrong account name or password" in e.value.lower() for e in at.error)
    _sign_in(at, "alice")
    assert at.sidebar.selectbox(key="dataset").value == "wards"
    meter = " ".join(m.value for m in at.sidebar.markdown)
    assert "Yours: ε = 0 spent, ε = 1 left (share ε = 1)" in meter
    assert "The dataset's: ε = 0 spent, ε = 3 left of ε = 3" in meter
    assert [e.outcome for e in private_server.auth_events()] == ["failure", "success"]


def test_the_owner_adds_an_analyst_with_a_share_on_the_data_page(private_server):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    _sign_in(at, "boss")
    at.text_input(key="acct_new_name").input("carol")
    at.text_input(key="acct_new_password").input("carol-pw")
    at.number_input(key="acct_new_quota").set_value(0.5)
    at.button(key="acct_add").click().run()
    assert not at.exception, at.exception
    assert private_server.get_account("carol").role == "analyst"
    assert private_server.quota_status("wards", "carol").quota_nano == 500_000_000
    at.text_input(key="acct_new_name").input("carol")
    at.text_input(key="acct_new_password").input("again")
    at.button(key="acct_add").click().run()
    assert any("already exists" in e.value for e in at.error)
