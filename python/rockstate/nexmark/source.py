"""The stream's source: Spark's ``rate-micro-batch`` source, whose batch ``b`` holds exactly the
indexes ``b x batch_events`` to the next batch's first, in every run, on every provider and
across restarts; the generator turns them into events inside the JVM.

The index ``events`` is the end-of-stream event; the source runs on past it, and indexes after
it are dropped. The batch after the end's has no events left, and runs the stateful operators
once more at the end's watermark: when it is done, every window is closed and emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class IndexStream:
    """``events`` event indexes (and the end's), ``batch_events`` a batch, made by
    ``partitions`` tasks."""

    events: int
    batch_events: int
    partitions: int

    def __post_init__(self) -> None:
        if self.batch_events < 1 or self.partitions < 1:
            raise ValueError("batch_events and partitions must be at least 1")

    @property
    def last_batch(self) -> int:
        """The id of the batch after the one holding the end: once it is done, all is."""
        return self.events // self.batch_events + 1

    def stream(self, spark: SparkSession) -> DataFrame:
        """The stream of event indexes (column ``index``)."""
        from pyspark.sql import functions as F

        rates = (spark.readStream.format("rate-micro-batch")
                 .option("rowsPerBatch", self.batch_events)
                 .option("numPartitions", self.partitions).load())
        return rates.where(F.col("value") <= self.events).select(F.col("value").alias("index"))
