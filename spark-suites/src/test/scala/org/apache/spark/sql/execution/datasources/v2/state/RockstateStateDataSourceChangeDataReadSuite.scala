package org.apache.spark.sql.execution.datasources.v2.state

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

import io.rockstate.state.RockstateStateStoreProvider

/**
 * Spark's state change feed suite (`StateDataSourceChangeDataReaderSuite`, unmodified):
 * `readChangeFeed` over rockstate's changelogs.
 */
class RockstateStateDataSourceChangeDataReadSuite extends StateDataSourceChangeDataReaderSuite {
  override protected def newStateStoreProvider(): StateStoreProvider =
    new RockstateStateStoreProvider
}
