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
    providers = result.outcomes[0].providers if result.outcomes else []
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
    charts.append(_thread_chart(go, result))
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
    return getattr(outcome.median(provider), key) if provider in outcome.providers else None


def _thread_chart(go, result: BenchmarkResult) -> str:
    """Cores x Time by thread group, a stacked bar a query and provider (medians)."""
    from rockstate.nexmark.threads import ORDER

    bars = [(f"{o.query} {p}", o.median(p).cpu_by_thread_group or {})
            for o in result.outcomes for p in o.providers]
    fig = go.Figure([go.Bar(name=g, x=[b for b, _ in bars], y=[m.get(g, 0.0) for _, m in bars])
                     for g in ORDER if any(g in m for _, m in bars)])
    fig.update_layout(title="Cores x Time by thread group", yaxis_title="CPU seconds",
                      barmode="stack", height=420, template="plotly_white",
                      legend={"orientation": "h", "y": -0.3},
                      margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig.to_html(full_html=False, include_plotlyjs=False,
                       config={"displaylogo": False, "responsive": True})
