"""``rockstate report``: a checkpoint history as one self-contained HTML page.

The page opens with no network: plotly.js and the styles are inlined. Plotly is used because it
is a well-kept library whose figures are interactive (hover shows each point's store and
figures, zoom into a long history) and whose standalone HTML output is a supported feature,
not a workaround. The figures come from :mod:`rockstate.report_data`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rockstate.checkpoint.markup import as_text
from rockstate.checkpoint.model import CheckpointRecord
from rockstate.errors import RockstateSetupError
from rockstate.tools.report_data import (
    ROCKSTATE,
    SPARK_ROCKSDB,
    Progress,
    ReportData,
    collect,
)

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

    from rockstate.checkpoint.location import CheckpointLocation

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d232b}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.sub{color:#5b6573;font-size:13px;margin-bottom:16px}
table{border-collapse:collapse;font-size:13px} th,td{padding:4px 10px;text-align:right}
th{background:#eef1f5;position:sticky;top:0} td.l,th.l{text-align:left}
tr.aborted td{color:#b3261e} tr.pending td{color:#8a6d00}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}
.chart{border:1px solid #e3e7ec;border-radius:6px;padding:4px;min-width:0;overflow:hidden}
.note{background:#fff8e1;border:1px solid #f0d98c;padding:6px 10px;font-size:13px}
"""


def report(source: StreamingQuery | str | CheckpointLocation, path: str | Path,
           progress: Progress | None = None,
           storage_options: dict[str, Any] | None = None) -> Path:
    """Writes the checkpoint history report of a query or checkpoint location to ``path``.

    ``source`` is a running ``StreamingQuery`` (its driver's view adds pending and aborted
    checkpoints of the current run), a checkpoint location's path or fsspec URL (opened with
    ``storage_options``: the driver's location too), or a :class:`~rockstate.CheckpointLocation`.
    Returns the written file's path. For a location, the function form of
    ``rockstate.Checkpoint(location, storage_options).report(path)``.
    """
    from rockstate.checkpoint.location import open_location

    live = None
    if hasattr(source, "runId") and hasattr(source, "lastProgress"):
        from rockstate.live.view import checkpoints

        live = checkpoints(source)  # type: ignore[arg-type]
        if not live.location:
            raise RockstateSetupError(
                "the query has not acknowledged a checkpoint yet, so its location is unknown "
                "to the driver; give report() the query's checkpointLocation instead.")
        loc = open_location(live.location, storage_options)
    else:
        loc = open_location(source, storage_options)  # type: ignore[arg-type]
    data = collect(loc, live, progress)
    out = Path(path)
    out.write_text(render(data), encoding="utf-8")
    return out


def render(data: ReportData) -> str:
    """The whole page for ``data``."""
    try:
        import plotly.graph_objects as go
        from plotly.offline import get_plotlyjs
    except ImportError:  # pragma: no cover - plotly is an install requirement
        raise RockstateSetupError("rockstate report needs plotly: pip install plotly") from None
    charts = _charts(data, go)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>rockstate report: {as_text(data.location)}</title>",
        f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>",
        "<h1>Checkpoint history</h1>",
        f"<div class='sub'>{as_text(data.location)} &middot; provider "
        f"<code>{as_text(data.provider)}</code> &middot; generated {generated}</div>",
    ]
    parts += [f"<p class='note'>{as_text(n)}</p>" for n in data.notes]
    if data.checkpoints.failure:
        parts.append(f"<p class='note'>{as_text(data.checkpoints.failure)}</p>")
    if data.kind == ROCKSTATE:
        parts.append(_checkpoint_table(data))
    if charts:
        parts.append("<h2>Charts</h2><div class='grid'>")
        for i, (fig, _name) in enumerate(charts):
            fig.update_layout(height=360, margin={"l": 60, "r": 20, "t": 50, "b": 50},
                              template="plotly_white")
            parts.append("<div class='chart'>" + fig.to_html(
                full_html=False, include_plotlyjs=False, div_id=f"chart-{i}",
                config={"displaylogo": False, "responsive": True}) + "</div>")
        parts.append("</div>")
    elif data.kind in (ROCKSTATE, SPARK_ROCKSDB):
        parts.append("<p class='note'>No state files yet: nothing to chart.</p>")
    # Charts drawn while the page was still growing take their final cell's width on load.
    parts.append("<script>window.addEventListener('load', () => document.querySelectorAll("
                 "'.js-plotly-plot').forEach(d => Plotly.Plots.resize(d)));</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def chart_names(data: ReportData) -> list[str]:
    """The titles of the charts ``render`` draws for ``data`` (what a test looks for)."""
    import plotly.graph_objects as go

    return [name for _, name in _charts(data, go)]


def _charts(data: ReportData, go: Any) -> list[tuple[Any, str]]:
    """(figure, name) of every chart for ``data``'s kind of checkpoint."""
    if data.kind == ROCKSTATE:
        return _rockstate_charts(data, go)
    return _spark_charts(data, go) if data.kind == SPARK_ROCKSDB else []


# ---- the table ----

def _ms(value: int | None) -> str:
    return "" if value is None else f"{value:,} ms"


def _bytes(value: int | None) -> str:
    if value is None:
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024  # type: ignore[assignment]
    return str(value)


def _time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def _when(ms: int | None) -> str:
    at = _time(ms)
    return "" if at is None else at.strftime("%H:%M:%S")


def _row(c: CheckpointRecord) -> str:
    slow = c.slowest
    straggler = ""
    if slow is not None and c.triggered_at_ms is not None:
        straggler = (f"op {slow.operator} part {slow.partition}"
                     f"{'' if slow.store == 'default' else ' ' + slow.store}: "
                     f"+{slow.acked_at_ms - c.triggered_at_ms:,} ms")
    detail = c.reason or ""
    if c.status == "pending":
        detail = f"waiting for {len(c.missing)} stores"
    elif c.status == "aborted" and c.expected:
        detail = f"{c.acknowledged}/{c.expected} acknowledged; {c.reason}"
    cells = [
        f"<td>{c.version}</td><td>{c.batch_id}</td>",
        f"<td class='l'>{c.status}</td><td>{_when(c.triggered_at_ms)}</td>",
        f"<td>{_ms(c.duration_ms)}</td><td>{len(c.stores) or ''}</td>",
        f"<td>{_bytes(c.state_bytes) if c.stores else ''}</td>",
        f"<td>{_bytes(c.bytes_uploaded) if c.stores else ''}</td>",
        f"<td>{_bytes(c.bytes_reused) if c.stores else ''}</td>",
        f"<td class='l'>{as_text(straggler)}</td>",
        f"<td class='l'>{as_text(detail)}</td>",
    ]
    return f"<tr class='{c.status}'>{''.join(cells)}</tr>"


def _checkpoint_table(data: ReportData) -> str:
    rows = data.checkpoints.history
    head = ("<tr><th>version</th><th>batch</th><th class='l'>status</th><th>triggered</th>"
            "<th>duration</th><th>stores</th><th>state size</th><th>uploaded</th>"
            "<th>reused</th><th class='l'>slowest partition</th><th class='l'>detail</th></tr>")
    if not rows:
        return ("<h2>Checkpoints</h2><p class='note'>No checkpoint has completed or aborted "
                "here yet.</p>")
    body = "".join(_row(c) for c in reversed(rows))  # newest first
    return (f"<h2>Checkpoints</h2><table id='checkpoints'><thead>{head}</thead>"
            f"<tbody>{body}</tbody></table>")


# ---- charts ----

def _store_label(operator: int, partition: int, store: str) -> str:
    """A store's name on a chart's axis: its name comes from the checkpoint, so as text."""
    return f"op{operator}/p{partition}" + ("" if store == "default" else f"/{as_text(store)}")


def _rockstate_charts(data: ReportData, go: Any) -> list[tuple[Any, str]]:
    charts: list[tuple[Any, str]] = []
    q = data.checkpoints
    done = list(q.completed)
    if done or q.aborted:
        fig = go.Figure()
        fig.add_scatter(x=[_time(c.triggered_at_ms) for c in done],
                        y=[c.duration_ms for c in done], mode="lines+markers",
                        name="completed", marker_color="#3b7ddd",
                        text=[f"checkpoint {c.version}" for c in done])
        if q.aborted:
            fig.add_scatter(x=[_time(c.triggered_at_ms or c.aborted_at_ms) for c in q.aborted],
                            y=[c.duration_ms or 0 for c in q.aborted], mode="markers",
                            name="aborted", marker={"symbol": "x", "size": 12,
                                                    "color": "#b3261e"},
                            text=[f"checkpoint {c.version}: {as_text(c.reason)}"
                                  for c in q.aborted])
        _titles(fig, "Checkpoint duration", "triggered at (UTC)", "ms")
        charts.append((fig, "Checkpoint duration"))
    if done:
        fig = go.Figure()
        when = [_time(c.triggered_at_ms) for c in done]
        labels = [f"checkpoint {c.version}" for c in done]
        fig.add_scatter(x=when, y=[c.state_bytes for c in done], mode="lines+markers",
                        name="state size", text=labels)
        fig.add_scatter(x=when, y=[c.bytes_uploaded for c in done], mode="lines+markers",
                        name="uploaded", text=labels)
        _titles(fig, "Checkpoint size", "triggered at (UTC)", "bytes")
        charts.append((fig, "Checkpoint size"))
        fig = go.Figure()
        fig.add_bar(x=[c.version for c in done], y=[c.bytes_uploaded for c in done],
                    name="uploaded", marker_color="#e8710a")
        fig.add_bar(x=[c.version for c in done], y=[c.bytes_reused for c in done],
                    name="reused (shared SSTs)", marker_color="#8bb7f0")
        fig.update_layout(barmode="stack")
        _titles(fig, "Uploaded vs reused bytes", "state version", "bytes")
        charts.append((fig, "Uploaded vs reused bytes"))
        latest = done[-1]
        if latest.stores and latest.triggered_at_ms is not None:
            stores = sorted(latest.stores, key=lambda s: s.acked_at_ms)
            fig = go.Figure()
            fig.add_bar(x=[_store_label(s.operator, s.partition, s.store) for s in stores],
                        y=[s.acked_at_ms - latest.triggered_at_ms for s in stores],
                        name="acknowledged after the first", marker_color="#3b7ddd",
                        customdata=[[s.sync_ms, s.async_ms, as_text(s.executor_id)]
                                    for s in stores],
                        hovertemplate="%{x}: +%{y} ms<br>sync %{customdata[0]} ms, async "
                                      "%{customdata[1]} ms<br>executor %{customdata[2]}"
                                      "<extra></extra>")
            _titles(fig, f"Acknowledgement spread of checkpoint {latest.version}",
                    "store (slowest last)", "ms after the first acknowledgement")
            charts.append((fig, "Acknowledgement spread"))
    if data.commits:
        by_version: dict[int, list[int]] = defaultdict(list)
        bytes_by_version: dict[int, int] = defaultdict(int)
        for c in data.commits:
            if c.commit_ms is not None:
                by_version[c.version].append(c.commit_ms)
            bytes_by_version[c.version] += c.changelog_bytes
        versions = sorted(by_version)
        fig = go.Figure()
        fig.add_scatter(x=versions, y=[statistics.median(by_version[v]) for v in versions],
                        mode="lines+markers", name="median store")
        fig.add_scatter(x=versions, y=[max(by_version[v]) for v in versions],
                        mode="lines+markers", name="slowest store")
        _titles(fig, "Commit time per batch", "state version", "ms (changelog upload and "
                "manifest)")
        charts.append((fig, "Commit time per batch"))
        versions = sorted(bytes_by_version)
        fig = go.Figure()
        fig.add_bar(x=versions, y=[bytes_by_version[v] for v in versions],
                    name="changelog bytes", marker_color="#5f9e6e")
        _titles(fig, "Bytes committed per batch", "state version", "bytes (all stores)")
        charts.append((fig, "Bytes committed per batch"))
    if data.store_sizes:
        charts.append((_sizes_chart(go, [(_store_label(s.operator, s.partition, s.store),
                                          s.state_bytes, s.num_keys)
                                         for s in data.store_sizes]),
                       "State per partition"))
    return charts


def _sizes_chart(go: Any, rows: list[tuple[str, int | None, int | None]]) -> Any:
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    labels = [r[0] for r in rows]
    fig.add_bar(x=labels, y=[r[1] or 0 for r in rows], name="state bytes",
                marker_color="#3b7ddd", offsetgroup=0)
    fig.add_bar(x=labels, y=[r[2] or 0 for r in rows], name="keys", marker_color="#e8710a",
                offsetgroup=1, secondary_y=True)
    fig.update_layout(title="State per partition (skew)", barmode="group")
    fig.update_xaxes(title_text="store")
    fig.update_yaxes(title_text="bytes", secondary_y=False)
    fig.update_yaxes(title_text="keys", tickformat=",d", secondary_y=True)
    return fig


def _spark_charts(data: ReportData, go: Any) -> list[tuple[Any, str]]:
    charts: list[tuple[Any, str]] = []
    rows = data.spark_versions
    if not rows:
        return charts
    written: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    reuse: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        written[r.version][0] += r.changelog_bytes
        written[r.version][1] += r.snapshot_bytes + r.sst_uploaded_bytes
        if r.snapshot_bytes:
            reuse[r.version][0] += r.sst_uploaded_bytes
            reuse[r.version][1] += r.sst_reused_bytes
    versions = sorted(written)
    fig = go.Figure()
    fig.add_bar(x=versions, y=[written[v][0] for v in versions], name="changelogs",
                marker_color="#5f9e6e")
    fig.add_bar(x=versions, y=[written[v][1] for v in versions],
                name="snapshots (zip + new SSTs)", marker_color="#e8710a")
    fig.update_layout(barmode="stack")
    _titles(fig, "Bytes written per version", "state version", "bytes (all stores)")
    charts.append((fig, "Bytes written per version"))
    if reuse:
        versions = sorted(reuse)
        fig = go.Figure()
        fig.add_bar(x=versions, y=[reuse[v][0] for v in versions], name="SSTs uploaded",
                    marker_color="#e8710a")
        fig.add_bar(x=versions, y=[reuse[v][1] for v in versions], name="SSTs reused",
                    marker_color="#8bb7f0")
        fig.update_layout(barmode="stack")
        _titles(fig, "SST reuse per snapshot", "state version", "bytes (all stores)")
        charts.append((fig, "SST reuse per snapshot"))
    newest: dict[tuple[int, int, str], Any] = {}
    for r in rows:
        if r.snapshot_bytes:
            newest[(r.operator, r.partition, r.store)] = r
    if newest:
        charts.append((_sizes_chart(go, [
            (_store_label(*key), r.sst_uploaded_bytes + r.sst_reused_bytes, r.num_keys)
            for key, r in sorted(newest.items())]), "State per partition"))
    return charts


def _titles(fig: Any, title: str, x: str, y: str) -> None:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y,
                      legend={"orientation": "h", "y": -0.25})
