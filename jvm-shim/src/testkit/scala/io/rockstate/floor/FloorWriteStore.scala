package io.rockstate.floor

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/** A batch's writes to the live map, committed as `version + 1`. */
private[floor] final class FloorWriteStore(state: FloorState, storeId: StateStoreId,
    loaded: Long, baseId: Option[String], log: UndoLog, hadoopConf: Configuration)
  extends FloorReads(state, storeId, loaded) with StateStore {

  @volatile private var committed = false
  @volatile private var done = false // committed or aborted
  @volatile private var info = StateStoreCheckpointInfo(id.partitionId, version, None, None)

  private def checkOpen(op: String): Unit =
    if (done) throw new IllegalStateException(s"floor: $op on $this after it was closed")

  // The rows Spark passes are reused: the key is copied once (the map keeps the first copy
  // of a key it already holds; the log keeps this one), the value once.
  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkOpen("put")
    state.checkFamily(colFamilyName)
    val k = key.copy()
    log.add(k, state.put(k, value.copy()))
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    checkOpen("remove")
    state.checkFamily(colFamilyName)
    val old = state.remove(key)
    if (old != null) log.add(key.copy(), old)
  }

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    state.refuse("merge (multiple values per key)")

  // Spark 4.2+ (abstract there).
  def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    state.refuse("putList (multiple values per key)")

  def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    state.refuse("mergeList (multiple values per key)")

  override def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType,
      valueSchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    state.refuse(s"createColFamilyIfAbsent('$colFamilyName')")

  override def removeColFamilyIfExists(colFamilyName: String): Boolean =
    state.refuse(s"removeColFamilyIfExists('$colFamilyName')")

  override def commit(): Long = {
    checkOpen("commit")
    val uniqueId = state.commit(log, version)
    committed = true
    done = true
    info = StateStoreCheckpointInfo(id.partitionId, version + 1, Some(uniqueId), baseId)
    FloorStateStoreProvider.reportCommitToCoordinator(version + 1, id, hadoopConf)
    version + 1
  }

  // Spark aborts every store its task did not commit, once the task ends; after a commit it
  // is a no-op.
  override def abort(): Unit = {
    if (!done) {
      done = true
      state.abort(log)
    }
  }

  override def hasCommitted: Boolean = committed

  override def metrics: StateStoreMetrics = StateStoreMetrics(state.size.toLong, 0L, Map.empty)

  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo = info

  override def toString: String = s"FloorWriteStore[$id, version=$version]"
}
