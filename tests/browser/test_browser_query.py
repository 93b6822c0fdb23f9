"""Real-browser test of Explore's paid sections on the ``sites`` sample (a dataset with a
declared location grid): a custom query is written, paid after a confirm, its noisy table
appears and its charge shows in the budget meter; then a noisy map of the same pair is
paid and drawn (filled cell polygons, offline: no tile server).

Same approach as ``tests/browser/test_browser.py`` (Debian's chromium driven by Playwright against
``streamlit run app.py`` with a temporary ledger; fails without chromium).
"""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.test_browser import (
    REPO_ROOT,
    _metric,
    _scroll_to,
    _wait_idle,
    app_page,
    served_app,
)

__all__ = ["served_app"]  # the fixture, imported so pytest finds it here


def _expand(page, title: str) -> None:
    """Scroll to the section headed ``title``."""
    header = page.get_by_role("heading", name=title).first
    header.wait_for()
    _scroll_to(page, header)


def _pick_dataset(page, name: str) -> None:
    box = page.get_by_test_id("stSelectbox").filter(has_text="Dataset").first
    box.locator("input").click()
    page.get_by_role("option", name=re.compile(rf"^{re.escape(name)}( \(public demo\))?$")).click()
    _wait_idle(page)


def _until(check, what: str, timeout: float = 30.0) -> None:
    """Wait for ``check()`` to hold: a rerun triggered by Enter may still be on its way after
    the page looks idle (seen on a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.browser
def test_a_paid_query_and_a_noisy_map_on_the_sites_sample(served_app):
    with app_page(served_app) as page:
        _pick_dataset(page, "sites")
        assert _metric(page, "Spent ε") == "0"
        page.get_by_role("link", name="Explore").click()
        _wait_idle(page)

        # a query of one's own: refused text first (nothing to pay), then a grid query
        _expand(page, "Your own query (paid)")
        left = page.get_by_label("Left query (traits)", exact=True)
        right = page.get_by_label("Right query (climate)", exact=True)
        left.fill("[HYP > 1.55]")
        left.press("Enter")
        _wait_idle(page)
        right.fill("[TMEAN > 10]")
        right.press("Enter")
        _wait_idle(page)
        page.get_by_text(re.compile("not on its public grid")).first.wait_for()
        pay = page.get_by_role("button", name=re.compile(r"^Pay ε = 0\.1 for the noisy table"))
        assert pay.is_disabled()
        left.fill("[HYP > 1.5]")
        left.press("Enter")
        _wait_idle(page)
        _until(pay.is_enabled, "Pay to be enabled for a query on the public grid")
        # issue 32, point 8: an ε out of range is named under the box, which keeps what was
        # typed (no "outside the allowed range" snapping it back), and nothing is offered
        eps = page.get_by_label("ε for this query", exact=True)
        eps.fill("50")
        eps.press("Enter")
        _wait_idle(page)
        page.get_by_text("ε for this query: 50 is refused — it must be at most 10").wait_for()
        assert float(eps.input_value()) == 50
        page.screenshot(path=str(REPO_ROOT / "artifacts" / "query_eps50.png"), full_page=True)
        pay.wait_for(state="detached", timeout=30_000)      # no button priced at the old ε
        assert page.get_by_text("outside the allowed range").count() == 0
        eps.fill("0.1")
        eps.press("Enter")
        _wait_idle(page)
        _until(pay.is_enabled, "Pay to come back at ε = 0.1")
        pay.click()
        _wait_idle(page)
        page.get_by_role("button", name="Confirm and pay").click()
        page.get_by_text(re.compile("^Query paid")).wait_for()
        _wait_idle(page)
        assert _metric(page, "Spent ε") == "0.1"
        _expand(page, "Your own query (paid)")
        page.get_by_text("Your paid query").wait_for()
        body = page.locator("body").inner_text()
        assert "[HYP > 1.5]" in body and "[TMEAN > 10]" in body
        assert page.get_by_test_id("stDataFrame").count() >= 2   # the 2×2 table and stats

        # the map of the same pair
        _expand(page, "Where it holds: a noisy map (paid)")
        draw = page.get_by_role("button", name=re.compile(r"^Draw the noisy map \(ε = 0\.5\)"))
        _scroll_to(page, draw)
        draw.click()
        _wait_idle(page)
        confirm = page.get_by_role("button", name="Confirm and draw")
        _scroll_to(page, confirm)
        confirm.click()
        page.get_by_text(re.compile("^Map paid")).wait_for()
        _wait_idle(page)
        assert _metric(page, "Spent ε") == "0.6"
        _expand(page, "Where it holds: a noisy map (paid)")
        chart = page.locator(".stPlotlyChart").filter(has_text="longitude").first
        chart.wait_for()
        _scroll_to(page, chart)
        fills = chart.locator(".scatterlayer path.js-fill")
        fills.first.wait_for()
        assert fills.count() >= 2, "cells are drawn as filled polygons in several colours"
        assert "noise of ± 2.8 rows" in page.locator("body").inner_text()
        shot = REPO_ROOT / "artifacts" / "explore_query_map.png"
        page.screenshot(path=str(shot), full_page=True)
    assert shot.is_file()
