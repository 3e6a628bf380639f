"""The Spark application a Nexmark run uses: rockstate on the builder (every provider is set per
run), UTC days, no console progress, the user's own confs last."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession


def nexmark_session(master: str, partitions: int, confs: Mapping[str, str]) -> SparkSession:
    """A session on ``master`` with ``partitions`` shuffle partitions and ``confs``."""
    from pyspark.sql import SparkSession

    from rockstate.session.configure import configure

    builder = (SparkSession.builder.master(master).appName("rockstate-nexmark")
               .config("spark.sql.shuffle.partitions", str(partitions))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in confs.items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
