package org.apache.spark.sql.execution.datasources.v2.state

import org.apache.spark.sql.internal.SQLConf

/** The `statestore` source suite over rockstate, with Spark's checkpoint format 2 (ids). */
class RockstateCheckpointV2StateDataSourceReadSuite extends RockstateStateDataSourceReadSuite {
  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION.key, "2")
  }
}
