package io.rockstate.spark.rewrite

import java.util.UUID

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf

import io.rockstate.spark.SparkStateStoreProvider
import io.rockstate.spark.line.SparkLine

/**
 * Writes one new partition of a rewritten store, on an executor: opens the target provider's
 * store empty at `target.version`, puts every (key, value) row the shuffle sent to this
 * partition, and commits version `target.version + 1`. Re-running it (a retried task, a re-run
 * rewrite) writes the same version again; the attempt written last is the version.
 */
object PartitionWriter {
  // A whole partition's snapshot may be large; it is durable in the version file before that.
  private val SnapshotWaitMs = 10 * 60 * 1000L

  /**
   * Returns the number of keys written, once a fresh provider instance read them back from the
   * checkpoint location. `rows` are (key struct, value struct).
   */
  def write(target: RewriteTarget, partitionId: Int, rows: Iterator[InternalRow],
      hadoopConf: Configuration): Long = {
    val sqlConf = new SQLConf
    target.confs.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    sqlConf.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, target.providerClass)
    val storeConf = new StateStoreConf(sqlConf, Map.empty[String, String])
    val id = StateStoreId(target.rootOf(partitionId), target.operatorId, partitionId,
      target.storeName)
    def newProvider() = StateStoreProvider.createAndInit(
      StateStoreProviderId(id, UUID.randomUUID()), target.keySchema, target.valueSchema,
      target.keyEncoderSpec, false, storeConf, hadoopConf, false, None)
    val written = writeAll(newProvider(), target, rows)
    val readBack = countKeys(newProvider(), target.version + 1)
    if (readBack != written) {
      throw new IllegalStateException(s"rockstate: the rewrite wrote $written keys into " +
        s"version ${target.version + 1} of $id and read back $readBack; the rewrite stops " +
        "before the checkpoint names that version (run it again).")
    }
    written
  }

  private def writeAll(provider: StateStoreProvider, target: RewriteTarget,
      rows: Iterator[InternalRow]): Long =
    try {
      val store = openEmpty(provider, target.version)
      try {
        val key = UnsafeProjection.create(target.keySchema)
        val value = UnsafeProjection.create(target.valueSchema)
        val nKey = target.keySchema.length
        val nValue = target.valueSchema.length
        val written = rows.foldLeft(0L) { (n, row) =>
          store.put(key(row.getStruct(0, nKey)), value(row.getStruct(1, nValue)))
          n + 1
        }
        store.commit()
        provider match {
          case r: SparkStateStoreProvider => r.awaitSnapshot(SnapshotWaitMs)
          case _ =>
        }
        written
      } finally if (!store.hasCommitted) store.abort()
    } finally provider.close()

  private def countKeys(provider: StateStoreProvider, version: Long): Long =
    try {
      val store = provider.getReadStore(version)
      try store.iterator().size.toLong finally store.abort()
    } finally provider.close()

  private def openEmpty(provider: StateStoreProvider, version: Long): StateStore =
    provider match {
      case r: SparkStateStoreProvider => r.openEmpty(version)
      case other => SparkLine.openEmptyStore(other, version)
    }
}
