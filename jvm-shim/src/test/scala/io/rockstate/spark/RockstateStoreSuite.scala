package io.rockstate.spark

import java.io.{File, RandomAccessFile}
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.rockstate.checkpoint.{CheckpointPins, Outcomes, RootOutcome}
import io.rockstate.state.RockstateStateStoreProvider
import io.rockstate.storage._
import io.rockstate.storage.conf.{DeprecatedKeys, RockstateConf}
import io.rockstate.storage.format.{Changelog, CheckpointJson, CorruptCheckpointException, MetaPack,
  StateFile, VersionManifest}
import io.rockstate.storage.local.OpenInstances
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.retention.RetentionCleaner
import io.rockstate.testing.{FaultInjectingFileSystem, FaultRule, StoreAudit, StoreAuditReport}
import io.rockstate.testing.StoreDirReads._

/** The store driven directly, without a query: every version, family and encoding. */
class RockstateStoreSuite extends AnyFunSuite with StoreTestKit {

  test("put, get, remove and iterate across committed versions") {
    val p = provider()
    val s1 = p.getStore(0)
    s1.put(key("a", 1), value(10))
    s1.put(key("b", 2), value(20))
    assert(s1.get(key("a", 1)).getLong(0) == 10)
    assert(s1.commit() == 1)
    assert(s1.metrics.numKeys == 2)

    val s2 = p.getStore(1)
    s2.remove(key("a", 1))
    s2.put(key("c", 3), value(30))
    assert(s2.commit() == 2)

    assert(contents(p.getReadStore(1)) == Map(("a", 1) -> 10L, ("b", 2) -> 20L))
    assert(contents(p.getReadStore(2)) == Map(("b", 2) -> 20L, ("c", 3) -> 30L))
    assert(p.getStore(2).metrics.numKeys == 2)
  }

  // With the batch's rows held and without them (every read and check reads RocksDB).
  Seq(("the batch's rows held", Map.empty[String, String]),
    ("batchRowsHeld 0: none held", Map(RockstateConf.BatchRowsHeld.key -> "0"))).foreach {
    case (how, extra) =>
      test(s"the row count stays exact when writes follow reads ($how)") {
        val p = provider(extra = extra)
        val s1 = p.getStore(0)
        (1 to 10).foreach(i => s1.put(key(s"k$i", i), value(i)))
        assert(s1.commit() == 1 && s1.metrics.numKeys == 10)
        // As a streaming aggregation does: every read first (restore), then every write (save).
        val s2 = p.getStore(1)
        Seq(1, 2, 3, 11, 12).foreach(i => s2.get(key(s"k$i", i)))
        s2.put(key("k1", 1), value(100)) // read, existed
        s2.put(key("k11", 11), value(11)) // read, absent
        s2.put(key("k11", 11), value(12)) // written since its read: it exists now
        s2.remove(key("k2", 2)) // read, existed
        s2.remove(key("k2", 2)) // gone since
        s2.remove(key("k12", 12)) // read, absent
        s2.put(key("k12", 12), value(12)) // removed (absent) since its read
        s2.put(key("k13", 13), value(13)) // never read
        assert(s2.get(key("k11", 11)).getLong(0) == 12)
        s2.remove(key("k11", 11)) // read after its write, existed
        s2.put(key("k11", 11), value(13))
        assert(s2.commit() == 2)
        val expected = (1 to 13).filterNot(_ == 2).size
        assert(s2.metrics.numKeys == expected)
        assert(contents(p.getReadStore(2)).size == expected)
        // The count survives a reload from the checkpoint (another executor).
        assert(provider(executor = 1).getStore(2).metrics.numKeys == expected)
      }
  }

  test("a get the batch's rows serve equals RocksDB's, through writes, aborts and reloads") {
    // The same seeded operations on a store that holds the batch's rows (and keeps them for
    // its next batch) and on one that reads every get from RocksDB: each get and each count
    // must agree. A write that left a held row stale, rows kept past an abort or into a load
    // of another version (a retried batch loads the one before the last commit), or rows
    // served to another thread would each show as a difference.
    val held = provider()
    val unheld = provider(executor = 2, checkpoint = new File(root, "unheld"),
      extra = Map(RockstateConf.BatchRowsHeld.key -> "0"))
    // The same stores on other executors: a batch they commit is replayed by the first two's
    // next load onto the instances that hold the version before it.
    val heldElsewhere = provider(executor = 3)
    val unheldElsewhere = provider(executor = 4, checkpoint = new File(root, "unheld"),
      extra = Map(RockstateConf.BatchRowsHeld.key -> "0"))
    val random = new scala.util.Random(7)
    var version = 0L
    (1 to 16).foreach { batch =>
      val at = if (batch % 5 == 0) version - 1 else version // a retry of the last batch
      val (h, u) = if (batch % 7 == 6) (heldElsewhere, unheldElsewhere) else (held, unheld)
      val stores = Seq(h.getStore(at), u.getStore(at))
      if (batch % 7 == 0) { // after another executor's batch: its changes replayed
        assert(metric(stores.head, "rockstateChangelogsReplayed") == 1, s"batch $batch")
      }
      def both[T](f: StateStore => T): T = {
        val Seq(a, b) = stores.map(f)
        assert(a == b, s"batch $batch: $a against $b")
        a
      }
      def read(s: StateStore, k: UnsafeRow): Option[Long] = Option(s.get(k)).map(_.getLong(0))
      (1 to 300).foreach { _ =>
        val k = key(s"k${random.nextInt(40)}", 1)
        random.nextInt(10) match {
          case 0 | 1 | 2 | 3 => both(read(_, k))
          case 4 | 5 | 6 => val v = value(random.nextInt(1000)); both(_.put(k, v))
          case 7 => both(_.remove(k))
          case 8 => // a read from another thread, as Spark's maintenance may make
            both { s =>
              val task = new java.util.concurrent.FutureTask[Option[Long]](() => read(s, k))
              new Thread(task).start()
              task.get(60, java.util.concurrent.TimeUnit.SECONDS)
            }
          case _ => both(_.iterator().map(p => keyOf(p.key) -> p.value.getLong(0)).toMap)
        }
      }
      if (batch % 4 == 3) stores.foreach(_.abort())
      else {
        version = both(_.commit())
        both(_.metrics.numKeys)
      }
    }
    assert(contents(held.getReadStore(version)) == contents(unheld.getReadStore(version)))
    // Reloaded from the checkpoint on another executor: the same rows and count.
    assert(provider(executor = 1).getStore(version).metrics.numKeys ==
      unheld.getStore(version).metrics.numKeys)
  }

  test("abort throws away the batch's writes") {
    val p = provider()
    val s1 = p.getStore(0)
    s1.put(key("a", 1), value(1))
    s1.commit()
    val s2 = p.getStore(1)
    s2.put(key("b", 1), value(2))
    s2.remove(key("a", 1))
    s2.abort()
    assert(contents(p.getStore(1)) == Map(("a", 1) -> 1L))
  }

  test("a restarted provider recovers from local files; another executor downloads") {
    val p = provider(extra = Map(RockstateConf.SnapshotInterval.key -> "2"))
    commitVersions(p, 1 to 3)((v, s) => (1 to 100).foreach(i => s.put(key(s"k$i", v), value(i * v))))
    awaitSnapshot(2)
    val local = provider().getReadStore(3).asInstanceOf[StateStore]
    assert(contents(local).size == 300)
    assert(metric(local, "rockstateBytesDownloaded") == 0)
    val elsewhere = provider(executor = 1).getReadStore(3).asInstanceOf[StateStore]
    assert(contents(elsewhere).size == 300)
    assert(metric(elsewhere, "rockstateBytesDownloaded") > 0)
  }

  test("a snapshot uploaded during a cleanup stays in the local files (local recovery)") {
    // The cleanup decides what the cache keeps from a listing it takes first; a snapshot that
    // lands after that listing is not in it, and must not be pruned from the cache by it.
    val p = provider(scheme = "rsfault", extra = Map(RockstateConf.SnapshotInterval.key -> "2"))
    // Each snapshot lands before the next commit, so every later version rebases onto it and
    // the oldest versions expire.
    Seq(1 to 2, 3 to 4, 5 to 6, 7 to 7).foreach { versions =>
      commitVersions(p, versions)((v, s) => (1 to 50).foreach(i => s.put(key(s"k$i", v), value(i))))
      assert(p.awaitSnapshot(60000))
    }
    // The cleanup pauses 3 s once it expired version 1.
    FaultInjectingFileSystem.setRules(Seq(
      FaultRule("delete", "/versions/1-", "after", "pause:3000", 1, "any")))
    val cleanup = new Thread(() => p.doMaintenance())
    cleanup.start()
    // Version 1 expires after the listing and before the cleanup's pause: it is listed by now.
    val deadline = System.currentTimeMillis() + 60000
    def versionOneListed = Option(new File(storeDir, "versions").listFiles()).toSeq.flatten
      .exists(_.getName.startsWith("1-"))
    while (versionOneListed) {
      assert(System.currentTimeMillis() < deadline && cleanup.isAlive, "version 1 never expired")
      Thread.sleep(10)
    }
    // Version 8's snapshot lands, and version 9 is built on it, while the cleanup pauses.
    commitVersions(p, 8 to 8)((v, s) => s.put(key("late", v), value(v)))
    awaitSnapshot(8)
    assert(p.awaitSnapshot(60000))
    commitVersions(p, 9 to 9)((v, s) => s.put(key("late", v), value(v)))
    assert(cleanup.isAlive, "the cleanup ended before the snapshot uploaded: no race was made")
    cleanup.join(60000)
    FaultInjectingFileSystem.reset()
    val restarted = provider(scheme = "rsfault").getReadStore(9).asInstanceOf[StateStore]
    assert(contents(restarted).size == 7 * 50 + 2)
    assert(metric(restarted, "rockstateBytesDownloaded") == 0)
  }

  test("a load served from the open instance reports no load time and no download") {
    val p = provider(extra = Map(RockstateConf.SnapshotInterval.key -> "2"))
    commitVersions(p, 1 to 3)((v, s) => (1 to 100).foreach(i => s.put(key(s"k$i", v), value(i))))
    awaitSnapshot(2)
    val elsewhere = provider(executor = 1)
    val first = elsewhere.getStore(3)
    assert(metric(first, "rockstateBytesDownloaded") > 0)
    first.put(key("x", 4), value(4))
    first.commit()
    // The next batch starts from the version this instance just committed: nothing to load.
    val next = elsewhere.getStore(4)
    assert(metric(next, "rockstateBytesDownloaded") == 0)
    assert(metric(next, "rockstateLoadMs") == 0 && metric(next, "rockstateChangelogsReplayed") == 0)
    next.abort()
  }

  test("maxOpenStores closes the instances released longest ago; each reopens its directory") {
    val cap = Map(RockstateConf.MaxOpenStores.key -> "2", RockstateConf.SnapshotInterval.key -> "2")
    val stores = (0 until 3).map(i => provider(extra = cap, checkpoint = new File(root, s"cp-$i")))
    def isClosed(p: RockstateStateStoreProvider) = p.storeLock.synchronized(!p.db.isOpen)
    def awaitClosed(p: RockstateStateStoreProvider): Unit = {
      val deadline = System.currentTimeMillis() + 60000
      while (!isClosed(p)) {
        assert(System.currentTimeMillis() < deadline, s"$p was never closed for the cap")
        Thread.sleep(10)
      }
    }
    val closedBefore = OpenInstances.executor.closedForCap
    // Versions 1 to 3 in turn: the third release puts three open, one over the cap. Each
    // version 3 is committed after its snapshot of version 2 landed, so that its lineage
    // starts there (a snapshot landing later is not looked for under 100k changes).
    def commitAll(v: Int): Unit = stores.foreach(p => commitVersions(p, v to v)((v, s) =>
      (1 to 50).foreach(i => s.put(key(s"k$i", v), value(i * v)))))
    (1 to 2).foreach(commitAll)
    (0 until 3).foreach(i => awaitSnapshot(2, remote(new File(root, s"cp-$i"))))
    commitAll(3)
    awaitClosed(stores.head)
    assert(!isClosed(stores.last), "the instance released last was closed")
    assert(OpenInstances.executor.closedForCap > closedBefore)
    // A closed instance's next load of its version reopens its local directory: nothing
    // downloaded or replayed, the state whole.
    val reopened = stores.head.getStore(3)
    assert(contents(reopened) ==
      (1 to 3).flatMap(v => (1 to 50).map(i => (s"k$i", v) -> i.toLong * v)).toMap)
    assert(metric(reopened, "rockstateBytesDownloaded") == 0)
    assert(metric(reopened, "rockstateChangelogsReplayed") == 0)
    assert(metric(reopened, "rockstateInstancesReopened") == 1)
    reopened.put(key("x", 4), value(4))
    reopened.commit() // open: the other two and this one; the one released longest ago closes
    awaitClosed(stores(1))
    // An instance a task holds is never closed, though it was released longest ago.
    val held = stores(2).getStore(3)
    commitVersions(stores(1), 4 to 4)((v, s) => s.put(key("x", v), value(v)))
    awaitClosed(stores.head)
    assert(!isClosed(stores(2)))
    held.put(key("x", 4), value(4))
    held.commit()
    assert(!isClosed(stores(2))) // two open: at the cap
    val next = stores(2).getStore(4)
    assert(metric(next, "rockstateChangelogsReplayed") == 0)
    assert(contents(next).get(("x", 4)).contains(4L))
    next.abort()
  }

  test("a store's figures read after Spark's maintenance closed its provider are its own") {
    // Spark's operators read a store's metrics after its commit released it; with
    // unloadOnCommit, Spark's maintenance thread closes the provider in between. Reading a
    // closed RocksDB's properties crashed the JVM (SIGSEGV in GetIntProperty).
    val p = provider(extra = snapshotEveryVersion)
    val Seq(s) = commitVersions(p, 1 to 1)((v, s) =>
      (1 to 100).foreach(i => s.put(key(s"k$i", v), value(i))))
    awaitSnapshot(1) // the snapshot flushed the version's keys to SST files
    val stateBytes = metric(s, "rockstateStateBytes")
    assert(s.metrics.memoryUsedBytes > 0 && stateBytes > 0)
    p.close()
    val closed = s.metrics
    assert(closed.numKeys == 100 && closed.memoryUsedBytes == 0) // unloaded: none held
    // The version's files outlive the instance, and its size with them.
    assert(metric(s, "rockstateStateBytes") == stateBytes)
  }

  test("a batch reports the blocks its reads took from files and from the block cache") {
    val p = provider(extra = snapshotEveryVersion)
    commitVersions(p, 1 to 1)((_, s) => (1 to 20000).foreach(i => s.put(key(s"k$i", 1), value(i))))
    awaitSnapshot(1)
    assert(p.db.awaitUploads(60000))
    Thread.sleep(100) // the upload thread records the confirmation right after the manifest
    commitVersions(p, 2 to 2)((_, s) => s.put(key("one-more", 0), value(0))) // on snapshot 1
    // Loaded on another executor from the snapshot: every key is in SST files, none cached.
    // Its rows are not held, so the second batch's reads go to RocksDB again, not to the rows
    // the first one kept.
    val elsewhere = provider(executor = 1, extra = Map(RockstateConf.BatchRowsHeld.key -> "0"))
    def readBatch(v: Int): StateStore = {
      val s = elsewhere.getStore(v)
      (1 to 20000 by 17).foreach(i => assert(s.get(key(s"k$i", 1)) != null))
      s.put(key("x", v), value(v))
      s.commit()
      s
    }
    val cold = readBatch(2)
    assert(metric(cold, "rockstateStateBytes") > 0 && metric(cold, "rockstateBlocksRead") > 50,
      cold.metrics)
    assert(metric(cold, "rockstateBlockBytesRead") > metric(cold, "rockstateBlocksRead") * 100)
    val warm = readBatch(3) // the same keys: their blocks are in the cache now
    assert(metric(warm, "rockstateBlockCacheHits") >= 20000 / 17, warm.metrics)
    assert(metric(warm, "rockstateBlocksRead") * 10 <= metric(cold, "rockstateBlocksRead"))
    assert(metric(warm, "rockstateIndexBlocksRead") == 0, warm.metrics)
  }

  test("snapshots upload in the background and share SST files with earlier ones") {
    val p = provider(extra = snapshotEveryVersion)
    commitVersions(p, 1 to 1)((_, s) => (1 to 5000).foreach(i => s.put(key(s"key-$i", i), value(i))))
    awaitSnapshot(1)
    // The upload ends just after its manifest lands; a commit before that skips its snapshot.
    assert(p.db.awaitUploads(60000))
    commitVersions(p, 2 to 2)((_, s) => s.put(key("one-more", 0), value(0)))
    awaitSnapshot(2)
    val dir = remote()
    val second = dir.readSnapshotManifest(dir.listSnapshots().last._1, "test")
    assert(second.version == 2 && second.numKeys == 5001)
    assert(second.stats.filesReused >= 1)
    assert(second.stats.bytesReused > second.stats.bytesUploaded)
    Thread.sleep(100) // the upload thread records the confirmation right after the manifest
    // The next version rebases onto the confirmed snapshot: one changelog to replay.
    val third = commitVersions(p, 3 to 3)((_, s) => s.put(key("third", 0), value(0))).head
    val m = dir.readVersionManifest(3)
    assert(m.snapshot.map(_.version).contains(2L) && m.changelogs.map(_.version) == Seq(3L))
    assert(metric(third, "rockstateSnapshotsCompleted") == 1) // snapshot 2, reported once
    assert(metric(third, "rockstateBytesReused") == second.stats.bytesReused)
    val elsewhere = provider(executor = 1).getReadStore(3).asInstanceOf[StateStore]
    assert(metric(elsewhere, "rockstateChangelogsReplayed") == 1)
  }

  test("the commit path writes bytes proportional to the change, not to the state") {
    // The same 1k changes per batch, against 1k and against 1M keys in state; a snapshot is
    // due every 2 versions, so the big state is also snapshotted, off the commit path.
    // Uncompressed, so the bytes are the records' and not how well their keys compress.
    def commitBytes(stateKeys: Int, location: File): Seq[Long] = {
      val p = provider(checkpoint = location, extra = Map(RockstateConf.SnapshotInterval.key -> "2",
        RockstateConf.ChangelogCompression.key -> "none"))
      commitVersions(p, 1 to 1)((_, s) => (1 to stateKeys).foreach(i => s.put(key("k", i), value(i))))
      commitVersions(p, 2 to 5) { (v, s) =>
        (1 to 1000).foreach(i => s.put(key("k", i * (stateKeys / 1000)), value(v)))
      }.map { s =>
        assert(metric(s, "rockstateChangelogRecords") == 1000)
        metric(s, "rockstateCommitBytes")
      }
    }
    val small = commitBytes(1000, new File(root, "small"))
    val big = commitBytes(1000000, new File(root, "big"))
    assert(small.forall(_ < 1000 * 64), s"bytes per batch: $small")
    big.zip(small).foreach { case (b, s) =>
      assert(b <= s * 1.05 + 512, s"1M-key state wrote $b bytes per batch, 1k-key state $s")
    }
    awaitSnapshot(2, remote(new File(root, "big")))
  }

  test("re-running a batch replaces its version and never touches the one before") {
    val p = provider()
    val s1 = p.getStore(0)
    s1.put(key("a", 1), value(1))
    s1.commit()
    val first = p.getStore(1)
    first.put(key("first-attempt", 1), value(1))
    first.commit()
    // The batch runs again (task retry, restarted query) from the same version, on a new
    // executor: its commit lands as the version, the version before stays as it was.
    val again = provider().getStore(1)
    again.put(key("second-attempt", 1), value(2))
    again.commit()
    assert(contents(provider().getReadStore(1)) == Map(("a", 1) -> 1L))
    assert(contents(provider().getReadStore(2)) == Map(("a", 1) -> 1L, ("second-attempt", 1) -> 2L))
  }

  test("prefix scan returns exactly the keys with that prefix") {
    val p = provider(PrefixKeyScanStateEncoderSpec(keySchema, 1))
    val s = p.getStore(0)
    Seq("a" -> 1, "a" -> 2, "ab" -> 1, "b" -> 1).foreach { case (k, n) => s.put(key(k, n), value(n)) }
    val prefix = UnsafeProjection.create(StructType(keySchema.take(1)))
      .apply(InternalRow(UTF8String.fromString("a"))).copy()
    assert(s.prefixScan(prefix).map(r => keyOf(r.key)).toSet == Set("a" -> 1, "a" -> 2))
  }

  test("range scan and deleteRange follow the ordering Spark expects for timers") {
    val tsSchema = StructType(Seq(StructField("ts", LongType), StructField("k", StringType)))
    def tsKey(ts: Long, k: String) =
      UnsafeProjection.create(tsSchema).apply(InternalRow(ts, UTF8String.fromString(k))).copy()
    val p = new RockstateStateStoreProvider
    p.init(StateStoreId(new File(root, "checkpoint").getAbsolutePath, 1, 0), tsSchema, valueSchema,
      RangeKeyScanStateEncoderSpec(tsSchema, Seq(0)), false,
      new StateStoreConf(new org.apache.spark.sql.internal.SQLConf, Map.empty),
      new Configuration(), false, None)
    open += p
    val s = p.getStore(0)
    Seq(-5L, 100L, 3L, 0L, 42L, -100L).foreach(ts => s.put(tsKey(ts, s"t$ts"), value(ts)))
    assert(s.iterator().map(_.key.getLong(0)).toSeq == Seq(-100L, -5L, 0L, 3L, 42L, 100L))
    val window = s.rangeScan(Some(tsKey(0, "")), Some(tsKey(50, ""))).map(_.key.getLong(0)).toSeq
    assert(window == Seq(0L, 3L, 42L))
    s.deleteRange(tsKey(-5, ""), tsKey(42, ""))
    assert(s.iterator().map(_.key.getLong(0)).toSeq == Seq(-100L, 42L, 100L))
    assert(s.metrics.numKeys == 3)
  }

  test("column families: create, multi-value, list, remove, and survive a reload") {
    val p = provider(useColumnFamilies = true)
    val s = p.getStore(0)
    s.createColFamilyIfAbsent("list", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), useMultipleValuesPerKey = true)
    s.createColFamilyIfAbsent("other", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema))
    s.put(key("x", 1), value(1))
    s.putList(key("x", 1), Array(value(1), value(2)), "list")
    s.merge(key("x", 1), value(3), "list")
    s.mergeList(key("x", 1), Array(value(4), value(5)), "list")
    s.put(key("x", 1), value(7), "other")
    assert(s.valuesIterator(key("x", 1), "list").map(_.getLong(0)).toSeq == Seq(1L, 2L, 3L, 4L, 5L))
    assert(s.iterator("other").map(_.value.getLong(0)).toSeq == Seq(7L))
    assert(s.iterator().map(_.value.getLong(0)).toSeq == Seq(1L)) // families do not mix
    assert(s.allColumnFamilyNames == Set("default", "list", "other"))
    s.commit()

    val fresh = provider(useColumnFamilies = true)
    val r = fresh.getStore(1)
    r.createColFamilyIfAbsent("list", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), useMultipleValuesPerKey = true)
    r.createColFamilyIfAbsent("other", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema))
    assert(r.iteratorWithMultiValues("list").map(_.value.getLong(0)).toSeq == Seq(1L, 2L, 3L, 4L, 5L))
    assert(r.removeColFamilyIfExists("other"))
    assert(!r.removeColFamilyIfExists("other"))
    assert(r.allColumnFamilyNames == Set("default", "list"))
    assert(r.metrics.numKeys == 2)
    r.commit()
    assert(provider(useColumnFamilies = true).getReadStore(2).allColumnFamilyNames ==
      Set("default", "list"))
  }

  test("a commit that creates or removes a column family is snapshotted before it returns") {
    // As Spark's provider does: Spark's reader (snapshotStartBatchId) finds those snapshots.
    val p = provider(useColumnFamilies = true)
    def families(s: StateStore): StateStore = {
      s.createColFamilyIfAbsent("a", keySchema, valueSchema, NoPrefixKeyStateEncoderSpec(keySchema))
      s
    }
    commitVersions(p, 1 to 2)((v, s) => families(s).put(key("x", v), value(v), "a"))
    assert(remote().listSnapshots().map(_._2).toSet == Set(1L)) // at once: no wait
    val s = families(p.getStore(2))
    assert(s.removeColFamilyIfExists("a"))
    s.commit()
    assert(p.awaitSnapshot(60000))
    assert(remote().listSnapshots().map(_._2).toSet == Set(1L, 3L))
    // A store without column families snapshots at its interval only.
    val plain = provider(checkpoint = new java.io.File(root, "plain"))
    commitVersions(plain, 1 to 2)((v, s) => s.put(key("x", v), value(v)))
    assert(plain.awaitSnapshot(60000))
    assert(remote(new java.io.File(root, "plain")).listSnapshots().isEmpty)
  }

  test("without auto repair, a damaged SST fails the load with the file and the version named") {
    val p = provider(extra = snapshotEveryVersion + (RockstateConf.AutoSnapshotRepair.key -> "false"))
    commitVersions(p, 1 to 1)((_, s) => (1 to 1000).foreach(i => s.put(key(s"k$i", i), value(i))))
    awaitSnapshot(1)
    assert(p.db.awaitUploads(60000)) // the confirmation is recorded right after the manifest
    commitVersions(p, 2 to 2)((_, s) => s.put(key("x", 0), value(0)))
    val base = remote().readVersionManifest(2).snapshot
    assert(base.map(_.version).contains(1L))
    val used = remote().readSnapshotManifest(base.get.path, "test").files.find(_.kind == "sst").get
    val sst = new File(storeDir, used.path)
    val raf = new RandomAccessFile(sst, "rw")
    try raf.setLength(sst.length() / 2) finally raf.close()
    val e = loadFailure(provider(executor = 1,
      extra = Map(RockstateConf.AutoSnapshotRepair.key -> "false")).getReadStore(2))
    assert(e.getMessage.contains(sst.getName) && e.getMessage.contains("version 2"))
  }

  test("auto repair: a load past a damaged snapshot rebuilds from an older one, counted") {
    // Snapshots of versions 2 and 4; the one of 4 loses half an SST. Loading 5 elsewhere
    // rebuilds it from snapshot 2 plus versions 3-5 (every file checked first); the repaired
    // store's next commit snapshots again.
    val every2 = Map(RockstateConf.SnapshotInterval.key -> "2")
    val p = provider(extra = every2)
    (1 to 5).foreach { v =>
      commitVersions(p, v to v)((_, s) => (1 to 200).foreach(i => s.put(key(s"k$i", v), value(v * i))))
      assert(p.db.awaitUploads(60000))
    }
    val expected = contents(p.getReadStore(5))
    val dir = remote()
    assert(dir.listSnapshots().map(_._2).distinct == Seq(2L, 4L))
    def snapshotOf(v: Long) = dir.readSnapshotManifest(dir.listSnapshots().find(_._2 == v).get._1,
      "test")
    val shared = snapshotOf(2).files.map(_.path).toSet // snapshot 4 reuses some of 2's SSTs
    def cutInHalf(sst: File): Unit = {
      val raf = new RandomAccessFile(sst, "rw")
      try raf.setLength(sst.length() / 2) finally raf.close()
    }
    cutInHalf(new File(storeDir, snapshotOf(4).files.filter(f => f.kind == "sst" &&
      !shared.contains(f.path)).maxBy(_.size).path))
    assert(dir.readVersionManifest(5).snapshot.map(_.version).contains(4L))

    val elsewhere = provider(executor = 1, extra = every2)
    val store = elsewhere.getStore(5)
    assert(contents(store) == expected)
    assert(metric(store, "numSnapshotsAutoRepaired") == 1)
    assert(metric(store, "rockstateChangelogsReplayed") == 3) // versions 3, 4, 5
    store.put(key("after", 0), value(0))
    store.commit()
    assert(metric(store, "forceSnapshotCount") == 1)
    awaitSnapshot(6)
    assert(contents(provider(executor = 2, extra = every2).getReadStore(6)) ==
      expected + (("after", 0) -> 0L))

    // With snapshot 2 damaged too, version 5 is rebuilt from empty state and versions 1-5.
    cutInHalf(new File(storeDir, snapshotOf(2).files.filter(_.kind == "sst").maxBy(_.size).path))
    val fromEmpty = provider(executor = 4, extra = every2).getReadStore(5).asInstanceOf[StateStore]
    assert(contents(fromEmpty) == expected)
    assert(metric(fromEmpty, "numSnapshotsAutoRepaired") == 1)
    assert(metric(fromEmpty, "rockstateChangelogsReplayed") == 5)

    // Past the replay bound there is nothing to rebuild from: an error naming both.
    val bounded = provider(executor = 3, extra = every2 +
      (RockstateConf.RepairMaxReplay.key -> "2"))
    val e = loadFailure(bounded.getReadStore(5))
    assert(e.getMessage.contains("version 4") && e.getMessage.contains(RockstateConf.RepairMaxReplay.key))
  }

  test("a missing, truncated or altered version file is an error, never a shorter history") {
    val p = provider()
    commitVersions(p, 1 to 3)((v, s) => s.put(key("a", v), value(v)))
    val files = new File(storeDir, "versions").listFiles().filter(_.getName.endsWith(".rsv"))
      .sortBy(_.getName)
    assert(files.length == 3)
    val raf = new RandomAccessFile(files(2), "rw")
    try raf.setLength(files(2).length() - 3) finally raf.close()
    val truncated = loadFailure(provider(executor = 1).getReadStore(3))
    assert(truncated.getMessage.contains(files(2).getName) &&
      truncated.getMessage.contains("trailer"))
    // One flipped bit in the middle of version 2's file: its CRC32 no longer matches.
    val bytes = FileUtils.readFileToByteArray(files(1))
    bytes(bytes.length / 2) = (bytes(bytes.length / 2) ^ 1).toByte
    FileUtils.writeByteArrayToFile(files(1), bytes)
    val altered = loadFailure(provider(executor = 2).getReadStore(2))
    assert(altered.getMessage.contains(files(1).getName) && altered.getMessage.contains("CRC32"))
    // Version 1's file gone: version 1 does not exist, and version 2's lineage lacks a link.
    files(0).delete()
    val gone = loadFailure(provider(executor = 3).getReadStore(1))
    assert(gone.getMessage.contains("version 1") && gone.getMessage.contains("no version file"))
    FileUtils.writeByteArrayToFile(files(1), bytes.updated(bytes.length / 2,
      (bytes(bytes.length / 2) ^ 1).toByte)) // version 2 repaired
    val missing = loadFailure(provider(executor = 4).getReadStore(2))
    assert(missing.getMessage.contains(files(0).getName) && missing.getMessage.contains("missing"))
  }

  test("changelog files replay every record in order, in both codecs, and detect truncation") {
    Seq("none", "zstd").foreach { codec =>
      val file = new File(root, s"log-$codec")
      val w = new Changelog.Writer(file, codec)
      w.put(Array[Byte](1), Array[Byte](10))
      w.merge(Array[Byte](1), Array[Byte](11))
      w.delete(Array[Byte](2))
      w.deleteRange(Array[Byte](3), Array[Byte](4))
      w.finish()
      val seen = scala.collection.mutable.Buffer.empty[String]
      val n = Changelog.replay(file, file.getName, new Changelog.Target {
        def put(k: Array[Byte], v: Array[Byte]): Unit = seen += s"put ${k.head} ${v.head}"
        def merge(k: Array[Byte], v: Array[Byte]): Unit = seen += s"merge ${k.head} ${v.head}"
        def delete(k: Array[Byte]): Unit = seen += s"delete ${k.head}"
        def deleteRange(b: Array[Byte], e: Array[Byte]): Unit = seen += s"range ${b.head} ${e.head}"
      })
      assert(n == 4 && seen == Seq("put 1 10", "merge 1 11", "delete 2", "range 3 4"))
      val raf = new RandomAccessFile(file, "rw")
      try raf.setLength(file.length() - 4) finally raf.close()
      val e = intercept[CorruptCheckpointException](
        Changelog.replay(file, file.getName, new Changelog.Target {
          def put(k: Array[Byte], v: Array[Byte]): Unit = ()
          def merge(k: Array[Byte], v: Array[Byte]): Unit = ()
          def delete(k: Array[Byte]): Unit = ()
          def deleteRange(b: Array[Byte], e: Array[Byte]): Unit = ()
        }))
      assert(e.getMessage.contains(file.getName), codec)
    }
  }

  test("a changelog's bytes are the documented layout, across its buffer and past its size") {
    // Records of 1 byte to 200 KB: some straddle the writer's 64 KB buffer, one exceeds it.
    val rnd = new scala.util.Random(7)
    val records = (1 to 400).map { i =>
      val size = if (i == 200) 200 * 1024 else if (i % 50 == 0) 40000 else 1 + rnd.nextInt(300)
      (Array.fill[Byte](1 + i % 17)(i.toByte), Array.fill[Byte](size)((i * 7).toByte))
    }
    val file = new File(root, "log-layout")
    val w = new Changelog.Writer(file, "none")
    records.zipWithIndex.foreach { case ((k, v), i) =>
      if (i % 3 == 2) w.delete(k) else w.put(k, v)
    }
    w.finish()
    // The layout of docs/checkpoint-format.md, written field by field.
    val expected = new java.io.ByteArrayOutputStream()
    val d = new java.io.DataOutputStream(expected)
    d.write(Changelog.Magic)
    d.write(Array(Changelog.Format, Changelog.Codecs("none")))
    records.zipWithIndex.foreach { case ((k, v), i) =>
      d.writeByte(if (i % 3 == 2) Changelog.Delete else Changelog.Put)
      d.writeInt(k.length)
      d.write(k)
      if (i % 3 != 2) {
        d.writeInt(v.length)
        d.write(v)
      }
    }
    d.writeByte(Changelog.End)
    d.writeLong(records.size.toLong)
    d.flush()
    assert(java.util.Arrays.equals(Files.readAllBytes(file.toPath), expected.toByteArray))
  }

  test("a missing version file is an error, never empty state") {
    val p = provider()
    val s = p.getStore(0)
    s.put(key("a", 1), value(1))
    s.commit()
    new File(storeDir, "versions").listFiles().foreach(_.delete())
    val e = loadFailure(provider().getReadStore(1))
    assert(e.getMessage.contains("version 1") && e.getMessage.contains("no version file"))
  }

  test("retention: every file is referenced by a retained version, and every one loads") {
    val graceMs = 2000L
    val p = provider(extra = Map(RockstateConf.OrphanFileGraceMs.key -> graceMs.toString,
      RockstateConf.SnapshotInterval.key -> "2"))
    def batch(v: Int): Unit = {
      commitVersions(p, v to v)((_, s) => (1 to 200).foreach(i => s.put(key(s"k${i % 50}", v), value(i))))
      assert(p.db.awaitUploads(60000))
      p.doCleanupMaintenance() // as Spark's maintenance thread would, between batches
    }
    (1 to 19).foreach(batch)
    // A crashed upload's file: no manifest names it; kept within the grace period (it could
    // be an upload under way), collected once the store's commits are past the grace.
    val crashed = new File(storeDir, "sst/000999-crashed.sst")
    FileUtils.writeStringToFile(crashed, "x", "UTF-8")
    p.doCleanupMaintenance()
    assert(crashed.exists())
    Thread.sleep(graceMs + 100)
    p.doCleanupMaintenance()
    assert(crashed.exists(), "storage time moves with the store's manifests, not the clock")
    batch(20)
    assert(!crashed.exists())
    val dir = remote()
    // Past the 3 retained, only versions whose changes a retained lineage replays stay.
    val listed = dir.listVersions()
    assert(listed.takeRight(3) == Seq(18L, 19L, 20L), listed)
    assert(heldByLineage(dir, listed.dropRight(3)), listed)
    val report = StoreAudit.audit(dir, listed, p.conf)
    assert(report.ok, report.toString)
    Seq(18L, 19L, 20L).foreach(v =>
      assert(contents(provider(executor = 1).getReadStore(v)).size == 50 * v.toInt))
    // Snapshots every 2 versions (18 and 20); 16 stays, version 18 is rebuilt from it.
    assert(dir.listSnapshots().map(_._2) == Seq(16L, 18L, 20L), dir.listSnapshots().toString)
  }

  test("a cleanup deletes at most maxVersionsToDeletePerMaintenance versions, oldest first") {
    val p = provider(extra = snapshotEveryVersion +
      (RockstateConf.MaxVersionsToDeletePerMaintenance.key -> "2"))
    (1 to 10).foreach { v =>
      commitVersions(p, v to v)((_, s) => s.put(key("k", v), value(v)))
      assert(p.db.awaitUploads(60000))
    }
    val dir = remote()
    assert(dir.listVersions() == (1L to 10L))
    p.doCleanupMaintenance()
    assert(dir.listVersions() == (3L to 10L))
    p.doCleanupMaintenance()
    assert(dir.listVersions() == (5L to 10L))
    p.doCleanupMaintenance()
    p.doCleanupMaintenance()
    assert(dir.listVersions() == (8L to 10L)) // the 3 retained, and never fewer
    p.doCleanupMaintenance()
    assert(dir.listVersions() == (8L to 10L))
    (8 to 10).foreach(v => assert(contents(provider(executor = 1).getReadStore(v)).size == v))
    assert(StoreAudit.audit(dir, dir.listVersions(), p.conf).ok)
  }

  test("an audit is redone when maintenance expires a version while it reads") {
    // A stopped query's executors still run maintenance: an audit listing version 1 can find
    // its file gone when it opens it. The audit reads through rsfault://, which pauses its
    // first open of version 1's file; cleanup (through file://) runs during the pause.
    val p = provider(extra = Map(RockstateConf.SnapshotInterval.key -> "2",
      RockstateConf.OrphanFileGraceMs.key -> "0"))
    (1 to 8).foreach { v =>
      commitVersions(p, v to v)((_, s) => (1 to 20).foreach(i => s.put(key(s"k$i", v), value(i))))
      assert(p.db.awaitUploads(60000))
    }
    val plan = new File(root, "plan.json")
    FileUtils.writeStringToFile(plan, """{"rules": [{"op": "open", "pathRegex":
      "/versions/1-[^/]*\\.rsv$", "when": "before", "action": "pause:5000", "nth": 1,
      "process": "any", "id": "audit"}]}""", "UTF-8")
    val conf = hadoopConf
    conf.set("fs.rsfault.plan", plan.getAbsolutePath)
    conf.setBoolean("fs.rsfault.impl.disable.cache", true)
    val dir = new StoreCheckpointDir(
      new org.apache.hadoop.fs.Path(s"rsfault://${storeDir.getAbsolutePath}"), conf)
    assert(dir.listVersionEntries().exists(_.version == 1))
    val audit = new java.util.concurrent.FutureTask[StoreAuditReport](
      () => StoreAudit.audit(dir, Seq(6L, 7L, 8L), p.conf))
    val reader = new Thread(audit)
    reader.start()
    val fired = new File(root, "fired-audit")
    val deadline = System.currentTimeMillis() + 60000
    while (!fired.exists()) {
      assert(System.currentTimeMillis() < deadline, "the audit never opened version 1")
      Thread.sleep(10)
    }
    Thread.sleep(5) // no grace: everything unreferenced is fair game
    p.doCleanupMaintenance()
    assert(reader.isAlive, "cleanup must run while the audit is paused")
    assert(!remote().listVersionEntries().exists(_.version == 1), "version 1 was not expired")
    val report = audit.get(120, java.util.concurrent.TimeUnit.SECONDS)
    assert(report.ok, report.toString)
    assert(!report.versions.contains(1L) && report.loaded.keySet == Set(6L, 7L, 8L),
      report.toString)
  }

  test("a cleanup lists the store directory once, however many folders and files it has") {
    // On an object store every folder listed is a request, and an existence check two: a
    // cleanup runs at every maintenance interval of every store, so it takes one listing.
    val p = provider(extra = Map(RockstateConf.SnapshotInterval.key -> "2"))
    (1 to 8).foreach { v =>
      commitVersions(p, v to v)((_, s) => (1 to 20).foreach(i => s.put(key(s"k$i", v), value(i))))
      assert(p.db.awaitUploads(60000))
    }
    val conf = hadoopConf
    conf.set("fs.rscount.impl", classOf[io.rockstate.testing.CountingFileSystem].getName)
    val dir = new StoreCheckpointDir(new org.apache.hadoop.fs.Path(
      s"${io.rockstate.testing.CountingFileSystem.Scheme}://${storeDir.getAbsolutePath}"), conf)
    val cleaner = new RetentionCleaner(dir, p.conf)
    def counted(): Map[String, Long] = {
      io.rockstate.testing.CountingFileSystem.reset()
      cleaner.clean()
      io.rockstate.testing.CountingFileSystem.counts
    }
    val first = counted() // reads every version file's header and snapshot manifest once
    assert(first.getOrElse("list", 0L) <= 2 && first.getOrElse("status", 0L) == 0, first)
    assert(first.getOrElse("open", 0L) > 0, first)
    val steady = counted()
    assert(steady.getOrElse("list", 0L) == 1 && steady.getOrElse("status", 0L) == 0 &&
      steady.getOrElse("open", 0L) == 0, steady)
  }

  test("cleanup keeps a retained completed checkpoint's version and snapshot past retention") {
    val p = provider(extra = Map(RockstateConf.SnapshotInterval.key -> "2",
      RockstateConf.OrphanFileGraceMs.key -> "0"))
    def batch(v: Int): Unit = {
      commitVersions(p, v to v)((_, s) => (1 to 200).foreach(i => s.put(key(s"k${i % 50}", v), value(i))))
      assert(p.db.awaitUploads(60000))
      Thread.sleep(5) // no grace: everything unreferenced is fair game
      p.doCleanupMaintenance()
    }
    (1 to 4).foreach(batch)
    // The driver completed checkpoint 4: its metadata is what executors' cleanup lists.
    val metadata = new File(root, "rockstate/checkpoints/4/_metadata")
    metadata.getParentFile.mkdirs()
    FileUtils.writeStringToFile(metadata, "{}", "UTF-8")
    retainedCheckpoints(p, Seq(4L)) // the driver's report; the location says the same
    (5 to 12).foreach(batch)
    val dir = remote()
    val listed = dir.listVersions()
    assert(Seq(4L, 10L, 11L, 12L).forall(listed.contains), listed)
    assert(heldByLineage(dir, listed.filterNot(Seq(4L, 10L, 11L, 12L).contains)), listed)
    assert(dir.listSnapshots().map(_._2).contains(4L), dir.listSnapshots().toString)
    assert(StoreAudit.audit(dir, listed, p.conf).ok)
    assert(contents(provider(executor = 1).getReadStore(4)).size == 200)
    // Once the checkpoint is dropped from retention, so are its version and snapshot.
    FileUtils.deleteDirectory(metadata.getParentFile)
    retainedCheckpoints(p, Nil)
    batch(13)
    assert(dir.listVersions().takeRight(3) == Seq(11L, 12L, 13L))
    assert(!dir.listVersions().contains(4L))
    assert(!dir.listSnapshots().map(_._2).contains(4L), dir.listSnapshots().toString)
  }

  test("the checkpoint timeout must fit in half the orphan grace") {
    val conf = Map(RockstateConf.OrphanFileGraceMs.key -> "10000")
    assert(RockstateConf.from(conf, 3).checkpointTimeoutMs == 5000) // unset: lowered
    val e = intercept[IllegalArgumentException](
      RockstateConf.from(conf + (RockstateConf.CheckpointTimeoutMs.key -> "6000"), 3))
    assert(e.getMessage.contains(RockstateConf.CheckpointTimeoutMs.key) &&
      e.getMessage.contains(RockstateConf.OrphanFileGraceMs.key))
  }

  test("the cache's high-priority pool is a fraction below 1") {
    assert(RockstateConf.from(Map.empty, 3).highPriorityPoolRatio == 0.1)
    val set = Map(RockstateConf.HighPriorityPoolRatio.key -> "0.25")
    assert(RockstateConf.from(set, 3).highPriorityPoolRatio == 0.25)
    Seq("1", "1.5", "-0.1", "NaN", "a tenth").foreach { bad =>
      val e = intercept[IllegalArgumentException](
        RockstateConf.from(Map(RockstateConf.HighPriorityPoolRatio.key -> bad), 3))
      assert(e.getMessage.contains(RockstateConf.HighPriorityPoolRatio.key) &&
        e.getMessage.contains(s"'$bad'"), e.getMessage)
    }
  }

  test("a snapshot is referenced only once its upload is confirmed") {
    FaultInjectingFileSystem.setRules(Seq(FaultRule.slowUploads(400)))
    val p = provider(scheme = "rsfault", extra = Map(RockstateConf.SnapshotInterval.key -> "2",
      "spark.sql.streaming.minBatchesToRetain" -> "10"))
    commitVersions(p, 1 to 3)((v, s) => (1 to 100).foreach(i => s.put(key(s"k$i", v), value(v))))
    val dir = remote()
    // Snapshot 2 is still uploading: version 3 rebuilds from the changelogs alone.
    assert(dir.readVersionManifest(3).snapshot.isEmpty)
    assert(dir.readVersionManifest(3).changelogs.map(_.version) == Seq(1L, 2L, 3L))
    awaitSnapshot(2)
    Thread.sleep(100) // the upload thread records the confirmation right after the manifest
    commitVersions(p, 4 to 4)((_, s) => s.put(key("x", 4), value(4)))
    val m = dir.readVersionManifest(4)
    assert(m.snapshot.map(_.version).contains(2L) && m.changelogs.map(_.version) == Seq(3L, 4L))
    FaultInjectingFileSystem.reset()
    assert(contents(provider(executor = 1).getReadStore(4)).size == 301)
  }

  test("a format 1 manifest (a full snapshot listing its files) still loads and builds on") {
    // Format 1 had plain SSTs only: the snapshot it is made from packs none.
    val p = provider(extra = snapshotEveryVersion + (RockstateConf.SstPackMB.key -> "0"))
    commitVersions(p, 1 to 1)((_, s) => (1 to 100).foreach(i => s.put(key(s"k$i", 1), value(i))))
    awaitSnapshot(1)
    val dir = remote()
    val snap = dir.readSnapshotManifest(dir.listSnapshots().head._1, "test")
    // What rockstate 0.1 wrote for version 1: the snapshot's files in the version manifest,
    // RocksDB's small files one by one (format 3 packs them into the snapshot manifest).
    val metaDir = new File(storeDir, "meta/1-legacy")
    Files.createDirectories(metaDir.toPath)
    MetaPack.unpackInline(snap.metaPack.get, metaDir, "test")
    val metaFiles = metaDir.listFiles().toSeq.map { f =>
      val crc = new java.util.zip.CRC32()
      crc.update(Files.readAllBytes(f.toPath))
      StateFile(f.getName, s"meta/1-legacy/${f.getName}", f.length, crc.getValue, "meta")
    }
    val legacy = Map("formatVersion" -> 1, "version" -> 1, "operatorId" -> 0, "partitionId" -> 0,
      "storeName" -> "default", "numKeys" -> 100, "useColumnFamilies" -> false,
      "columnFamilies" -> snap.columnFamilies, "files" -> (snap.files ++ metaFiles),
      "stats" -> snap.stats, "createdAtMs" -> 0L, "writer" -> "rockstate-jvm")
    FileUtils.writeByteArrayToFile(new File(storeDir, "manifests/1.json"),
      CheckpointJson.pretty(legacy))
    new File(storeDir, "manifests/.1.json.crc").delete() // Hadoop's checksum of the old bytes
    FileUtils.deleteDirectory(new File(storeDir, "snapshots"))
    FileUtils.deleteDirectory(new File(storeDir, "versions"))
    val moved = provider(executor = 1)
    assert(contents(moved.getReadStore(1)).size == 100)
    commitVersions(moved, 2 to 2)((_, s) => s.put(key("new", 2), value(2)))
    val m = dir.readVersionManifest(2)
    assert(m.formatVersion == VersionManifest.FormatVersion &&
      m.snapshot.map(_.version).contains(1L))
    assert(contents(provider(executor = 2).getReadStore(2)).size == 101)
  }

  test("checkpoint ids (format 2): each commit gets its own id, and a load takes exactly it") {
    val p = provider()
    val first = p.getStore(0, None)
    first.put(key("a", 1), value(1))
    first.commit()
    val info1 = first.getStateStoreCheckpointInfo()
    assert(info1.batchVersion == 1 && info1.baseStateStoreCkptId.isEmpty)
    val id1 = info1.stateStoreCkptId.get
    // Two attempts of version 2 built on id1 (a retry, a zombie): each its own id and state.
    val a = p.getStore(1, Some(id1))
    a.put(key("a", 2), value(20))
    a.commit()
    val infoA = a.getStateStoreCheckpointInfo()
    val b = p.getStore(1, Some(id1))
    b.put(key("b", 2), value(21))
    b.commit()
    val infoB = b.getStateStoreCheckpointInfo()
    assert(infoA.baseStateStoreCkptId.contains(id1) && infoB.baseStateStoreCkptId.contains(id1))
    assert(infoA.stateStoreCkptId != infoB.stateStoreCkptId)
    assert(remote().listVersionEntries(Some(2L)).size == 2)
    // Whichever attempt the driver recorded is the one loaded, on this instance or elsewhere.
    val elsewhere = provider(executor = 1)
    assert(contents(elsewhere.getReadStore(2, infoA.stateStoreCkptId)) ==
      Map(("a", 1) -> 1L, ("a", 2) -> 20L))
    assert(contents(elsewhere.getReadStore(2, infoB.stateStoreCkptId)) ==
      Map(("a", 1) -> 1L, ("b", 2) -> 21L))
    assert(contents(p.getReadStore(2, infoA.stateStoreCkptId)) ==
      Map(("a", 1) -> 1L, ("a", 2) -> 20L))
    // Built on attempt A: version 3's lineage replays A's changes, never B's.
    val c = elsewhere.getStore(2, infoA.stateStoreCkptId)
    c.put(key("c", 3), value(3))
    c.commit()
    val id3 = c.getStateStoreCheckpointInfo().stateStoreCkptId
    assert(contents(provider(executor = 2).getReadStore(3, id3)).keySet ==
      Set(("a", 1), ("a", 2), ("c", 3)))
    val e = loadFailure(
      provider(executor = 3).getReadStore(2, Some("00000000-0000-0000-0000-000000000000")))
    assert(e.getMessage.contains("version 2") && e.getMessage.contains("no version file"))
  }

  /** Whether each of `versions` is a link of the lineage of a later version present. */
  /**
   * What the driver tells executors when checkpoints complete or drop out of retention: the
   * completed checkpoints of `p`'s query that its cleanup must keep.
   */
  private def retainedCheckpoints(p: RockstateStateStoreProvider, versions: Seq[Long]): Unit =
    CheckpointPins.apply(Outcomes(Seq(RootOutcome(p.queryRoot.toString,
      versions.maxOption.getOrElse(0L), versions, Nil))), System.currentTimeMillis())

  private def heldByLineage(dir: StoreCheckpointDir, versions: Seq[Long]): Boolean = {
    val links = dir.listVersionEntries().filterNot(e => versions.contains(e.version))
      .flatMap(e => dir.readEntryManifest(e).changelogs.map(_.version)).toSet
    versions.forall(links.contains)
  }

  test("bad settings are refused with the key named") {
    val e = intercept[IllegalArgumentException](
      provider(extra = Map(RockstateConf.RocksdbMemoryMB.key -> "lots")))
    assert(e.getMessage.contains(RockstateConf.RocksdbMemoryMB.key))
    val cap = intercept[IllegalArgumentException](
      provider(extra = Map(RockstateConf.MaxVersionsToDeletePerMaintenance.key -> "0")))
    assert(cap.getMessage.contains(RockstateConf.MaxVersionsToDeletePerMaintenance.key))
  }

  test("a setting's old name still works and is logged once as deprecated") {
    val old = RockstateConf.Prefix + "readKeysHeld"
    assert(RockstateConf.BatchRowsHeld.deprecatedKeys == Seq(old))
    assert(RockstateConf.RocksdbMemoryMB.deprecatedKeys ==
      Seq(RockstateConf.Prefix + "blockCacheSizeMB"))
    val first = DeprecatedKeys.warnOnce("probe-" + old, RockstateConf.BatchRowsHeld.key)
    assert(first && !DeprecatedKeys.warnOnce("probe-" + old, RockstateConf.BatchRowsHeld.key))
    assert(RockstateConf.from(Map(old -> "7"), 2).batchRowsHeld == 7)
    assert(DeprecatedKeys.used.contains(old))
    // The new name wins over the old; a store reads the old one through init as a user sets it.
    assert(RockstateConf.from(Map(old -> "7", RockstateConf.BatchRowsHeld.key -> "9"), 2)
      .batchRowsHeld == 9)
    provider(extra = Map(old -> "0")).close() // not refused as unknown
    val bad = intercept[IllegalArgumentException](provider(extra = Map(old -> "many")))
    assert(bad.getMessage.contains(old))
  }

  test("an unknown setting fails the store, naming the nearest known one") {
    val typo = intercept[IllegalArgumentException](
      provider(extra = Map(RockstateConf.Prefix + "snapshotIntervall" -> "2")))
    assert(typo.getMessage.contains(s"unknown setting ${RockstateConf.Prefix}snapshotIntervall"))
    assert(typo.getMessage.contains(s"did you mean ${RockstateConf.SnapshotInterval.key}?"))
    // An old name's misspelling points at the setting's name today.
    val old = intercept[IllegalArgumentException](
      provider(extra = Map(RockstateConf.Prefix + "blockCacheSizeMb" -> "64")))
    assert(old.getMessage.contains(s"did you mean ${RockstateConf.RocksdbMemoryMB.key}?"))
    val far = intercept[IllegalArgumentException](
      provider(extra = Map(RockstateConf.Prefix + "zzzzzzzzzz" -> "1")))
    assert(far.getMessage.contains("no setting has a name near it"))
    // Keys outside rockstate's prefix are Spark's or another provider's: not refused.
    val p = provider(extra = Map("spark.sql.streaming.stateStore.rocksdb.whatever" -> "1"))
    p.close()
  }
}
