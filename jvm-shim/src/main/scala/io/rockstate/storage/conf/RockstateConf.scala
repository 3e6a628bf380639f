package io.rockstate.storage.conf

import java.util.Locale

import io.rockstate.storage.format.Changelog

/**
 * rockstate's own settings, all under one prefix. Spark hands every SQL conf starting with
 * `spark.sql.streaming.stateStore.` to the provider through `StateStoreConf.sqlConfs`, so the
 * same keys work in spark-defaults, on the session builder and with `spark.conf.set`.
 * docs/configuration.md lists them; keep the two in step.
 */
final case class RockstateConf(
    blockCacheSizeMB: Long,
    highPriorityPoolRatio: Double,
    writeBufferSizeMB: Long,
    writeBufferManagerMB: Long,
    compression: String,
    bloomFilterBitsPerKey: Int,
    partitionedIndex: Boolean,
    minVersionsToRetain: Int,
    orphanFileGraceMs: Long,
    trackTotalNumberOfRows: Boolean,
    readKeysHeld: Int,
    snapshotInterval: Int,
    changelogCompression: String,
    snapshotUploadThreads: Int,
    downloadThreads: Int,
    sstPackMB: Long,
    localRecovery: Boolean,
    localDir: String,
    checkpointsRetained: Int,
    checkpointTimeoutMs: Long,
    tolerableCheckpointFailures: Int,
    snapshotUploadTimeoutMs: Long,
    lockAcquireTimeoutMs: Long,
    localCacheMaxMB: Long,
    autoSnapshotRepair: Boolean,
    repairAfterFailures: Int,
    repairMaxReplay: Int,
    maxVersionsToDeletePerMaintenance: Int,
    unloadOnCommit: Boolean,
    maxOpenStores: Int,
    rowChecksums: Boolean,
    rowChecksumReadRatio: Long,
    testUploadDelayMs: Long,
    testCleanupDelayMs: Long) {

  /**
   * Whether an upload that took `ms` may have lost files to an orphan sweep elsewhere (files
   * older than the grace are fair game); such an upload must not write its manifest. A grace
   * of 0 turns the protection off (tests only).
   */
  def outlivedGrace(ms: Long): Boolean = orphanFileGraceMs > 0 && ms > orphanFileGraceMs / 2

  /**
   * Whether cleanup keeps the snapshot of `snapshotVersion` until the commit of `commitVersion`
   * names it: it never drops a snapshot of a retained version or a newer one.
   */
  def keepsSnapshotUntil(snapshotVersion: Long, commitVersion: Long): Boolean =
    snapshotVersion > commitVersion - minVersionsToRetain

  /** Versions every partition snapshots, so that each is one checkpoint of the query. */
  def isCheckpointVersion(version: Long): Boolean = version % snapshotInterval == 0

  /**
   * The longest changelog chain a version manifest may name: past it the commit snapshots
   * synchronously, so a load never replays more than this however uploads fare.
   */
  def maxChangelogChain: Int = 3 * snapshotInterval
}

object RockstateConf {
  val Prefix = "spark.sql.streaming.stateStore.rockstate."

  val BlockCacheSizeMB = Prefix + "blockCacheSizeMB"
  val WriteBufferSizeMB = Prefix + "writeBufferSizeMB"
  val WriteBufferManagerMB = Prefix + "writeBufferManagerMB"
  val HighPriorityPoolRatio = Prefix + "highPriorityPoolRatio"
  val Compression = Prefix + "compression"
  val BloomFilterBitsPerKey = Prefix + "bloomFilterBitsPerKey"
  val PartitionedIndex = Prefix + "partitionedIndex"
  val OrphanFileGraceMs = Prefix + "orphanFileGraceMs"
  val TrackTotalNumberOfRows = Prefix + "trackTotalNumberOfRows"
  val ReadKeysHeld = Prefix + "readKeysHeld"
  val SnapshotInterval = Prefix + "snapshotInterval"
  val ChangelogCompression = Prefix + "changelogCompression"
  val SnapshotUploadThreads = Prefix + "snapshotUploadThreads"
  val DownloadThreads = Prefix + "downloadThreads"
  // Snapshots upload their new SSTs of at most this many MB packed together, in objects of at
  // most this size (`SstPacks`); 0 uploads every SST on its own.
  val SstPackMB = Prefix + "sstPackMB"
  val LocalRecovery = Prefix + "localRecovery"
  val LocalDir = Prefix + "localDir"
  // The driver's checkpoint coordinator (read from the SparkConf when the driver starts).
  val CheckpointsRetained = Prefix + "checkpointsRetained"
  val CheckpointTimeoutMs = Prefix + "checkpointTimeoutMs"
  val TolerableCheckpointFailures = Prefix + "tolerableCheckpointFailures"
  val SnapshotUploadTimeoutMs = Prefix + "snapshotUploadTimeoutMs"
  val LockAcquireTimeoutMs = Prefix + "lockAcquireTimeoutMs"
  val LocalCacheMaxMB = Prefix + "localCacheMaxMB"
  // RocksDB instances an executor keeps open between tasks (`OpenInstances`); 0: no cap.
  val MaxOpenStores = Prefix + "maxOpenStores"
  // Spark's own keys for automatic snapshot repair (SPARK-54121, Spark 4.2), honoured on every
  // line; rockstate turns it on by default.
  val AutoSnapshotRepair = "spark.sql.streaming.stateStore.autoSnapshotRepair.enabled"
  val RepairAfterFailures =
    "spark.sql.streaming.stateStore.autoSnapshotRepair.numFailuresBeforeActivating"
  val RepairMaxReplay = "spark.sql.streaming.stateStore.autoSnapshotRepair.maxChangeFileReplay"
  // Spark's own cap on the versions one maintenance run deletes (Spark 4.1+ defines it for its
  // RocksDB provider; honoured on every line): -1, no cap.
  val MaxVersionsToDeletePerMaintenance =
    "spark.sql.streaming.stateStore.maxVersionsToDeletePerMaintenance"
  // Spark's own (4.1+): each provider is maintained and closed when its task ends.
  val UnloadOnCommit = "spark.sql.streaming.stateStore.unloadOnCommit"
  // Spark's own (4.2+, SPARK-54106), honoured on every line: a store created with it on keeps
  // a checksum with every value (`RowChecksum`); an existing store keeps what it was created
  // with. Reads check every `ratio`-th row: rockstate checks every read unless told otherwise
  // (Spark's provider checks none unless told).
  val RowChecksumEnabled = "spark.sql.streaming.stateStore.rowChecksum.enabled"
  val RowChecksumReadRatio = "spark.sql.streaming.stateStore.rowChecksum.readVerificationRatio"
  // Testing only: a pause before each snapshot file upload (and before its manifest), to kill
  // or stop mid-upload.
  val TestUploadDelayMs = Prefix + "testing.snapshotUploadDelayMs"
  // Testing only: a pause in cleanup between deleting manifests and deleting their files.
  val TestCleanupDelayMs = Prefix + "testing.cleanupDelayMs"

  val Defaults: Map[String, String] = Map(
    BlockCacheSizeMB -> "128",
    HighPriorityPoolRatio -> "0.1",
    WriteBufferSizeMB -> "64",
    WriteBufferManagerMB -> "128",
    Compression -> "lz4",
    BloomFilterBitsPerKey -> "10",
    PartitionedIndex -> "true",
    OrphanFileGraceMs -> "600000",
    TrackTotalNumberOfRows -> "true",
    ReadKeysHeld -> "100000",
    SnapshotInterval -> "10",
    ChangelogCompression -> "zstd",
    SnapshotUploadThreads -> "2",
    DownloadThreads -> "8",
    SstPackMB -> "64",
    LocalRecovery -> "true",
    LocalDir -> "",
    CheckpointsRetained -> "3",
    CheckpointTimeoutMs -> "300000",
    TolerableCheckpointFailures -> "5",
    SnapshotUploadTimeoutMs -> "300000",
    LockAcquireTimeoutMs -> "60000",
    LocalCacheMaxMB -> "8192",
    MaxOpenStores -> "0",
    AutoSnapshotRepair -> "true",
    RepairAfterFailures -> "1",
    RepairMaxReplay -> "50",
    MaxVersionsToDeletePerMaintenance -> "-1",
    UnloadOnCommit -> "false",
    RowChecksumEnabled -> "false",
    RowChecksumReadRatio -> "1",
    TestUploadDelayMs -> "0",
    TestCleanupDelayMs -> "0")

  private val Codecs = Set("none", "snappy", "lz4", "zstd")

  /** Reads the settings; `minVersionsToRetain` is Spark's own `minBatchesToRetain`. */
  def from(confs: Map[String, String], minVersionsToRetain: Int): RockstateConf = {
    def get(key: String): String = confs.getOrElse(key, Defaults(key)).trim
    def long(key: String, min: Long): Long = {
      val v = try get(key).toLong catch {
        case _: NumberFormatException =>
          throw new IllegalArgumentException(
            s"rockstate: $key must be a whole number, got '${get(key)}'; fix the setting or " +
              s"remove it to use the default ${Defaults(key)}.")
      }
      if (v < min) {
        throw new IllegalArgumentException(
          s"rockstate: $key must be at least $min, got $v; the default is ${Defaults(key)}.")
      }
      v
    }
    def fraction(key: String): Double = {
      val v = get(key).toDoubleOption.getOrElse(Double.NaN)
      if (!(v >= 0.0 && v < 1.0)) {
        throw new IllegalArgumentException(
          s"rockstate: $key must be a fraction from 0 up to (not including) 1, got " +
            s"'${get(key)}'; the default is ${Defaults(key)}.")
      }
      v
    }
    def bool(key: String): Boolean = get(key).toLowerCase(Locale.ROOT) match {
      case "true" => true
      case "false" => false
      case other =>
        throw new IllegalArgumentException(
          s"rockstate: $key must be true or false, got '$other'; the default is ${Defaults(key)}.")
    }
    def oneOf(key: String, allowed: Set[String]): String = {
      val v = get(key).toLowerCase(Locale.ROOT)
      if (!allowed.contains(v)) {
        throw new IllegalArgumentException(
          s"rockstate: $key must be one of ${allowed.toSeq.sorted.mkString(", ")}, got '$v'; " +
            s"the default is ${Defaults(key)}.")
      }
      v
    }
    val codec = oneOf(Compression, Codecs)
    val graceMs = long(OrphanFileGraceMs, 0)
    // Unset, the timeout follows a shortened grace; set, it must fit it.
    val timeoutMs =
      if (!confs.contains(CheckpointTimeoutMs) && graceMs > 0) {
        math.max(1L, math.min(long(CheckpointTimeoutMs, 1), graceMs / 2))
      } else long(CheckpointTimeoutMs, 1)
    if (confs.contains(CheckpointTimeoutMs) && graceMs > 0 && timeoutMs > graceMs / 2) {
      throw new IllegalArgumentException(s"rockstate: $CheckpointTimeoutMs ($timeoutMs) must " +
        s"be at most half of $OrphanFileGraceMs ($graceMs), so that no snapshot a pending " +
        "checkpoint names is swept as an orphan. Lower the one or raise the other.")
    }
    // An upload may not outlive what its manifest could still safely name (half the grace).
    val uploadTimeoutMs = {
      val set = long(SnapshotUploadTimeoutMs, 1)
      if (graceMs > 0) math.max(1L, math.min(set, graceMs / 2)) else set
    }
    val deleteCap = long(MaxVersionsToDeletePerMaintenance, -1).toInt
    if (deleteCap == 0) {
      throw new IllegalArgumentException(s"rockstate: $MaxVersionsToDeletePerMaintenance must " +
        "be -1 (no cap) or at least 1, got 0: a maintenance run that may delete nothing would " +
        "let the checkpoint grow without bound.")
    }
    RockstateConf(
      blockCacheSizeMB = long(BlockCacheSizeMB, 1),
      highPriorityPoolRatio = fraction(HighPriorityPoolRatio),
      writeBufferSizeMB = long(WriteBufferSizeMB, 1),
      writeBufferManagerMB = long(WriteBufferManagerMB, 1),
      compression = codec,
      bloomFilterBitsPerKey = long(BloomFilterBitsPerKey, 0).toInt,
      partitionedIndex = bool(PartitionedIndex),
      minVersionsToRetain = math.max(1, minVersionsToRetain),
      orphanFileGraceMs = graceMs,
      trackTotalNumberOfRows = bool(TrackTotalNumberOfRows),
      readKeysHeld = math.min(long(ReadKeysHeld, 0), Int.MaxValue.toLong).toInt,
      snapshotInterval = long(SnapshotInterval, 1).toInt,
      changelogCompression = oneOf(ChangelogCompression, Changelog.Codecs.keySet),
      snapshotUploadThreads = long(SnapshotUploadThreads, 1).toInt,
      downloadThreads = long(DownloadThreads, 1).toInt,
      sstPackMB = long(SstPackMB, 0),
      localRecovery = bool(LocalRecovery),
      localDir = get(LocalDir),
      checkpointsRetained = long(CheckpointsRetained, 1).toInt,
      checkpointTimeoutMs = timeoutMs,
      tolerableCheckpointFailures = long(TolerableCheckpointFailures, -1).toInt,
      snapshotUploadTimeoutMs = uploadTimeoutMs,
      lockAcquireTimeoutMs = long(LockAcquireTimeoutMs, 0),
      localCacheMaxMB = long(LocalCacheMaxMB, 0),
      autoSnapshotRepair = bool(AutoSnapshotRepair),
      repairAfterFailures = long(RepairAfterFailures, 1).toInt,
      repairMaxReplay = long(RepairMaxReplay, 1).toInt,
      maxVersionsToDeletePerMaintenance = deleteCap,
      unloadOnCommit = bool(UnloadOnCommit),
      maxOpenStores = math.min(long(MaxOpenStores, 0), Int.MaxValue.toLong).toInt,
      rowChecksums = bool(RowChecksumEnabled),
      rowChecksumReadRatio = long(RowChecksumReadRatio, 0),
      testUploadDelayMs = long(TestUploadDelayMs, 0),
      testCleanupDelayMs = long(TestCleanupDelayMs, 0))
  }
}
