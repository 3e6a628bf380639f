"""A Nexmark run's figures as one self-contained HTML page, in the checkpoint report's style:
Cores x Time and batch times by query and provider, and the table."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from rockstate.errors import RockstateSetupError
from rockstate.tools.report import CSS

if TYPE_CHECKING:
    from rockstate.nexmark.benchmark import BenchmarkResult


def write_page(result: BenchmarkResult, path: str | Path, table_markdown: str) -> Path:
    try:
        import plotly.graph_objects as go
        from plotly.offline import get_plotlyjs
    except ImportError:  # pragma: no cover - plotly is an install requirement
        raise RockstateSetupError("the Nexmark page needs plotly: pip install plotly") from None
    providers = [r.provider for r in result.outcomes[0].runs] if result.outcomes else []
    queries = [o.query for o in result.outcomes]
    charts = []
    for key, title, unit in (("cpu_s", "Cores x Time", "CPU seconds"),
                             ("batch_p50_ms", "Batch p50", "ms"),
                             ("state_bytes_peak", "State memory at its peak", "bytes")):
        fig = go.Figure([go.Bar(name=p, x=queries,
                                y=[_figure(o, p, key) for o in result.outcomes])
                         for p in providers])
        fig.update_layout(title=title, yaxis_title=unit, barmode="group", height=360,
                          template="plotly_white", legend={"orientation": "h", "y": -0.2},
                          margin={"l": 60, "r": 20, "t": 50, "b": 50})
        charts.append(fig.to_html(full_html=False, include_plotlyjs=False,
                                  config={"displaylogo": False, "responsive": True}))
    c = result.config
    lines = table_markdown.splitlines()
    head = _html_row(lines[0], "th")
    rows = "".join(_html_row(line, "td") for line in lines[2:])
    page = "\n".join([
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Nexmark on Spark</title>",
        f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>",
        "<h1>Nexmark on Spark Structured Streaming</h1>",
        f"<div class='sub'>{c.events:,} events, seed {c.seed}, {c.event_rate:,} events a "
        f"second of event time &middot; master <code>{html.escape(result.master)}</code></div>",
        "<div class='grid'>", *(f"<div class='chart'>{ch}</div>" for ch in charts), "</div>",
        f"<h2>Figures</h2><table>{head}{rows}</table>",
        "</body></html>"])
    out = Path(path)
    out.write_text(page, encoding="utf-8")
    return out


def _html_row(markdown_row: str, cell: str) -> str:
    cells = markdown_row.strip().strip("|").split("|")
    return "<tr>" + "".join(f"<{cell}>{html.escape(c.strip())}</{cell}>" for c in cells) + "</tr>"


def _figure(outcome, provider: str, key: str):
    for run in outcome.runs:
        if run.provider == provider:
            return getattr(run, key)
    return None
