"""The state providers a Nexmark run compares, by the names ``--providers`` takes."""

from __future__ import annotations

from rockstate.session.configure import PROVIDER_CLASS

SPARK_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SPARK_HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
_CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

# A provider's class and the SQL confs it runs with.
ProviderSpec = tuple[str, dict[str, str]]

# The providers by name.
PROVIDERS: dict[str, ProviderSpec] = {
    "rockstate": (PROVIDER_CLASS, {}),
    # Spark's RocksDB provider as its documentation recommends for latency: changelog
    # checkpointing on (a commit uploads the batch's changes; snapshots in maintenance).
    "rocksdb": (SPARK_ROCKSDB, {_CHANGELOG: "true"}),
    # Spark's RocksDB provider with its defaults (every commit uploads a snapshot's new files).
    "rocksdb-snapshots": (SPARK_ROCKSDB, {_CHANGELOG: "false"}),
    "hdfs": (SPARK_HDFS, {}),
}


def parse(text: str) -> list[str]:
    """The provider names of a comma-separated list, checked."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown or not names:
        raise ValueError(f"unknown provider {', '.join(unknown) or '(none given)'}; known: "
                         f"{', '.join(PROVIDERS)}")
    return names
