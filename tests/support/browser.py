"""Opens a page in headless Chromium (Debian's ``chromium``, driven by Playwright) with every
network request refused, and reports what drew: the test-side half of the report tests."""

from __future__ import annotations

import shutil
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


def render(page_file: Path, screenshot: Path) -> Rendered:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    network: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))

            def route(r):  # the page must need nothing but itself
                if r.request.url.startswith("file:"):
                    r.continue_()
                else:
                    network.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            page.wait_for_function(
                "document.querySelectorAll('.js-plotly-plot svg.main-svg').length > 0",
                timeout=30000)
            page.wait_for_timeout(500)  # let the last chart finish its layout
            charts = page.evaluate(_MEASURE)
            rows = page.evaluate("() => Array.from(document.querySelectorAll("
                                 "'#checkpoints tbody tr')).map(r => r.className)")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return Rendered(charts, rows, errors, network, screenshot)


def distinct_colours(png: Path) -> int:
    """How many colours the screenshot has (a blank page has one or two)."""
    from PIL import Image

    with Image.open(png) as im:
        return len(im.convert("RGB").getcolors(maxcolors=1 << 20) or [])
