"""Real-browser test of accounts (issue 29's "done when"): on a server that holds private
data only, a visitor who did not sign in sees nothing but the sign-in; an analyst signs in,
runs a small miner and reads "yours" and "the dataset's" on the budget meter; another
analyst who opens the first one's workspace by a deep link is refused, and finds only an
empty workspace of their own under the same name.

One server and one browser for the whole walk (each analyst in a browser context of its
own, i.e. a session of its own). As ``tests/browser/test_browser.py``: Debian's chromium
(``/usr/bin/chromium``) driven by Playwright; it FAILS without chromium.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import content_digest
from dpcore.privacy.units import epsilon_to_nano
from dpcore.redescriptions.workspace import Workspace, workspace_from_json
from tests.browser.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO_ROOT,
    RUN_TIMEOUT_MS,
    _metric,
    _set_number,
    _wait_idle,
    streamlit_server,
)
from tests.support.accounts_support import PASSWORD, make_account

CLINIC = REPO_ROOT / "sample_data" / "clinic"
DATASET = "wards"
CAP, SHARE = 5.0, 2.0
#: A threshold nobody would type: seen in the pruning box only if alice's workspace loaded.
ALICE_THRESHOLD = 7.5


@pytest.fixture(scope="module")
def private_app(tmp_path_factory, clinic_dataset):
    """The app served on a ledger whose only dataset is private (the clinic sample registered
    as ``wards``, not a public demo; no built-in samples), with an owner, analyst ``alice``
    (a share of the cap) and analyst ``bob``. Yields (url, ledger)."""
    tmp = tmp_path_factory.mktemp("accounts")
    ledger_path = tmp / "ledger.sqlite"
    ledger = Ledger(ledger_path)
    private = dataclasses.replace(clinic_dataset.schema, name=DATASET, public_demo=False)
    ledger.register_dataset(DATASET, private, str(CLINIC), CAP, actor="owner", confirmed=True,
                            content_digest=content_digest(clinic_dataset))
    make_account(ledger, "boss", "owner")
    make_account(ledger, "alice", "analyst")
    make_account(ledger, "bob", "analyst")
    ledger.set_quota(DATASET, "alice", SHARE, actor="boss")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPRM_SAMPLE_DATA", "off")
        with streamlit_server(tmp, ledger_path) as url:
            yield url, ledger


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).is_file(), (
        "this test needs Debian's chromium at /usr/bin/chromium "
        "(apt-get install chromium); it fails instead of skipping")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                      headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def _visit(browser, url: str):
    """A fresh session (its own browser context) on ``url``, idle; returns (context, page)."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(RUN_TIMEOUT_MS)
    page.goto(url)
    page.get_by_text("This server holds private data only").wait_for()
    _wait_idle(page)
    return context, page


def _sign_in(page, name: str) -> None:
    """The main area's sign-in form (the only thing a private server shows a visitor)."""
    main = page.get_by_test_id("stMain")
    for label, value in (("Account", name), ("Password", PASSWORD)):
        box = main.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
        _wait_idle(page)
    main.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in: {name} (analyst)").wait_for()
    _wait_idle(page)


def _sidebar_text(page) -> str:
    return page.get_by_test_id("stSidebar").inner_text()


def _threshold(page) -> str:
    box = page.get_by_label(re.compile("^Pruning threshold"))
    box.wait_for()
    _wait_idle(page)
    return box.input_value()


@pytest.mark.browser
def test_sign_in_spend_your_share_and_keep_your_workspace_to_yourself(private_app, browser):
    url, ledger = private_app

    # (a) a visitor who did not sign in: the sign-in and nothing else
    alice_ctx, page = _visit(browser, f"{url}/mine")
    body = page.locator("body").inner_text()
    assert DATASET not in body, "not even the private dataset's name"
    assert "Privacy budget of" not in body
    assert page.get_by_test_id("stSelectbox").count() == 0, "no dataset picker"
    assert page.get_by_role("button", name=re.compile("^Launch")).count() == 0
    assert page.get_by_label("InTr (trials)", exact=True).count() == 0, "no Mine form"

    # (b) alice signs in, runs a small MCMCTreePair and sees her share beside the dataset's
    _sign_in(page, "alice")
    page.get_by_text(f"Privacy budget of {DATASET}").wait_for()
    page.get_by_label("InTr (trials)", exact=True).wait_for()
    _set_number(page, "InTr (trials)", "2")
    _set_number(page, "MCIter", "200")
    assert page.get_by_text(re.compile("^Demo seed")).count() == 0, "no seed on private data"
    cost = float(_metric(page, "This run ε"))
    assert 0 < cost <= SHARE
    page.get_by_role("button", name=re.compile(r"^Launch MCMCTreePair")).click()
    page.get_by_role("button", name="Confirm and run").click()
    page.get_by_text(re.compile(r"is stored: \d+ redescriptions")).wait_for()
    _wait_idle(page)
    meter = _sidebar_text(page)
    assert (f"Yours: ε = {cost:g} spent, ε = {SHARE - cost:g} left (share ε = {SHARE:g})"
            in meter), meter
    assert (f"The dataset's: ε = {cost:g} spent, ε = {CAP - cost:g} left of ε = {CAP:g}"
            in meter), meter
    [run] = ledger.list_runs(DATASET)
    assert run.account == "alice" and run.epsilon_nano == epsilon_to_nano(cost)

    # alice's workspace "study" (a threshold of her own); she opens it on Explore
    ledger.save_workspace(DATASET, "alice", "study",
                          Workspace(DATASET, runs=(run.run_id,),
                                    threshold=ALICE_THRESHOLD).to_json())
    stored = ledger.get_workspace(DATASET, "alice", "study")
    page.get_by_role("link", name="Explore").click()
    name_box = page.get_by_label("Workspace (your name)", exact=True)
    name_box.wait_for()
    _wait_idle(page)
    name_box.fill("study")
    name_box.press("Enter")
    _wait_idle(page)
    assert float(_threshold(page)) == ALICE_THRESHOLD, "her own workspace opens"

    # (c) bob follows a deep link to alice's workspace: signed in, he is refused
    bob_ctx, bob = _visit(browser, f"{url}/explore?workspace=alice/study")
    _sign_in(bob, "bob")
    bob.get_by_text(re.compile(r"^Refused: workspace 'study' of 'alice' is not shared with "
                               r"'bob'.*Nothing of workspace alice/study is shown")).wait_for()
    assert float(_threshold(bob)) != ALICE_THRESHOLD
    # the same name without alice's prefix is bob's own workspace, new and empty
    box = bob.get_by_label("Workspace (your name)", exact=True)
    box.fill("study")
    box.press("Enter")
    _wait_idle(bob)
    assert float(_threshold(bob)) != ALICE_THRESHOLD
    after = ledger.get_workspace(DATASET, "alice", "study")
    assert after.revision == stored.revision, "bob wrote nothing into alice's workspace"
    assert workspace_from_json(after.workspace_json, dataset=DATASET).threshold == \
        ALICE_THRESHOLD
    bob.screenshot(path=str(REPO_ROOT / "artifacts" / "accounts_refused.png"), full_page=True)
    bob_ctx.close()
    alice_ctx.close()
