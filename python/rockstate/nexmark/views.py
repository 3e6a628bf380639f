"""Nexmark's three views (person, auction, bid), from a stream or a batch, each with Flink's
watermark: ``dateTime`` less 4 seconds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rockstate.nexmark import config as c
from rockstate.nexmark.generator import TYPES, batch_events, columns, of_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from rockstate.nexmark.config import NexmarkConfig
    from rockstate.nexmark.source import IndexStream


@dataclass(frozen=True)
class Views:
    """The person, auction and bid views a query reads, and whether they stream."""

    person: DataFrame
    auction: DataFrame
    bid: DataFrame
    streaming: bool
    config: NexmarkConfig


def stream_views(spark: SparkSession, source: IndexStream, config: NexmarkConfig) -> Views:
    """The views of the stream of ``source``'s events.

    The auction view holds its watermark back by the longest auction: a query that groups an
    auction's bids by the auction's time (q4, q9) then closes the group after its last bid
    (Flink's DDL has one watermark, 4 s, for all three).

    The end-of-stream event reaches each view's watermark and no further: it moves the
    watermark past every window, so a bounded run closes them all and emits everything, and no
    query sees it. The filter that drops it tests the event time, which keeps it above the
    watermark: Spark pushes a filter that does not test the event time below it, where it
    would hide the event from the watermark.
    """
    from pyspark.sql import functions as F

    index = source.stream(spark)
    views = {}
    for kind in TYPES:
        events = index.where(of_type(F.col("index"), kind, config)) \
            .select(*columns(F.col("index"), kind, config))
        delay = c.WATERMARK_DELAY_MS + (config.max_auction_ms if kind == "auction" else 0)
        views[kind] = (events.withWatermark("dateTime", f"{delay} milliseconds")
                       .where(F.col("dateTime") < F.timestamp_millis(F.lit(config.end_time_ms))))
    return Views(**views, streaming=True, config=config)


def batch_views(spark: SparkSession, config: NexmarkConfig) -> Views:
    """The same events as a batch: the oracle's views."""
    return Views(**{kind: batch_events(spark, kind, config) for kind in TYPES},
                 streaming=False, config=config)
