package io.rockstate.state

import java.io.File
import java.nio.file.Files
import java.util.UUID

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

/** Figures of the last load, reported as custom metrics. */
final case class LoadStats(loadMs: Long, bytesDownloaded: Long, filesDownloaded: Int)

/**
 * A store's RocksDB together with the version it holds. Loads any committed version (from the
 * open instance when it is current, from hard links in the local file cache when the files are
 * here, downloading only what is missing), commits new versions as incremental snapshots, and
 * rolls back an aborted batch by reopening the last committed version.
 *
 * Not thread-safe on its own: the provider serialises task access and maintenance.
 */
final class VersionedRocksDB(
    operatorId: Long,
    partitionId: Int,
    storeName: String,
    checkpointDir: StoreCheckpointDir,
    localRoot: File,
    conf: RockstateConf,
    useColumnFamilies: Boolean) extends Logging {

  private val storeId = s"rockstate store (operator $operatorId, partition $partitionId, " +
    s"store $storeName)"
  private val workDir = new File(localRoot, "db")
  // Hard links to every SST this instance uploaded or downloaded, by remote name: local
  // recovery reopens any retained version from here without downloading.
  private val cacheDir = new File(localRoot, "sst-cache")

  private var db: Option[LocalRocksDB] = None
  private var loaded: Long = -1L
  private var dirty = false
  // SST files of the loaded lineage, by local name: the ones a new snapshot may reuse.
  private var lineage: Map[String, StateFile] = Map.empty
  private var keys: Long = 0L
  private var families: Map[String, Int] = Map.empty
  private var lastLoad = LoadStats(0, 0, 0)
  private var lastSnapshot = SnapshotStats(0, 0, 0, 0, 0, 0)

  def loadedVersion: Long = loaded
  def numKeys: Long = keys
  def columnFamilyIds: Map[String, Int] = families
  def loadStats: LoadStats = lastLoad
  def snapshotStats: SnapshotStats = lastSnapshot
  def stateBytes: Long = lineage.values.map(_.size).sum
  def memoryBytes: Long = db.map(_.approximateMemoryBytes).getOrElse(0L)

  def rocksDB: LocalRocksDB = db.getOrElse(
    throw new IllegalStateException(s"rockstate: $storeId has no version loaded"))

  def markDirty(): Unit = dirty = true
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

  /** Makes `version` the loaded version. */
  def load(version: Long): Unit = {
    if (db.isDefined && loaded == version && !dirty) return
    val start = System.nanoTime()
    closeDb()
    FileUtils.deleteDirectory(workDir)
    Files.createDirectories(workDir.toPath)
    Files.createDirectories(cacheDir.toPath)
    var downloaded = 0L
    var files = 0
    if (version == 0) {
      lineage = Map.empty
      keys = 0
      families = Map("default" -> 0)
    } else {
      val manifest = checkpointDir.readManifest(version)
      manifest.files.foreach { f =>
        val target = new File(workDir, f.localName)
        if (f.kind == "sst") {
          val cached = new File(cacheDir, cacheName(f.path))
          if (!(cached.isFile && cached.length == f.size)) {
            checkpointDir.download(f, version, cached)
            downloaded += f.size
            files += 1
          }
          Files.createLink(target.toPath, cached.toPath)
        } else {
          checkpointDir.download(f, version, target)
          downloaded += f.size
          files += 1
        }
      }
      lineage = manifest.files.filter(_.kind == "sst").map(f => f.localName -> f).toMap
      keys = manifest.numKeys
      families = manifest.columnFamilies.map(c => c.name -> c.id).toMap
    }
    db = Some(new LocalRocksDB(workDir, conf))
    loaded = version
    dirty = false
    lastLoad = LoadStats((System.nanoTime() - start) / 1000000, downloaded, files)
  }

  /** Starts from empty state labelled `version` (Spark's loadEmpty, used by state rewrites). */
  def loadEmpty(version: Long): Unit = {
    closeDb()
    FileUtils.deleteDirectory(workDir)
    Files.createDirectories(workDir.toPath)
    lineage = Map.empty
    keys = 0
    families = Map("default" -> 0)
    db = Some(new LocalRocksDB(workDir, conf))
    loaded = version
    dirty = true
  }

  /**
   * Makes `version` durable: a local checkpoint (synchronous part), then the upload of SST files
   * no earlier version of this lineage uploaded, RocksDB's small files, and last the manifest.
   * A version exists only once its manifest is written, so a crash anywhere before that leaves
   * the previous version intact and the uploaded files as orphans for cleanup.
   */
  def commit(version: Long): VersionManifest = {
    val syncStart = System.nanoTime()
    val snapshotDir = new File(localRoot, s"snapshot-$version-${UUID.randomUUID()}")
    rocksDB.checkpointTo(snapshotDir)
    val syncMs = (System.nanoTime() - syncStart) / 1000000
    val asyncStart = System.nanoTime()
    try {
      val local = Option(snapshotDir.listFiles()).getOrElse(Array.empty[File]).toSeq.sortBy(_.getName)
      val metaDir = s"meta/$version-${UUID.randomUUID()}"
      Files.createDirectories(cacheDir.toPath) // absent after loadEmpty
      var uploaded = 0L
      var reused = 0L
      var nUploaded = 0
      var nReused = 0
      val entries = local.map { f =>
        val name = f.getName
        lineage.get(name) match {
          case Some(e) if name.endsWith(".sst") && e.size == f.length =>
            reused += e.size
            nReused += 1
            e
          case _ if name.endsWith(".sst") =>
            val path = s"sst/${name.stripSuffix(".sst")}-${UUID.randomUUID()}.sst"
            val (size, crc) = checkpointDir.upload(f, path)
            val cached = new File(cacheDir, cacheName(path))
            if (!cached.exists()) Files.createLink(cached.toPath, f.toPath)
            uploaded += size
            nUploaded += 1
            StateFile(name, path, size, crc, "sst")
          case _ =>
            val (size, crc) = checkpointDir.upload(f, s"$metaDir/$name")
            uploaded += size
            nUploaded += 1
            StateFile(name, s"$metaDir/$name", size, crc, "meta")
        }
      }
      val stats = SnapshotStats(syncMs, (System.nanoTime() - asyncStart) / 1000000,
        uploaded, reused, nUploaded, nReused)
      val manifest = VersionManifest(
        formatVersion = VersionManifest.FormatVersion,
        version = version,
        operatorId = operatorId, partitionId = partitionId, storeName = storeName,
        numKeys = keys,
        useColumnFamilies = useColumnFamilies,
        columnFamilies = families.toSeq.sortBy(_._2).map { case (n, i) => ColumnFamilyEntry(n, i) },
        files = entries,
        stats = stats,
        createdAtMs = System.currentTimeMillis(),
        writer = VersionManifest.Writer)
      checkpointDir.writeManifest(manifest)
      lineage = entries.filter(_.kind == "sst").map(f => f.localName -> f).toMap
      loaded = version
      dirty = false
      lastSnapshot = stats
      manifest
    } finally {
      FileUtils.deleteDirectory(snapshotDir)
    }
  }

  /** Throws away uncommitted writes: the next load reopens the last committed version. */
  def rollback(): Unit = {
    if (dirty) {
      closeDb()
      loaded = -1L
      dirty = false
    }
  }

  /** Drops local cache files no version in `keep` (nor the loaded lineage) references. */
  def pruneCache(keep: Set[String]): Unit = {
    val live = keep ++ lineage.values.map(_.path)
    val liveNames = live.map(cacheName)
    Option(cacheDir.listFiles()).getOrElse(Array.empty[File]).foreach { f =>
      if (!liveNames.contains(f.getName)) f.delete()
    }
  }

  def close(): Unit = {
    closeDb()
    FileUtils.deleteDirectory(localRoot)
  }

  private def closeDb(): Unit = {
    db.foreach(_.close())
    db = None
  }

  private def cacheName(path: String): String = path.replace('/', '_')
}
