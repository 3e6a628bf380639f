"""A query's checkpoints as HTML: a compact table with a small duration plot. The plot is inline
SVG, no script, so it also renders where a notebook viewer strips scripts.
``QueryCheckpoints._repr_html_`` renders through :func:`checkpoints_html`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rockstate.checkpoint.markup import as_text

if TYPE_CHECKING:
    from rockstate.checkpoint.model import QueryCheckpoints

ROWS = 8  # the newest checkpoints the compact table shows


def _spark_svg(values: list[tuple[int, int, str]], width: int = 240, height: int = 44) -> str:
    """Bars of (version, ms, status): blue completed, red aborted."""
    if not values:
        return ""
    top = max(ms for _, ms, _ in values) or 1
    step = width / len(values)
    bars = []
    for i, (version, ms, status) in enumerate(values):
        h = max(1.0, (height - 4) * ms / top)
        color = "#b3261e" if status == "aborted" else "#3b7ddd"
        bars.append(f"<rect x='{i * step + 1:.1f}' y='{height - h:.1f}' width="
                    f"'{max(1.0, step - 2):.1f}' height='{h:.1f}' fill='{color}'>"
                    f"<title>checkpoint {version}: {ms} ms ({status})</title></rect>")
    return (f"<svg class='rockstate-durations' width='{width}' height='{height}' "
            f"xmlns='http://www.w3.org/2000/svg'>{''.join(bars)}</svg>")


def checkpoints_html(view: QueryCheckpoints) -> str:
    """The compact table (newest first) with a duration plot above it."""
    rows = view.history
    timed = [(c.version, c.duration_ms or 0, c.status) for c in rows
             if c.status != "pending" and c.duration_ms is not None][-30:]
    head = (f"<b>rockstate checkpoints</b> {as_text(view.location or '')} &middot; "
            f"{len(view.completed)} completed, {len(view.pending)} pending, "
            f"{len(view.aborted)} aborted")
    if view.failure:
        head += f"<br><span style='color:#b3261e'>{as_text(view.failure)}</span>"
    body = []
    for c in reversed(rows[-ROWS:]):
        color = {"aborted": "#b3261e", "pending": "#8a6d00"}.get(c.status, "inherit")
        detail = (c.reason or "") if c.status == "aborted" else (
            f"waiting for {len(c.missing)}" if c.status == "pending" else "")
        size = f"{c.state_bytes:,}" if c.stores else ""
        uploaded = f"{c.bytes_uploaded:,}" if c.stores else ""
        body.append(
            f"<tr style='color:{color}'><td>{c.version}</td><td>{c.status}</td>"
            f"<td>{'' if c.duration_ms is None else f'{c.duration_ms:,}'}</td>"
            f"<td>{size}</td><td>{uploaded}</td><td>{len(c.stores) or ''}</td>"
            f"<td style='text-align:left'>{as_text(detail)}</td></tr>")
    table = ("<table class='rockstate-checkpoints'><tr><th>version</th><th>status</th>"
             "<th>ms</th><th>state bytes</th><th>uploaded</th><th>stores</th><th>detail</th>"
             f"</tr>{''.join(body)}</table>") if body else "<i>no checkpoint yet</i>"
    return f"<div>{head}<br>{_spark_svg(timed)}{table}</div>"
