package io.rockstate.storage

import java.io.{File, FileInputStream}
import java.nio.file.{Files, LinkOption}
import java.util.UUID
import java.util.concurrent.{Future => JFuture}
import java.util.concurrent.atomic.AtomicReference

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

/** Figures of the last load, reported as custom metrics. */
final case class LoadStats(loadMs: Long, bytesDownloaded: Long, filesDownloaded: Int,
    changelogsReplayed: Int)

/** What the last commit did, for the batch's metrics. */
final case class CommitFigures(
    commitBytes: Long, // written to the checkpoint location on the task's path
    changelogRecords: Long,
    snapshotSyncMs: Long, // synchronous part of a snapshot this commit took (0: none taken)
    completed: SnapshotStats, // snapshots whose upload ended since the previous commit, summed
    snapshotsCompleted: Int,
    snapshotsFailed: Int)

object CommitFigures {
  val Zero: CommitFigures = CommitFigures(0, 0, 0, SnapshotStats.Zero, 0, 0)
}

/**
 * A store's RocksDB together with the version it holds.
 *
 * Commit path (synchronous, on the task): one version file (`VersionFile`) is published under
 * a unique name: the version's lineage (the newest confirmed snapshot plus every version's
 * changes after it) and the batch's own changes, logged as they were made. Every
 * `snapshotInterval` versions the commit
 * also takes a local hard-link checkpoint (a snapshot's synchronous part) and hands it to the
 * background uploader (the asynchronous part); later commits rebase onto it once its manifest
 * is written. Loading a version = its snapshot plus the replay of its changelogs, served from
 * the open instance when it holds an earlier point of the same lineage, else from the
 * executor's local files, downloading only what is missing.
 *
 * Not thread-safe on its own: the provider serialises task access and maintenance. Upload
 * threads touch only the atomics and `completions`.
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

  private var db: Option[LocalRocksDB] = None
  private var loaded: Long = -1L
  private var dirty = false
  // The loaded version's lineage: `base` (None: empty state) plus the replay of `chain`.
  private var base: Option[SnapshotRef] = None
  private var baseStateId: String = EmptyState
  private var chain: Vector[ChangelogRef] = Vector.empty
  private var keys: Long = 0L
  private var families: Map[String, Int] = DefaultFamilies
  private var confirmedFiles = new ConfirmedFiles(Nil, "")
  private var loadedAtNanos = System.nanoTime()
  private var changelog: Option[Changelog.Writer] = None
  private var lastLoad = LoadStats(0, 0, 0, 0)
  // Whether `loaded` was reached by this instance's commit rather than by a load.
  private var loadedByCommit = false
  private var lastCommit = CommitFigures.Zero
  private var commitId = ""

  // The snapshot upload under way, if any; an upload past its timeout is abandoned.
  private val inFlight = new AtomicReference[InFlightUpload](null)
  // The newest snapshot this instance's uploads confirmed, with the state id it holds.
  private val newestSnapshot = new AtomicReference[Option[(SnapshotRef, String)]](None)
  private val completions = new Object
  private var completed = (SnapshotStats.Zero, 0, 0) // stats, completed, failed; under completions

  def loadedVersion: Long = loaded
  def numKeys: Long = keys
  def columnFamilyIds: Map[String, Int] = families
  def loadStats: LoadStats = lastLoad
  def commitFigures: CommitFigures = lastCommit
  /** The unique id of the last commit (its version file's uuid): Spark's checkpoint id. */
  def lastCommitId: String = commitId
  def memoryBytes: Long = db.map(_.approximateMemoryBytes).getOrElse(0L)
  def stateBytes: Long = db.map(_.sstBytes).getOrElse(0L)

  private def familyEntries: Seq[ColumnFamilyEntry] =
    families.toSeq.sortBy(_._2).map { case (n, i) => ColumnFamilyEntry(n, i) }

  /** The version's identity: the path of its changelog (unique per commit attempt). */
  private def stateId: String = chain.lastOption.map(_.path).getOrElse(baseStateId)

  def rocksDB: LocalRocksDB = db.getOrElse(
    throw new IllegalStateException(s"rockstate: $storeId has no version loaded"))

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
    changelog.getOrElse {
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
    loadedAtNanos = System.nanoTime()
    val wanted = id.map(VersionFile.pathOf(version, _))
    if (db.isDefined && loaded == version && !dirty && wanted.forall(_ == stateId)) {
      // The instance's own commit made this version: the batch starting from it loads
      // nothing. (A repeated load within one batch keeps the batch's figures.)
      if (loadedByCommit) lastLoad = LoadStats(0, 0, 0, 0)
      loadedByCommit = false
      return
    }
    val start = System.nanoTime()
    val fetched = new Fetched(s"version $version")
    if (version == 0 && id.isDefined) {
      throw new IllegalArgumentException(s"rockstate: version 0 of $storeId is empty state " +
        s"and has no checkpoint id, got ${id.get}")
    }
    val manifest = if (version == 0) None else Some(readVersion(version, wanted, fetched))
    val replayed = manifest match {
      case Some(m) if canCatchUp(m) =>
        // The open instance holds an earlier version of this lineage: replay the rest.
        val rest = m.changelogs.filter(_.version > loaded)
        rest.foreach(replay(_, fetched))
        adoptLineage(m)
        rest.size
      case _ =>
        openFresh(manifest, fetched)
    }
    loaded = version
    dirty = false
    loadedByCommit = false
    lastLoad = LoadStats((System.nanoTime() - start) / 1000000, fetched.bytes, fetched.files,
      replayed)
  }

  private def canCatchUp(m: VersionManifest): Boolean =
    db.isDefined && !dirty && loaded >= 0 && loaded < m.version && stateIdAt(m, loaded) == stateId

  /** The state id `m`'s lineage has at version `v`, as far as this instance can tell. */
  private def stateIdAt(m: VersionManifest, v: Long): String =
    m.changelogs.find(_.version == v).map(_.path).getOrElse {
      if (m.snapshot.isEmpty && m.changelogs.headOption.forall(_.version == v + 1)) EmptyState
      else if (m.snapshot.exists(_.version == v) && m.snapshot == base) baseStateId
      else "unknown"
    }

  /** Opens a new RocksDB instance from the version's snapshot and replays its changelogs. */
  private def openFresh(manifest: Option[VersionManifest], fetched: Fetched): Int = {
    discardChangelog()
    closeDb()
    FileUtils.deleteDirectory(workDir)
    Files.createDirectories(workDir.toPath)
    val snapshotRef = manifest.flatMap(_.snapshot)
    val snapshot = snapshotRef.map(ref => checkpointDir.readSnapshotManifest(ref.path,
      fetched.neededBy))
    // Every file the rebuild needs, fetched in parallel first (each checked against its size
    // and CRC32): on an object store a load is bound by request latency, not bandwidth.
    fetched.prefetch(snapshot.toSeq.flatMap(_.files.map(f => (f.path, f.size, f.crc32))) ++
      manifest.toSeq.flatMap(_.changelogs.map(c => (c.path, c.size, c.crc32))))
    for (ref <- snapshotRef; s <- snapshot; f <- s.files) {
      val cached = fetched(f.path, f.size, f.crc32)
      // The manifest is checkpoint input: its names stay inside the work directory, and
      // what is linked or copied is the cache's own regular file, never through a symlink.
      val where = s"snapshot manifest ${checkpointDir.resolve(ref.path)}, file ${f.path}"
      val target = CheckpointPath.localFile(workDir, f.localName, where)
      if (!Files.isRegularFile(cached.toPath, LinkOption.NOFOLLOW_LINKS)) {
        throw new CorruptCheckpointException(s"rockstate: the cached copy $cached of ${f.path} " +
          s"($where) is not a regular file; delete the executor's local store files.")
      }
      // SSTs are immutable: link them. RocksDB rewrites its small files: copy those.
      if (f.kind == "sst") Files.createLink(target.toPath, cached.toPath)
      else Files.copy(cached.toPath, target.toPath)
    }
    for (ref <- snapshotRef; s <- snapshot) {
      // Format 3: the small files are packed inside the snapshot manifest.
      val where = checkpointDir.resolve(ref.path).toString
      s.metaPack.foreach(MetaPack.unpackInline(_, workDir, where))
      // RocksDB would open a directory without CURRENT as a new, empty database: never that.
      if (!new File(workDir, "CURRENT").isFile) {
        throw new CorruptCheckpointException(s"rockstate: the snapshot of ${fetched.neededBy} " +
          s"(${ref.path}) has no RocksDB CURRENT file; it is damaged, and is never read as " +
          "empty state. Restore it or restart the query from an earlier version.")
      }
    }
    confirmedFiles = new ConfirmedFiles(snapshot.toSeq.flatMap(_.files.filter(_.kind == "sst")),
      snapshotRef.map(_.path).getOrElse(""))
    db = Some(new LocalRocksDB(workDir, conf))
    manifest match {
      case Some(m) =>
        m.changelogs.foreach(replay(_, fetched))
        base = m.snapshot
        baseStateId = snapshot.map(_.stateId).getOrElse(EmptyState)
        adoptLineage(m)
        m.changelogs.size
      case None =>
        base = None
        baseStateId = EmptyState
        chain = Vector.empty
        keys = 0
        families = DefaultFamilies
        0
    }
  }

  private def adoptLineage(m: VersionManifest): Unit = {
    if (m.snapshot != base) {
      base = m.snapshot
      baseStateId = m.snapshot.map(ref =>
        checkpointDir.readSnapshotManifest(ref.path, s"version ${m.version}").stateId)
        .getOrElse(EmptyState)
    }
    chain = m.changelogs.toVector
    keys = m.numKeys
    families = m.columnFamilies.map(c => c.name -> c.id).toMap
  }

  private def replay(c: ChangelogRef, fetched: Fetched): Unit = {
    val file = fetched(c.path, c.size, c.crc32)
    val where = checkpointDir.resolve(c.path).toString
    // The whole file was just checked against the lineage's CRC32.
    val (changes, length) = if (!VersionFile.isVersionFile(c.path)) {
      (new FileInputStream(file), file.length)
    } else {
      val parsed = VersionFile.read(file, c.path, where, c.size, c.crc32, checkCrc = false)
      (VersionFile.changes(file, parsed), parsed.changesLength)
    }
    val target = rocksDB
    Changelog.replay(changes, length, where, new Changelog.Target {
      def put(k: Array[Byte], v: Array[Byte]): Unit = target.put(k, v)
      def merge(k: Array[Byte], v: Array[Byte]): Unit = target.merge(k, v)
      def delete(k: Array[Byte]): Unit = target.delete(k)
      def deleteRange(b: Array[Byte], e: Array[Byte]): Unit = target.deleteRange(b, e)
    })
  }

  /**
   * Reads a version's manifest: the landed version file's header (the file is fetched and
   * checked whole, its own changes are replayed from it next), or a format 1 or 2 manifest. A
   * format 1 manifest (a full snapshot listing its files) is turned into a snapshot manifest
   * once, so it joins the lineage like any other snapshot.
   */
  private def readVersion(version: Long, path: Option[String],
      fetched: Fetched): VersionManifest = {
    val entry = path match {
      case Some(p) => checkpointDir.versionEntry(version, p).getOrElse(
        throw checkpointDir.missingVersion(version, s" (attempt $p)"))
      case None => checkpointDir.findVersion(version).getOrElse(
        throw checkpointDir.missingVersion(version))
    }
    val m = if (!entry.isLegacy) {
      val (file, crc) = fetched.selfChecked(entry.path, entry.length)
      val where = checkpointDir.resolve(entry.path).toString
      val parsed = VersionFile.read(file, entry.path, where, entry.length, crc)
      if (parsed.manifest.version != version) {
        throw new CorruptCheckpointException(s"rockstate: version file $where says version " +
          s"${parsed.manifest.version}, its name $version; the checkpoint is corrupt.")
      }
      parsed.manifest
    } else checkpointDir.readManifest(version)
    if (!m.isLegacy) m
    else {
      // A format 2 snapshot manifest: it lists the small files one by one, as format 1 did.
      val snapshot = SnapshotManifest(2, version, operatorId,
        partitionId, storeName, m.stateId, m.numKeys, m.useColumnFamilies, m.columnFamilies,
        m.files, SnapshotStats.Zero, System.currentTimeMillis(), VersionManifest.Writer)
      val path = checkpointDir.writeSnapshotManifest(snapshot)
      m.copy(formatVersion = VersionManifest.FormatVersion,
        snapshot = Some(SnapshotRef(version, path)), files = Nil)
    }
  }

  /** Starts from empty state labelled `version` (Spark's loadEmpty, used by state rewrites). */
  def loadEmpty(version: Long): Unit = {
    loadedAtNanos = System.nanoTime()
    openFresh(None, new Fetched(s"version $version"))
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
   * and withdraws its version file if cleanup or a later version overtook it meanwhile.
   */
  def commit(version: Long, forceSnapshot: Boolean,
      listener: SnapshotListener = SnapshotListener.Silent): VersionManifest = {
    val start = System.nanoTime()
    abandonHungUpload()
    rocksDB.forgetReads() // the batch's reads: their memory ends with it
    val log = changelogWriter()
    changelog = None
    log.finish()
    val late = conf.outlivedGrace(sinceMs(loadedAtNanos))
    // The commit's unique id, in its version file's path, named before anything refers to it.
    val id = UUID.randomUUID().toString
    val path = VersionFile.pathOf(version, id)
    val versionFile = local.newWorkPath("version")
    val (manifest, fileBytes, syncMs) = try {
      rebase(version)
      // No confirmed snapshot for too long (uploads failing or hung): the chain stops here.
      val syncMs = if (chain.size + 1 > conf.maxChangelogChain) {
        snapshotOnCommitPath(version, path, listener)
      } else 0L
      if (late) {
        checkNotStale(version)
        checkLineage(version)
      }
      val header = manifestOf(version, log, sinceMs(start))
      VersionFile.write(header, log.file, versionFile)
      val (size, crc) = checkpointDir.publishVersion(versionFile, path)
      local.adopt(versionFile, path, crc)
      if (conf.outlivedGrace(sinceMs(start))) withdrawIfOvertaken(version, path)
      // After a snapshot of this very version its changes are in the snapshot already.
      if (base.forall(_.version < version)) {
        chain :+= ChangelogRef(version, path, size, crc, log.records)
      }
      (header.copy(changelogs = chain), size, syncMs)
    } finally {
      log.file.delete()
      versionFile.delete()
    }
    loaded = version
    dirty = false
    loadedByCommit = true
    commitId = id
    // Snapshots fall on the multiples of the interval in every partition, so that a version's
    // snapshots make one checkpoint; a lineage that missed some catches up at twice the length.
    val due = syncMs == 0 && (forceSnapshot || conf.isCheckpointVersion(version) ||
      chain.size >= 2 * conf.snapshotInterval)
    val asyncSyncMs = if (due) startSnapshot(version, listener) else 0L
    val (stats, done, failed) = completions.synchronized {
      val c = completed
      completed = (SnapshotStats.Zero, 0, 0)
      c
    }
    lastCommit = CommitFigures(fileBytes, log.records, syncMs + asyncSyncMs, stats, done, failed)
    manifest
  }

  /**
   * The commit took more than half the grace (a pause): cleanup may have dropped a file of its
   * lineage between its checks and its publish, or the batch may have run elsewhere and moved
   * on. Then the just-published version file is withdrawn (it could never load, or would
   * displace the attempt later versions built on) and the commit fails.
   */
  private def withdrawIfOvertaken(version: Long, path: String): Unit = {
    try {
      checkLineage(version)
      checkNotStale(version)
    } catch {
      case e: java.io.IOException =>
        checkpointDir.delete(path)
        throw e
    }
  }

  /** The version file's header: its lineage up to, not including, its own changes. */
  private def manifestOf(version: Long, log: Changelog.Writer, commitMs: Long) = VersionManifest(
    formatVersion = VersionManifest.FormatVersion,
    version = version,
    operatorId = operatorId, partitionId = partitionId, storeName = storeName,
    numKeys = keys,
    useColumnFamilies = useColumnFamilies,
    columnFamilies = familyEntries,
    snapshot = base,
    changelogs = chain,
    commit = Some(CommitStats(log.file.length, log.records, commitMs)),
    createdAtMs = System.currentTimeMillis(),
    writer = VersionManifest.Writer)

  /**
   * A later version means this attempt is stale (a zombie, or a task whose executor was given
   * up on): it must not go on as if its commit were the one Spark built on.
   */
  private def checkNotStale(version: Long): Unit = {
    if (checkpointDir.findVersion(version + 1).isDefined) {
      throw new java.io.IOException(s"rockstate: version ${version + 1} of $storeId exists " +
        s"already, so this attempt of version $version is stale (a paused task or a zombie " +
        "whose batch ran elsewhere); its commit fails.")
    }
  }

  /** A file of the lineage gone means cleanup moved past a paused attempt: never publish it. */
  private def checkLineage(version: Long): Unit = {
    // Everything but this commit's own changes (none after a snapshot on the commit path).
    val earlier = chain.filter(_.version < version)
    val missing = (base.map(_.path).toSeq ++ earlier.map(_.path)).filterNot(checkpointDir.exists)
    if (missing.nonEmpty) {
      throw new CorruptCheckpointException(s"rockstate: this attempt of version $version of " +
        s"$storeId started long ago and its lineage lost ${missing.mkString(", ")} to cleanup " +
        "meanwhile; it is not published (the batch is retried from the current state).")
    }
  }

  /**
   * Moves the lineage onto the newest confirmed snapshot, when it is a point of it, still in
   * the window cleanup never drops a snapshot from (versions after the oldest retained one),
   * and still there.
   */
  private def rebase(version: Long): Unit = newestSnapshot.get.foreach { case (ref, refStateId) =>
    if (base.forall(_.version < ref.version) &&
      chain.exists(c => c.version == ref.version && c.path == refStateId) &&
      ref.version > version - conf.minVersionsToRetain) {
      if (checkpointDir.exists(ref.path)) {
        base = Some(ref)
        baseStateId = refStateId
        chain = chain.filter(_.version > ref.version)
      } else {
        logWarning(s"rockstate: snapshot ${ref.path} of $storeId was deleted before a commit " +
          "rebased onto it; the lineage keeps its changelogs")
        newestSnapshot.compareAndSet(Some((ref, refStateId)), None)
      }
    }
  }

  private def snapshotManifestOf(version: Long, syncMs: Long, stateId: String) = SnapshotManifest(
    VersionManifest.FormatVersion, version, operatorId, partitionId, storeName, stateId, keys,
    useColumnFamilies, familyEntries, Nil, SnapshotStats.Zero.copy(syncMs = syncMs), 0L,
    VersionManifest.Writer)

  /**
   * The lineage reached `maxChangelogChain` changelogs without a confirmed snapshot: snapshot
   * now, on the task, and make it the version's base. Returns the time it took.
   */
  private def snapshotOnCommitPath(version: Long, versionPath: String,
      listener: SnapshotListener): Long = {
    val start = System.nanoTime()
    val checkpoint = local.newWorkPath(s"checkpoint-$version")
    try {
      rocksDB.checkpointTo(checkpoint)
      val (m, path) = SnapshotJob(snapshotManifestOf(version, 0L, versionPath), checkpoint,
        checkpointDir,
        local, confirmedFiles, conf, start).run(background = false)
      confirmedFiles.confirm(m.files.filter(_.kind == "sst"), path)
      logWarning(s"rockstate: $storeId had ${chain.size} changelogs since its last confirmed " +
        s"snapshot (at most ${conf.maxChangelogChain}); version $version was snapshotted on " +
        "the commit path")
      base = Some(SnapshotRef(version, path))
      baseStateId = m.stateId
      chain = Vector.empty
      newestSnapshot.set(Some((SnapshotRef(version, path), m.stateId)))
      listener.completed(m, path)
    } finally FileUtils.deleteQuietly(checkpoint)
    math.max(1L, sinceMs(start))
  }

  /**
   * The synchronous part of a snapshot: flush and a hard-link checkpoint, then the upload is
   * queued. Skipped while this store's previous snapshot is still uploading (the next commit
   * tries again). Returns the time spent; a failure here loses nothing, the version is durable.
   */
  private def startSnapshot(version: Long, listener: SnapshotListener): Long = {
    val upload = new InFlightUpload(version, System.nanoTime(), listener)
    if (!inFlight.compareAndSet(null, upload)) {
      listener.declined(version, "the store's previous snapshot is still uploading",
        countsAsFailure = false)
      return 0L
    }
    val start = upload.startedNanos
    val checkpoint = local.newWorkPath(s"checkpoint-$version")
    try {
      rocksDB.checkpointTo(checkpoint)
    } catch {
      case NonFatal(e) =>
        FileUtils.deleteQuietly(checkpoint)
        finishUpload(upload)
        logWarning(s"rockstate: local checkpoint of version $version of $storeId failed; " +
          "the next commit takes the snapshot instead", e)
        listener.declined(version, s"the local checkpoint failed: ${e.getMessage}",
          countsAsFailure = true)
        return 0L
    }
    val syncMs = sinceMs(start)
    val confirmed = confirmedFiles
    upload.future = SnapshotUploader.submit(SnapshotJob(snapshotManifestOf(version, syncMs,
      stateId),
      checkpoint, checkpointDir, local, confirmed, conf, start)) { result =>
      // A result after the upload was abandoned (timed out) is ignored: its manifest, if it
      // got written, is referenced by nothing and left to cleanup.
      if (inFlight.get eq upload) {
        result match {
          case Right((m, path)) =>
            confirmed.confirm(m.files.filter(_.kind == "sst"), path)
            newestSnapshot.set(Some((SnapshotRef(m.version, path), m.stateId)))
            logInfo(s"rockstate snapshot of version ${m.version} of $storeId uploaded: " +
              s"${m.stats.filesUploaded} files / ${m.stats.bytesUploaded} bytes new, " +
              s"${m.stats.filesReused} files / ${m.stats.bytesReused} bytes shared")
            completions.synchronized {
              val (s, n, f) = completed
              completed = (add(s, m.stats), n + 1, f)
            }
            listener.completed(m, path)
          case Left(e) =>
            logWarning(s"rockstate: snapshot upload of version $version of $storeId failed; " +
              "versions stay loadable from earlier snapshots and changelogs", e)
            countFailedUpload()
            listener.declined(version, s"the upload failed: ${e.getMessage}",
              countsAsFailure = true)
        }
        finishUpload(upload)
      }
    }
    syncMs
  }

  /** An upload running longer than `snapshotUploadTimeoutMs` is cancelled and counted failed. */
  private def abandonHungUpload(): Unit = {
    val upload = inFlight.get
    if (upload != null && sinceMs(upload.startedNanos) > conf.snapshotUploadTimeoutMs &&
      finishUpload(upload)) {
      Option(upload.future).foreach(_.cancel(true))
      logWarning(s"rockstate: snapshot upload of version ${upload.version} of $storeId did " +
        s"not finish within snapshotUploadTimeoutMs (${conf.snapshotUploadTimeoutMs}); " +
        "abandoned")
      countFailedUpload()
      upload.listener.declined(upload.version, "the upload did not finish within " +
        s"snapshotUploadTimeoutMs (${conf.snapshotUploadTimeoutMs} ms)", countsAsFailure = true)
    }
  }

  private def countFailedUpload(): Unit = completions.synchronized {
    val (s, n, f) = completed
    completed = (s, n, f + 1)
  }

  /** Clears the in-flight upload if it is still `upload`; true if this call did. */
  private def finishUpload(upload: InFlightUpload): Boolean = inFlight.synchronized {
    val mine = inFlight.compareAndSet(upload, null)
    inFlight.notifyAll()
    mine
  }

  /** Waits until no snapshot upload of this store is under way; false on timeout. */
  def awaitUploads(timeoutMs: Long): Boolean = inFlight.synchronized {
    val deadline = System.currentTimeMillis() + timeoutMs
    while (inFlight.get != null && System.currentTimeMillis() < deadline) {
      inFlight.wait(math.max(1L, deadline - System.currentTimeMillis()))
    }
    inFlight.get == null
  }

  private def add(a: SnapshotStats, b: SnapshotStats): SnapshotStats = SnapshotStats(
    a.syncMs + b.syncMs, a.asyncMs + b.asyncMs, a.bytesUploaded + b.bytesUploaded,
    a.bytesReused + b.bytesReused, a.filesUploaded + b.filesUploaded,
    a.filesReused + b.filesReused)

  /** Throws away uncommitted writes: the next load reopens the last committed version. */
  def rollback(): Unit = {
    discardChangelog()
    db.foreach(_.forgetReads())
    if (dirty) {
      closeDb()
      loaded = -1L
      dirty = false
    }
  }

  /** Drops local files that no manifest in the checkpoint location references any more. */
  def pruneCache(keep: Set[String]): Unit = local.prune(keep ++ chain.map(_.path))

  def close(): Unit = {
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
    db.foreach(_.close())
    db = None
  }

  /** Fetches checkpoint files through the local files, counting what was downloaded. */
  private final class Fetched(val neededBy: String) {
    var bytes = 0L
    var files = 0
    def apply(path: String, size: Long, crc32: Long): File = {
      val (file, downloaded) = local.fetch(checkpointDir, path, size, crc32, neededBy)
      count(downloaded)
      file
    }
    /**
     * Fetches files on `downloadThreads` threads; the first failure (a missing or damaged
     * file) is rethrown as it is once every fetch has ended.
     */
    def prefetch(wanted: Seq[(String, Long, Long)]): Unit = {
      val distinct = wanted.distinctBy(_._1)
      if (distinct.size <= 1 || conf.downloadThreads <= 1) {
        distinct.foreach { case (p, s, c) => apply(p, s, c) }
      } else {
        val futures = distinct.map { case (p, s, c) =>
          Downloads.pool(conf.downloadThreads).submit(new java.util.concurrent.Callable[Long] {
            def call(): Long = local.fetch(checkpointDir, p, s, c, neededBy)._2
          })
        }
        val results = futures.map { f =>
          try Right(f.get()) catch {
            case e: java.util.concurrent.ExecutionException => Left(e.getCause)
          }
        }
        results.foreach(_.foreach(count))
        results.collectFirst { case Left(e) => throw e }
      }
    }
    /** A file found by listing: returns it with its CRC32 (see `fetchSelfChecked`). */
    def selfChecked(path: String, size: Long): (File, Long) = {
      val (file, crc, downloaded) = local.fetchSelfChecked(checkpointDir, path, size, neededBy)
      count(downloaded)
      (file, crc)
    }
    private def count(downloaded: Long): Unit = if (downloaded > 0) synchronized {
      bytes += downloaded
      files += 1
    }
  }
}

/** The JVM's threads for parallel downloads on load (daemon, shared by every store). */
private object Downloads {
  @volatile private var executor: java.util.concurrent.ExecutorService = _
  def pool(threads: Int): java.util.concurrent.ExecutorService = synchronized {
    if (executor == null) {
      val n = new java.util.concurrent.atomic.AtomicInteger()
      executor = java.util.concurrent.Executors.newFixedThreadPool(threads, (r: Runnable) => {
        val t = new Thread(r, s"rockstate-download-${n.incrementAndGet()}")
        t.setDaemon(true)
        t
      })
    }
    executor
  }
}

object VersionedRocksDB {
  private def sinceMs(nanos: Long): Long = (System.nanoTime() - nanos) / 1000000

  /** A snapshot upload under way: what to tell and what to cancel if it never ends. */
  private final class InFlightUpload(val version: Long, val startedNanos: Long,
      val listener: SnapshotListener) {
    @volatile var future: JFuture[_] = _
  }

  /** The state id of empty state (version 0, or a loadEmpty before its first commit). */
  private val EmptyState = "empty"
  private val DefaultFamilies: Map[String, Int] = Map("default" -> 0)
}
