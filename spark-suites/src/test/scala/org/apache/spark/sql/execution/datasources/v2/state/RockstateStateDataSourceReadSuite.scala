package org.apache.spark.sql.execution.datasources.v2.state

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider
import org.apache.spark.sql.internal.SQLConf

import io.rockstate.state.RockstateStateStoreProvider
import io.rockstate.storage.conf.RockstateConf

/**
 * Spark's `statestore` data source suite (`StateDataSourceReadSuite`, unmodified) over state
 * that rockstate wrote, set up as Spark sets it up for its RocksDB provider, with the
 * `snapshotStartBatchId` cases Spark runs for its providers (their suite's own helpers).
 */
class RockstateStateDataSourceReadSuite extends StateDataSourceReadSuite {
  override protected def newStateStoreProvider(): StateStoreProvider =
    new RockstateStateStoreProvider

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
      classOf[RockstateStateStoreProvider].getName)
    // A snapshot every other version, as Spark's suite asks of its RocksDB provider.
    spark.conf.set(RockstateConf.SnapshotInterval.key, "2")
  }

  test("ERROR: snapshot of version not found") {
    testSnapshotNotFound()
  }

  test("provider.getReadStore(snapshotVersion, endVersion)") {
    testGetReadStoreWithStartVersion()
  }

  test("option snapshotPartitionId") {
    testSnapshotPartitionId()
  }
}
