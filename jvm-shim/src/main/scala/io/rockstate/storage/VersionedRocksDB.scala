package io.rockstate.storage

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{ChangeRecord, Changelog, ChangelogRef, ColumnFamilyEntry,
  CommitRecord, SnapshotManifest, SnapshotRef, SnapshotStats, VersionFile, VersionManifest}
import io.rockstate.storage.loaded.{BatchState, Lineage, LoadedVersion, StoreInstance}
import io.rockstate.storage.local.{Elapsed, LocalRocksDB, LocalStoreFiles}
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.restore.{ChangeFeed, CheckpointFetch, NewerSnapshot, SnapshotRepair,
  SnapshotRestore, UnreadableSnapshot}
import io.rockstate.storage.snapshot.{AsyncSnapshots, ConfirmedFiles, SnapshotListener,
  SyncSnapshots}

/**
 * A store's RocksDB together with the version it holds.
 *
 * Commit path (synchronous, on the task): one version file (`VersionFile`) is published under
 * a unique name: the version's lineage (the newest confirmed snapshot plus every version's
 * changes after it) and the batch's own changes, logged as they were made. Every
 * `snapshotInterval` versions the commit also begins a snapshot: its synchronous part (flush
 * and a local hard-link checkpoint) runs once the commit has returned, while the store is idle,
 * and hands the checkpoint to the background uploader (the asynchronous part); later commits
 * rebase onto it once its manifest is written. Loading a version = its snapshot plus the
 * replay of its changelogs, served from the open instance when it holds an earlier point of
 * the same lineage (or from the directory an instance closed while idle flushed, `closeIdle`),
 * else from the executor's local files, downloading only what is missing;
 * a fresh load with many changes to replay starts from a snapshot of the lineage that landed
 * after the version file named its own (`NewerSnapshot`).
 *
 * Not thread-safe on its own: the provider serialises task access and maintenance. This class
 * holds the loaded version and decides; the phases are their own classes, as Flink splits them:
 * `SnapshotRestore` restores a snapshot and replays changelogs, `SnapshotRepair` picks what to
 * open past a damaged snapshot, `SyncSnapshots` takes a snapshot's local checkpoint (on
 * `LocalCheckpointPool`, while nothing changes the database: every load, write, rollback and
 * close waits for it) and `AsyncSnapshots` uploads it, the only object upload threads touch.
 */
final class VersionedRocksDB(
    operatorId: Long,
    partitionId: Int,
    storeName: String,
    checkpointDir: StoreCheckpointDir,
    local: LocalStoreFiles,
    conf: RockstateConf,
    useColumnFamilies: Boolean) extends Logging {
  import VersionedRocksDB._

  private val storeId = s"rockstate store (operator $operatorId, partition $partitionId, " +
    s"store $storeName)"
  private val workDir = local.newWorkPath("db")
  private val restore = new SnapshotRestore(operatorId, partitionId, storeName, checkpointDir)
  private val repair = new SnapshotRepair(storeId, checkpointDir, restore, conf)
  private val snapshots = new AsyncSnapshots(storeId, checkpointDir.root.toString, conf)
  private val syncSnapshots = new SyncSnapshots(checkpointDir, local, conf, snapshots)
  private val lateChecks = new LateCommitChecks(storeId, checkpointDir)

  // The state this class holds, each a value replaced whole. Volatile: Spark's operators read
  // the figures of a store its maintenance thread may close.
  @volatile private var instance: StoreInstance = StoreInstance.None
  private var loaded: LoadedVersion = LoadedVersion.empty(conf.rowChecksums)
  private var batch: BatchState = BatchState.begin(loaded.families)
  // The key count as the batch's writes leave it: a counter of its own, not a field of a
  // value, because every row a task writes changes it.
  private var keys: Long = 0L
  private var lastLoad = LoadStats(0, 0, 0, 0)
  private var lastCommit = CommitStats.Zero
  // A load repaired a damaged snapshot: the next commit snapshots, whatever its version.
  private var forceOwed = false
  private var toldOfChecksums = false

  def loadedVersion: Long = loaded.version
  def numKeys: Long = keys
  def columnFamilyIds: Map[String, Int] = batch.families
  def loadStats: LoadStats = lastLoad
  def commitStats: CommitStats = lastCommit
  /** The unique id of the last commit (its version file's uuid): Spark's checkpoint id. */
  def lastCommitId: String = loaded.commitId
  /** Whether every value of the loaded version carries its row checksum (`RowChecksum`). */
  def rowChecksums: Boolean = loaded.rowChecksums
  def memoryBytes: Long = instance match {
    case StoreInstance.Open(db) => db.approximateMemoryBytes
    case _: StoreInstance.Closed => 0L
  }
  /** The loaded version's SST bytes; once its instance closed, as it closed. */
  def stateBytes: Long = instance match {
    case StoreInstance.Open(db) => db.sstBytes
    case StoreInstance.Closed(bytes, _) => bytes
  }

  private def familyEntries: Seq[ColumnFamilyEntry] =
    batch.families.toSeq.sortBy(_._2).map { case (n, i) => ColumnFamilyEntry(n, i) }

  private def lineage: Lineage = loaded.lineage

  private def swap(next: Lineage): Unit = loaded = loaded.copy(lineage = next)

  // A match, not `getOrElse`: this runs several times for every row a task writes.
  def rocksDB: LocalRocksDB = instance match {
    case StoreInstance.Open(db) => db
    case _ => throw new IllegalStateException(s"rockstate: $storeId has no version loaded")
  }

  def isOpen: Boolean = instance.isInstanceOf[StoreInstance.Open]

  def addKeys(delta: Long): Unit = keys += delta

  def assignColumnFamily(name: String): Int = batch.families.getOrElse(name, {
    val used = batch.families.values.toSet
    val id = Iterator.from(1).find(i => !used.contains(i)).get
    require(id < 0xffff, s"rockstate: $storeId cannot hold more than 65534 column families")
    batch = batch.copy(families = batch.families + (name -> id), changed = true)
    id
  })

  def dropColumnFamily(name: String): Unit =
    batch = batch.copy(families = batch.families - name, changed = true)

  // ---- writes: to RocksDB and to the batch's changelog ----

  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    val log = changelogWriter()
    rocksDB.put(key, value)
    log.put(key, value)
  }

  def merge(key: Array[Byte], value: Array[Byte]): Unit = {
    val log = changelogWriter()
    rocksDB.merge(key, value)
    log.merge(key, value)
  }

  def delete(key: Array[Byte]): Unit = {
    val log = changelogWriter()
    rocksDB.delete(key)
    log.delete(key)
  }

  def deleteRange(begin: Array[Byte], end: Array[Byte]): Unit = {
    val log = changelogWriter()
    rocksDB.deleteRange(begin, end)
    log.deleteRange(begin, end)
  }

  private def changelogWriter(): Changelog.Writer = {
    rocksDB // fails clearly when nothing is loaded
    batch.changelog match {
      case Some(w) => w
      case None =>
        awaitLocalCheckpoint() // the first write after a commit: its snapshot is taken first
        val w = new Changelog.Writer(local.newWorkPath("changelog"), conf.changelogCompression)
        batch = batch.copy(changelog = Some(w))
        w
    }
  }

  // ---- load ----

  /**
   * Makes `version` the loaded version: with `id` (Spark's checkpoint format 2) exactly the
   * attempt that commit made, else the attempt of `version` that landed.
   */
  def load(version: Long, id: Option[String] = None): Unit = {
    val start = System.nanoTime()
    awaitLocalCheckpoint() // counted in the load's time
    val wanted = id.map(VersionFile.pathOf(version, _))
    val reopenedAsIs = reopenIdle(servable = loaded.holds(version, wanted))
    if (isOpen && !batch.wrote && loaded.holds(version, wanted)) {
      // The instance's own commit made this version: the batch starting from it loads
      // nothing. (A repeated load within one batch keeps the batch's figures.)
      if (loaded.byCommit || reopenedAsIs) {
        val reopened = if (reopenedAsIs) 1 else 0
        lastLoad = LoadStats(Elapsed.sinceMs(start), 0, 0, 0, reopened = reopened)
      }
      loaded = loaded.copy(byCommit = false)
      batch = batch.copy(startedAtNanos = start)
      return
    }
    // The rows held are of the version the instance held: not of the one loaded now.
    forgetBatchRows()
    val fetched = newFetch(s"version $version")
    if (version == 0 && id.isDefined) {
      throw new IllegalArgumentException(s"rockstate: version 0 of $storeId is empty state " +
        s"and has no checkpoint id, got ${id.get}")
    }
    val manifest = if (version == 0) None
      else Some(restore.readVersion(version, wanted, fetched))
    val reopened = reopenIdle(servable = manifest.exists(holdsEarlierPointOf))
    val (replayed, repaired) = manifest match {
      case Some(m) if canCatchUp(m) =>
        // The open instance holds an earlier version of this lineage: replay the rest.
        val rest = m.changelogs.filter(_.version > loaded.version)
        rest.foreach(restore.replay(_, fetched, rocksDB))
        adoptLineage(m)
        (rest.size, 0)
      case Some(m) => openNewest(m, wanted, fetched)
      case None => (openFresh(None, fetched), 0)
    }
    loadedNow(version, start)
    lastLoad = LoadStats(Elapsed.sinceMs(start), fetched.bytes, fetched.files,
      replayed, repaired, if (reopened) 1 else 0)
  }

  /** `version` is loaded, by a load that began at `start`: its batch begins, clean. */
  private def loadedNow(version: Long, start: Long): Unit = {
    loaded = loaded.copy(version = version, byCommit = false)
    batch = BatchState.begin(loaded.families).copy(startedAtNanos = start)
    keys = loaded.numKeys
  }

  /**
   * Reopens the instance `closeIdle` closed from its flushed directory, where it holds the
   * loaded version exactly as the open instance did, when the load is one the open instance
   * could have served (`servable`: the version itself, or an earlier point of its lineage);
   * whether it did. The one place a reopen is decided; a load asks first with the version
   * itself, then, having read its version file, with its lineage. A directory RocksDB cannot
   * open is left to the full load (`openFresh` restores the version into it again).
   */
  private def reopenIdle(servable: Boolean): Boolean = instance match {
    case StoreInstance.Closed(bytes, true) if servable =>
      instance = StoreInstance.Closed(bytes, flushedIdle = false)
      try {
        instance = StoreInstance.Open(new LocalRocksDB(workDir, conf, mustExist = true))
        true
      } catch {
        case NonFatal(e) =>
          logWarning(s"rockstate: reopening $storeId from its local directory $workDir " +
            "failed; loading it from its snapshot and changelogs instead", e)
          loaded = loaded.unloaded
          false
      }
    case _ => false
  }

  /**
   * Opens `m` from the newest snapshot of its lineage when one landed after its version file
   * (`NewerSnapshot`), else, or when that one cannot be restored, from the snapshot it names.
   * Returns the changelogs replayed and the repairs made.
   */
  private def openNewest(m: VersionManifest, path: Option[String],
      fetched: CheckpointFetch): (Int, Int) = {
    val newer = NewerSnapshot.of(m, checkpointDir, conf, fetched.neededBy)
    val opened = newer.flatMap { case (rebased, snapshot) =>
      try Some(openFresh(Some(rebased), fetched, Some(snapshot))) catch {
        case e: UnreadableSnapshot =>
          logWarning(s"rockstate: loading version ${m.version} of $storeId: ${e.getMessage}; " +
            "loading it from the snapshot its version file names instead", e)
          None
      }
    }
    opened.map(replayed => (replayed, 0)).getOrElse {
      if (m.snapshot.isEmpty) (openFresh(Some(m), fetched), 0)
      else {
        val (replayed, repairs) = repair.open(m, path, fetched)(v => openFresh(Some(v), fetched))
        // The next commit snapshots, so that no later load needs the repair again.
        if (repairs > 0) forceOwed = true
        (replayed, repairs)
      }
    }
  }

  private def canCatchUp(m: VersionManifest): Boolean =
    isOpen && !batch.wrote && holdsEarlierPointOf(m)

  /** Whether the loaded version is an earlier point of `m`'s lineage. */
  private def holdsEarlierPointOf(m: VersionManifest): Boolean = loaded.version >= 0 &&
    loaded.version < m.version && stateIdAt(m, loaded.version) == loaded.stateId

  /** The state id `m`'s lineage has at version `v`, as far as this instance can tell. */
  private def stateIdAt(m: VersionManifest, v: Long): String =
    m.changelogs.find(_.version == v).map(_.path).getOrElse {
      if (m.snapshot.isEmpty && m.changelogs.headOption.forall(_.version == v + 1)) EmptyState
      else if (m.snapshot.exists(_.version == v) && m.snapshot == lineage.base) {
        lineage.baseStateId
      }
      else "unknown"
    }

  /**
   * Opens a new RocksDB instance from the version's snapshot and replays its changelogs. A
   * snapshot that cannot be restored (a file missing, or not matching its size and CRC32)
   * fails with `UnreadableSnapshot`; a changelog that cannot be replayed fails as it is.
   * `snapshot`: that snapshot's manifest, when it was read already.
   */
  private def openFresh(manifest: Option[VersionManifest], fetched: CheckpointFetch,
      snapshot: Option[SnapshotManifest] = None): Int = {
    discardChangelog()
    closeDb()
    val restored = try {
      val r = restore.restoreSnapshot(manifest, workDir, fetched, snapshot)
      instance = StoreInstance.Open(new LocalRocksDB(workDir, conf))
      r
    } catch {
      case NonFatal(e) if manifest.exists(_.snapshot.isDefined) =>
        throw new UnreadableSnapshot(manifest.get.snapshot.get, e)
    }
    manifest match {
      case Some(m) =>
        m.changelogs.foreach(restore.replay(_, fetched, rocksDB))
        adoptLineage(m, Some(restored.stateId), Some(restored.confirmed))
        m.changelogs.size
      case None =>
        loaded = LoadedVersion.empty(conf.rowChecksums).copy(confirmedFiles = restored.confirmed,
          commitId = loaded.commitId)
        0
    }
  }

  /**
   * Makes `m`'s lineage the loaded one; its base's state id is `baseStateId` when known (just
   * restored), the loaded one's when the base is the same, else read from its manifest.
   */
  private def adoptLineage(m: VersionManifest, baseStateId: Option[String] = None,
      confirmed: Option[ConfirmedFiles] = None): Unit = {
    val id = baseStateId.getOrElse {
      if (m.snapshot == lineage.base) lineage.baseStateId
      else restore.stateIdOf(m.snapshot, s"version ${m.version}")
    }
    loaded = LoadedVersion(m.version, Lineage.of(m, id), m.numKeys,
      m.columnFamilies.map(c => c.name -> c.id).toMap, m.rowChecksums,
      confirmed.getOrElse(loaded.confirmedFiles), byCommit = false, loaded.commitId)
    if (m.rowChecksums != conf.rowChecksums && !toldOfChecksums) {
      toldOfChecksums = true
      logInfo(s"rockstate: $storeId was created ${if (m.rowChecksums) "with" else "without"} " +
        s"row checksums and keeps that layout; ${RockstateConf.RowChecksumEnabled}=" +
        s"${conf.rowChecksums} applies to new checkpoints only")
    }
  }

  /**
   * Makes `version` the loaded version rebuilt from the snapshot of `snapshotVersion` on its
   * lineage plus the changes after it, whatever later snapshots exist (Spark's
   * replayStateFromSnapshot: reading state past a damaged snapshot, or checking one). This
   * instance's own upload of that snapshot is waited for.
   */
  def loadFromSnapshot(snapshotVersion: Long, version: Long, id: Option[String]): Unit = {
    if (snapshotVersion < 1 || snapshotVersion > version) {
      throw new IllegalArgumentException(s"rockstate: cannot rebuild version $version of " +
        s"$storeId from a snapshot of version $snapshotVersion (it must be from 1 to $version)")
    }
    awaitLocalCheckpoint()
    snapshots.await(conf.snapshotUploadTimeoutMs)
    val start = System.nanoTime()
    val fetched = newFetch(s"version $version from the snapshot of $snapshotVersion")
    val endPath = id.map(VersionFile.pathOf(version, _))
    val replayed = try {
      val end = restore.readVersion(version, endPath, fetched)
      openFresh(Some(repair.rebuilt(snapshotVersion, end, endPath, fetched)), fetched)
    } catch {
      case e: UnreadableSnapshot => throw e.getCause // asked for this very snapshot
    }
    loadedNow(version, start)
    lastLoad = LoadStats(Elapsed.sinceMs(start), fetched.bytes, fetched.files, replayed)
  }

  /**
   * Every change of versions `from` to `to`, in order, on the lineage of `to` (exactly the
   * attempt `id` names, with Spark's checkpoint format 2): Spark's state change feed.
   */
  def changes(from: Long, to: Long, id: Option[String]): Iterator[ChangeRecord] = {
    val fetched = newFetch(s"the changes of versions $from to $to")
    val endPath = id.map(VersionFile.pathOf(to, _))
    if (to < 1) throw new IllegalArgumentException(
      s"rockstate: version $to of $storeId has no changes (versions start at 1)")
    val end = restore.readVersion(to, endPath, fetched)
    new ChangeFeed(checkpointDir, restore, fetched).records(from, end, endPath)
  }

  /** Starts from empty state labelled `version` (Spark's loadEmpty, used by state rewrites). */
  def loadEmpty(version: Long): Unit = {
    awaitLocalCheckpoint()
    val start = System.nanoTime()
    openFresh(None, newFetch(s"version $version"))
    loadedNow(version, start)
    batch = batch.copy(changed = true)
  }

  // ---- commit ----

  /**
   * Makes `version` durable: publishes its version file (lineage and the batch's changes, one
   * write under a unique name; a version exists once it is there), and when a snapshot is due
   * takes its local checkpoint and queues the upload. A crash before the publish leaves the
   * previous version intact and nothing behind (object stores) or a temporary file for cleanup.
   *
   * A commit that began more than half the orphan grace after its load (a paused task, a
   * zombie) first checks that no later version exists and that its lineage is still all
   * there; one that took more than half the grace itself checks both again after publishing,
   * and withdraws its version file if cleanup or a later version overtook it meanwhile
   * (`LateCommitChecks`).
   */
  def commit(version: Long, forceSnapshot: Boolean,
      listener: SnapshotListener = SnapshotListener.Silent): VersionManifest = {
    val start = System.nanoTime()
    awaitLocalCheckpoint() // a commit without writes since the last one
    snapshots.abandonHung()
    rocksDB.endBatch() // the rows the batch read and wrote are the new version's
    val log = changelogWriter()
    // The writes are the commit's now; until it ends the instance holds them uncommitted.
    batch = batch.copy(changelog = None, changed = true)
    log.finish()
    val late = conf.outlivedGrace(Elapsed.sinceMs(batch.startedAtNanos))
    // The commit's unique id, in its version file's path, named before anything refers to it.
    val id = UUID.randomUUID().toString
    val path = VersionFile.pathOf(version, id)
    val versionFile = local.newWorkPath("version")
    // With unloadOnCommit an earlier instance's upload may still run if Spark closed that
    // instance off the task: it lands first, so the lineage rebases onto it.
    if (conf.unloadOnCommit && !snapshots.awaitOtherInstances()) {
      logWarning(s"rockstate: an earlier instance's snapshot upload of $storeId was abandoned " +
        s"(snapshotUploadTimeoutMs); version $version commits without it")
    }
    val (manifest, fileBytes, syncMs) = try {
      rebase(version)
      // No confirmed snapshot for too long (uploads failing or hung): the chain stops here.
      // A changed family table is snapshotted too, where Spark's provider snapshots it.
      val syncMs = if (lineage.chain.size + 1 > conf.maxChangelogChain) {
        val length = lineage.chain.size
        val ms = snapshotOnCommitPath(version, path, listener)
        logWarning(s"rockstate: $storeId had $length changelogs since its last " +
          s"confirmed snapshot (at most ${conf.maxChangelogChain}); version $version was " +
          "snapshotted on the commit path")
        ms
      } else if (batch.families != loaded.families) {
        snapshotOnCommitPath(version, path, listener)
      } else 0L
      if (late) lateChecks.beforePublish(version, lineage.pathsBefore(version))
      val header = manifestOf(version, log, Elapsed.sinceMs(start))
      VersionFile.write(header, log.file, versionFile)
      val (size, crc) = checkpointDir.publishVersion(versionFile, path)
      local.adopt(versionFile, path, crc)
      if (conf.outlivedGrace(Elapsed.sinceMs(start))) {
        lateChecks.afterPublish(version, path, lineage.pathsBefore(version))
      }
      swap(lineage.extendedBy(ChangelogRef(version, path, size, crc, log.records)))
      (header.copy(changelogs = lineage.chain), size, syncMs)
    } finally {
      log.file.delete()
      versionFile.delete()
    }
    loaded = loaded.copy(version = version, numKeys = keys, families = batch.families,
      byCommit = true, commitId = id)
    batch = BatchState.begin(loaded.families)
    val forced = forceSnapshot || forceOwed
    val begun = syncMs == 0 && snapshotDue(version, forced) && startSnapshot(version, listener)
    // Only a repair's snapshot is owed until one begins (`snapshotDue` says why not Spark's).
    forceOwed = forceOwed && syncMs == 0 && !begun
    // A snapshot flushes (or flushed); otherwise the store is about to idle with the batch's
    // writes.
    if (!begun && syncMs == 0) rocksDB.flushIfAboveIdleShare()
    val (stats, done, failed) = snapshots.drainCompleted()
    lastCommit = CommitStats(fileBytes, log.records, syncMs, stats, done, failed,
      forcedSnapshots = if (forced && (syncMs > 0 || begun)) 1 else 0)
    manifest
  }

  /**
   * Whether the version just committed snapshots: every checkpoint version (the same versions
   * in every partition, so that their snapshots make one checkpoint), a lineage that missed
   * some (at twice the interval's length), or a `forced` one: Spark's forceSnapshotOnCommit for
   * a store its coordinator sees lagging, or a load that repaired a damaged snapshot. Spark's
   * is not owed when the previous upload keeps it from beginning: that upload reports to
   * Spark's coordinator when it lands, and one owed to the next commit could still be uploading
   * when a checkpoint version comes, which would then have none.
   */
  private def snapshotDue(version: Long, forced: Boolean): Boolean =
    forced || conf.isCheckpointVersion(version) ||
      lineage.chain.size >= 2 * conf.snapshotInterval

  /** The version file's header: its lineage up to, not including, its own changes. */
  private def manifestOf(version: Long, log: Changelog.Writer, commitMs: Long) = VersionManifest(
    formatVersion = VersionManifest.FormatVersion,
    version = version,
    operatorId = operatorId, partitionId = partitionId, storeName = storeName,
    numKeys = keys,
    useColumnFamilies = useColumnFamilies,
    columnFamilies = familyEntries,
    snapshot = lineage.base,
    changelogs = lineage.chain,
    commit = Some(CommitRecord(log.file.length, log.records, commitMs)),
    createdAtMs = System.currentTimeMillis(),
    writer = VersionManifest.Writer,
    rowChecksums = loaded.rowChecksums)

  /**
   * Moves the lineage onto the newest confirmed snapshot that is a point of it, still in the
   * window cleanup never drops a snapshot from (versions after the oldest retained one), and
   * still there.
   */
  private def rebase(version: Long): Unit = {
    val onLineage = snapshots.newest.filter { case (ref, refStateId) =>
      lineage.passesThrough(ref, refStateId) && conf.keepsSnapshotUntil(ref.version, version)
    }
    onLineage.find { case (ref, refStateId) =>
      val there = checkpointDir.exists(ref.path)
      if (!there) {
        logWarning(s"rockstate: snapshot ${ref.path} of $storeId was deleted before a commit " +
          "rebased onto it; the lineage keeps its changelogs")
        snapshots.forget((ref, refStateId))
      }
      there
    }.foreach { case (ref, refStateId) => swap(lineage.rebasedOnto(ref, refStateId)) }
  }

  private def snapshotManifestOf(version: Long, syncMs: Long, stateId: String) = SnapshotManifest(
    VersionManifest.FormatVersion, version, operatorId, partitionId, storeName, stateId, keys,
    useColumnFamilies, familyEntries, Nil, SnapshotStats.Zero.copy(syncMs = syncMs), 0L,
    VersionManifest.Writer)

  /**
   * Snapshots `version` now, on the task, and makes it the version's base (the lineage reached
   * `maxChangelogChain` changelogs without a confirmed snapshot, or the family table changed).
   * Returns the time it took.
   */
  private def snapshotOnCommitPath(version: Long, versionPath: String,
      listener: SnapshotListener): Long = {
    val start = System.nanoTime()
    val (m, path) = syncSnapshots.onCommitPath(rocksDB, snapshotManifestOf(version, 0L,
      versionPath), loaded.confirmedFiles, listener, start)
    swap(Lineage.snapshot(SnapshotRef(version, path), m.stateId))
    math.max(1L, Elapsed.sinceMs(start))
  }

  /** Begins the snapshot of the version just committed (`SyncSnapshots.begin`). */
  private def startSnapshot(version: Long, listener: SnapshotListener): Boolean =
    syncSnapshots.begin(rocksDB, snapshotManifestOf(version, 0L, loaded.stateId),
      loaded.confirmedFiles, listener)

  /** Waits for the synchronous part of the snapshot the last commit began, if it still runs. */
  private def awaitLocalCheckpoint(): Unit = syncSnapshots.await()

  /** Waits until no snapshot upload of this store is under way; false on timeout. */
  def awaitUploads(timeoutMs: Long): Boolean = snapshots.await(timeoutMs)

  /** Throws away uncommitted writes: the next load reopens the last committed version. */
  def rollback(): Unit = {
    awaitLocalCheckpoint()
    val wrote = batch.wrote
    discardChangelog()
    forgetBatchRows()
    if (wrote) {
      closeDb()
      loaded = loaded.unloaded
      batch = BatchState.begin(loaded.families)
      keys = loaded.numKeys
    }
  }

  /**
   * Drops local files that no manifest in the checkpoint location references any more: `keep`
   * is what a cleanup that started at `since` (`System.nanoTime`) found referenced.
   */
  def pruneCache(keep: Set[String], since: Long): Unit =
    local.prune(keep ++ lineage.chain.map(_.path), since)

  /**
   * Closes the instance when it holds a committed version and nothing else (no write since),
   * keeping the loaded version's lineage and every local file (`maxOpenStores`). Its memtables
   * are flushed first, so the directory holds the version: a next load the open instance would
   * have served reopens it from there, with no read of the checkpoint location (should the
   * flush fail, the next load restores the version as a fresh one). Whether it closed.
   */
  def closeIdle(): Boolean = {
    awaitLocalCheckpoint()
    if (!isOpen || batch.wrote) false
    else {
      val flushed = try {
        rocksDB.flush()
        true
      } catch {
        case NonFatal(e) =>
          logWarning(s"rockstate: flushing the idle $storeId before closing it failed; its " +
            "next load restores its version from the snapshot and changelogs", e)
          false
      }
      closeDb()
      instance = StoreInstance.Closed(stateBytes, flushedIdle = flushed)
      true
    }
  }

  def close(): Unit = {
    awaitLocalCheckpoint()
    discardChangelog()
    closeDb()
    FileUtils.deleteDirectory(workDir)
    local.release(conf.localRecovery)
  }

  private def discardChangelog(): Unit = {
    batch.changelog.foreach { w =>
      w.close()
      w.file.delete()
    }
    batch = batch.copy(changelog = None)
  }

  /** The rows held are of the version the instance held: a load or a rollback drops them. */
  private def forgetBatchRows(): Unit = instance match {
    case StoreInstance.Open(db) => db.forgetBatchRows()
    case _: StoreInstance.Closed =>
  }

  /** Closes the instance, if open; either way no flushed directory is left to reopen. */
  private def closeDb(): Unit = instance = instance match {
    case StoreInstance.Open(db) =>
      db.close()
      StoreInstance.Closed(db.sstBytes, flushedIdle = false)
    case StoreInstance.Closed(bytes, _) => StoreInstance.Closed(bytes, flushedIdle = false)
  }

  private def newFetch(neededBy: String) = new CheckpointFetch(local, checkpointDir, conf, neededBy)
}

object VersionedRocksDB {
  private val EmptyState = SnapshotRestore.EmptyState
}
