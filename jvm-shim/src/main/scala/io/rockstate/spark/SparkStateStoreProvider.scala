package io.rockstate.spark

import scala.annotation.tailrec
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import io.rockstate.checkpoint.{CheckpointPins, StoreKey}
import io.rockstate.storage._
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{Changelog, StateVersion}
import io.rockstate.storage.local.{ExecutorMemory, IdleInstance, LocalStoreFiles, OpenInstances,
  RowChecksumSampler}
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.retention.RetentionCleaner

/**
 * rockstate's StateStoreProvider: one per (operator, partition, store name) on an executor.
 * Switched on with
 * `spark.sql.streaming.stateStore.providerClass=io.rockstate.state.RockstateStateStoreProvider`,
 * the line's subclass (in each `jvm-shim/src/spark-<line>` folder): it binds the members whose
 * signatures differ between Spark lines (getStore, upgradeReadStoreToWriteStore, the maintenance
 * split) to the ones here.
 */
abstract class SparkStateStoreProvider extends StateStoreProvider with IdleInstance
    with Logging {

  @volatile private var setup: ProviderSetup = _
  private var versioned: VersionedRocksDB = _
  // Families an operator declared on this executor, kept across loads: codecs are rebuilt
  // from them with the ids of whichever version is loaded.
  private val declared = new java.util.concurrent.ConcurrentHashMap[String, ColumnFamilySpec]()
  private val lock = new Object
  // Who holds the RocksDB instance (Spark's RocksDB provider does the same): a task attempt
  // from its first getStore until it commits, aborts or completes. Under `lock`.
  private var holder: Option[Long] = None
  @volatile private var leaseId = 0L
  // A close that found the instance still held after lockAcquireTimeoutMs: the holder's
  // release closes it. Under `lock`.
  private var closeOnRelease = false

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    val encoding = RowEncoding.of(storeConfs.stateStoreEncodingFormat, stateSchemaProvider)
    val confs = storeConfs.sqlConfs ++ storeConfs.extraOptions
    RockstateConf.refuseUnknown(confs)
    val conf = RockstateConf.from(confs, storeConfs.minVersionsToRetain)
    // No link is followed from the query's checkpoint location (`queryRoot`: Spark names the
    // provider its `state` folder) down, as the offline tools follow none (CheckpointReader).
    val stateRoot = new Path(stateStoreId.checkpointRootLocation)
    val location = Option(stateRoot.getParent).getOrElse(stateRoot)
    val dir = new StoreCheckpointDir(stateStoreId.storeCheckpointLocation(), hadoopConf,
      Some(location))
    val family = ColumnFamilySpec(keySchema, valueSchema, keyStateEncoderSpec,
      useMultipleValuesPerKey)
    setup = ProviderSetup(stateStoreId, keySchema, valueSchema, family, useColumnFamilies, storeConfs,
      hadoopConf, conf, dir, new RetentionCleaner(dir, conf), encoding)
    declared.put(StateStore.DEFAULT_COL_FAMILY_NAME, family)
    // Found again by path, so a restarted query on this executor recovers locally.
    val local = LocalStoreFiles.forStore(dir.root.toUri.toString,
      s"op${stateStoreId.operatorId}-p${stateStoreId.partitionId}-${stateStoreId.storeName}",
      conf.localDir, conf.localCacheMaxMB)
    versioned = new VersionedRocksDB(stateStoreId.operatorId, stateStoreId.partitionId,
      stateStoreId.storeName, dir, local, conf, useColumnFamilies)
  }

  override def stateStoreId: StateStoreId = setup.id

  /** How this provider's rows become bytes. */
  private[spark] def rowEncoding: RowEncoding = setup.encoding

  /** The line's store class, over this provider's loaded instance. */
  protected def newStore(version: Long, uniqueId: Option[String], readOnly: Boolean, lease: Long,
      forceSnapshotOnCommit: Boolean): SparkStateStore

  /** getStore, in every line's signature: `loadEmpty` starts `version` with no state. */
  protected def openWrite(
      version: Long,
      uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore = lock.synchronized {
    val lease = loading(version) {
      if (loadEmpty) versioned.loadEmpty(version) else versioned.load(version, uniqueId)
    }
    newStore(version, uniqueId, readOnly = false, lease, forceSnapshotOnCommit)
  }

  /**
   * Takes the instance and runs `load` of `version` in it, returning the lease; a failure
   * releases the lease and is reported in Spark's error contract (`SparkErrors`).
   */
  private def loading(version: Long)(load: => Unit): Long = {
    if (version < 0) throw SparkErrors.unexpectedVersion(version)
    val lease = acquire()
    try load catch {
      case e: Throwable =>
        releaseLease(lease)
        throw SparkErrors.cannotLoad(e, stateStoreId)
    }
    lease
  }

  /**
   * A store starting from empty state labelled `version`, whose commit writes version
   * `version + 1` with a snapshot: how a state rewrite (rescale, migration) writes a partition's
   * whole state on every Spark line (Spark's own `loadEmpty` exists from 4.2 on).
   */
  def openEmpty(version: Long): StateStore =
    openWrite(version, None, forceSnapshotOnCommit = true, loadEmpty = true)

  /**
   * Spark's replayStateFromSnapshot: `endVersion` rebuilt from the snapshot of
   * `snapshotVersion` and the changes after it (exactly the attempt `endCheckpointId` names).
   */
  protected def openFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      endCheckpointId: Option[String]): StateStore = lock.synchronized {
    if (snapshotVersion < 0) throw SparkErrors.unexpectedVersion(snapshotVersion)
    val lease = loading(endVersion)(
      versioned.loadFromSnapshot(snapshotVersion, endVersion, endCheckpointId))
    newStore(endVersion, endCheckpointId, readOnly, lease, forceSnapshotOnCommit = false)
  }

  /**
   * Spark's state change feed: every change batches `startVersion - 1` to `endVersion - 1`
   * made to one family (the default one unless named), in order.
   */
  protected def changeRows(startVersion: Long, endVersion: Long, family: Option[String],
      endCheckpointId: Option[String]): Iterator[ChangeRow] = {
    val name = family.getOrElse(StateStore.DEFAULT_COL_FAMILY_NAME)
    checkFamilies(name, "reading the change feed")
    if (startVersion < 1 || endVersion < startVersion) {
      throw new IllegalArgumentException(s"rockstate: the change feed of ${setup.id} reads " +
        s"versions from 1 on, the first no later than the last (asked $startVersion to " +
        s"$endVersion)")
    }
    // Spark's source opens a provider per state variable it reads, initialised with that
    // variable's schemas: they are the family's when nothing registered it on this executor.
    versioned.changes(startVersion, endVersion, endCheckpointId).filter(_.family == name)
      .flatMap { r =>
        val c = codecFor(name, r.familyId, "reading the change feed", Some(setup.defaultFamily),
          r.rowChecksums)
        val batch = StateVersion.batchOf(r.version)
        r.op match {
          case Changelog.Put =>
            Iterator.single(ChangeRow(r.op, c.decodeStoredKey(r.key),
              c.decodeBodyValue(r.key, r.value), batch))
          case Changelog.Merge =>
            // A merge appends one or more values to a key's list: one change per value.
            c.decodeBodyValues(r.key, r.value)
              .map(v => ChangeRow(r.op, c.decodeStoredKey(r.key), v, batch))
          case Changelog.Delete =>
            Iterator.single(ChangeRow(r.op, c.decodeStoredKey(r.key), null, batch))
          case Changelog.DeleteRange if r.value == null =>
            // The family was dropped (removeColFamilyIfExists): Spark's feed has no record for
            // that, nor does Spark's own provider write one.
            Iterator.empty
          case Changelog.DeleteRange =>
            Iterator.single(ChangeRow(r.op, c.decodeStoredKey(r.key), c.decodeStoredKey(r.value),
              batch))
          case other => throw new IllegalStateException(s"rockstate: change kind $other")
        }
      }
  }

  /** Waits up to `timeoutMs` for this store's snapshot upload under way; false on timeout. */
  def awaitSnapshot(timeoutMs: Long): Boolean = versioned.awaitUploads(timeoutMs)

  // Spark's default would load the version twice per partition (read, then write store).
  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore =
    lock.synchronized {
      val lease = loading(version)(versioned.load(version, uniqueId))
      newStore(version, uniqueId, readOnly = true, lease, forceSnapshotOnCommit = false)
    }

  /** upgradeReadStoreToWriteStore (Spark 4.1+), in every line's signature. */
  protected def upgradeToWrite(
      readStore: ReadStateStore,
      version: Long,
      uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore = lock.synchronized {
    require(readStore.version == version,
      s"rockstate: cannot upgrade a read store of version ${readStore.version} to $version")
    // A no-op load when the read store's version is loaded.
    val lease = loading(version)(versioned.load(version, uniqueId))
    newStore(version, uniqueId, readOnly = false, lease, forceSnapshotOnCommit)
  }

  /**
   * Takes the instance for the calling task attempt (re-entrant), waiting up to
   * `lockAcquireTimeoutMs` for another attempt of this partition to finish with it; returns
   * the lease id its stores carry. Released on commit or abort, and when the task completes.
   */
  private def acquire(): Long = {
    val me = currentOwner
    if (!awaitRelease(me)) {
      throw new IllegalStateException(s"rockstate: ${setup.id} is in use by task attempt " +
        s"${holder.get} on this executor; task attempt $me waited " +
        s"${setup.conf.lockAcquireTimeoutMs} ms for it (lockAcquireTimeoutMs). Two " +
        "attempts of one partition never share a store: this attempt fails and Spark " +
        "retries it.")
    }
    if (holder.isEmpty) {
      holder = Some(me)
      leaseId += 1
      val lease = leaseId
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => releaseLease(lease)))
    }
    leaseId
  }

  /**
   * Waits under `lock`, up to `lockAcquireTimeoutMs`, until no task attempt other than `me`
   * holds the instance; whether none does.
   */
  private def awaitRelease(me: Long): Boolean =
    awaitRelease(me, System.currentTimeMillis() + setup.conf.lockAcquireTimeoutMs)

  @tailrec private def awaitRelease(me: Long, deadline: Long): Boolean = {
    val left = deadline - System.currentTimeMillis()
    if (!holder.exists(_ != me)) true
    else if (left <= 0) false
    else {
      lock.wait(left)
      awaitRelease(me, deadline)
    }
  }

  /** Ends lease `lease` if it is still the current one. */
  private[spark] def releaseLease(lease: Long): Unit = lock.synchronized {
    if (holder.isDefined && leaseId == lease) {
      holder = None
      lock.notifyAll()
      // The attempt's commit or abort is done by now: a failing close must not fail it.
      if (closeOnRelease) {
        try closeNow() catch {
          case NonFatal(e) => logWarning(s"rockstate: closing ${setup.id} after its release " +
            "failed", e)
        }
      } else if (versioned.isOpen) {
        OpenInstances.executor.released(this, ExecutorMemory.openInstanceCap(setup.conf))
      }
    }
  }

  /** `maxOpenStores`: the instance closes between tasks, its next load reopens it. */
  override def closeIfIdle(unreleased: () => Boolean): Boolean = lock.synchronized {
    val closed = holder.isEmpty && versioned != null && unreleased() && versioned.closeIdle()
    if (versioned == null || !versioned.isOpen) OpenInstances.executor.forget(this) // closed
    closed
  }

  private[spark] def holdsLease(lease: Long): Boolean = lock.synchronized {
    holder.isDefined && leaseId == lease
  }

  /** Fails a store whose lease ended (its task finished, another attempt took the store). */
  private[spark] def checkLease(lease: Long, store: StateStoreId): Unit = {
    if (leaseId != lease || holder.isEmpty) {
      throw new IllegalStateException(s"rockstate: this store of $store is no longer valid: " +
        "its task attempt released it (committed, aborted or completed) and the instance may " +
        "serve another attempt now.")
    }
  }

  private def currentOwner: Long =
    Option(TaskContext.get()).map(_.taskAttemptId()).getOrElse(-1L - Thread.currentThread().getId)

  // Snapshots are taken by commits and uploaded by rockstate's own background threads as soon
  // as they are taken, not at Spark's maintenance interval: maintenance only cleans up.
  override def doMaintenance(): Unit = {
    // With Spark's unloadOnCommit this maintenance runs as the task ends and the provider is
    // closed right after: the commit's snapshot upload finishes first (as Spark's own provider
    // uploads in this maintenance) instead of dying with the close and leaving the next load
    // a longer chain of changelogs to replay.
    val s = setup
    if (s != null && s.conf.unloadOnCommit && versioned != null &&
        !versioned.awaitUploads(s.conf.snapshotUploadTimeoutMs)) {
      logWarning(s"rockstate: ${s.id}'s snapshot upload did not finish within " +
        s"${s.conf.snapshotUploadTimeoutMs} ms before the provider unloads; it is abandoned")
    }
    cleanup()
  }

  /** Deletes what no retained version or checkpoint needs any more. */
  protected def cleanup(): Unit = {
    val s = setup
    if (s != null) {
      try {
        val now = System.currentTimeMillis()
        val started = System.nanoTime() // before the cleaner's listing
        // Versions the query's checkpoints need: retained completed ones, pending ones.
        val root = queryRoot.toString
        val pinned = CheckpointPins.pinned(root, s.hadoopConf, now, 2 * s.conf.checkpointTimeoutMs)
        val (stats, keep) = s.cleaner.synchronized(s.cleaner.clean(pinned))
        if (stats.versionsExpired + stats.filesDeleted + stats.orphansDeleted > 0) {
          logInfo(s"rockstate cleanup of ${s.id}: $stats")
        }
        lock.synchronized(versioned.pruneCache(keep, started))
      } catch {
        case NonFatal(e) =>
          logWarning(s"rockstate: cleanup of ${s.id} failed; it is retried at the next " +
            "maintenance and no retained version was touched", e)
      }
    }
  }

  /**
   * Spark closes a provider when it unloads it, from its maintenance thread (the partition
   * moved to another executor), possibly while a task attempt of this executor still reads or
   * writes the store: as Spark's own provider does, the close waits for that attempt's
   * release, so nothing runs on a closed RocksDB (a scan under way would end early, a read
   * racing the close could crash the JVM). Past `lockAcquireTimeoutMs` the release closes it
   * instead.
   */
  override def close(): Unit = lock.synchronized {
    if (versioned == null || awaitRelease(currentOwner)) closeNow()
    else {
      closeOnRelease = true
      logWarning(s"rockstate: ${setup.id} is still in use by task attempt ${holder.get} after " +
        s"${setup.conf.lockAcquireTimeoutMs} ms (lockAcquireTimeoutMs); it closes when that " +
        "attempt commits, aborts or ends")
    }
  }

  private def closeNow(): Unit = {
    closeOnRelease = false
    OpenInstances.executor.forget(this)
    if (versioned != null) versioned.close()
  }

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = RockstateMetrics.all

  // ---- used by SparkStateStore ----

  private[spark] def db: VersionedRocksDB = versioned
  private[spark] def storeLock: Object = lock
  private[spark] def conf: RockstateConf = setup.conf
  private[spark] def useColumnFamilies: Boolean = setup.useColumnFamilies
  private[spark] def hadoopConf: Configuration = setup.hadoopConf
  private[spark] def storeDir: Path = setup.checkpointDir.root
  private[spark] def storeKey: StoreKey =
    StoreKey(setup.id.operatorId, setup.id.storeName, setup.id.partitionId)
  /** The query's checkpoint location (the parent of its `state/` folder). */
  private[spark] def queryRoot: Path = new Path(setup.id.checkpointRootLocation).getParent

  private[spark] def declare(name: String, spec: ColumnFamilySpec): Unit = declared.put(name, spec)
  private[spark] def forget(name: String): Unit = declared.remove(name)

  /** The codec of a family in the loaded version, or a clear error naming the family. */
  private[spark] def codec(name: String, op: String): ColumnFamilyCodec = {
    // Every row of a batch asks for the same family's codec: the last one given out stands
    // while the loaded version's family table, the family's schema and the checksums do.
    val ids = versioned.columnFamilyIds
    val last = lastCodec
    if (last != null && (last._1 eq ids) && last._2.name == name &&
      (declared.get(name) eq last._2.spec) && last._2.checksummed == versioned.rowChecksums) {
      last._2
    } else {
      checkFamilies(name, op)
      val id = ids.getOrElse(name,
        throw new IllegalArgumentException(
          s"rockstate: column family '$name' does not exist in ${setup.id} at version " +
            s"${versioned.loadedVersion}; create it with createColFamilyIfAbsent first."))
      val c = codecFor(name, id, op)
      lastCodec = (ids, c)
      c
    }
  }

  private def checkFamilies(name: String, op: String): Unit =
    if (!setup.useColumnFamilies && name != StateStore.DEFAULT_COL_FAMILY_NAME) {
      throw new UnsupportedOperationException(
        s"rockstate: $op on column family '$name' needs a store opened with column families; " +
          s"this store of ${setup.id} has only the default family.")
    }

  /**
   * The codec of family `name` under the id `id` (a version's family table gave it), by the
   * schema registered for it, else by `fallback`.
   */
  private def codecFor(name: String, id: Int, op: String,
      fallback: Option[ColumnFamilySpec] = None,
      checksums: Boolean = versioned.rowChecksums): ColumnFamilyCodec = {
    val spec = Option(declared.get(name)).orElse(fallback).getOrElse(
      throw new IllegalArgumentException(
        s"rockstate: column family '$name' of ${setup.id} has no schema registered on this " +
          "executor; register it (createColFamilyIfAbsent or registerColFamily) before use."))
    // Hot path: the declared spec is almost always the very object cached (eq is cheap).
    val cached = codecCache.get((name, id))
    if (cached != null && ((cached.spec eq spec) || cached.spec == spec) &&
      cached.checksummed == checksums) cached
    else {
      val c = new ColumnFamilyCodec(name, id, setup.useColumnFamilies, spec,
        rowChecksOf(checksums), setup.encoding)
      codecCache.put((name, id), c)
      c
    }
  }

  /** How the loaded version's values are sealed and opened (`RowChecks`). */
  private[spark] def rowChecks: RowChecks = rowChecksOf(versioned.rowChecksums)

  private def rowChecksOf(checksums: Boolean): RowChecks =
    if (checksums) checkedRows else plainRows

  // The store's one sampler: Spark's ratio counts every read of the store.
  private lazy val checkedRows =
    new RowChecks(Some(new RowChecksumSampler(setup.conf.rowChecksumReadRatio)), setup.id.toString)
  private lazy val plainRows = new RowChecks(None, setup.id.toString)

  private val codecCache =
    new java.util.concurrent.ConcurrentHashMap[(String, Int), ColumnFamilyCodec]()
  // `codec`'s last answer, with the family table it read the family's id from.
  @volatile private var lastCodec: (Map[String, Int], ColumnFamilyCodec) = null

  override def toString: String = s"RockstateStateStoreProvider[${Option(setup).map(_.id)}]"
}
