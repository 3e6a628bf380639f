package io.rockstate.checkpoint

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import scala.collection.mutable

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.format.{ChangelogRef, CheckpointJson, SnapshotManifest, SnapshotStats,
  StateFile, VersionManifest}

/** The coordinator driven directly: every acknowledgement class, timeouts, failures, retention. */
class CheckpointCoordinatorSuite extends AnyFunSuite with BeforeAndAfterEach {

  private var dir: File = _
  private var now = 1000000L
  private val failures = mutable.Buffer.empty[(String, String)]
  private val hadoopConf = new Configuration()
  // Two operators: one store of 2 partitions, one of 2 stores of 1 partition.
  private val expected = Set(StoreKey(0, "default", 0), StoreKey(0, "default", 1),
    StoreKey(1, "left", 0), StoreKey(1, "right", 0))

  override def beforeEach(): Unit = {
    dir = Files.createTempDirectory("rockstate-coordinator").toFile
    failures.clear()
  }
  override def afterEach(): Unit = FileUtils.deleteDirectory(dir)

  private def root: String = dir.toURI.toString.stripSuffix("/")

  // The settings the acknowledgements carry, as a query's conf would give them.
  private var settings = CoordinatorSettings(2, 1000, 1)

  private val published = mutable.Buffer.empty[CheckpointEvent]

  private def coordinator(retained: Int = 2, timeoutMs: Long = 1000, tolerable: Int = 1) = {
    settings = CoordinatorSettings(retained, timeoutMs, tolerable)
    published.clear()
    new CheckpointCoordinator(hadoopConf, () => now, _ => Right(expected),
      (run, message) => failures += ((run, message)), published += _)
  }

  private def storeDir(k: StoreKey) = s"state/${k.operatorId}/${k.partitionId}" +
    (if (k.storeName == "default") "" else s"/${k.storeName}")

  private def write(relative: String, bytes: Array[Byte]): Unit = {
    val f = new File(dir, relative)
    f.getParentFile.mkdirs()
    Files.write(f.toPath, bytes)
  }

  /** Spark's commit log entry of micro-batch `batchId` (state version batchId + 1). */
  private def commitBatch(batchId: Long, ids: String = ""): Unit =
    write(s"commits/$batchId", (if (ids.isEmpty) "v1\n{}"
      else s"""v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":$ids}""")
      .getBytes(StandardCharsets.UTF_8))

  /**
   * An acknowledgement as an executor sends it, for commit attempt `attempt` of the version:
   * its snapshot manifest and SST written, the version manifest naming that attempt (unless
   * `landed` is false: another attempt's manifest replaced it), the batch committed.
   */
  private def ack(k: StoreKey, version: Long, run: String = "run-1", rows: Long = 10,
      writeManifest: Boolean = true, attempt: String = "a", landed: Boolean = true,
      committed: Boolean = true, versionFile: Boolean = false, ssts: Int = 1,
      checkpointRoot: String = root): SnapshotAck = {
    import io.rockstate.storage._
    val manifest = s"snapshots/$version-${k.partitionId}-$attempt.json"
    // Format 3: the attempt's version file is its state id; format 2: its changelog.
    val changelog = if (versionFile) s"versions/$version-$attempt.rsv"
      else s"changelog/$version-$attempt.log"
    val sstFiles = (9 until 9 + ssts).map(i =>
      StateFile(f"$i%06d.sst", s"sst/$i-$version-$attempt.sst", 3, 0, "sst"))
    if (writeManifest) {
      sstFiles.foreach(f => write(s"${storeDir(k)}/${f.path}", "sst".getBytes(StandardCharsets.UTF_8)))
      write(s"${storeDir(k)}/$manifest", CheckpointJson.pretty(SnapshotManifest(2, version,
        k.operatorId, k.partitionId, k.storeName, changelog, rows, false, Nil, sstFiles,
        SnapshotStats.Zero, now, "test")))
    }
    if (versionFile) {
      // Every attempt's version file exists; the storage's write order decides which landed.
      write(s"${storeDir(k)}/$changelog", Array[Byte](1))
      new File(dir, s"${storeDir(k)}/$changelog")
        .setLastModified(1000000L + (if (landed) 1000L else 0L))
    } else if (landed) {
      write(s"${storeDir(k)}/manifests/$version.json", CheckpointJson.pretty(VersionManifest(2,
        version, k.operatorId, k.partitionId, k.storeName, rows, false, Nil, None,
        Seq(ChangelogRef(version, changelog, 1, 0, 1)), None, now, "test")))
    }
    if (committed) commitBatch(version - 1)
    SnapshotAck(AckSource("query-1", run, checkpointRoot, 2, settings, k, version, "exec-1"),
      storeDir(k),
      manifest, if (versionFile) changelog else s"manifests/$version.json", changelog,
      SnapshotAckStats(1, 2, 100, 50, 1, 1, 150, rows), now)
  }

  private def decline(k: StoreKey, version: Long, counts: Boolean) =
    SnapshotDecline(AckSource("query-1", "run-1", root, 2, settings, k, version, "exec-1"), "test",
      counts)

  private def completeAll(c: CheckpointCoordinator, version: Long): Unit =
    expected.foreach(k => assert(c.acknowledge(ack(k, version)) == AckResult.Success))

  private def files = new CheckpointFiles(root, hadoopConf)

  private implicit class Only[T](items: Seq[T]) {
    def only: T = { assert(items.size == 1, s"expected one, got $items"); items.head }
  }

  test("a checkpoint completes when every expected store acknowledged, and not before") {
    val c = coordinator()
    val keys = expected.toSeq.sortBy(k => (k.operatorId, k.storeName, k.partitionId))
    keys.init.foreach(k => assert(c.acknowledge(ack(k, 4)) == AckResult.Success))
    assert(files.completedVersions().isEmpty)
    assert(c.view("run-1").get.pending.map(_.missing) == Seq(Seq(keys.last)))
    now += 5
    assert(c.acknowledge(ack(keys.last, 4)) == AckResult.Success)

    val m = files.read(4)
    assert(m.formatVersion == CheckpointMetadata.FormatVersion)
    assert(m.version == 4 && m.batchId == 3 && m.runId == "run-1" && m.queryId == "query-1")
    assert(m.stores.map(s => StoreKey(s.operatorId, s.storeName, s.partitionId)) == keys)
    assert(m.stores.map(_.storeDir).toSet == expected.map(storeDir))
    assert(m.totals.stores == 4 && m.totals.numKeys == 40 && m.totals.stateBytes == 600)
    assert(m.completedAtMs - m.triggeredAtMs == 5)
    val view = c.view("run-1").get
    assert(view.pending.isEmpty && view.completed.map(_.version) == Seq(4))
    assert(c.completedSince(0).map(_._3) == Seq(4))
    // Written through a temporary file and a rename: nothing else in the directory.
    assert(new File(dir, "rockstate/checkpoints/4").list().filterNot(_.startsWith(".")).toSeq ==
      Seq("_metadata"))
  }

  test("completion lists each store once and reads its snapshot manifest, whatever its files") {
    // On an object store a request per snapshot file made a 200-partition checkpoint thousands
    // of requests; the counting file system counts them as an object store would bill them.
    hadoopConf.set("fs.rscount.impl", classOf[io.rockstate.testing.CountingFileSystem].getName)
    val counted = s"${io.rockstate.testing.CountingFileSystem.Scheme}://${dir.getAbsolutePath}"
    val c = coordinator(retained = 5)
    def completion(version: Long, ssts: Int): Map[String, Long] = {
      val acks = expected.toSeq.map(k => ack(k, version, versionFile = true, ssts = ssts,
        checkpointRoot = counted))
      io.rockstate.testing.CountingFileSystem.reset()
      acks.foreach(a => assert(c.acknowledge(a) == AckResult.Success))
      assert(files.completedVersions().contains(version), c.view("run-1"))
      io.rockstate.testing.CountingFileSystem.counts
    }
    completion(2, ssts = 1) // the run's first completion also reads what completed before
    val one = completion(4, ssts = 1)
    val many = completion(6, ssts = 40)
    assert(one == many, s"1 file a snapshot: $one; 40 files: $many")
    assert(many("list") <= expected.size + 2 && many("open") <= expected.size + 2, many)
  }

  test("a duplicate acknowledgement is DUPLICATE and the first one counts") {
    val c = coordinator()
    val k = expected.head
    assert(c.acknowledge(ack(k, 2, rows = 7)) == AckResult.Success)
    assert(c.acknowledge(ack(k, 2, rows = 99)) == AckResult.Duplicate)
    expected.tail.foreach(o => c.acknowledge(ack(o, 2)))
    val mine = files.read(2).stores.find(s => s.partitionId == k.partitionId &&
      s.operatorId == k.operatorId && s.storeName == k.storeName).get
    assert(mine.figures.numKeys == 7)
  }

  test("an acknowledgement for an unknown version or store is UNKNOWN and starts nothing") {
    val c = coordinator()
    assert(c.acknowledge(ack(expected.head, 3)) == AckResult.Unknown) // interval is 2
    assert(c.acknowledge(ack(StoreKey(7, "default", 0), 2)) == AckResult.Unknown)
    assert(c.view("run-1").get.pending.isEmpty)
    assert(c.acknowledge(ack(expected.head, 0)) == AckResult.Unknown)
  }

  test("acknowledgements after a checkpoint was aborted, subsumed or completed are DISCARDED") {
    val c = coordinator(tolerable = -1)
    val Seq(a, b, rest @ _*) = expected.toSeq
    c.acknowledge(ack(a, 2))
    assert(c.decline(decline(b, 2, counts = true)) == AckResult.Success)
    assert(c.view("run-1").get.aborted.map(_.version) == Seq(2))
    assert(c.acknowledge(ack(b, 2)) == AckResult.Discarded) // aborted
    c.acknowledge(ack(a, 4)) // pending 4, then 6 completes and subsumes it
    completeAll(c, 6)
    assert(c.acknowledge(ack(b, 4)) == AckResult.Discarded) // subsumed
    assert(c.acknowledge(ack(b, 6)) == AckResult.Discarded) // completed without it
    val aborted = c.view("run-1").get.aborted
    assert(aborted.map(_.version) == Seq(2, 4))
    assert(aborted.last.reason.contains("subsumed by checkpoint 6") && !aborted.last.countsAsFailure)
    assert(files.completedVersions() == Seq(6))
    // Executors hear it: pins of 2 (aborted), 4 and 6 (at or below the latest completed) go.
    CheckpointPins.pend(root, 2, now)
    CheckpointPins.pend(root, 4, now)
    CheckpointPins.pend(root, 8, now)
    // As the executor gets it: JSON text over the plugin RPC.
    CheckpointPins.apply(Outcomes.fromJson(Outcomes.toJson(c.outcomes(Seq(root)))), now)
    assert(CheckpointPins.pinned(root, hadoopConf, now, 10000) == Set(6L, 8L))
  }

  test("a pending checkpoint past the timeout is aborted; too many failures fail the query") {
    val c = coordinator(timeoutMs = 1000, tolerable = 1)
    c.acknowledge(ack(expected.head, 2))
    now += 999
    c.checkTimeouts()
    assert(c.view("run-1").get.pending.size == 1)
    now += 2
    c.checkTimeouts()
    val aborted = c.view("run-1").get.aborted.only
    assert(aborted.countsAsFailure && aborted.reason.contains("expired after 1000 ms with 3 of 4"))
    assert(failures.isEmpty) // 1 failure is tolerable
    c.acknowledge(ack(expected.head, 4))
    now += 1001
    c.checkTimeouts()
    assert(failures.map(_._1) == Seq("run-1"))
    val message = failures.head._2
    assert(message.contains("2 checkpoints of query query-1 failed in a row") &&
      message.contains("tolerableCheckpointFailures"))
    assert(c.acknowledge(ack(expected.head, 6)) == AckResult.Discarded)
  }

  test("each counted acknowledgement, completion and abort is published, in that order") {
    val c = coordinator(timeoutMs = 1000, tolerable = 0)
    completeAll(c, 2)
    assert(c.acknowledge(ack(expected.head, 2)) == AckResult.Discarded) // late: not published
    c.acknowledge(ack(expected.head, 4))
    c.acknowledge(ack(expected.head, 4)) // a duplicate: not published
    now += 1001
    c.checkTimeouts() // 4 expires and fails the query (tolerable 0)
    val kinds = published.map {
      case a: CheckpointAcknowledged => s"ack ${a.version} p${a.store.partitionId}"
      case e: CheckpointCompleted => s"completed ${e.version}"
      case e: CheckpointAborted => s"aborted ${e.version}"
    }
    assert(kinds.count(_ == "completed 2") == 1 && kinds.indexOf("completed 2") == 4)
    assert(kinds.take(4).forall(_.startsWith("ack 2 ")))
    assert(kinds.drop(5) == Seq(s"ack 4 p${expected.head.partitionId}", "aborted 4"))
    val completed = published.toSeq.collect { case e: CheckpointCompleted => e }.only
    assert(completed.totals == files.read(2).totals && completed.queryId == "query-1")
    val acks = published.collect { case a: CheckpointAcknowledged if a.version == 2 => a }
    assert(acks.map(_.expected).toSet == Set(4) && acks.map(_.store).toSet == files.read(2).stores.toSet)
    val aborted = published.toSeq.collect { case e: CheckpointAborted => e }.only
    assert(aborted.aborted == c.view("run-1").get.aborted.only)
  }

  test("a publisher that throws never stops a checkpoint") {
    settings = CoordinatorSettings(2, 1000, 1)
    val c = new CheckpointCoordinator(hadoopConf, () => now, _ => Right(expected), (_, _) => (),
      _ => throw new IllegalStateException("the listener bus is stopped"))
    completeAll(c, 2)
    assert(files.read(2).version == 2)
  }

  test("a completion resets the consecutive failures; declines for a busy store do not count") {
    val c = coordinator(tolerable = 1)
    c.decline(decline(expected.head, 2, counts = true))
    completeAll(c, 4)
    assert(c.view("run-1").get.consecutiveFailures == 0)
    c.decline(decline(expected.head, 6, counts = false))
    c.decline(decline(expected.head, 8, counts = true))
    assert(failures.isEmpty && c.view("run-1").get.consecutiveFailures == 1)
  }

  test("retention keeps the newest completed checkpoints; a new run sees them") {
    val c = coordinator(retained = 2)
    Seq(2L, 4L, 6L).foreach(v => completeAll(c, v))
    assert(files.completedVersions() == Seq(4, 6))
    assert(!new File(dir, "rockstate/checkpoints/2").exists())
    c.acknowledge(ack(expected.head, 8)) // pending when the query restarts
    val restarted = coordinator(retained = 2)
    assert(restarted.acknowledge(ack(expected.head, 8, run = "run-2")) == AckResult.Success)
    assert(restarted.view("run-2").get.completed.map(_.version) == Seq(4, 6))
    assert(restarted.outcomes(Seq(root)).roots.only.retained == Seq(4, 6))
    // The same coordinator seeing run-2 start ends run-1's pending checkpoint, no failure.
    c.runStarted("run-1")
    c.runStarted("run-2")
    c.acknowledge(ack(expected.head, 8, run = "run-2"))
    assert(c.view("run-1").get.aborted.last.reason.contains("query restarted"))
    assert(c.view("run-1").get.consecutiveFailures == 0)
  }

  test("a checkpoint whose snapshot manifest vanished is aborted, never completed") {
    val c = coordinator()
    val keys = expected.toSeq
    keys.init.foreach(k => c.acknowledge(ack(k, 2)))
    c.acknowledge(ack(keys.last, 2, writeManifest = false))
    assert(files.completedVersions().isEmpty)
    assert(c.view("run-1").get.aborted.only.reason.contains("is missing at completion"))
  }

  test("stores are expected from Spark's operator metadata") {
    def write(path: String, text: String): Unit = {
      val f = new File(dir, path)
      f.getParentFile.mkdirs()
      Files.write(f.toPath, text.getBytes(StandardCharsets.UTF_8))
    }
    assert(ExpectedStores.read(root, hadoopConf).isLeft)
    write("state/0/_metadata/metadata", "v1\n{\"operatorInfo\":{\"operatorId\":0,\"operatorName\"" +
      ":\"dedupe\"},\"stateStoreInfo\":[{\"storeName\":\"default\",\"numColsPrefixKey\":0," +
      "\"numPartitions\":3}]}")
    new File(dir, "state/1/0").mkdirs()
    assert(ExpectedStores.read(root, hadoopConf).left.toOption.get.contains("state/1/_metadata"))
    write("state/1/_metadata/metadata", "v1\n{\"operatorInfo\":{\"operatorId\":1},\"stateStoreInfo\"" +
      ":[{\"storeName\":\"left\",\"numPartitions\":1},{\"storeName\":\"right\",\"numPartitions\":1}]}")
    assert(ExpectedStores.read(root, hadoopConf) == Right(Set(StoreKey(0, "default", 0),
      StoreKey(0, "default", 1), StoreKey(0, "default", 2), StoreKey(1, "left", 0),
      StoreKey(1, "right", 0))))
  }

  test("an acknowledgement stays small however many files its snapshot has") {
    // It names the snapshot manifest, never the files: Flink's acks outgrew the RPC frame.
    val bytes = new java.io.ByteArrayOutputStream()
    val out = new java.io.ObjectOutputStream(bytes)
    out.writeObject(ack(expected.head, 2))
    out.close()
    assert(bytes.size < 2048, s"${bytes.size} bytes")
    assert(!classOf[SnapshotAck].getDeclaredFields.exists(f =>
      classOf[Iterable[_]].isAssignableFrom(f.getType)))
  }

  test("executors pin what they acknowledged until the outcome, or twice the timeout") {
    CheckpointPins.pend(root, 10, now)
    assert(CheckpointPins.rootsWithPending.contains(root))
    assert(CheckpointPins.pinned(root, hadoopConf, now + 100, 1000) == Set(10L))
    assert(CheckpointPins.pinned(root, hadoopConf, now + 1001, 1000).isEmpty)
    assert(!CheckpointPins.rootsWithPending.contains(root))
    // Retained completed checkpoints come from the location itself after a restart.
    completeAll(coordinator(), 2)
    assert(CheckpointPins.pinned(root, hadoopConf, now + 60000, 1000) == Set(2L))
  }

  test("a late acknowledgement of an older or unknown run never displaces the live run") {
    val c = coordinator(retained = 2)
    c.runStarted("run-1")
    completeAll(c, 2)
    c.runStarted("run-2") // the query restarted
    expected.foreach(k => c.acknowledge(ack(k, 4, run = "run-2")))
    assert(c.outcomes(Seq(root)).roots.only.latestCompleted == 4)
    // A zombie executor of run-1, and an executor of a run this driver never saw start: both
    // discarded, neither checkpoints the location (nor applies its retention to it).
    expected.foreach(k => assert(c.acknowledge(ack(k, 6, run = "run-1")) == AckResult.Discarded))
    assert(c.acknowledge(ack(expected.head, 6, run = "run-0")) == AckResult.Discarded)
    assert(files.completedVersions() == Seq(2, 4))
    val outcome = c.outcomes(Seq(root)).roots.only
    assert(outcome.latestCompleted == 4 && outcome.retained == Seq(2, 4), outcome)
    assert(c.view("run-2").get.pending.isEmpty && c.view("run-2").get.aborted.isEmpty)
    // A run Spark started after the live one does take over.
    c.runStarted("run-3")
    c.acknowledge(ack(expected.head, 6, run = "run-3"))
    assert(c.view("run-3").get.pending.map(_.version) == Seq(6))
    // A restarted run whose acks beat its QueryStartedEvent to the driver loses none of them.
    expected.foreach(k => c.acknowledge(ack(k, 8, run = "run-4")))
    assert(files.completedVersions() == Seq(2, 4))
    c.runStarted("run-4")
    assert(files.completedVersions() == Seq(4, 8)) // retained 2
    assert(c.outcomes(Seq(root)).roots.only.latestCompleted == 8)
  }

  test("a checkpoint completes only once Spark committed its batch") {
    val c = coordinator(timeoutMs = 1000, tolerable = -1)
    expected.foreach(k => assert(c.acknowledge(ack(k, 2, committed = false)) == AckResult.Success))
    assert(files.completedVersions().isEmpty)
    c.checkTimeouts()
    assert(files.completedVersions().isEmpty && c.view("run-1").get.pending.size == 1)
    commitBatch(1)
    c.checkTimeouts()
    assert(files.completedVersions() == Seq(2))
    // A batch that never commits expires, saying why.
    expected.foreach(k => c.acknowledge(ack(k, 4, committed = false)))
    now += 1001
    c.checkTimeouts()
    assert(files.completedVersions() == Seq(2))
    assert(c.view("run-1").get.aborted.only.reason.contains("did not commit batch 3"))
  }

  test("a re-run batch's checkpoint names the attempt whose version landed, never a stale one") {
    val c = coordinator()
    val Seq(first, rest @ _*) = expected.toSeq
    // The first attempt snapshotted version 2, then a re-run's manifest replaced the version.
    val stale = ack(first, 2, attempt = "a")
    val landed = ack(first, 2, attempt = "b")
    assert(c.acknowledge(stale) == AckResult.Success)
    rest.foreach(k => c.acknowledge(ack(k, 2)))
    assert(files.completedVersions().isEmpty, "completed with a stale attempt's snapshot")
    assert(c.view("run-1").get.pending.only.missing == Seq(first))
    // The landed attempt's snapshot arrives.
    assert(c.acknowledge(landed) == AckResult.Success)
    val mine = files.read(2).stores.find(s => s.partitionId == first.partitionId &&
      s.operatorId == first.operatorId && s.storeName == first.storeName).get
    assert(mine.snapshotManifest.endsWith("-b.json"))
  }

  test("format 3: the checkpoint names the attempt whose version file was written last") {
    val c = coordinator()
    val Seq(first, rest @ _*) = expected.toSeq
    val older = ack(first, 2, attempt = "a", landed = false, versionFile = true)
    val newer = ack(first, 2, attempt = "b", versionFile = true)
    assert(c.acknowledge(older) == AckResult.Success)
    rest.foreach(k => c.acknowledge(ack(k, 2, versionFile = true)))
    assert(files.completedVersions().isEmpty, "completed with a displaced attempt's snapshot")
    assert(c.acknowledge(newer) == AckResult.Success)
    assert(files.read(2).stores.exists(s => s.snapshotManifest.endsWith("-b.json") &&
      s.versionManifest == "versions/2-b.rsv"))
  }

  test("checkpoint ids: the attempt Spark's commit log recorded counts, whatever the write order") {
    val c = coordinator()
    val Seq(first, rest @ _*) = expected.toSeq
    // Attempt "a" is older on the storage, but Spark recorded it: the next batch loads it.
    val recorded = ack(first, 2, attempt = "a", landed = false, versionFile = true)
    val newer = ack(first, 2, attempt = "b", versionFile = true)
    rest.foreach(k => c.acknowledge(ack(k, 2, versionFile = true)))
    // Operator 0: partitions 0 and 1; operator 1: partition 0 (one id per store's array).
    commitBatch(1, """{"0":[["a"],["a"]],"1":[["a"]]}""")
    assert(c.acknowledge(newer) == AckResult.Success)
    assert(files.completedVersions().isEmpty, "completed with an attempt Spark did not record")
    assert(c.acknowledge(recorded) == AckResult.Success)
    assert(files.read(2).stores.exists(s => s.partitionId == first.partitionId &&
      s.operatorId == first.operatorId && s.snapshotManifest.endsWith("-a.json")))
  }

  test("a checkpoint whose snapshot lost a file is aborted, never completed") {
    val c = coordinator()
    val keys = expected.toSeq
    keys.init.foreach(k => c.acknowledge(ack(k, 2)))
    val last = ack(keys.last, 2)
    new File(dir, s"${storeDir(keys.last)}/sst/9-2-a.sst").delete()
    c.acknowledge(last)
    assert(files.completedVersions().isEmpty)
    assert(c.view("run-1").get.aborted.only.reason.contains("sst/9-2-a.sst"))
  }

  test("temporary files of a crashed metadata write are swept by a later completion") {
    val c = coordinator(timeoutMs = 1000)
    val crashed = new File(dir, "rockstate/checkpoints/2/._metadata.0000.tmp")
    crashed.getParentFile.mkdirs()
    Files.write(crashed.toPath, "{".getBytes(StandardCharsets.UTF_8))
    crashed.setLastModified(System.currentTimeMillis() - 60000)
    completeAll(c, 4)
    assert(!crashed.exists())
  }

  test("aborts are recorded for offline reports, newest kept; the stats count every outcome") {
    val c = coordinator(timeoutMs = 1000, tolerable = -1)
    (1 to AbortedCheckpointFile.Kept + 2).foreach { i =>
      c.acknowledge(ack(expected.head, 2L * i))
      now += 1001
      c.checkTimeouts()
    }
    val recorded = new File(dir, "rockstate/checkpoints/aborted").list()
      .filterNot(_.endsWith(".crc")).sorted.toSeq
    val versions = (3 to AbortedCheckpointFile.Kept + 2).map(i => s"${2 * i}.json")
    assert(recorded == versions.sorted)
    val doc = CheckpointJson.mapper.readTree(
      new File(dir, s"rockstate/checkpoints/aborted/${2 * (AbortedCheckpointFile.Kept + 2)}.json"))
    assert(doc.get("formatVersion").asInt == 1 && doc.get("countsAsFailure").asBoolean)
    assert(doc.get("reason").asText.contains("expired after 1000 ms"))
    assert(doc.get("acknowledged").asInt == 1 && doc.get("expected").asInt == 4)
    assert(doc.get("runId").asText == "run-1" && doc.get("batchId").asLong == doc.get("version")
      .asLong - 1)
    // A completed checkpoint is never mistaken for one: the directory has no _metadata.
    assert(files.completedVersions().isEmpty)
    completeAll(c, 100)
    assert(c.stats.checkpointsCompleted == 1 && c.stats.lastVersion == 100)
    assert(c.stats.checkpointsAborted == AbortedCheckpointFile.Kept + 2)
    assert(c.stats.checkpointsFailed == AbortedCheckpointFile.Kept + 2 && c.stats.checkpointsPending == 0)
    assert(c.stats.lastStateBytes > 0)
  }
}
