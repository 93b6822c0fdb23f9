"""Real-browser tests: serve the app, run a small job, click a scatter point, see pruning;
drag a box over part of the scatter (it keeps what it covers on both axes) and read the
tree-pair diagram; and a SerenadeES run whose query formulas show on Explore.

Drives Debian's chromium (``/usr/bin/chromium``) with Playwright against
``streamlit run app.py`` on a free port with a temporary ledger. Playwright's own
browser download is not used. Without chromium this test FAILS (it does not skip):
install it with ``apt-get install chromium`` (``tests/run.sh`` does).

Saves a screenshot of the Explore page to ``artifacts/explore.png`` (the README's
``docs/explore.png`` is a committed screenshot of a full-size run, not overwritten here).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
START_TIMEOUT_S = 120
RUN_TIMEOUT_MS = 120_000


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"streamlit exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"streamlit did not start in {START_TIMEOUT_S} s:\n"
                         f"{log.read_text()[-3000:]}")


@contextmanager
def streamlit_server(tmp_path: Path, ledger_path: Path):
    """``streamlit run app.py`` in a subprocess on a free port with the ledger at
    ``ledger_path``; yields its URL once it answers, and stops it after the block."""
    port = _free_port()
    env = {**os.environ, "DPRM_LEDGER": str(ledger_path),
           "DPRM_DATA_DIR": str(tmp_path / "datasets")}
    env.pop("DPRM_OWNER_PASSWORD_HASH", None)
    log = tmp_path / "streamlit.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture
def served_app(tmp_path):
    """``streamlit run app.py`` in a subprocess with a temporary ledger; yields its URL."""
    with streamlit_server(tmp_path, tmp_path / "ledger.sqlite") as url:
        yield url


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=re.compile(f"^{label}$")))
    return box.first.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _wait_idle(page, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Wait until the app is not running a script (the status widget says so)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid^=\"stStatusWidgetRunning\"]')",
        timeout=timeout_ms)


_SANKEY_BOXES = """() => {
    const chart = [...document.querySelectorAll('.stPlotlyChart')].pop();
    const box = e => { const b = e.getBoundingClientRect();
                       return {x0: b.left, x1: b.right, y0: b.top, y1: b.bottom}; };
    const labels = [], rects = [];
    chart.querySelectorAll('.sankey-node').forEach((n, i) => {
        rects.push(box(n.querySelector('.node-rect')));
        const t = n.querySelector('.node-label');
        if (t && t.textContent) labels.push({...box(t), text: t.textContent, own: i});
    });
    chart.querySelectorAll('.annotation-text').forEach(a =>
        labels.push({...box(a), text: a.textContent, own: -1}));
    return {labels, rects};
}"""


def _grid_rows(page, header: str) -> list[list[str]]:
    """The cells (text) of the first dataframe whose header row holds ``header``, row by row,
    read from the accessible table Streamlit's canvas grid keeps in the DOM (the first
    column, the hidden index's, dropped when empty)."""
    page.wait_for_function("""h => [...document.querySelectorAll(
        '[data-testid="stDataFrame"] table')].some(t => t.innerText.includes(h))""", arg=header)
    rows = page.evaluate("""h => {
        const t = [...document.querySelectorAll('[data-testid="stDataFrame"] table')]
            .find(x => x.innerText.includes(h));
        return [...t.rows].map(r => [...r.cells].map(c => c.innerText.trim()));
    }""", header)
    if all(not r[0] for r in rows):
        rows = [r[1:] for r in rows]
    return rows


def _sankey_label_overlaps(page) -> tuple[list, list]:
    """In the page's last chart (a Sankey): pairs of written labels whose boxes intersect,
    and labels drawn over another node's bar (over its own is where Plotly puts none)."""
    found = page.evaluate(_SANKEY_BOXES)

    def hit(a, b):
        return (a["x0"] < b["x1"] - 0.5 and b["x0"] < a["x1"] - 0.5
                and a["y0"] < b["y1"] - 0.5 and b["y0"] < a["y1"] - 0.5)

    labels = found["labels"]
    assert labels, "the Sankey writes labels"
    crossing = [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
                if hit(a, b)]
    over_bars = [a["text"] for a in labels for j, r in enumerate(found["rects"])
                 if j != a["own"] and hit(a, r)]
    return crossing, over_bars


def _scroll_to(page, locator, attempts: int = 10) -> None:
    """Scroll ``locator`` into view, again if Streamlit re-mounts the element meanwhile
    (a Plotly chart is replaced in the DOM a moment after the script run that redraws it)
    or the browser did not get it done within 5 s (a page of charts on a busy machine)."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in range(attempts):
        try:
            locator.scroll_into_view_if_needed(timeout=5_000)
            return
        except PlaywrightError as exc:
            again = "not attached" in str(exc) or "Timeout" in str(exc)
            if not again or attempt == attempts - 1:
                raise
            page.wait_for_timeout(300)


def _set_number(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")
    _wait_idle(page)


@contextmanager
def app_page(url: str):
    """A chromium page on the served app, loaded and idle, with ``artifacts/`` ready."""
    assert Path(CHROMIUM).is_file(), (
        "this test needs Debian's chromium at /usr/bin/chromium "
        "(apt-get install chromium); it fails instead of skipping")
    from playwright.sync_api import sync_playwright

    (REPO_ROOT / "artifacts").mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(RUN_TIMEOUT_MS)
            page.goto(url)
            page.get_by_text("Privacy budget of").wait_for()
            _wait_idle(page)
            yield page
        finally:
            browser.close()


@pytest.mark.browser
def test_click_a_point_on_the_scatter_prunes(served_app):
    from playwright.sync_api import expect

    with app_page(served_app) as page:
        assert _metric(page, "Spent ε") == "0"

        _mine_small_tree_pair_run(page)
        assert _metric(page, "Spent ε") == "1"

        # Explore: click a point → threshold = its noisy support → fewer kept.
        page.get_by_role("link", name="Explore").click()
        chart = page.locator(".stPlotlyChart").first
        points = chart.locator(".scatterlayer .point")
        points.first.wait_for()
        _wait_idle(page)
        # the default threshold is the suggested one, drawn as a dotted line
        page.get_by_text(re.compile(r"^Suggested threshold: ")).wait_for()
        assert chart.get_by_text("suggested").count() >= 1
        # keep everything first, so a click in the middle prunes some
        _set_number(page, "Pruning threshold: smallest noisy support |E11| kept", "0")
        expect(page.get_by_label(re.compile("^Pruning threshold"))).to_have_value("0.0")
        total = int(_metric(page, "Kept"))
        assert total >= 2 and points.count() == total
        _scroll_to(page, chart)
        boxes = [points.nth(i).bounding_box() for i in range(points.count())]
        # a point in the middle of the distinct supports: some kept, some pruned
        xs = sorted({round(b["x"]) for b in boxes})
        assert len(xs) >= 2, "the seeded run should release distinct supports"
        middle = xs[len(xs) // 2]
        target = next(b for b in boxes if round(b["x"]) == middle)
        x, y = target["x"] + target["width"] / 2, target["y"] + target["height"] / 2
        page.mouse.move(x, y)
        page.wait_for_timeout(200)
        page.mouse.down()
        page.mouse.up()
        kept_metric = page.locator('[data-testid="stMetric"]').filter(has_text="Kept").first
        expect(kept_metric.locator('[data-testid="stMetricValue"]')).not_to_have_text(
            str(total), timeout=30_000)
        _wait_idle(page)
        kept = int(_metric(page, "Kept"))
        assert 1 <= kept < total
        assert int(_metric(page, "Pruned")) == total - kept
        assert float(page.get_by_label(re.compile("^Pruning threshold")).input_value()) > 0
        assert _metric(page, "Spent ε") == "1"          # pruning cost nothing
        page.mouse.move(5, 5)
        page.wait_for_timeout(300)
        shot = REPO_ROOT / "artifacts" / "explore.png"
        page.screenshot(path=str(shot), full_page=True)
    assert shot.is_file()


def _mine_small_tree_pair_run(page) -> None:
    """Mine: a small seeded MCMCTreePair run on the public demo clinic data."""
    page.get_by_role("link", name="Mine").click()
    page.get_by_label("InTr (trials)", exact=True).wait_for()
    _set_number(page, "InTr (trials)", "2")
    _set_number(page, "MCIter", "200")
    page.get_by_text(re.compile("^Demo seed")).click()
    _wait_idle(page)
    _set_number(page, "Seed", "11")
    page.get_by_role("button", name=re.compile(r"^Launch MCMCTreePair")).click()
    page.get_by_role("button", name="Confirm and run").click()
    page.get_by_text(re.compile(r"is stored: \d+ redescriptions")).wait_for()
    _wait_idle(page)


_SCATTER_POINTS = """() => {
    const gd = document.querySelectorAll('.stPlotlyChart .js-plotly-plot')[0];
    const pts = [...gd.querySelectorAll('.scatterlayer .point')];
    return pts.map((p, i) => { const b = p.getBoundingClientRect();
        return {x: gd.data[0].x[i], y: gd.data[0].y[i],
                px: b.x + b.width / 2, py: b.y + b.height / 2}; });
}"""

_PLOT_AREA = """() => {
    const gd = document.querySelectorAll('.stPlotlyChart .js-plotly-plot')[0];
    const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
            drag: gd._fullLayout.dragmode};
}"""


def _band_box(points: list[dict], top: float, bottom: float
              ) -> tuple[float, float, list[dict]] | None:
    """A horizontal band of the scatter, as wide as the plot, whose covered points'
    smallest support is above the smallest support of all (so the old rule, the box's
    left edge, would keep everything). Returns (pixel y of its upper and lower edge, the
    points it covers), or None."""
    lowest = min(p["x"] for p in points)
    ys = sorted(points, key=lambda p: p["py"])                  # top of the screen first
    edges = [top] + [(a["py"] + b["py"]) / 2 for a, b in zip(ys, ys[1:])
                     if b["py"] - a["py"] >= 6] + [bottom]
    best = None
    for upper, lower in ((u, v) for i, u in enumerate(edges) for v in edges[i + 1:]):
        covered = [p for p in points if upper < p["py"] < lower]
        if covered and min(p["x"] for p in covered) > lowest and lower - upper >= 8:
            if best is None or len(covered) > len(best[2]):
                best = (upper, lower, covered)
    return best


@pytest.mark.browser
def test_a_box_keeps_what_it_covers_and_the_tree_pair_is_readable(served_app):
    """Newcomer issue, points 5 and 6: the box set the threshold to its left edge and
    ignored its height; the tree-pair diagram was a hairball of leaf links with labels
    over the lines and no split values."""
    from playwright.sync_api import expect

    with app_page(served_app) as page:
        _mine_small_tree_pair_run(page)
        page.get_by_role("link", name="Explore").click()
        chart = page.locator(".stPlotlyChart").first
        chart.locator(".scatterlayer .point").first.wait_for()
        _wait_idle(page)
        _set_number(page, "Pruning threshold: smallest noisy support |E11| kept", "0")
        total = int(_metric(page, "Kept"))
        _scroll_to(page, chart)
        page.wait_for_timeout(500)
        chart.hover()                                   # the modebar shows on hover
        chart.locator('.modebar-btn[data-title="Box Select"]').click()
        page.wait_for_timeout(300)
        area = page.evaluate(_PLOT_AREA)
        assert area["drag"] == "select", "box select is on"
        points = page.evaluate(_SCATTER_POINTS)
        assert len(points) == total
        band = _band_box(points, area["top"] + 2, area["bottom"] - 2)
        assert band is not None, "the seeded run should give a band of points"
        upper_edge, lower_edge, covered = band
        expected = min(p["x"] for p in covered)
        # a box from the plot's left edge to its right edge, only as tall as the band
        page.mouse.move(area["left"] + 2, upper_edge)
        page.mouse.down()
        page.mouse.move((area["left"] + area["right"]) / 2, lower_edge - 3, steps=5)
        page.mouse.move(area["right"] - 2, lower_edge, steps=5)
        page.mouse.up()
        box = page.get_by_label(re.compile("^Pruning threshold"))
        expect(box).not_to_have_value("0.0", timeout=30_000)
        _wait_idle(page)
        assert float(box.input_value()) == pytest.approx(expected, abs=0.05)
        kept = int(_metric(page, "Kept"))
        assert kept == sum(1 for p in points if p["x"] >= expected) < total
        if len(covered) >= 2:
            page.get_by_text(re.compile(rf"^Selected {len(covered)} redescriptions")).wait_for()

        # the tree pair: a Sankey of noisy counts, this redescription's leaves first
        _scroll_to(page, page.get_by_text("Redescription detail"))
        diagram = page.locator(".stPlotlyChart").last
        diagram.locator(".sankey-node").first.wait_for()
        _wait_idle(page)
        labels = diagram.locator(".sankey-node .node-label").evaluate_all(
            "els => els.map(e => e.textContent)")
        assert any(re.search(r"\[[A-Z_0-9]+ (≤|>) [-\d.]+\]|\[[A-Z_0-9]+\]", t)
                   for t in labels), "split tests label the nodes"
        assert any(re.match(r"^L\d+ ", t) for t in labels) or any("in the query" in t
                                                                   for t in labels)
        links = diagram.locator(".sankey-link").count()
        leaves = re.search(r"\((\d+) × (\d+) leaves\)", page.locator("body").inner_text())
        n_left, n_right = int(leaves.group(1)), int(leaves.group(2))
        assert links < n_left * n_right / 3, (links, n_left, n_right)
        _scroll_to(page, diagram)
        page.wait_for_timeout(500)
        assert _sankey_label_overlaps(page) == ([], [])          # issue 32, point 13
        # issue 30: a band's tooltip says where its true count lies (90 % interval)
        band = diagram.locator(".sankey-link").first
        box = band.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        tip = diagram.locator(".hoverlayer .hovertext")
        tip.first.wait_for()
        assert re.search(r"noisy count \d+ \(90 % interval \d+–\d+\)",
                         tip.first.text_content()), tip.first.text_content()
        page.mouse.move(0, 0)
        page.screenshot(path=str(REPO_ROOT / "artifacts" / "tree_pair.png"))
        page.get_by_text(re.compile("^Show every leaf of both trees")).click()
        _wait_idle(page)
        page.wait_for_function(
            """n => [...document.querySelectorAll('.stPlotlyChart')].pop()
                   .querySelectorAll('.sankey-node').length > n""", arg=len(labels))
        every = page.locator(".stPlotlyChart").last.locator(".sankey-node .node-label")
        texts = every.evaluate_all("els => els.map(e => e.textContent)")
        assert sum(1 for t in texts if re.match(r"^L\d+ ", t)) == n_left
        assert sum(1 for t in texts if re.match(r"^R\d+ ", t)) == n_right
        page.wait_for_timeout(700)                  # the Sankey's own transition
        assert _sankey_label_overlaps(page) == ([], [])


@pytest.mark.browser
def test_a_serenade_run_shows_its_query_formulas(served_app):
    """SerenadeES from the Mine page; Explore shows its formulas and literal table."""
    from playwright.sync_api import expect

    with app_page(served_app) as page:
        page.get_by_role("link", name="Mine").click()
        algorithm = page.get_by_test_id("stSelectbox").filter(has_text="Algorithm").first
        algorithm.wait_for()
        algorithm.locator("input").click()
        page.get_by_role("option", name="SerenadeES").click()
        _wait_idle(page)
        # issue 35: at ε = 1 the form says Serenade's draws are close to random on clinic
        page.get_by_text(re.compile(r"SerenadeES draws close to random on this dataset at "
                                    r"ε = 1 ")).wait_for()
        _set_number(page, "ε (exact)", "10")
        expect(page.get_by_text("draws close to random")).to_have_count(0, timeout=60_000)
        _set_number(page, "K (extension rounds)", "20")
        page.get_by_text(re.compile("^Demo seed")).click()
        _wait_idle(page)
        page.get_by_role("button", name=re.compile(r"^Launch SerenadeES")).click()
        page.get_by_role("button", name="Confirm and run").click()
        page.get_by_text(re.compile(r"is stored: \d+ redescriptions")).wait_for()
        _wait_idle(page)
        assert _metric(page, "Spent ε") == "10"

        page.get_by_role("link", name="Explore").click()
        page.locator(".stPlotlyChart .scatterlayer .point").first.wait_for()
        _wait_idle(page)
        _scroll_to(page, page.get_by_text("Redescription detail"))
        _wait_idle(page)
        body = page.locator("body").inner_text()
        assert re.search(r"\[DX_[A-Z_]+\]", body), "a left-query literal is shown"
        assert "LAB_" in body and "Serenade builds no trees" in body
        assert "nan" not in body.lower().split()
        shot = REPO_ROOT / "artifacts" / "explore_serenade.png"
        page.screenshot(path=str(shot), full_page=True)


@pytest.mark.browser
def test_a_new_user_synthesises_the_sample_table_and_downloads_it(served_app):
    """Issue 17's 'done when': pick the sample table, set ε, get a synthetic table, download
    it as CSV (the file read back: the schema's columns, the rows the page announced)."""
    with app_page(served_app) as page:
        page.get_by_role("link", name="Synthesis").click()
        page.get_by_role("button", name="Use this dataset").click()      # clinic is not a table
        _wait_idle(page)
        page.get_by_text(re.compile(r"^Dataset pima_like ·")).wait_for()
        _set_number(page, "ε (privacy budget of this run)", "2")
        # accuracy before spending: the form states the class counts' 90 % half-width
        page.get_by_text(re.compile(r"from the parameters alone, 0 ε\): each released class "
                                    r"count will be within ±\d+ rows")).wait_for()
        page.get_by_role("button", name=re.compile(r"^Launch MC-GEN \(ε = 2\)")).click()
        page.get_by_role("button", name="Confirm and run").click()
        stored = page.get_by_text(re.compile(r"is stored: a synthetic table of \d+ rows"))
        stored.wait_for()
        _wait_idle(page)
        rows = int(re.search(r"of (\d+) rows", stored.inner_text()).group(1))
        assert _metric(page, "Spent ε") == "2"
        page.get_by_text("Per-feature histograms").wait_for()
        # issue 30: each released class count with its 90 % interval, read from the grid's
        # accessible table (the grid itself is a canvas)
        classes = _grid_rows(page, "true rows ≥ (90 %)")
        assert classes[0][:4] == ["class", "synthetic rows", "true rows ≥ (90 %)",
                                  "true rows ≤ (90 %)"], classes[:1]
        assert len(classes) >= 3                             # a header and ≥ 2 classes
        for cells in classes[1:]:
            noisy, low, high = (float(c.replace(",", "")) for c in cells[1:4])
            assert low <= noisy <= high and high - low > 0, cells
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Download CSV").click()
        download = download_info.value
        assert download.suggested_filename.startswith("pima_like_synthetic_")
        lines = Path(download.path()).read_text(encoding="utf-8").splitlines()
        assert lines[0].split(",")[:3] == ["outcome", "pregnancies", "glucose"]
        assert len(lines) - 1 == rows > 100
        _wait_idle(page)
        _scroll_to(page, page.get_by_text("Feature groups and associations"))
        page.wait_for_timeout(500)
        page.screenshot(path=str(REPO_ROOT / "artifacts" / "synthesis.png"))


@pytest.fixture
def sequence_kernels():
    """The sequence kernels compiled into this run's numba cache before the server starts, as
    they are on any server after its first start (a first start compiles them once, about a
    minute, with a progress bar on the Sequences page)."""
    from components.common.warmup import family_steps
    from dpcore.registry import SEQUENCES

    for step in family_steps(SEQUENCES):
        step.action()


def _sign_in(page, ledger_path: Path, name: str = "analyst") -> None:
    """Create analyst ``name`` in the served ledger and sign in through the sidebar form
    (the private samples are for signed-in accounts only)."""
    from dpcore.privacy.ledger import Ledger
    from tests.support.accounts_support import PASSWORD, make_account

    make_account(Ledger(ledger_path), name, role="analyst")
    side = page.get_by_test_id("stSidebar")
    side.get_by_text("Sign in", exact=True).first.click()      # open the sidebar's expander
    for label, value in (("Account", name), ("Password", PASSWORD)):
        box = side.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
        _wait_idle(page)
    side.get_by_role("button", name="Sign in", exact=True).click()
    _wait_idle(page)
    side.get_by_text(f"Signed in: {name} (analyst)").wait_for()


def _check_the_form_states_pfs2_accuracy(page) -> None:
    """Issue 30, accuracy before spending: the Sequences form asks for a stated record count
    and, once one is typed, shows the statement dpcore computes for the form's default run
    on the clickstream's public schema (the same sentences, in the browser)."""
    from components.sequences.sequence_accuracy import EXPECTED_LABEL
    from dpcore.data.sequences.schema import load_sequence_schema
    from dpcore.registry import PFS2, algorithm_spec
    from dpcore.sequences.accuracy import accuracy_lines, expected_accuracy
    from dpcore.sequences.params import SequenceMiningParams

    page.get_by_text("type the number of records you expect").wait_for()
    _set_number(page, EXPECTED_LABEL, "10000")
    schema = load_sequence_schema(REPO_ROOT / "sample_data" / "clickstream"
                                  / "sequence_schema.json")
    params = SequenceMiningParams(**algorithm_spec(PFS2).defaults())
    lines = accuracy_lines(expected_accuracy(params, schema.n_items, schema.l1, 10_000))
    assert "stated N = 10,000 records" in lines[0]
    for line in lines:                              # each sentence, rendered as it reads
        page.get_by_text(line, exact=False).first.wait_for()


@pytest.mark.browser
def test_a_new_user_reads_frequent_paths_of_the_clickstream(sequence_kernels, served_app,
                                                            tmp_path):
    """Issue 16's 'done when': a new user picks the clickstream sample, launches PFS2 and
    reads frequent paths (item names joined by arrows) within a minute of signing in."""
    with app_page(served_app) as page:
        _sign_in(page, tmp_path / "ledger.sqlite")
        started = time.monotonic()
        dataset = page.get_by_test_id("stSelectbox").filter(has_text="Dataset").first
        dataset.locator("input").click()
        page.get_by_role("option", name="clickstream", exact=True).click()
        _wait_idle(page)
        page.get_by_role("link", name="Sequences").click()
        launch = page.get_by_role("button", name=re.compile(r"^Launch PFS2 \(ε = 1\)"))
        launch.wait_for()
        _check_the_form_states_pfs2_accuracy(page)
        expect_enabled = launch.is_enabled
        deadline = time.monotonic() + 60
        while not expect_enabled():                 # the sequence kernels warm up first
            assert time.monotonic() < deadline, "Launch stayed disabled"
            page.wait_for_timeout(500)
        launch.click()
        page.get_by_role("button", name="Confirm and run").click()
        page.get_by_text(re.compile(r"is stored: \d+ frequent sequences")).wait_for()
        _wait_idle(page)
        page.get_by_text("Most frequent paths").wait_for()
        body = page.locator("body").inner_text()
        paths = re.findall(r"^(\S+(?: → \S+)+) — noisy support", body, flags=re.MULTILINE)
        # issue 30: every path and every pattern of the table carries its 90 % interval
        bounds = re.findall(r"^\S+(?: → \S+)+ — noisy support ([\d,]+) \(90 %: ([\d,]+)–"
                            r"([\d,]+)\)", body, flags=re.MULTILINE)
        assert len(bounds) == len(paths), body[:2000]
        assert all(int(lo.replace(",", "")) <= int(hi.replace(",", ""))
                   for _, lo, hi in bounds)
        patterns = _grid_rows(page, "support ≥ (90 %)")
        assert patterns[0][:5] == ["pattern", "length", "noisy support", "support ≥ (90 %)",
                                   "support ≤ (90 %)"], patterns[:1]
        assert len(patterns) > 1 and all(c[3] and c[4] for c in patterns[1:])
        elapsed = time.monotonic() - started
        assert paths, "frequent paths of two pages or more are shown"
        assert all(set(p.split(" → ")) <= {"frontpage", "news", "tech", "local", "opinion",
                                           "on-air", "misc", "weather", "msn-news", "health",
                                           "living", "business", "msn-sports", "sports",
                                           "summary", "bbs", "travel"} for p in paths)
        assert elapsed < 60, f"a new user waited {elapsed:.0f} s for the frequent paths"
        assert _metric(page, "Spent ε") == "1"
        page.locator(".stPlotlyChart").nth(1).wait_for()       # the prefix tree
        page.screenshot(path=str(REPO_ROOT / "artifacts" / "sequences.png"), full_page=True)
        _check_a_short_l1_says_what_it_cut(page)


def _check_a_short_l1_says_what_it_cut(page) -> None:
    """Issue 35: an l1 that cuts frequent long paths says so on the page. The clickstream's
    3-page paths are frequent at the default θ, so l1 = 2 must name length 3 as cut (the
    sentence is computed from the release's noisy length histogram only)."""
    from components.sequences.sequence_form import field_label

    _set_number(page, field_label("l1"), "2")
    page.get_by_role("button", name=re.compile(r"^Launch PFS2 \(ε = 1\)")).click()
    page.get_by_role("button", name="Confirm and run").click()
    warning = page.get_by_text(re.compile(r"Length cut: this run mined sequences of at most "
                                          r"lmax = 2 items"))
    warning.wait_for()
    # lmax = l1 = 2: the histogram stops at l1, so what may be cut is "more than l1 = 2"
    assert "frequent sequences of more than l1 = 2 items may exist" in warning.inner_text(), \
        warning.inner_text()
    assert _metric(page, "Spent ε") == "2"
