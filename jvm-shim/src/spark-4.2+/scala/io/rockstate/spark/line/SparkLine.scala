package io.rockstate.spark.line

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.execution.streaming.state.{RockstateSparkBridge, RocksDBDataEncoder, RocksDBStateEncoder, RocksDBValueStateEncoder, StateStore, StateStoreErrors, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.types.StructType

/** What differs in Spark 4.2 and 4.3 outside the provider and store signatures. */
object SparkLine {
  val QueryIdProperty: String = StreamExecution.QUERY_ID_KEY
  val RunIdProperty: String = StreamExecution.RUN_ID_KEY

  // The value schema's id (1: the first schema): 4.2 defaults it, 4.3 requires it.
  def valueEncoder(data: RocksDBDataEncoder, valueSchema: StructType,
      multipleValues: Boolean): RocksDBValueStateEncoder =
    RocksDBStateEncoder.getValueEncoder(data, valueSchema, multipleValues, 1)

  /** Tells Spark's coordinator of a commit (it tracks how far each store lags). */
  def reportCommit(version: Long, id: StateStoreId, hadoopConf: Configuration): Unit =
    StateStore.reportCommitToCoordinator(version, id, hadoopConf)

  def reportSnapshotUploaded(id: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    RockstateSparkBridge.reportSnapshotUploaded(id, hadoopConf, version)

  /** A store of Spark's own provider starting from empty state at `version` (a rewrite). */
  def openEmptyStore(provider: StateStoreProvider, version: Long): Option[StateStore] =
    Some(provider.getStore(version, None, forceSnapshotOnCommit = true, loadEmpty = true))

  /** A row failing its checksum as Spark's providers report it (SPARK-54106, 4.2+). */
  def rowChecksumFailed(storeId: String, expected: Int, computed: Int,
      cause: Throwable): Throwable = {
    val e = StateStoreErrors.rowChecksumVerificationFailed(storeId, expected, computed)
    e.addSuppressed(cause) // rockstate's message names the family; Spark's error has no cause
    e
  }
}
