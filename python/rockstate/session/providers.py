"""The state store providers rockstate runs beside, measures against and moves state between:
one table, one name each, that the benches, ``rockstate nexmark``, the rewrite and the tests
take their providers from.

A provider is a class and the SQL confs it runs with: Spark's RocksDB provider is one class run
two ways (with its defaults, where a commit uploads a snapshot's new files; and with changelog
checkpointing, what Spark's documentation recommends for latency and what rockstate is
compared with).
"""

from __future__ import annotations

import warnings

from rockstate.session.spark_conf import PROVIDER_CLASS

SPARK_ROCKSDB_CLASS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SPARK_HDFS_CLASS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
# A provider that stores nothing, state in a hash map (the test kit's, never in the user's jar):
# what a batch costs without a state store's own work. The benches put the test kit's jar on
# the class path; nothing else can run it.
FLOOR_CLASS = "io.rockstate.floor.FloorStateStoreProvider"
_CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

# A provider's class and the SQL confs it runs with.
ProviderSpec = tuple[str, dict[str, str]]

ROCKSTATE = "rockstate"
SPARK_ROCKSDB = "spark-rocksdb"
SPARK_ROCKSDB_CHANGELOG = "spark-rocksdb-changelog"
SPARK_HDFS = "spark-hdfs"
FLOOR = "floor"

PROVIDERS: dict[str, ProviderSpec] = {
    ROCKSTATE: (PROVIDER_CLASS, {}),
    # With per-row checksums (every value sealed, every read checked): their cost.
    "rockstate-checksums": (PROVIDER_CLASS,
                            {"spark.sql.streaming.stateStore.rowChecksum.enabled": "true"}),
    SPARK_ROCKSDB: (SPARK_ROCKSDB_CLASS, {_CHANGELOG: "false"}),
    SPARK_ROCKSDB_CHANGELOG: (SPARK_ROCKSDB_CLASS, {_CHANGELOG: "true"}),
    # Spark's provider under the bound rockstate keeps by default: one 128 MB cache an
    # executor with the memtables charged to it, 10% of it for index and filter blocks.
    # rockstate's memtables may take all of it (writeBufferManagerMB = rocksdbMemoryMB);
    # Spark wants the two ratios to sum below 1, so 0.89 (114 MB) is the nearest.
    "spark-rocksdb-changelog-bounded": (SPARK_ROCKSDB_CLASS, {
        _CHANGELOG: "true",
        "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
        "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "128",
        "spark.sql.streaming.stateStore.rocksdb.writeBufferCacheRatio": "0.89",
        "spark.sql.streaming.stateStore.rocksdb.highPriorityPoolRatio": "0.1"}),
    SPARK_HDFS: (SPARK_HDFS_CLASS, {}),
    FLOOR: (FLOOR_CLASS, {}),
}

# Providers that need the test kit's jar: the benches run them, `rockstate nexmark` does not.
TEST_KIT_ONLY = frozenset({FLOOR})

# Names `rockstate nexmark` took before this table: still understood, with a warning.
OLD_NAMES = {"rocksdb": SPARK_ROCKSDB_CHANGELOG, "rocksdb-snapshots": SPARK_ROCKSDB,
             "hdfs": SPARK_HDFS}


def resolve(name: str) -> str:
    """The table's name for ``name``: itself, or what an old name stands for (warned once)."""
    if name in OLD_NAMES:
        warnings.warn(f"the provider name {name!r} is deprecated; it is now "
                      f"{OLD_NAMES[name]!r}", FutureWarning, stacklevel=3)
        return OLD_NAMES[name]
    return name


def parse(text: str, test_kit: bool = False) -> list[str]:
    """The provider names of a comma-separated list, checked and resolved. ``test_kit``: the
    caller can run the test kit's providers (the benches)."""
    names = [resolve(n.strip()) for n in text.split(",") if n.strip()]
    known = [n for n in PROVIDERS if test_kit or n not in TEST_KIT_ONLY]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"unknown provider {', '.join(unknown) or '(none given)'}; known: "
                         f"{', '.join(known)}")
    return names
