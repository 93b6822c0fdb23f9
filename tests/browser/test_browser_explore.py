"""Real-browser test of the Explore list and workspace: sort, filter, search, tag and reject
redescriptions in the editable table, reload the page (a new session) and find the
workspace intact.

As ``tests/browser/test_browser.py``: Debian's chromium (``/usr/bin/chromium``) driven by
Playwright against ``streamlit run app.py`` on a free port with a temporary ledger; it
FAILS without chromium. The ledger is prepared before the server starts — the sample
datasets and one seeded MCMCTreePair run on ``clinic`` through :func:`dpcore.runs.charge_and_mine`
— so the test spends its time on Explore. Cells of the table (a canvas grid) are edited
with the keyboard, as a user would: click a row, arrow to the column, Enter, type, Enter.
Saves a screenshot to ``artifacts/explore_workspace.png``.

Text cells are edited by waiting for the grid's overlay editor (its textarea) and filling
it: typing blind after Enter lost an edit in about one run in three at a load of 8 on 2
cores, when the overlay was not open yet. An edit the table does not show is typed again, at
most twice, then the test fails. What it checks is that every edit the table shows is saved,
survives the reload and filters as it should.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.redescriptions.listing import ListFilter, filter_entries, list_entries, sort_entries
from dpcore.redescriptions.workspace import workspace_from_json
from dpcore.runs import load_result
from tests.browser.test_browser import (
    CHROMIUM,
    REPO_ROOT,
    RUN_TIMEOUT_MS,
    _metric,
    _set_number,
    _wait_idle,
    app_page,
    streamlit_server,
)

RUN_ID = "e" * 32
WORKSPACE = "tester"
#: Column positions in the list's table (0 = id).
DECISION, TAGS, NOTE = 1, 2, 3
ROW_PX, HEADER_PX = 35, 35


@pytest.fixture
def prepared_app(tmp_path, clinic_dataset):
    """The app served on a ledger holding the samples and one seeded run on clinic."""
    from components.common.bootstrap import register_sample_datasets
    from dpcore.privacy.policy import Requester
    from dpcore.redescriptions.params import TreeParams
    from dpcore.runs import charge_and_mine

    ledger_path = tmp_path / "ledger.sqlite"
    ledger = Ledger(ledger_path)
    register_sample_datasets(ledger)
    params = TreeParams(algorithm="mcmctreepair", epsilon=1.0, in_tr=2, mc_iter=200)
    charge_and_mine(ledger, "clinic", params, data=clinic_dataset, run_id=RUN_ID, seed=11,
                    requester=Requester())
    with streamlit_server(tmp_path, ledger_path) as url:
        yield url, ledger


def _editor(page):
    """The list's editable table (the data frame whose header has a decision column)."""
    return page.locator('[data-testid="stDataFrame"]').filter(
        has=page.locator("table", has_text="decision")).first


def _listed(page) -> tuple[int, int]:
    """(rows listed, kept redescriptions) from the caption above the table."""
    text = page.get_by_text(re.compile(r"^Listed: \d+ row")).inner_text()
    found = re.search(r"Listed: (\d+) row\(s\) for \d+ of (\d+) kept", text)
    return int(found.group(1)), int(found.group(2))


def _shown_ids(page) -> list[str]:
    """The ids of the rows the grid draws (its accessible table, top rows)."""
    return page.evaluate("""() => {
        const t = [...document.querySelectorAll('[data-testid="stDataFrame"] table')]
            .find(x => x.innerText.includes('decision'));
        if (!t) return [];
        return [...t.rows].slice(1).map(r => r.cells[0].innerText.trim())
            .filter(x => x.length > 0);
    }""")


def _row_text(page, row_id: str) -> str:
    return page.evaluate("""(id) => {
        const t = [...document.querySelectorAll('[data-testid="stDataFrame"] table')]
            .find(x => x.innerText.includes('decision'));
        const r = [...t.rows].find(r => r.cells[0] && r.cells[0].innerText.trim() === id);
        return r ? [...r.cells].map(c => c.innerText.trim()).join(' | ') : '';
    }""", row_id)


def _selected_cell(page) -> tuple[int, int] | None:
    """(column, row) of the grid's selected cell, from its accessible table."""
    found = page.evaluate("""() => {
        const c = document.querySelector('[data-testid="stDataFrame"] td[aria-selected="true"]');
        return c ? c.id : null;
    }""")
    match = re.match(r"glide-cell-(\d+)-(\d+)$", found or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _edit_cell(page, row: int, column: int, text: str) -> None:
    """Type ``text`` into a cell: click the row, arrow to the cell (checked in the grid's
    accessible table: the page may shift a little under the mouse), Enter, type, Enter."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    editor = _editor(page)
    for _ in range(10):                      # until the click lands on a cell
        editor.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        box = editor.bounding_box()
        page.mouse.click(box["x"] + 25, box["y"] + HEADER_PX + ROW_PX * row + ROW_PX / 2)
        page.wait_for_timeout(300)
        if _selected_cell(page) is not None:
            break
    for _ in range(20):                      # to the row (the page may shift a little)
        at = _selected_cell(page)
        assert at is not None, "no cell of the list is selected"
        if at[1] == row:
            break
        page.keyboard.press("ArrowDown" if at[1] < row else "ArrowUp")
        page.wait_for_timeout(100)
    assert _selected_cell(page)[1] == row
    for _ in range(20):                      # to the first column, then to ``column``
        page.keyboard.press("ArrowLeft")
    for _ in range(column):
        page.keyboard.press("ArrowRight")
    page.wait_for_timeout(200)
    page.keyboard.press("Enter")
    # A text cell opens the grid's overlay editor (a textarea): wait until it is there and
    # fill it, rather than typing blind into whatever holds the focus under load. The
    # decision cell opens a select, which takes typed text and Enter.
    overlay = page.locator("textarea.gdg-input")
    try:
        overlay.wait_for(state="visible", timeout=3_000)
    except PlaywrightTimeout:
        overlay = None
    if overlay is not None:
        overlay.fill(text)
        overlay.press("Enter")
    else:
        page.wait_for_timeout(400)
        page.keyboard.type(text)
        page.keyboard.press("Enter")
    _wait_idle(page)
    page.wait_for_timeout(500)


def _until(read, ok, seconds: float = 20.0):
    """``read()`` again until ``ok`` of it (the grid redraws a moment after a rerun)."""
    deadline = time.monotonic() + seconds
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.3)
        value = read()
    return value


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label`` (again if a rerun closed the list)."""
    from playwright.sync_api import Error as PlaywrightError

    box = page.get_by_test_id("stSelectbox").filter(
        has=page.get_by_text(label, exact=True)).first
    choice = page.locator("[role=option]").filter(
        has_text=re.compile(rf"^\s*{re.escape(option)}\s*$")).first
    for attempt in range(5):
        _wait_idle(page)
        box.scroll_into_view_if_needed()
        box.locator("input").click()
        try:
            choice.click(timeout=5_000)
            break
        except PlaywrightError:
            if attempt == 4:
                raise
            page.keyboard.press("Escape")
    _wait_idle(page)


def _stored(ledger: Ledger):
    from dpcore.privacy.ledger import ANONYMOUS

    # A visitor who did not sign in (clinic is a public demo) saves under the anonymous
    # pseudo-account.
    record = ledger.get_workspace("clinic", ANONYMOUS, WORKSPACE)
    return None if record is None else workspace_from_json(record.workspace_json,
                                                           dataset="clinic")


def _short(key: str) -> str:
    run, red = key.split(":")
    return f"{run[:8]}:{red}"


@pytest.mark.browser
def test_sort_filter_tag_reject_reload_and_find_the_workspace(prepared_app):
    from playwright.sync_api import expect

    assert Path(CHROMIUM).is_file()
    url, ledger = prepared_app
    result = load_result(ledger, RUN_ID, requester=Requester())
    entries = list_entries([result])
    with app_page(url) as page:
        page.get_by_role("link", name="Explore").click()
        name = page.get_by_label("Workspace (your name)", exact=True)
        name.wait_for()
        _wait_idle(page)
        name.fill(WORKSPACE)
        name.press("Enter")
        _wait_idle(page)
        expect(page).to_have_url(re.compile(rf"workspace={WORKSPACE}"))
        _set_number(page, "Pruning threshold: smallest noisy support |E11| kept", "0")
        # the caption updates when the fragment's rerun lands, which under load can be after
        # _set_number returns
        assert _until(lambda: _listed(page), lambda n: n == (len(entries), len(entries))) == (
            len(entries), len(entries))

        # sort by noisy support, lowest first: the grid's top rows follow
        _choose(page, "Sort by", "noisy |E11|")
        toggle = page.get_by_role("switch", name="Descending").first
        toggle.locator("xpath=ancestor::label[1]").click()
        expect(toggle).not_to_be_checked()
        _wait_idle(page)
        expected = [_short(e.key) for e in sort_entries(entries, "support", descending=False)]
        shown = _until(lambda: _shown_ids(page), lambda ids: ids[:3] == expected[:3])
        assert len(shown) >= 3 and shown == expected[:len(shown)], (shown, expected)

        # filter by noisy J and search an attribute name: the counts match the listing
        _set_number(page, "Noisy J at least", "0.3")
        want = filter_entries(entries, ListFilter(min_jaccard=0.3))
        assert _until(lambda: _listed(page)[0], lambda n: n == len(want)) == len(want)
        attribute = entries[0].attributes[0]
        search = page.get_by_label("Search attribute names", exact=True)
        search.fill(attribute.lower())
        search.press("Enter")
        _wait_idle(page)
        want = filter_entries(entries, ListFilter(min_jaccard=0.3, search=attribute.lower()))
        assert _until(lambda: _listed(page)[0], lambda n: n == len(want)) == len(want) >= 1
        search.fill("")
        search.press("Enter")
        _wait_idle(page)
        _set_number(page, "Noisy J at least", "")
        assert _until(lambda: _listed(page)[0], lambda n: n == len(entries)) == len(entries)

        # tag, note and reject the top row
        top = _until(lambda: _shown_ids(page), bool)[0]
        for column, text in ((TAGS, "heart, check"), (NOTE, "too good to be true"),
                             (DECISION, "reject")):
            # the next edit waits until the table shows this one (the fragment re-ran); an
            # edit the grid did not take is typed again, at most twice (known issue: under
            # load, about one run in two loses a keystroke sequence typed into the canvas
            # grid — see the module docstring)
            for _attempt in range(3):
                _edit_cell(page, 0, column, text)
                if text in _until(lambda: _row_text(page, top), lambda row, t=text: t in row,
                                  seconds=10):
                    break
            assert text in _row_text(page, top)
        ws = _stored(ledger)
        (key,) = [k for k in ws.annotations if _short(k) == top]
        assert ws.annotations[key].decision == "reject"
        assert ws.annotations[key].tags == ("heart", "check")
        assert ws.annotations[key].note == "too good to be true"
        assert "heart, check" in _row_text(page, top)
        # hide rejected ones
        _choose(page, "Decision", "all but rejected")
        assert _until(lambda: _listed(page)[0], lambda n: n == len(entries) - 1) == len(
            entries) - 1
        assert top not in _until(lambda: _shown_ids(page), bool)
        spent = _metric(page, "Spent ε")

        # reload: a new session finds the workspace as it was left
        page.reload()
        page.get_by_text("Privacy budget of").wait_for()
        _wait_idle(page)
        name = page.get_by_label("Workspace (your name)", exact=True)
        # the sidebar can be idle before the page's body is drawn (the full suite's load
        # once took longer than expect's 5 s here)
        name.wait_for(timeout=RUN_TIMEOUT_MS)
        expect(name).to_have_value(WORKSPACE)
        expect(page.get_by_label(re.compile("^Pruning threshold"))).to_have_value("0.0")
        assert _listed(page) == (len(entries) - 1, len(entries))
        assert top not in _until(lambda: _shown_ids(page), bool)
        sort_box = page.get_by_test_id("stSelectbox").filter(
            has=page.get_by_text("Sort by", exact=True)).first
        expect(sort_box.locator("input")).to_have_value("noisy |E11|")
        _choose(page, "Decision", "rejected")
        assert _until(lambda: _shown_ids(page), lambda ids: ids == [top]) == [top]
        row = _row_text(page, top)
        assert "reject" in row and "heart, check" in row and "too good to be true" in row
        assert _metric(page, "Spent ε") == spent == "1"        # all of it cost 0 ε
        _editor(page).scroll_into_view_if_needed()
        shot = REPO_ROOT / "artifacts" / "explore_workspace.png"
        page.screenshot(path=str(shot), full_page=True)
    assert shot.is_file()
