"""The queries the torture suite runs, and their input: deterministic from a seed.

Every query reads JSON files of ``key, value, ts, side`` one file per micro-batch, so batch
``i`` is always input file ``i`` (no-data batches are off) and outputs compare batch by batch.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

SCHEMA = "key STRING, value INT, ts TIMESTAMP, side INT"
KINDS = ("agg", "dedup", "dedup_wm", "join", "pandas")
START = datetime(2026, 1, 1)


def batch_rows(seed: int, batch: int, rows: int = 24) -> list[dict]:
    """Input of one batch: keys from a small set, event time moving on 2 s a batch."""
    rng = random.Random(f"{seed}-{batch}")
    out = []
    for _ in range(rows):
        ts = START + timedelta(seconds=2 * batch + rng.random() * 3)
        out.append({"key": f"k{rng.randrange(16)}", "value": rng.randrange(6),
                    "ts": ts.strftime("%Y-%m-%d %H:%M:%S.%f"), "side": rng.randrange(2)})
    return out


def _pandas_counts(key, pdfs: Iterator, state):
    """Running count per key; on its event-time timeout a key emits its total and is dropped."""
    import pandas as pd

    if state.hasTimedOut:
        (total,) = state.get
        state.remove()
        yield pd.DataFrame({"key": [key[0]], "total": [int(total)], "expired": [True]})
        return
    total = state.get[0] if state.exists else 0
    for pdf in pdfs:
        total += int(pdf["value"].sum())
    state.update((total,))
    state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 5000)
    yield pd.DataFrame({"key": [key[0]], "total": [total], "expired": [False]})


def build(kind: str) -> tuple[Callable, str]:
    """The query of ``kind`` over a stream, and its output mode."""
    from pyspark.sql import functions as F

    def agg(s):
        return s.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))

    def dedup(s):
        return s.dropDuplicates(["key", "value"]).select("key", "value")

    def dedup_wm(s):
        return (s.withWatermark("ts", "6 seconds").dropDuplicatesWithinWatermark(["key", "side"])
                .select("key", "side"))

    def join(s):
        left = s.filter("side = 0").withWatermark("ts", "6 seconds").alias("l")
        right = s.filter("side = 1").withWatermark("ts", "6 seconds").alias("r")
        return left.join(right, F.expr(
            "l.key = r.key AND r.ts BETWEEN l.ts - INTERVAL 3 SECONDS AND l.ts + "
            "INTERVAL 3 SECONDS")).select(F.col("l.key"), F.col("l.value").alias("lv"),
                                          F.col("r.value").alias("rv"))

    def pandas(s):
        from pyspark.sql.streaming.state import GroupStateTimeout

        return (s.withWatermark("ts", "6 seconds").groupBy("key").applyInPandasWithState(
            _pandas_counts, "key STRING, total LONG, expired BOOLEAN", "total LONG", "update",
            GroupStateTimeout.EventTimeTimeout))

    return {"agg": (agg, "update"), "dedup": (dedup, "append"),
            "dedup_wm": (dedup_wm, "append"), "join": (join, "append"),
            "pandas": (pandas, "update")}[kind]


# The statestore reader's options for every store of each query (joins have four).
STATE_READS: dict[str, list[dict[str, str]]] = {
    "agg": [{}], "dedup": [{}], "dedup_wm": [{}], "pandas": [{}],
    "join": [{"joinSide": "left"}, {"joinSide": "right"}],
}
