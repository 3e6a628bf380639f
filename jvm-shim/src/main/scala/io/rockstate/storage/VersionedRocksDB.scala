package io.rockstate.storage

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{ChangeRecord, Changelog, ChangelogRef, ColumnFamilyEntry,
  CommitRecord, SnapshotManifest, SnapshotRef, SnapshotStats, VersionFile, VersionManifest}
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

  // Volatile: Spark's operators read the figures of a store its maintenance thread may close.
  @volatile private var db: Option[LocalRocksDB] = None
  // The SST bytes of the version the last instance held as it closed (`stateBytes`).
  @volatile private var closedStateBytes = 0L
  // `closeIdle` closed the instance with the loaded version flushed into `workDir`, which
  // nothing has touched since: a load that the open instance could have served reopens it from
  // there. Every other close clears it (`closeDb`), and with it anything that rewrites the
  // directory.
  private var flushedIdle = false
  private var loaded: Long = -1L
  private var dirty = false
  // The loaded version's lineage; only `swap` assigns it.
  private var lineage: Lineage = Lineage.Empty
  private var keys: Long = 0L
  private var families: Map[String, Int] = DefaultFamilies
  // The family table of the last loaded or committed version: a commit that changes it is
  // snapshotted on the commit path, as Spark's provider does, so that Spark's state reader
  // finds a snapshot of it (snapshotStartBatchId) exactly where it would on Spark's provider.
  private var familiesAtLoad: Map[String, Int] = DefaultFamilies
  private var confirmedFiles = new ConfirmedFiles(Nil, "")
  private var loadedAtNanos = System.nanoTime()
  private var changelog: Option[Changelog.Writer] = None
  private var lastLoad = LoadStats(0, 0, 0, 0)
  // Whether `loaded` was reached by this instance's commit rather than by a load.
  private var loadedByCommit = false
  private var lastCommit = CommitStats.Zero
  private var forceOwed = false
  private var commitId = ""
  // Whether the loaded lineage's values carry checksums: the store's, or for a new one the conf.
  private var checksums = conf.rowChecksums
  private var toldOfChecksums = false

  def loadedVersion: Long = loaded
  def numKeys: Long = keys
  def columnFamilyIds: Map[String, Int] = families
  def loadStats: LoadStats = lastLoad
  def commitStats: CommitStats = lastCommit
  /** The unique id of the last commit (its version file's uuid): Spark's checkpoint id. */
  def lastCommitId: String = commitId
  /** Whether every value of the loaded version carries its row checksum (`RowChecksum`). */
  def rowChecksums: Boolean = checksums
  def memoryBytes: Long = db.map(_.approximateMemoryBytes).getOrElse(0L)
  /** The loaded version's SST bytes; once its instance closed, as it closed. */
  def stateBytes: Long = db.map(_.sstBytes).getOrElse(closedStateBytes)

  private def familyEntries: Seq[ColumnFamilyEntry] =
    families.toSeq.sortBy(_._2).map { case (n, i) => ColumnFamilyEntry(n, i) }

  /** The version's identity: the path of its changelog (unique per commit attempt). */
  private def stateId: String = lineage.stateId

  private def swap(next: Lineage): Unit = lineage = next

  // A match, not `getOrElse`: this runs several times for every row a task writes.
  def rocksDB: LocalRocksDB = db match {
    case Some(open) => open
    case None => throw new IllegalStateException(s"rockstate: $storeId has no version loaded")
  }

  def addKeys(delta: Long): Unit = keys += delta

  def assignColumnFamily(name: String): Int = families.getOrElse(name, {
    val used = families.values.toSet
    val id = Iterator.from(1).find(i => !used.contains(i)).get
    require(id < 0xffff, s"rockstate: $storeId cannot hold more than 65534 column families")
    families += name -> id
    dirty = true
    id
  })

  def dropColumnFamily(name: String): Unit = {
    families -= name
    dirty = true
  }

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
    dirty = true
    changelog match {
      case Some(w) => w
      case None =>
        awaitLocalCheckpoint() // the first write after a commit: its snapshot is taken first
        val w = new Changelog.Writer(local.newWorkPath("changelog"), conf.changelogCompression)
        changelog = Some(w)
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
    loadedAtNanos = start
    awaitLocalCheckpoint() // counted in the load's time
    val wanted = id.map(VersionFile.pathOf(version, _))
    val reopenedAsIs = flushedIdle && holdsExactly(version, wanted) && reopenIdle()
    if (db.isDefined && !dirty && holdsExactly(version, wanted)) {
      // The instance's own commit made this version: the batch starting from it loads
      // nothing. (A repeated load within one batch keeps the batch's figures.)
      if (loadedByCommit || reopenedAsIs) {
        val reopened = if (reopenedAsIs) 1 else 0
        lastLoad = LoadStats(Elapsed.sinceMs(start), 0, 0, 0, reopened = reopened)
      }
      loadedByCommit = false
      return
    }
    // The rows held are of the version the instance held: not of the one loaded now.
    db.foreach(_.forgetBatchRows())
    val fetched = newFetch(s"version $version")
    if (version == 0 && id.isDefined) {
      throw new IllegalArgumentException(s"rockstate: version 0 of $storeId is empty state " +
        s"and has no checkpoint id, got ${id.get}")
    }
    val manifest = if (version == 0) None
      else Some(restore.readVersion(version, wanted, fetched))
    val reopened = flushedIdle && manifest.exists(holdsEarlierPointOf) && reopenIdle()
    val (replayed, repaired) = manifest match {
      case Some(m) if canCatchUp(m) =>
        // The open instance holds an earlier version of this lineage: replay the rest.
        val rest = m.changelogs.filter(_.version > loaded)
        rest.foreach(restore.replay(_, fetched, rocksDB))
        adoptLineage(m)
        (rest.size, 0)
      case Some(m) => openNewest(m, wanted, fetched)
      case None => (openFresh(None, fetched), 0)
    }
    loaded = version
    dirty = false
    loadedByCommit = false
    lastLoad = LoadStats(Elapsed.sinceMs(start), fetched.bytes, fetched.files,
      replayed, repaired, if (reopened) 1 else 0)
  }

  /**
   * Reopens the instance `closeIdle` closed from its flushed directory, where it holds the
   * loaded version exactly as the open instance did; whether it did. A directory RocksDB cannot
   * open is left to the full load (`openFresh` restores the version into it again).
   */
  private def reopenIdle(): Boolean = {
    flushedIdle = false
    try {
      db = Some(new LocalRocksDB(workDir, conf, mustExist = true))
      true
    } catch {
      case NonFatal(e) =>
        logWarning(s"rockstate: reopening $storeId from its local directory $workDir failed; " +
          s"loading it from its snapshot and changelogs instead", e)
        loaded = -1L
        false
    }
  }

  /** Whether the loaded version is `version`, and the attempt `wanted` names when it names one. */
  private def holdsExactly(version: Long, wanted: Option[String]): Boolean =
    loaded == version && wanted.forall(_ == stateId)

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
    db.isDefined && !dirty && holdsEarlierPointOf(m)

  /** Whether the loaded version is an earlier point of `m`'s lineage. */
  private def holdsEarlierPointOf(m: VersionManifest): Boolean =
    loaded >= 0 && loaded < m.version && stateIdAt(m, loaded) == stateId

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
      db = Some(new LocalRocksDB(workDir, conf))
      r
    } catch {
      case NonFatal(e) if manifest.exists(_.snapshot.isDefined) =>
        throw new UnreadableSnapshot(manifest.get.snapshot.get, e)
    }
    confirmedFiles = restored.confirmed
    manifest match {
      case Some(m) =>
        m.changelogs.foreach(restore.replay(_, fetched, rocksDB))
        adoptLineage(m, Some(restored.stateId))
        m.changelogs.size
      case None =>
        swap(Lineage.Empty)
        keys = 0
        families = DefaultFamilies
        familiesAtLoad = families
        checksums = conf.rowChecksums
        0
    }
  }

  /**
   * Makes `m`'s lineage the loaded one; its base's state id is `baseStateId` when known (just
   * restored), the loaded one's when the base is the same, else read from its manifest.
   */
  private def adoptLineage(m: VersionManifest, baseStateId: Option[String] = None): Unit = {
    val id = baseStateId.getOrElse {
      if (m.snapshot == lineage.base) lineage.baseStateId
      else restore.stateIdOf(m.snapshot, s"version ${m.version}")
    }
    swap(Lineage.of(m, id))
    keys = m.numKeys
    families = m.columnFamilies.map(c => c.name -> c.id).toMap
    familiesAtLoad = families
    checksums = m.rowChecksums
    if (checksums != conf.rowChecksums && !toldOfChecksums) {
      toldOfChecksums = true
      logInfo(s"rockstate: $storeId was created ${if (checksums) "with" else "without"} row " +
        s"checksums and keeps that layout; ${RockstateConf.RowChecksumEnabled}=" +
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
    loadedAtNanos = System.nanoTime()
    val start = System.nanoTime()
    val fetched = newFetch(s"version $version from the snapshot of $snapshotVersion")
    val endPath = id.map(VersionFile.pathOf(version, _))
    val replayed = try {
      val end = restore.readVersion(version, endPath, fetched)
      openFresh(Some(repair.rebuilt(snapshotVersion, end, endPath, fetched)), fetched)
    } catch {
      case e: UnreadableSnapshot => throw e.getCause // asked for this very snapshot
    }
    loaded = version
    dirty = false
    loadedByCommit = false
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
    loadedAtNanos = System.nanoTime()
    openFresh(None, newFetch(s"version $version"))
    loaded = version
    dirty = true
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
    changelog = None
    log.finish()
    val late = conf.outlivedGrace(Elapsed.sinceMs(loadedAtNanos))
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
      } else if (families != familiesAtLoad) {
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
    loaded = version
    dirty = false
    loadedByCommit = true
    familiesAtLoad = families
    commitId = id
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
    rowChecksums = checksums)

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
      versionPath), confirmedFiles, listener, start)
    swap(Lineage.snapshot(SnapshotRef(version, path), m.stateId))
    math.max(1L, Elapsed.sinceMs(start))
  }

  /** Begins the snapshot of the version just committed (`SyncSnapshots.begin`). */
  private def startSnapshot(version: Long, listener: SnapshotListener): Boolean =
    syncSnapshots.begin(rocksDB, snapshotManifestOf(version, 0L, stateId), confirmedFiles,
      listener)

  /** Waits for the synchronous part of the snapshot the last commit began, if it still runs. */
  private def awaitLocalCheckpoint(): Unit = syncSnapshots.await()

  /** Waits until no snapshot upload of this store is under way; false on timeout. */
  def awaitUploads(timeoutMs: Long): Boolean = snapshots.await(timeoutMs)

  /** Throws away uncommitted writes: the next load reopens the last committed version. */
  def rollback(): Unit = {
    awaitLocalCheckpoint()
    discardChangelog()
    db.foreach(_.forgetBatchRows())
    if (dirty) {
      closeDb()
      loaded = -1L
      dirty = false
    }
  }

  /**
   * Drops local files that no manifest in the checkpoint location references any more: `keep`
   * is what a cleanup that started at `since` (`System.nanoTime`) found referenced.
   */
  def pruneCache(keep: Set[String], since: Long): Unit =
    local.prune(keep ++ lineage.chain.map(_.path), since)

  /** Whether a RocksDB instance is open (none before the first load, after `closeIdle`). */
  def isOpen: Boolean = db.isDefined

  /**
   * Closes the instance when it holds a committed version and nothing else (no write since),
   * keeping the loaded version's lineage and every local file (`maxOpenStores`). Its memtables
   * are flushed first, so the directory holds the version: a next load the open instance would
   * have served reopens it from there, with no read of the checkpoint location (should the
   * flush fail, the next load restores the version as a fresh one). Whether it closed.
   */
  def closeIdle(): Boolean = {
    awaitLocalCheckpoint()
    if (db.isEmpty || dirty || changelog.isDefined) false
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
      flushedIdle = flushed
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
    changelog.foreach { w =>
      w.close()
      w.file.delete()
    }
    changelog = None
  }

  private def closeDb(): Unit = {
    flushedIdle = false
    db.foreach { d =>
      d.close()
      closedStateBytes = d.sstBytes
    }
    db = None
  }

  private def newFetch(neededBy: String) = new CheckpointFetch(local, checkpointDir, conf, neededBy)
}

object VersionedRocksDB {
  private val EmptyState = SnapshotRestore.EmptyState
  private val DefaultFamilies: Map[String, Int] = Map("default" -> 0)
}
