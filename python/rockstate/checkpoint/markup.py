"""Strings from a checkpoint as text on a page or in a chart.

Store names, executor ids, abort reasons and locations come from files anyone may have written.
The report's HTML and the notebook view would read markup in them as markup, and so would
plotly, whose labels, hover text and legends render a subset of HTML (links, styled spans,
bold). Every such string goes through :func:`as_text` before it reaches either.
"""

from __future__ import annotations

# Quotes as numeric references: plotly decodes those and &amp;, &lt;, &gt;, but not &quot;.
_REFERENCES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


def as_text(value: object) -> str:
    """``value`` with ``&``, ``<``, ``>`` and quotes as character references: neither a browser
    (in text or in a quoted attribute) nor plotly's rich text reads it as markup, and both show
    it as written (plotly decodes the references after it has read its own tags)."""
    return str(value).translate(_REFERENCES)
