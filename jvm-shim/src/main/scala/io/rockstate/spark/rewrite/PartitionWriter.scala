package io.rockstate.spark.rewrite

import java.util.UUID

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.streaming.state.{InMemoryStateSchemaProvider, ReadStateStore, StateSchemaMetadata, StateSchemaProvider, StateStore, StateStoreConf, StateStoreId, StateStoreProvider, StateStoreProviderId}
import org.apache.spark.sql.internal.SQLConf

import io.rockstate.spark.{SparkStateStore, SparkStateStoreProvider}
import io.rockstate.spark.line.{RecordedConfs, SparkLine}

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
      hadoopConf: Configuration): Long =
    writeWith(target, partitionId, hadoopConf) { store =>
      val key = UnsafeProjection.create(target.keySchema)
      val value = UnsafeProjection.create(target.valueSchema)
      val nKey = target.keySchema.length
      val nValue = target.valueSchema.length
      rows.foldLeft(0L) { (n, row) =>
        store.put(key(row.getStruct(0, nKey)), value(row.getStruct(1, nValue)))
        n + 1
      }
    }

  /**
   * The same for a store with column families (transformWithState): `rows` are as other
   * partitions' stores of the same operator hold them, put unchanged; every family of
   * `target.families` is created, holding rows or not, as the old partitions had it.
   */
  def writeStored(target: RewriteTarget, partitionId: Int, rows: Iterator[StoredRow],
      hadoopConf: Configuration): Long =
    writeWith(target, partitionId, hadoopConf) { store =>
      val s = rockstateStore(store)
      target.families.foreach(f => s.createStoredFamily(f.name))
      rows.foldLeft(0L) { (n, row) =>
        s.putStored(row.family, row.key, row.value)
        n + 1
      }
    }

  /**
   * The same across providers (transformWithState between rockstate and Spark's RocksDB
   * provider): `rows` are keys and values as `FamilyRowsReader` read them through the old
   * provider's API, written through the target provider's.
   */
  def writeRows(target: RewriteTarget, partitionId: Int, rows: Iterator[FamilyRow],
      hadoopConf: Configuration): Long =
    writeWith(target, partitionId, hadoopConf)(FamilyRowsWriter.fill(_, target.families, rows))

  private def writeWith(target: RewriteTarget, partitionId: Int, hadoopConf: Configuration)(
      fill: StateStore => Long): Long = {
    val id = StateStoreId(target.rootOf(partitionId), target.operatorId, partitionId,
      target.storeName)
    val written = writeVersion(target, id, hadoopConf, fill)
    val readBack = countKeys(newProvider(target, id, hadoopConf), target, target.version + 1)
    if (readBack != written) {
      throw new IllegalStateException(s"rockstate: the rewrite wrote $written keys into " +
        s"version ${target.version + 1} of $id and read back $readBack; the rewrite stops " +
        "before the checkpoint names that version (run it again).")
    }
    written
  }

  /** A provider of `target`'s class for store `id`, as the restarted query creates it. */
  def newProvider(target: RewriteTarget, id: StateStoreId, hadoopConf: Configuration,
      confs: Map[String, String] = Map.empty): StateStoreProvider = {
    val sqlConf = new SQLConf
    RecordedConfs(target.confs ++ confs, sqlConf)
    sqlConf.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, target.providerClass)
    val storeConf = new StateStoreConf(sqlConf, Map.empty[String, String])
    StateStoreProvider.createAndInit(StateStoreProviderId(id, UUID.randomUUID()),
      target.keySchema, target.valueSchema, target.keyEncoderSpec, target.useColumnFamilies,
      storeConf, hadoopConf, false, schemaProvider(target, hadoopConf))
  }

  /**
   * The schema provider Spark gives a transformWithState operator's stores (and its state
   * reader), from the operator's schema files: Avro-encoded rows carry the id of the schema
   * they were written with, and are read and written through it. None without schema files.
   */
  private def schemaProvider(target: RewriteTarget,
      hadoopConf: Configuration): Option[StateSchemaProvider] =
    if (target.schemaFiles.isEmpty) None
    else Some(new InMemoryStateSchemaProvider(StateSchemaMetadata.createStateSchemaMetadata(
      target.stateRoot, hadoopConf, target.schemaFiles.toList)))

  /** Writes `fill`'s rows as version `target.version + 1` of store `id`. */
  private def writeVersion(target: RewriteTarget, id: StateStoreId, hadoopConf: Configuration,
      fill: StateStore => Long): Long = {
    val provider = newProvider(target, id, hadoopConf)
    val empty = try openEmpty(provider, target.version) catch {
      case e: Throwable => provider.close(); throw e
    }
    empty match {
      case Some(store) => commitAll(provider, store, fill)
      case None => // Spark's providers on 4.0/4.1: a snapshot written elsewhere, moved in
        provider.close()
        SparkSnapshotMove.write(target, id, hadoopConf, fill)
    }
  }

  /** Fills `store`, commits it and closes `provider`; returns the rows written. */
  def commitAll(provider: StateStoreProvider, store: StateStore,
      fill: StateStore => Long): Long =
    try {
      try {
        val written = fill(store)
        store.commit()
        provider match {
          case r: SparkStateStoreProvider => r.awaitSnapshot(SnapshotWaitMs)
          case _ =>
        }
        written
      } finally if (!store.hasCommitted) store.abort()
    } finally provider.close()

  private def countKeys(provider: StateStoreProvider, target: RewriteTarget,
      version: Long): Long =
    try {
      val store = Families.readStore(provider, version)
      try {
        if (!target.useColumnFamilies) store.iterator().size.toLong
        else Families.countKeys(store, target.families)
      } finally store.abort()
    } finally provider.close()

  /** A store of rockstate's provider: the only one whose column families a rewrite moves. */
  private[rewrite] def rockstateStore(store: ReadStateStore): SparkStateStore = store match {
    case s: SparkStateStore => s
    case other => throw new UnsupportedOperationException(s"rockstate: the column families " +
      s"of ${other.id} are read and written by rockstate's provider only, not $other")
  }

  private def openEmpty(provider: StateStoreProvider, version: Long): Option[StateStore] =
    provider match {
      case r: SparkStateStoreProvider => Some(r.openEmpty(version))
      case other => SparkLine.openEmptyStore(other, version)
    }
}
