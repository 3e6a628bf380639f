"""The queries and inputs several suites run: six micro-batches of keyed events, a stream-stream
join over them, an applyInPandasWithState count, and two stateful operators in one query over
larger keyed batches."""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

SCHEMA = "key STRING, value INT, ts TIMESTAMP"


def events(batch: int, keys: str, base_minute: int | None = None) -> list[dict]:
    minute = batch * 5 if base_minute is None else base_minute
    return [
        {"key": k, "value": batch * 10 + i, "ts": f"2026-01-01 00:{minute + i % 3:02d}:00"}
        for i, k in enumerate(keys)
    ]


BATCHES = [events(b, keys) for b, keys in enumerate(
    ["aabc", "bcd", "aaee", "f", "abcdef", "gg"])]


def join(kind: str):
    def build(left, right):
        lw = left.withWatermark("ts", "10 minutes").select(
            F.col("key").alias("lkey"), F.col("value").alias("lvalue"), F.col("ts").alias("lts"))
        rw = right.withWatermark("ts", "10 minutes").select(
            F.col("key").alias("rkey"), F.col("value").alias("rvalue"), F.col("ts").alias("rts"))
        cond = F.expr("lkey = rkey AND rts BETWEEN lts - INTERVAL 5 MINUTES "
                      "AND lts + INTERVAL 5 MINUTES")
        return lw.join(rw, cond, kind)
    return build


def total_by_key(s):
    """The sum of each key's values."""
    return s.groupBy("key").agg(F.sum("value").alias("total"))


def keyed_batches(n: int) -> list[list[dict]]:
    """``n`` batches of 40 events over 30 keys, values repeating (so deduplication drops some)."""
    return [[{"key": f"k{(b * 7 + i) % 30}", "value": (b * 3 + i) % 17,
              "ts": "2026-01-01 00:00:00"} for i in range(40)] for b in range(n)]


def two_operators(s):
    """Two stateful operators: a deduplication, then an aggregation of what it lets through."""
    return (s.dropDuplicates(["key", "value"]).groupBy("key")
            .agg(F.count("*").alias("n"), F.sum("value").alias("t")))


def sided(batches: list[list[dict]]) -> list[list[dict]]:
    return [[{**e, "side": i % 2} for i, e in enumerate(b)] for b in batches]


def pandas_count_until_timeout(s):
    """applyInPandasWithState: counts each key's events until an event-time timeout expires it.
    The function is defined inside, so it is pickled by value (executors' Python workers cannot
    import the test modules)."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count_until_timeout(key, pdfs, state):
        import pandas as pd

        if state.hasTimedOut:
            (n,) = state.get
            state.remove()
            yield pd.DataFrame({"key": [key[0]], "n": [n], "expired": [True]})
            return
        n = state.get[0] if state.exists else 0
        for pdf in pdfs:
            n += len(pdf)
        state.update((n,))
        state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 10 * 60 * 1000)
        yield pd.DataFrame({"key": [key[0]], "n": [n], "expired": [False]})

    return s.withWatermark("ts", "5 minutes").groupBy("key").applyInPandasWithState(
        count_until_timeout, "key STRING, n LONG, expired BOOLEAN", "n LONG", "append",
        GroupStateTimeout.EventTimeTimeout)


# A streaming aggregation's buffer (``sum(value)``) that gains ``max(value)``'s: the new
# field starts from max's empty value, null.
GAIN_MAX_SCHEMA = StructType([StructField("sum", LongType()), StructField("max", IntegerType())])


def gain_max(rows):
    return rows.select("key", F.struct("value.sum", F.lit(None).cast("int").alias("max"))
                       .alias("value"))
