package io.rockstate.storage.conf

import io.rockstate.storage.format.{Changelog, StateVersion}

/**
 * rockstate's settings as one store reads them: each declared once below (`Setting`: key,
 * default, values, doc) and read here through its declaration, plus the rules that tie
 * settings together. Spark hands every SQL conf starting with `spark.sql.streaming.stateStore.`
 * to the provider through `StateStoreConf.sqlConfs`, so the same keys work in spark-defaults,
 * on the session builder and with `spark.conf.set`. docs/configuration.md lists them (a test
 * holds its tables to these declarations).
 *
 * `minVersionsToRetain` is Spark's own `minBatchesToRetain`.
 */
final class RockstateConf private (confs: Map[String, String], sparkMinVersionsToRetain: Int) {
  import RockstateConf._

  val rocksdbMemoryMB: Long = RocksdbMemoryMB.in(confs)
  val highPriorityPoolRatio: Double = HighPriorityPoolRatio.in(confs)
  val writeBufferSizeMB: Long = WriteBufferSizeMB.in(confs)
  val writeBufferManagerMB: Long = WriteBufferManagerMB.in(confs)
  val compression: String = Compression.in(confs)
  val bloomFilterBitsPerKey: Int = BloomFilterBitsPerKey.in(confs)
  val partitionedIndex: Boolean = PartitionedIndex.in(confs)
  val minVersionsToRetain: Int = math.max(1, sparkMinVersionsToRetain)
  val orphanFileGraceMs: Long = OrphanFileGraceMs.in(confs)
  val trackTotalNumberOfRows: Boolean = TrackTotalNumberOfRows.in(confs)
  val batchRowsHeld: Int = BatchRowsHeld.in(confs)
  val keptRowsMB: Long = KeptRowsMB.in(confs)
  val snapshotInterval: Int = SnapshotInterval.in(confs)
  val changelogCompression: String = ChangelogCompression.in(confs)
  val snapshotUploadThreads: Int = SnapshotUploadThreads.in(confs)
  val downloadThreads: Int = DownloadThreads.in(confs)
  val sstPackMB: Long = SstPackMB.in(confs)
  val localRecovery: Boolean = LocalRecovery.in(confs)
  val localDir: String = LocalDir.in(confs)
  val checkpointsRetained: Int = CheckpointsRetained.in(confs)
  val tolerableCheckpointFailures: Int = TolerableCheckpointFailures.in(confs)
  val lockAcquireTimeoutMs: Long = LockAcquireTimeoutMs.in(confs)
  val localCacheMaxMB: Long = LocalCacheMaxMB.in(confs)
  val autoSnapshotRepair: Boolean = AutoSnapshotRepair.in(confs)
  val repairAfterFailures: Int = RepairAfterFailures.in(confs)
  val repairMaxReplay: Int = RepairMaxReplay.in(confs)
  val unloadOnCommit: Boolean = UnloadOnCommit.in(confs)
  val maxOpenStores: Int = MaxOpenStores.in(confs)
  val trimNativeHeap: Boolean = TrimNativeHeap.in(confs)
  val rowChecksums: Boolean = RowChecksumEnabled.in(confs)
  val rowChecksumReadRatio: Long = RowChecksumReadRatio.in(confs)

  /**
   * Unset, the checkpoint timeout follows a shortened grace; set, it must fit it: no snapshot a
   * pending checkpoint names may be swept as an orphan.
   */
  val checkpointTimeoutMs: Long = {
    val set = CheckpointTimeoutMs.in(confs)
    if (orphanFileGraceMs > 0 && !CheckpointTimeoutMs.isSet(confs)) {
      math.max(1L, math.min(set, orphanFileGraceMs / 2))
    } else if (orphanFileGraceMs > 0 && set > orphanFileGraceMs / 2) {
      throw new IllegalArgumentException(s"rockstate: $CheckpointTimeoutMs ($set) must be at " +
        s"most half of $OrphanFileGraceMs ($orphanFileGraceMs), so that no snapshot a pending " +
        "checkpoint names is swept as an orphan. Lower the one or raise the other.")
    } else set
  }

  /** An upload may not outlive what its manifest could still safely name (half the grace). */
  val snapshotUploadTimeoutMs: Long = {
    val set = SnapshotUploadTimeoutMs.in(confs)
    if (orphanFileGraceMs > 0) math.max(1L, math.min(set, orphanFileGraceMs / 2)) else set
  }

  val maxVersionsToDeletePerMaintenance: Int = {
    val cap = MaxVersionsToDeletePerMaintenance.in(confs)
    if (cap == 0) {
      throw new IllegalArgumentException(s"rockstate: $MaxVersionsToDeletePerMaintenance must " +
        "be -1 (no cap) or at least 1, got 0: a maintenance run that may delete nothing would " +
        "let the checkpoint grow without bound.")
    }
    cap
  }

  /** These settings with `setting` set to `value` (tests and benches vary one at a time). */
  def updated(setting: Setting[_], value: String): RockstateConf =
    new RockstateConf(confs + (setting.key -> value), sparkMinVersionsToRetain)

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
  def isCheckpointVersion(version: Long): Boolean =
    StateVersion.isCheckpoint(version, snapshotInterval)

  /**
   * The longest changelog chain a version manifest may name: past it the commit snapshots
   * synchronously, so a load never replays more than this however uploads fare.
   */
  def maxChangelogChain: Int = 3 * snapshotInterval
}

object RockstateConf {
  import SettingKind._

  val Prefix = "spark.sql.streaming.stateStore.rockstate."

  // Each declaration below adds itself here, in order; `All` is the list once they are made.
  private val declared = Seq.newBuilder[Setting[_]]
  private def declare[T](s: Setting[T]): Setting[T] = { declared += s; s }
  private def own[T](name: String, default: String, kind: SettingKind[T], doc: String,
      oldNames: Seq[String] = Nil) =
    declare(Setting(Prefix + name, default, kind, doc, oldNames.map(Prefix + _)))
  private def sparks[T](name: String, default: String, kind: SettingKind[T], doc: String) =
    declare(Setting("spark.sql.streaming.stateStore." + name, default, kind, doc))

  // RocksDB, per executor or per store.
  val RocksdbMemoryMB: Setting[Long] = own("rocksdbMemoryMB", "128", Whole(1),
    "RocksDB memory of one executor: its shared block cache and the instances it keeps open",
    oldNames = Seq("blockCacheSizeMB")) // named when the bound was the block cache's alone
  val HighPriorityPoolRatio: Setting[Double] = own("highPriorityPoolRatio", "0.1", Fraction,
    "share of the block cache kept for index and filter blocks")
  val WriteBufferManagerMB: Setting[Long] = own("writeBufferManagerMB", "128", Whole(1),
    "memtable memory shared by every store of one executor, charged to the block cache " +
      "(at most its size)")
  val WriteBufferSizeMB: Setting[Long] = own("writeBufferSizeMB", "64", Whole(1),
    "size of one memtable of one store")
  val Compression: Setting[String] = own("compression", "lz4",
    OneOf(Set("none", "snappy", "lz4", "zstd")), "SST compression")
  val BloomFilterBitsPerKey: Setting[Int] = own("bloomFilterBitsPerKey", "10", Count(0),
    "bloom filter bits per key on SST files (0: none)")
  val PartitionedIndex: Setting[Boolean] = own("partitionedIndex", "true", Flag,
    "two-level index and filter blocks in new SST files")
  // Snapshots and changelogs.
  val SnapshotInterval: Setting[Int] = own("snapshotInterval", "10", Count(1),
    "versions between snapshots; each multiple is a checkpoint")
  val ChangelogCompression: Setting[String] = own("changelogCompression", "zstd",
    OneOf(Changelog.Codecs.keySet), "changelog codec")
  val SnapshotUploadThreads: Setting[Int] = own("snapshotUploadThreads", "2", Count(1),
    "background snapshot upload threads per executor")
  val DownloadThreads: Setting[Int] = own("downloadThreads", "8", Count(1),
    "threads fetching a load's files per executor")
  val SstPackMB: Setting[Long] = own("sstPackMB", "64", Whole(0),
    "new SSTs up to this size upload packed in objects of at most this size (0: each alone)")
  // The executor's local files and instances.
  val LocalRecovery: Setting[Boolean] = own("localRecovery", "true", Flag,
    "keep a store's local files after its provider closes")
  val LocalDir: Setting[String] = own("localDir", "", Text,
    "where stores keep their local files (empty: Spark's per-application directory)")
  val LocalCacheMaxMB: Setting[Long] = own("localCacheMaxMB", "8192", Whole(0),
    "closed stores' local files kept per executor")
  val MaxOpenStores: Setting[Int] = own("maxOpenStores", "-1", Count(-1),
    "RocksDB instances an executor keeps open between tasks (-1: one per MB of " +
      "rocksdbMemoryMB; 0: no cap)")
  val TrimNativeHeap: Setting[Boolean] = own("trimNativeHeap", "true", Flag,
    "hand the C allocator's free memory back to the OS after instances close")
  val LockAcquireTimeoutMs: Setting[Long] = own("lockAcquireTimeoutMs", "60000", Whole(0),
    "how long a second task attempt waits for a store")
  // Retention and its safety margins.
  val OrphanFileGraceMs: Setting[Long] = own("orphanFileGraceMs", "600000", Whole(0),
    "unreferenced files younger than this are not orphans")
  val SnapshotUploadTimeoutMs: Setting[Long] = own("snapshotUploadTimeoutMs", "300000", Whole(1),
    "a background upload not done in this time is cancelled")
  // The driver's checkpoint coordinator (read from the SparkConf when the driver starts).
  val CheckpointsRetained: Setting[Int] = own("checkpointsRetained", "3", Count(1),
    "completed checkpoints kept")
  val CheckpointTimeoutMs: Setting[Long] = own("checkpointTimeoutMs", "300000", Whole(1),
    "a pending checkpoint not acknowledged in this time is aborted")
  val TolerableCheckpointFailures: Setting[Int] = own("tolerableCheckpointFailures", "5",
    Count(-1), "checkpoint failures in a row a query tolerates (-1: any)")
  // The key count.
  val TrackTotalNumberOfRows: Setting[Boolean] = own("trackTotalNumberOfRows", "true", Flag,
    "keep the exact key count")
  val BatchRowsHeld: Setting[Int] = own("batchRowsHeld", "100000", Count(0),
    "rows a task holds of what it read and wrote in a batch",
    oldNames = Seq("readKeysHeld")) // named when the table held keys only
  val KeptRowsMB: Setting[Long] = own("keptRowsMB", "32", Whole(0),
    "heap an executor keeps of its stores' last batch's rows, for their next batch")
  // Spark's own keys for automatic snapshot repair (SPARK-54121, Spark 4.2), honoured on every
  // line; rockstate turns it on by default.
  val AutoSnapshotRepair: Setting[Boolean] = sparks("autoSnapshotRepair.enabled", "true", Flag,
    "rebuild past a snapshot that cannot be restored")
  val RepairAfterFailures: Setting[Int] = sparks(
    "autoSnapshotRepair.numFailuresBeforeActivating", "1", Count(1),
    "tries of a version's own snapshot before a repair")
  val RepairMaxReplay: Setting[Int] = sparks("autoSnapshotRepair.maxChangeFileReplay", "50",
    Count(1), "versions a repair may replay")
  // Spark's own cap on the versions one maintenance run deletes (4.1+ for its RocksDB
  // provider; honoured on every line): -1, no cap; 0 is refused.
  val MaxVersionsToDeletePerMaintenance: Setting[Int] = sparks(
    "maxVersionsToDeletePerMaintenance", "-1", Count(-1),
    "versions one maintenance run expires (-1: no cap)")
  // Spark's own (4.1+): each provider is maintained and closed when its task ends.
  val UnloadOnCommit: Setting[Boolean] = sparks("unloadOnCommit", "false", Flag,
    "close each store as its task ends")
  // Spark's own (4.2+, SPARK-54106), honoured on every line: a store created with it on keeps
  // a checksum with every value; an existing store keeps what it was created with. rockstate
  // checks every read unless told otherwise (Spark's provider checks none unless told).
  val RowChecksumEnabled: Setting[Boolean] = sparks("rowChecksum.enabled", "false", Flag,
    "new stores keep a checksum with every value")
  val RowChecksumReadRatio: Setting[Long] = sparks("rowChecksum.readVerificationRatio", "1",
    Whole(0), "every N-th read checks its row's checksum (0: none)")

  /** Every setting, in the order declared (docs/configuration.md's tables list them). */
  val All: Seq[Setting[_]] = declared.result()

  /** Reads the settings; `minVersionsToRetain` is Spark's own `minBatchesToRetain`. */
  def from(confs: Map[String, String], minVersionsToRetain: Int): RockstateConf =
    new RockstateConf(confs, minVersionsToRetain)

  /**
   * Refuses a key under rockstate's prefix that no setting answers to: a misspelt setting
   * would otherwise be ignored without a word. The message names the nearest known setting.
   */
  def refuseUnknown(confs: Map[String, String]): Unit = {
    val known = All.flatMap(s => s.keys.map(_ -> s)).toMap
    confs.keys.filter(k => k.startsWith(Prefix) && !known.contains(k)).toSeq.sorted.headOption
      .foreach { unknown =>
        val name = unknown.stripPrefix(Prefix)
        val (nearest, distance) = known.toSeq.map { case (k, s) =>
          s.key -> editDistance(name.toLowerCase, k.stripPrefix(Prefix).toLowerCase)
        }.minBy { case (k, d) => (d, k) }
        val hint = if (distance <= math.max(2, name.length / 3)) s"did you mean $nearest? "
          else "no setting has a name near it; "
        throw new IllegalArgumentException(s"rockstate: unknown setting $unknown: ${hint}the " +
          "settings are listed in docs/configuration.md. Fix its name or remove it.")
      }
  }

  // Levenshtein's distance, for the nearest setting's name: one row of the table at a time.
  private def editDistance(a: String, b: String): Int =
    a.foldLeft((0 to b.length).toVector) { (above, ca) =>
      b.zipWithIndex.foldLeft(Vector(above(0) + 1)) { case (row, (cb, j)) =>
        row :+ math.min(math.min(row(j), above(j + 1)) + 1, above(j) + (if (ca == cb) 0 else 1))
      }
    }.last
}
