package io.rockstate.floor

import org.apache.spark.sql.execution.streaming.state._

/** A read-only view; abort and release leave the live map alone. */
private[floor] final class FloorReadStore(state: FloorState, storeId: StateStoreId,
    loaded: Long) extends FloorReads(state, storeId, loaded) with ReadStateStore {

  override def abort(): Unit = ()

  // Spark 4.1+ (abstract on ReadStateStore).
  def release(): Unit = ()

  override def toString: String = s"FloorReadStore[$id, version=$version]"
}
