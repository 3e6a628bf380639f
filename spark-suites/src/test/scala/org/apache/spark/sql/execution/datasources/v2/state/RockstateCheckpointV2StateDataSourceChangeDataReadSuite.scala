package org.apache.spark.sql.execution.datasources.v2.state

import org.apache.spark.sql.internal.SQLConf

/** Spark's change feed suite over rockstate, with Spark's checkpoint format 2 (ids). */
class RockstateCheckpointV2StateDataSourceChangeDataReadSuite
  extends RockstateStateDataSourceChangeDataReadSuite {
  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION.key, "2")
  }
}
