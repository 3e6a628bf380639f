"""Whether a query's output is the same on two providers, and the same as its oracle's (Flink's
SQL over a batch of the same events).

An output is compared as a multiset of rows; an upsert stream's by its result, the rows of
each key's latest version. Doubles are rounded to 9 significant digits: an average
summed in another order may differ in its last bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rockstate.nexmark.views import batch_views

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from rockstate.nexmark.config import NexmarkConfig
    from rockstate.nexmark.queries import Query


@dataclass(frozen=True)
class Difference:
    """Rows one side has and the other lacks (counted with their multiplicity)."""

    missing: int  # in the expected output, not in the actual
    extra: int  # in the actual output, not in the expected

    @property
    def equal(self) -> bool:
        return self.missing == 0 and self.extra == 0


def result(spark: SparkSession, query: Query, output_url: str) -> DataFrame:
    """A run's result: its rows, or an upsert stream's rows of each key's latest version."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    out = spark.read.parquet(output_url)
    if not query.keys:
        return out
    latest = F.max("version").over(Window.partitionBy(*query.keys))
    return out.withColumn("_latest", latest).where(F.col("version") == F.col("_latest")) \
        .drop("version", "_latest")


def oracle(spark: SparkSession, query: Query, config: NexmarkConfig) -> DataFrame:
    """Flink's SQL text of ``query`` over the events as a batch."""
    views = batch_views(spark, config)
    for name in query.reads:
        getattr(views, name).createOrReplaceTempView(name)
    return spark.sql(query.oracle_sql)


def difference(expected: DataFrame, actual: DataFrame) -> Difference:
    """How ``actual`` differs from ``expected``, column by column in order (the names may
    differ; the types are ``actual``'s)."""
    if len(expected.columns) != len(actual.columns):
        raise ValueError(f"the outputs have {len(expected.columns)} and {len(actual.columns)} "
                         "columns")
    expected = _normal(expected.toDF(*actual.columns), actual)
    actual = _normal(actual, actual)
    return Difference(missing=expected.exceptAll(actual).count(),
                      extra=actual.exceptAll(expected).count())


def _normal(frame: DataFrame, like: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    columns = []
    for f in like.schema.fields:
        column = F.col(f.name).cast(f.dataType)
        if isinstance(f.dataType, (DoubleType, FloatType)):
            column = F.expr(f"CAST(format_string('%.9g', `{f.name}`) AS DOUBLE)")
        columns.append(column.alias(f.name))
    return frame.select(*columns)
