package io.rockstate.spark

import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import io.rockstate.checkpoint.CheckpointReporter
import io.rockstate.spark.line.SparkLine
import io.rockstate.storage.local.{BlockReads, ThreadBlockReads}

/**
 * One batch's view of a store: reads and writes of `version`, committed as `version + 1`.
 * A read-only store (getReadStore) refuses writes; release() leaves it without side effects.
 *
 * Every member Spark's StateStore has in every Spark 4 line is implemented here. Members only
 * some lines have are implemented under rockstate's own names (`releaseStore`, `scanRange`,
 * ...) or, where the trait declares them abstract, under Spark's name without `override`; the
 * line's own subclass (`io.rockstate.spark.line.LineStateStore`) binds what its line declares.
 */
abstract class SparkStateStore(
    provider: SparkStateStoreProvider,
    override val version: Long,
    baseCheckpointId: Option[String], // the id Spark loaded `version` by (checkpoint format 2)
    readOnly: Boolean,
    lease: Long,
    forceSnapshot: Boolean = false) extends StateStore with Logging {

  private sealed trait Phase
  private case object Updating extends Phase
  private case object Committed extends Phase
  private case object Aborted extends Phase
  private case object Released extends Phase

  @volatile private var phase: Phase = Updating
  @volatile private var checkpointInfo: Option[StateStoreCheckpointInfo] = None
  // The block reads the commit was charged with (`ThreadBlockReads`): none before it.
  @volatile private var blockReads = BlockReads.Zero

  // A store is made on its task's thread, after its version loaded: its reads count from here.
  ThreadBlockReads.begin(provider.db.rocksDB,
    Option(TaskContext.get()).map(_.taskAttemptId()).getOrElse(ThreadBlockReads.NoOwner))

  // Every read and write checks that this store's task attempt still holds the instance.
  private def vdb = {
    provider.checkLease(lease, id)
    provider.db
  }

  override def id: StateStoreId = provider.stateStoreId

  // ---- column families ----

  override def createColFamilyIfAbsent(
      colFamilyName: String,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean,
      isInternal: Boolean): Unit = {
    checkWritable("createColFamilyIfAbsent")
    checkFamilyName(colFamilyName)
    provider.declare(colFamilyName,
      ColumnFamilySpec(keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey))
    if (!vdb.columnFamilyIds.contains(colFamilyName)) vdb.assignColumnFamily(colFamilyName)
  }

  def registerFamily(
      colFamilyName: String,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean,
      isInternal: Boolean): Unit = {
    provider.declare(colFamilyName,
      ColumnFamilySpec(keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey))
  }

  override def removeColFamilyIfExists(colFamilyName: String): Boolean = {
    checkWritable("removeColFamilyIfExists")
    if (colFamilyName == StateStore.DEFAULT_COL_FAMILY_NAME) {
      throw new IllegalArgumentException("rockstate: the default column family cannot be removed")
    }
    if (!vdb.columnFamilyIds.contains(colFamilyName)) false
    else {
      val c = provider.codec(colFamilyName, "removeColFamilyIfExists")
      if (provider.conf.trackTotalNumberOfRows) vdb.addKeys(-countRange(c.prefix, c.upperBound))
      vdb.deleteRange(c.prefix, c.upperBound.get)
      vdb.dropColumnFamily(colFamilyName)
      provider.forget(colFamilyName)
      true
    }
  }

  def allColumnFamilyNames: Set[String] = vdb.columnFamilyIds.keySet

  /** Every family of the loaded version, with its id in this store. */
  def familyIds: Map[String, Int] = vdb.columnFamilyIds

  /** How the provider's rows become bytes (a rewrite decodes stored keys with it). */
  private[spark] def rowEncoding: RowEncoding = provider.rowEncoding

  // ---- rows as stored: a rewrite moves them between partitions of one operator unchanged ----

  /**
   * Every row of a family as Spark's encoders wrote it, its key without the family id (a row
   * checksum is checked and taken off: the store a rewrite puts the row in seals its own).
   */
  def storedRows(colFamilyName: String): StateStoreIterator[(Array[Byte], Array[Byte])] = {
    val familyId = vdb.columnFamilyIds.getOrElse(colFamilyName,
      throw new IllegalArgumentException(
        s"rockstate: column family '$colFamilyName' does not exist in $id at version $version"))
    val prefix = ColumnFamilyCodec.prefixOf(familyId)
    val checks = provider.rowChecks
    val raw = vdb.rocksDB.scan(prefix, Some(ColumnFamilyCodec.prefixOf(familyId + 1)))
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => raw.close()))
    new StateStoreIterator(raw.map { case (k, v) =>
      val body = java.util.Arrays.copyOfRange(k, prefix.length, k.length)
      (body, checks.open(body, 0, v, s"column family '$colFamilyName'"))
    }, () => raw.close())
  }

  /** Puts a row `storedRows` returned (of another partition's store), creating its family. */
  def putStored(colFamilyName: String, key: Array[Byte], value: Array[Byte]): Unit = {
    checkWritable("putStored")
    checkFamilyName(colFamilyName)
    val prefix = ColumnFamilyCodec.prefixOf(vdb.assignColumnFamily(colFamilyName))
    val k = new Array[Byte](prefix.length + key.length)
    System.arraycopy(prefix, 0, k, 0, prefix.length)
    System.arraycopy(key, 0, k, prefix.length, key.length)
    write(k, provider.rowChecks.seal(key, 0, value), merge = false)
  }

  /** Creates a family without a schema (a rewrite recreates every family a store had). */
  def createStoredFamily(colFamilyName: String): Unit = {
    checkWritable("createStoredFamily")
    checkFamilyName(colFamilyName)
    vdb.assignColumnFamily(colFamilyName)
  }

  // ---- reads ----

  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    require(key != null, "rockstate: key cannot be null")
    val c = provider.codec(colFamilyName, "get")
    val k = c.encodeKey(key)
    c.decodeValue(k, vdb.rocksDB.get(k))
  }

  def getMany(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] = {
    val c = provider.codec(colFamilyName, "multiGet")
    val encoded = keys.toSeq.map(c.encodeKey)
    encoded.iterator.zip(vdb.rocksDB.multiGet(encoded).iterator).map { case (k, v) =>
      c.decodeValue(k, v)
    }
  }

  def contains(key: UnsafeRow, colFamilyName: String): Boolean = {
    require(key != null, "rockstate: key cannot be null")
    val c = provider.codec(colFamilyName, "keyExists")
    vdb.rocksDB.get(c.encodeKey(key)) != null
  }

  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] = {
    require(key != null, "rockstate: key cannot be null")
    val c = multiValued(colFamilyName, "valuesIterator")
    val k = c.encodeKey(key)
    c.decodeValues(k, vdb.rocksDB.get(k))
  }

  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    val c = provider.codec(colFamilyName, "iterator")
    pairs(c, c.prefix, c.upperBound, multi = false)
  }

  def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    val c = multiValued(colFamilyName, "iteratorWithMultiValues")
    pairs(c, c.prefix, c.upperBound, multi = true)
  }

  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] =
    prefixPairs(prefixKey, colFamilyName, "prefixScan", multi = false)

  def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] =
    prefixPairs(prefixKey, colFamilyName, "prefixScanWithMultiValues", multi = true)

  def scanRange(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow],
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    rangePairs(startKey, endKey, colFamilyName, "rangeScan", multi = false)

  def scanRangeWithMultiValues(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow],
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    rangePairs(startKey, endKey, colFamilyName, "rangeScanWithMultiValues", multi = true)

  // ---- writes ----

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("put")
    require(key != null, "rockstate: key cannot be null")
    require(value != null, "rockstate: Cannot put a null value")
    val c = provider.codec(colFamilyName, "put")
    val k = c.encodeKey(key)
    write(k, c.encodeValue(k, value), merge = false)
  }

  def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    writeList("putList", key, values, colFamilyName, merge = false)

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("merge")
    require(key != null, "rockstate: key cannot be null")
    require(value != null, "rockstate: Cannot merge a null value")
    val c = multiValued(colFamilyName, "merge")
    val k = c.encodeKey(key)
    write(k, c.encodeValue(k, value), merge = true)
  }

  def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    writeList("mergeList", key, values, colFamilyName, merge = true)

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("remove")
    require(key != null, "rockstate: key cannot be null")
    val c = provider.codec(colFamilyName, "remove")
    val k = c.encodeKey(key)
    if (provider.conf.trackTotalNumberOfRows && vdb.rocksDB.exists(k)) vdb.addKeys(-1)
    vdb.delete(k)
  }

  def deleteKeyRange(beginKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("deleteRange")
    require(beginKey != null && endKey != null, "rockstate: deleteRange needs both keys")
    val c = provider.codec(colFamilyName, "deleteRange")
    require(c.supportsRangeScan,
      s"rockstate: deleteRange on '$colFamilyName' needs a RangeKeyScanStateEncoderSpec")
    val (b, e) = (c.encodeKey(beginKey), c.encodeKey(endKey))
    if (provider.conf.trackTotalNumberOfRows) vdb.addKeys(-countRange(b, Some(e)))
    vdb.deleteRange(b, e)
  }

  // ---- lifecycle ----

  override def commit(): Long = provider.storeLock.synchronized {
    checkWritable("commit")
    val newVersion = version + 1
    val db = vdb
    blockReads = ThreadBlockReads.end(db.rocksDB)
    try {
      // Every snapshot uploaded is reported to Spark's coordinator too (it forces a snapshot
      // on every commit of a store it believes lags); checkpoint versions to rockstate's.
      val listener = CheckpointReporter.listenerFor(provider.storeKey, provider.queryRoot,
          provider.storeDir, provider.conf, TaskRun.current)
        .onCompleted(m => SparkLine.reportSnapshotUploaded(id, provider.hadoopConf, m.version))
      val manifest = db.commit(newVersion, forceSnapshot, listener)
      phase = Committed
      // Checkpoint format 2: the commit's unique id, and the one it was built on, echoed as
      // Spark passed it (Spark checks it against the id it recorded for `version`).
      checkpointInfo = Some(StateStoreCheckpointInfo(id.partitionId, newVersion,
        Some(db.lastCommitId), baseCheckpointId))
      SparkLine.reportCommit(newVersion, id, provider.hadoopConf)
      logInfo(s"rockstate committed version $newVersion of $id: " +
        s"${db.commitStats.changelogRecords} changes, ${db.commitStats.commitBytes} bytes " +
        s"written; lineage ${manifest.snapshot.map(_.version).getOrElse(0L)} + " +
        s"${manifest.changelogs.size} changelogs")
      newVersion
    } catch {
      case e: Throwable =>
        db.rollback()
        phase = Aborted
        throw SparkErrors.cannotCommit(toString, new java.io.IOException(
          s"rockstate: failed to commit version $newVersion of $id: ${e.getMessage}", e))
    } finally provider.releaseLease(lease)
  }

  override def abort(): Unit = provider.storeLock.synchronized {
    if (phase == Committed) {
      throw new IllegalStateException(s"rockstate: cannot abort $id after it committed")
    }
    // A store whose lease ended has nothing to undo: the instance may be another attempt's.
    if (phase == Updating && !readOnly && provider.holdsLease(lease)) {
      logInfo(s"rockstate aborting version ${version + 1} of $id")
      provider.db.rollback()
      provider.releaseLease(lease)
    }
    phase = Aborted
  }

  def releaseStore(): Unit = {
    if (phase == Updating && !readOnly) abort()
    if (phase == Updating) phase = Released
  }

  override def hasCommitted: Boolean = phase == Committed

  // Figures, read after commit too (when the lease is released), as Spark's operators do.
  override def metrics: StateStoreMetrics = {
    val db = provider.db
    StateStoreMetrics(db.numKeys, db.memoryBytes,
      RockstateMetrics.values(db.commitStats, db.loadStats, db.stateBytes, blockReads))
  }

  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo =
    checkpointInfo.getOrElse(StateStoreCheckpointInfo(id.partitionId, version, None, None))

  override def toString: String = s"RockstateStateStore[$id, version=$version]"

  // ---- helpers ----

  private def write(k: Array[Byte], v: Array[Byte], merge: Boolean): Unit = {
    if (provider.conf.trackTotalNumberOfRows && !vdb.rocksDB.exists(k)) vdb.addKeys(1)
    if (merge) vdb.merge(k, v) else vdb.put(k, v)
  }

  private def writeList(op: String, key: UnsafeRow, values: Array[UnsafeRow], family: String,
      merge: Boolean): Unit = {
    checkWritable(op)
    require(key != null, "rockstate: key cannot be null")
    require(values != null && values.nonEmpty && !values.contains(null),
      s"rockstate: $op needs a non-empty list without nulls")
    val c = multiValued(family, op)
    val k = c.encodeKey(key)
    write(k, c.encodeValues(k, values), merge)
  }

  private def codecFor(family: String, op: String, multi: Boolean): ColumnFamilyCodec =
    if (multi) multiValued(family, op) else provider.codec(family, op)

  private def prefixPairs(prefixKey: UnsafeRow, family: String, op: String, multi: Boolean)
      : StateStoreIterator[UnsafeRowPair] = {
    val c = codecFor(family, op, multi)
    require(c.supportsPrefixScan,
      s"rockstate: $op on '$family' needs a PrefixKeyScanStateEncoderSpec")
    val p = c.encodePrefixKey(prefixKey)
    pairs(c, p, prefixEnd(p).orElse(c.upperBound), multi)
  }

  private def rangePairs(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], family: String,
      op: String, multi: Boolean): StateStoreIterator[UnsafeRowPair] = {
    val c = codecFor(family, op, multi)
    require(c.supportsRangeScan,
      s"rockstate: $op on '$family' needs a RangeKeyScanStateEncoderSpec")
    pairs(c, startKey.map(c.encodeKey).getOrElse(c.prefix),
      endKey.map(c.encodeKey).orElse(c.upperBound), multi)
  }

  private def multiValued(name: String, op: String): ColumnFamilyCodec = {
    val c = provider.codec(name, op)
    require(c.multipleValues,
      s"rockstate: $op on '$name' needs a family created with useMultipleValuesPerKey = true")
    c
  }

  private def checkWritable(op: String): Unit = {
    if (readOnly) {
      throw new UnsupportedOperationException(
        s"rockstate: $op is not allowed on a read-only store of $id (getReadStore)")
    }
    if (phase != Updating) {
      throw new IllegalStateException(
        s"rockstate: cannot $op on $id version $version after it was ${phase.toString.toLowerCase}")
    }
  }

  private def checkFamilyName(name: String): Unit = {
    if (name == null || name.isEmpty || name.trim != name) {
      throw new IllegalArgumentException(
        s"rockstate: column family name '$name' is not valid: use a non-empty name without " +
          "leading or trailing spaces")
    }
    if (!provider.useColumnFamilies) {
      throw new UnsupportedOperationException(
        s"rockstate: cannot create column family '$name': the store of $id was opened " +
          "without column families")
    }
  }

  private def countRange(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    val it = vdb.rocksDB.scan(from, until)
    try it.size.toLong finally it.close()
  }

  private def pairs(c: ColumnFamilyCodec, from: Array[Byte], until: Option[Array[Byte]],
      multi: Boolean): StateStoreIterator[UnsafeRowPair] = {
    val raw = vdb.rocksDB.scan(from, until)
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => raw.close()))
    val rows: Iterator[UnsafeRowPair] =
      if (multi) raw.flatMap { case (k, v) =>
        val key = c.decodeKey(k)
        c.decodeValues(k, v).map(value => new UnsafeRowPair(key, value))
      }
      else {
        val pair = new UnsafeRowPair()
        raw.map { case (k, v) => pair.withRows(c.decodeKey(k), c.decodeValue(k, v)) }
      }
    new StateStoreIterator(rows, () => raw.close())
  }

  /** The first key after every key starting with `p`, or None if there is none. */
  private def prefixEnd(p: Array[Byte]): Option[Array[Byte]] = {
    val end = p.clone()
    var i = end.length - 1
    while (i >= 0 && end(i) == 0xff.toByte) i -= 1
    if (i < 0) None
    else {
      end(i) = (end(i) + 1).toByte
      Some(java.util.Arrays.copyOf(end, i + 1))
    }
  }
}
