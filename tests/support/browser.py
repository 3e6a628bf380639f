"""Opens a page in headless Chromium (Debian's ``chromium``, driven by Playwright) with every
network request refused, and reports what drew: the test-side half of the report tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# As the machine's notes advise: no background networking, which a closed network refuses.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass(frozen=True)
class Rendered:
    charts: list[dict]  # per plotly chart: its title and how many drawn marks it holds
    table_rows: list[str]  # the status cell of each checkpoint table row
    console_errors: list[str]
    network: list[str]  # requests the page tried beyond its own file
    screenshot: Path
    probed: object = None  # what the caller's `probe` script returned


def chromium() -> str:
    found = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    assert found, ("headless Chromium is needed for the report tests: install Debian's "
                   "package (apt-get install chromium); dev/run-tests does.")
    return found


_MEASURE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(div => ({
  title: (div.querySelector('.gtitle') || {}).textContent || '',
  svgs: div.querySelectorAll('svg.main-svg').length,
  marks: div.querySelectorAll(
    '.barlayer .point path, .scatterlayer .trace path.js-line, .scatterlayer .points path'
  ).length,
  width: div.getBoundingClientRect().width,
}))"""


@dataclass
class _Opened:
    page: object
    console_errors: list[str]
    refused: list[str]  # requests outside what the page may load, refused


@contextmanager
def _browser_page(allowed: str) -> Iterator[_Opened]:
    """A page in headless Chromium that records console errors and refuses every request
    whose URL does not start with ``allowed``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            opened = _Opened(page, [], [])
            page.on("console", lambda m: opened.console_errors.append(m.text)
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: opened.console_errors.append(str(e)))

            def route(r):
                if r.request.url.startswith(allowed):
                    r.continue_()
                else:
                    opened.refused.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            yield opened
        finally:
            browser.close()


def render(page_file: Path, screenshot: Path, probe: str | None = None) -> Rendered:
    """Opens ``page_file``, which must need nothing but itself; ``probe``, a script of the
    form ``() => value``, is run on the drawn page and its value returned as ``probed``."""
    with _browser_page("file:") as opened:
        page = opened.page
        page.goto(page_file.resolve().as_uri(), wait_until="load")
        page.wait_for_function(
            "document.querySelectorAll('.js-plotly-plot svg.main-svg').length > 0",
            timeout=30000)
        page.wait_for_timeout(500)  # let the last chart finish its layout
        charts = page.evaluate(_MEASURE)
        rows = page.evaluate("() => Array.from(document.querySelectorAll("
                             "'#checkpoints tbody tr')).map(r => r.className)")
        probed = page.evaluate(probe) if probe else None
        page.screenshot(path=str(screenshot), full_page=True)
    return Rendered(charts, rows, opened.console_errors, opened.refused, screenshot, probed)


def distinct_colours(png: Path) -> int:
    """How many colours the screenshot has (a blank page has one or two)."""
    from PIL import Image

    with Image.open(png) as im:
        return len(im.convert("RGB").getcolors(maxcolors=1 << 20) or [])


@dataclass(frozen=True)
class TabView:
    """What the rockstate tab of Spark's UI showed, read from the page in the browser."""

    checkpoints: list[dict]  # per table row: version, status, acknowledged, state bytes
    acks: list[dict]  # the chosen checkpoint's acknowledgements
    chosen: int | None  # the version whose acknowledgements are shown
    names: list[dict]  # per query run: the name's text and the markup inside its element
    statuses: list[str]  # per query run
    bars: dict[str, int]  # per chart: bars drawn
    console_errors: list[str]
    foreign: list[str]  # requests outside the UI's own origin
    screenshot: Path


_READ_TAB = """(run) => {
  const section = document.querySelector(`[data-run="${run}"]`);
  if (!section) return null;
  const num = (row, cls) => {
    const cell = row.querySelector('td.' + cls);
    return cell && cell.dataset.value !== undefined ? Number(cell.dataset.value) : null;
  };
  const acks = section.querySelector('table.rockstate-acks');
  return {
    checkpoints: Array.from(section.querySelectorAll('table.rockstate-checkpoints tbody tr'))
      .map(r => ({version: Number(r.dataset.version), status: r.className,
                  acknowledged: num(r, 'acknowledged'), state: num(r, 'state'),
                  uploaded: num(r, 'uploaded')})),
    acks: acks ? Array.from(acks.querySelectorAll('tbody tr')).map(r => ({
      operator: Number(r.dataset.operator), partition: Number(r.dataset.partition),
      executor: r.querySelector('td.executor').textContent, state: num(r, 'state'),
      uploaded: num(r, 'uploaded'), reused: num(r, 'reused'), keys: num(r, 'keys')})) : [],
    chosen: acks ? Number(acks.dataset.version) : null,
    names: Array.from(document.querySelectorAll('.rockstate-name'))
      .map(e => ({text: e.textContent, html: e.innerHTML, children: e.children.length})),
    statuses: Array.from(document.querySelectorAll('.rockstate-status')).map(e => e.textContent),
    bars: Object.fromEntries(Array.from(section.querySelectorAll('svg.rockstate-chart'))
      .map(s => [s.dataset.title, s.querySelectorAll('rect.bar').length])),
  };
}"""


def read_tab(url: str, run_id: str, screenshot: Path) -> TabView:
    """Opens the rockstate tab at ``url`` in headless Chromium and reads run ``run_id``'s part."""
    from urllib.parse import urlsplit

    with _browser_page("{0.scheme}://{0.netloc}".format(urlsplit(url))) as opened:
        page = opened.page
        response = page.goto(url, wait_until="networkidle")
        assert response is not None and response.ok, (url, response and response.status)
        read = page.evaluate(_READ_TAB, run_id)
        assert read is not None, f"the tab at {url} shows no section for run {run_id}"
        page.screenshot(path=str(screenshot), full_page=True)
    return TabView(read["checkpoints"], read["acks"], read["chosen"], read["names"],
                   read["statuses"], read["bars"], opened.console_errors, opened.refused,
                   screenshot)
