"""The two Nexmark queries that rank rows (ROW_NUMBER, which streaming Spark does not run) as
``applyInPandasWithState`` functions: they run on every Spark line and on any provider (Spark
4.2+ admits only its own provider for transformWithState).

Each keeps its key's rows in the state and emits them again whenever they change, numbered by
a ``version`` a key (an upsert stream, as Flink's retractions are): the rows of a key's
latest version are its result. Ties are broken by every column, so the result is one and the
same on any run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

# The bid columns the two queries keep and emit.
BID_COLUMNS = ("auction", "bidder", "price", "channel", "url", "dateTime", "extra")
LAST_BID_STATE = "bid STRING, version LONG"
TOP_BIDS_STATE = "bids STRING, version LONG"
TOP = 10


def last_bid(key: tuple, frames: Iterator[Any], state: Any) -> Iterator[Any]:
    """q18: a (bidder, auction)'s latest bid (by time, then by every other column)."""
    import pandas as pd

    best = _decoded(state.get[0]) if state.exists else None
    version = state.get[1] if state.exists else 0
    for frame in frames:
        for row in _bids(frame):
            if best is None or _by_time(row) > _by_time(best):
                best = row
    if best is not None:
        encoded = _encoded(best)
        if not state.exists or state.get[0] != encoded:
            state.update((encoded, version + 1))
            out = _frame(pd, [best])
            out["version"] = version + 1
            yield out


def top_bids(key: tuple, frames: Iterator[Any], state: Any) -> Iterator[Any]:
    """q19: an auction's ten highest bids (by price, then by every other column), ranked."""
    import pandas as pd

    before = state.get[0] if state.exists else "[]"
    version = state.get[1] if state.exists else 0
    top = [_decoded(b) for b in json.loads(before)]
    for frame in frames:
        top = sorted(top + _bids(frame), key=_by_price, reverse=True)[:TOP]
    encoded = json.dumps([_encoded(b) for b in top])
    if encoded != before:
        state.update((encoded, version + 1))
        out = _frame(pd, top)
        out["rank_number"] = range(1, len(top) + 1)
        out["version"] = version + 1
        yield out


def _bids(frame: Any) -> list[dict[str, Any]]:
    """A frame's bids as plain Python values (the time in microseconds), for JSON."""
    micros = frame["dateTime"].astype("int64") // 1000
    return [{"auction": int(a), "bidder": int(b), "price": int(p), "channel": str(ch),
             "url": str(u), "dateTime": int(t), "extra": str(e)}
            for a, b, p, ch, u, t, e in zip(frame["auction"], frame["bidder"], frame["price"],
                                            frame["channel"], frame["url"], micros,
                                            frame["extra"], strict=True)]


def _by_time(row: dict[str, Any]) -> tuple:
    return (row["dateTime"], row["price"], row["channel"], row["url"], row["extra"])


def _by_price(row: dict[str, Any]) -> tuple:
    return (row["price"], -row["dateTime"], row["bidder"], row["channel"], row["url"],
            row["extra"])


def _encoded(row: dict[str, Any]) -> str:
    return json.dumps([row[c] for c in BID_COLUMNS])


def _decoded(text: str) -> dict[str, Any]:
    return dict(zip(BID_COLUMNS, json.loads(text), strict=True))


def _frame(pd: Any, rows: list[dict[str, Any]]) -> Any:
    out = pd.DataFrame(rows, columns=list(BID_COLUMNS))
    out["dateTime"] = pd.to_datetime(out["dateTime"], unit="us", utc=True)
    return out
