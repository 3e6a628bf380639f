"""Strings from a checkpoint reach the report's charts as text, never as plotly's rich text.

Plotly renders a subset of HTML in axis labels, hover text and legends: a store name
``<a href=...>`` would become a link on the "acknowledgement spread" axis, an executor id a
styled ``<span>`` in hover text. The report is drawn in headless Chromium from a checkpoint
history whose every string carries markup, every chart's hover labels are shown, and no element
or attribute made from that markup may exist, while the text itself is shown as written.
"""

from __future__ import annotations

from pathlib import Path

from rockstate.checkpoint.model import CheckpointRecord, QueryCheckpoints, StoreAck
from rockstate.checkpoint.model_html import checkpoints_html
from rockstate.tools.report import render as render_report
from rockstate.tools.report_data import ROCKSTATE, CommitFigure, ReportData, StoreSize
from support.browser import render

LINK = '<a href="https://evil.example/login">session expired: sign in again</a>'
STYLED = '<span style="font-size:40px;color:#ff0000">exec-1</span>'
BOLD = "<b>declined</b> <i>by</i> <br> <sup>store</sup>"
MARKERS = ("evil.example", "40px", "#ff0000")

# Every chart's hover labels shown, then: elements or attributes the markup would have made,
# and the text of every chart.
PROBE = """() => {
  const made = [];
  let bold = 0, hovers = 0;
  const scan = (root) => {
    for (const el of root.querySelectorAll('*')) {
      for (const a of el.attributes) {
        // data-unformatted is plotly's copy of a label's source text, which it never renders.
        if (a.name !== 'data-unformatted' && MARKERS.some(m => a.value.includes(m))) {
          made.push(el.tagName + ' ' + a.name);
        }
      }
      if (el.tagName.toLowerCase() === 'a' && !el.classList.contains('modebar-btn')) {
        made.push('a element');
      }
      if (el.tagName === 'tspan' && (el.getAttribute('style') || '').includes('font-weight:bold')) {
        bold += 1;
      }
    }
  };
  for (const div of document.querySelectorAll('.js-plotly-plot')) {
    scan(div);
    (div.data || []).forEach((trace, curve) => {
      const n = (trace.x || trace.y || []).length;
      for (let point = 0; point < n; point++) {
        Plotly.Fx.hover(div, [{curveNumber: curve, pointNumber: point}]);
        const layer = div.querySelector('.hoverlayer');
        if (layer && layer.textContent) { hovers += 1; scan(layer); }
      }
    });
  }
  return {made, bold, hovers,
          text: Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => d.textContent)
            .join(' ')};
}""".replace("MARKERS", "[" + ", ".join(f"'{m}'" for m in MARKERS) + "]")


def _store(partition: int) -> StoreAck:
    return StoreAck(operator=0, store=LINK, partition=partition, executor_id=STYLED,
                    store_dir=f"state/0/{partition}", snapshot_manifest="s.json",
                    version_manifest="m.json", sync_ms=3, async_ms=40, bytes_uploaded=100,
                    bytes_reused=50, files_uploaded=1, files_reused=1, state_bytes=150,
                    num_keys=10, acked_at_ms=1_000 + 7 * partition)


def _history() -> ReportData:
    completed = tuple(CheckpointRecord(version=v, status="completed",
                                       stores=(_store(0), _store(1)),
                                       triggered_at_ms=900 + 100 * v,
                                       completed_at_ms=1_100 + 100 * v) for v in (2, 4))
    aborted = (CheckpointRecord(version=6, status="aborted", reason=LINK + BOLD,
                                triggered_at_ms=1_500, aborted_at_ms=1_800, acknowledged=1,
                                expected=2),)
    view = QueryCheckpoints(location="file:/tmp/" + LINK, completed=completed, aborted=aborted)
    return ReportData(
        location="file:/tmp/" + LINK, provider="io.rockstate.state.RockstateStateStoreProvider",
        kind=ROCKSTATE, checkpoints=view,
        commits=tuple(CommitFigure(operator=0, partition=p, store=LINK, version=v,
                                   changelog_bytes=100, records=10, commit_ms=5 + p,
                                   num_keys=10)
                      for v in (1, 2, 3, 4) for p in (0, 1)),
        store_sizes=tuple(StoreSize(operator=0, partition=p, store=LINK, version=4,
                                    state_bytes=150, num_keys=10) for p in (0, 1)))


def test_checkpoint_strings_reach_the_charts_as_text(tmp_path: Path):
    page = tmp_path / "report.html"
    page.write_text(render_report(_history()), encoding="utf-8")
    shown = render(page, tmp_path / "report.png", probe=PROBE)
    assert shown.console_errors == [] and shown.network == [], shown
    assert shown.probed["hovers"] >= 20, shown.probed  # every point's hover label was read
    assert shown.probed["made"] == [] and shown.probed["bold"] == 0, shown.probed
    # The markup is on the page as text: the axis shows the store's name as written.
    assert "session expired: sign in again</a>" in shown.probed["text"]
    assert 'href="https://evil.example/login"' in shown.probed["text"]


def test_the_notebook_view_shows_checkpoint_strings_as_text():
    data = _history()
    html = checkpoints_html(data.checkpoints)
    assert "<a href" not in html and "&lt;a href=&#34;https://evil.example/login&#34;" in html
    assert "<b>declined" not in html
