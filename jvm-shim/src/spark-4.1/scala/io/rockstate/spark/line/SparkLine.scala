package io.rockstate.spark.line

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.execution.streaming.state.{RockstateSparkBridge, RocksDBDataEncoder, RocksDBStateEncoder, RocksDBValueStateEncoder, StateStore, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/** What differs in Spark 4.1 outside the provider and store signatures. */
object SparkLine {
  val QueryIdProperty: String = StreamExecution.QUERY_ID_KEY
  val RunIdProperty: String = StreamExecution.RUN_ID_KEY

  def valueEncoder(data: RocksDBDataEncoder, valueSchema: StructType,
      multipleValues: Boolean): RocksDBValueStateEncoder =
    RocksDBStateEncoder.getValueEncoder(data, valueSchema, multipleValues)

  /** Tells Spark's coordinator of a commit (it tracks how far each store lags). */
  def reportCommit(version: Long, id: StateStoreId, hadoopConf: Configuration): Unit =
    StateStore.reportCommitToCoordinator(version, id, hadoopConf)

  def reportSnapshotUploaded(id: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    RockstateSparkBridge.reportSnapshotUploaded(id, hadoopConf, version)

  /**
   * Spark's own providers start from empty state at a chosen version only from Spark 4.2 on
   * (`getStore(..., loadEmpty)`): None, and a rewrite into them on 4.1 writes a snapshot
   * elsewhere and moves it in (`rewrite.SparkSnapshotMove`).
   */
  def openEmptyStore(provider: StateStoreProvider, version: Long): Option[StateStore] = None

  /** A row failing its checksum as Spark reports it: this line has no condition for it. */
  def rowChecksumFailed(storeId: String, expected: Int, computed: Int,
      cause: Throwable): Throwable = cause
}
