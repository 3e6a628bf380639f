package io.rockstate.spark

import java.io.{File, RandomAccessFile}
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}

import scala.collection.mutable

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.execution.streaming.state.StateStore

import io.rockstate.state.RockstateStateStoreProvider
import io.rockstate.storage._
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{SnapshotManifest, SnapshotStats}
import io.rockstate.storage.local.LocalStoreFiles
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.snapshot.{ConfirmedFiles, SnapshotJob}
import io.rockstate.testing.{FaultInjectingFileSystem, FaultRule, StoreAudit}
import io.rockstate.testing.StoreDirReads._

/**
 * The paths where a partition's state could be lost or a version published wrong, each caused
 * on purpose (docs/guarantees.md lists them). Every test here failed before its fix.
 */
class FaultPathsSuite extends AnyFunSuite with StoreTestKit {

  override def afterEach(): Unit = {
    FaultInjectingFileSystem.reset()
    super.afterEach()
  }

  private def rows(v: Int, n: Int = 50): (Int, StateStore) => Unit =
    (_, s) => (1 to n).foreach(i => s.put(key(s"k$i", v), value(v.toLong * i)))

  private def expectedRows(versions: Range, n: Int = 50): Map[(String, Int), Long] =
    versions.flatMap(v => (1 to n).map(i => (s"k$i", v) -> v.toLong * i)).toMap

  /** Every retained version loads on a fresh executor with exactly its rows. */
  private def assertLoads(versions: Range, executor: Int = 9): Unit = versions.foreach { v =>
    val fresh = provider(executor = executor + v)
    assert(contents(fresh.getReadStore(v)) == expectedRows(1 to v), s"version $v")
  }

  test("1. a commit never rebases onto a snapshot cleanup deleted after it landed late") {
    // Snapshot 3's upload crawls (1.5 s a file) while versions 4-7 commit. When its manifest
    // lands nothing names it and it is older than every retained version; once the store
    // commits again elsewhere (batch 8 ran on another executor), a cleanup with no grace
    // deletes it. The instance that took it must not rebase onto it afterwards.
    val conf = Map(RockstateConf.SnapshotInterval.key -> "3", RockstateConf.OrphanFileGraceMs.key -> "0")
    FaultInjectingFileSystem.setRules(Seq(FaultRule.slowUploads(1500)))
    val p = provider(scheme = "rsfault", extra = conf)
    (1 to 7).foreach(v => commitVersions(p, v to v)((_, s) => rows(v)(v, s)))
    assert(p.db.awaitUploads(60000))
    FaultInjectingFileSystem.reset()
    assert(remote().listSnapshots().map(_._2) == Seq(3L))
    val elsewhere = provider(executor = 1, extra = conf)
    commitVersions(elsewhere, 8 to 8)((_, s) => rows(8)(8, s))
    assert(elsewhere.db.awaitUploads(60000))
    elsewhere.doCleanupMaintenance()
    assert(!remote().listSnapshots().exists(_._2 == 3), "the late snapshot should be dropped")
    commitVersions(p, 9 to 9)((_, s) => rows(9)(9, s))
    val m = remote().readVersionManifest(9)
    assert(!m.snapshot.exists(_.version == 3), s"version 9 rebased onto deleted snapshot: $m")
    assertLoads(7 to 9)
  }

  test("1. a snapshot never reuses files whose owner manifest cleanup deleted meanwhile") {
    val p = provider(extra = Map(RockstateConf.SnapshotInterval.key -> "1"))
    commitVersions(p, 1 to 1)(rows(1))
    awaitSnapshot(1)
    assert(p.db.awaitUploads(60000))
    val dir = remote()
    val owner = dir.listSnapshots().head._1
    val shared = dir.readSnapshotManifest(owner, "test").files.filter(_.kind == "sst")
    assert(shared.nonEmpty)
    // Snapshot 2 reuses snapshot 1's SSTs; while it uploads its own files (slowly), cleanup
    // on another executor drops snapshot 1 and deletes its files.
    // Its uploads go through a location whose every file takes 0.7 s.
    FaultInjectingFileSystem.setRules(Seq(FaultRule("create", FaultRule.UploadedFiles, "before",
      "pause:700", 1, "any", every = true)))
    val slowDir = new StoreCheckpointDir(
      new org.apache.hadoop.fs.Path(s"rsfault://${storeDir.getAbsolutePath}"), hadoopConf)
    val cleaner = new Thread(() => {
      Thread.sleep(300)
      dir.delete(owner)
      shared.foreach(f => dir.delete(f.path))
    })
    // Snapshot 2 of p's DB, its upload run by hand to time the cleanup inside it.
    val checkpoint = new File(root, "cp-2")
    p.db.rocksDB.checkpointTo(checkpoint)
    val confirmed = new ConfirmedFiles(shared, owner)
    val job = SnapshotJob(SnapshotManifest(2, 2, 0, 0, "default", "s", 50, false, Nil, Nil,
      SnapshotStats.Zero, 0, "test"), checkpoint, slowDir,
      LocalStoreFiles.forStore(dir.root.toString, "job", new File(root, "job").getPath),
      confirmed, p.conf, System.nanoTime())
    cleaner.start()
    val e = intercept[java.io.IOException](job.run())
    cleaner.join()
    assert(e.getMessage.contains("deleted by cleanup"), e.getMessage)
    assert(dir.listSnapshots().isEmpty, "the withdrawn snapshot's manifest must be gone")
    // The next snapshot uploads those files again instead of naming deleted ones.
    val again = job.copy(takenAtNanos = System.nanoTime()).run()
    assert(again._1.stats.filesReused == 0 && again._1.files.forall(f => dir.exists(f.path)))
  }

  test("2. a version committed twice is read again by cleanup: the landed attempt's files stay") {
    val grace = Map(RockstateConf.OrphanFileGraceMs.key -> "1000",
      RockstateConf.SnapshotInterval.key -> "100")
    val p = provider(extra = grace)
    commitVersions(p, 1 to 2)((v, s) => rows(v)(v, s))
    p.doCleanupMaintenance() // registers version 2 as the first attempt wrote it
    // Version 2 again: a retried task on another executor, writing other changes.
    val retry = provider(executor = 1, extra = grace)
    val s = retry.getStore(1)
    s.put(key("retry", 2), value(2))
    s.commit()
    Thread.sleep(1200) // the retry's changelog passes the grace
    // Version 3 builds on the first attempt's instance (its lineage names the first
    // attempt's changelog, not the retry's), so only manifest 2 keeps the retry's alive.
    commitVersions(p, 3 to 3)((v, s) => rows(v)(v, s))
    p.doCleanupMaintenance()
    assert(contents(provider(executor = 7).getReadStore(2)) ==
      expectedRows(1 to 1) + (("retry", 2) -> 2L))
    assert(contents(provider(executor = 8).getReadStore(3)) == expectedRows(1 to 3))
  }

  test("3. a second attempt of a partition waits for the first; it never shares the instance") {
    val p = provider(extra = Map(RockstateConf.LockAcquireTimeoutMs.key -> "20000"))
    commitVersions(p, 1 to 1)(rows(1))
    val events = mutable.Buffer.empty[String]
    val holding = new CountDownLatch(1)
    val first = new Thread(() => {
      val s = p.getStore(1)
      s.put(key("first", 2), value(1))
      holding.countDown()
      Thread.sleep(800)
      s.put(key("first-late", 2), value(2)) // would hit a closed DB if the second took it
      s.commit()
      events.synchronized(events += "first committed")
    })
    first.start()
    assert(holding.await(30, TimeUnit.SECONDS))
    val second = p.getStore(1) // blocks until the first attempt is done
    events.synchronized(events += "second got the store")
    second.put(key("second", 2), value(3))
    second.commit()
    first.join()
    assert(events == Seq("first committed", "second got the store"))
    assert(contents(provider(executor = 1).getReadStore(2)) ==
      expectedRows(1 to 1) + (("second", 2) -> 3L))
    // An attempt that cannot get it in time fails clearly.
    val quick = provider(executor = 2, extra = Map(RockstateConf.LockAcquireTimeoutMs.key -> "200"))
    val held = new CountDownLatch(1)
    val done = new CountDownLatch(1)
    val holder = new Thread(() => {
      val s = quick.getStore(2)
      held.countDown()
      done.await(30, TimeUnit.SECONDS)
      s.abort()
    })
    holder.start()
    assert(held.await(30, TimeUnit.SECONDS))
    val e = intercept[IllegalStateException](quick.getStore(2))
    done.countDown()
    holder.join()
    assert(e.getMessage.contains("is in use by task attempt") &&
      e.getMessage.contains("lockAcquireTimeoutMs"), e.getMessage)
  }

  test("3. closing a provider (Spark's unload) waits for the task attempt that holds it") {
    val p = provider(extra = Map(RockstateConf.LockAcquireTimeoutMs.key -> "20000"))
    val read = closedUnderATask(p) { closer =>
      closer.join(1000) // a close that does not wait has ended by now
      assert(closer.isAlive, "the close did not wait for the attempt holding the store")
    }
    assert(read == 50, "the attempt's scan did not read to its end")
    intercept[IllegalStateException](p.db.rocksDB) // closed once the attempt released it
  }

  test("3. a close that times out waiting leaves the store open until its holder's release") {
    val p = provider(extra = Map(RockstateConf.LockAcquireTimeoutMs.key -> "300"))
    val read = closedUnderATask(p) { closer =>
      closer.join(30000)
      assert(!closer.isAlive)
      assert(p.db.rocksDB != null, "closed under the attempt holding it")
    }
    assert(read == 50, "the attempt's scan did not read to its end")
    intercept[IllegalStateException](p.db.rocksDB)
  }

  /**
   * A task attempt takes `p`'s store of version 1 (50 rows) and reads its first row; `p` is
   * closed from another thread, as Spark's maintenance unloads a provider, and `whileClosing`
   * sees that thread; then the attempt reads the rest and aborts. The rows the attempt read.
   */
  private def closedUnderATask(p: RockstateStateStoreProvider)(whileClosing: Thread => Unit)
      : Int = {
    commitVersions(p, 1 to 1)(rows(1))
    val reading = new CountDownLatch(1)
    val goOn = new CountDownLatch(1)
    val read = new AtomicInteger()
    val failure = new AtomicReference[Throwable]()
    val task = new Thread(() => try {
      val s = p.getStore(1)
      val it = s.iterator()
      it.next()
      read.incrementAndGet()
      reading.countDown()
      goOn.await(30, TimeUnit.SECONDS)
      it.foreach(_ => read.incrementAndGet())
      s.abort()
    } catch {
      case e: Throwable => failure.set(e)
    })
    task.start()
    assert(reading.await(30, TimeUnit.SECONDS))
    val closer = new Thread(() => p.close())
    closer.start()
    try whileClosing(closer) finally goOn.countDown()
    task.join(60000)
    closer.join(60000)
    assert(failure.get == null, s"the attempt failed: ${failure.get}")
    assert(!closer.isAlive)
    read.get
  }

  test("4. a cleaner whose clock is skewed never sweeps an upload under way") {
    // This executor sees every modification time an hour old (its clock an hour ahead). The
    // orphan rule compares storage times with storage times, so it is not fooled.
    FaultInjectingFileSystem.setSkewMs(-3600000L)
    FaultInjectingFileSystem.setRules(Seq(FaultRule.slowUploads(400)))
    val p = provider(scheme = "rsfault", extra = Map(RockstateConf.SnapshotInterval.key -> "2"))
    commitVersions(p, 1 to 2)((v, s) => rows(v)(v, s)) // snapshot 2 uploads, 0.4 s a file
    Thread.sleep(600) // some of its files are up, its manifest is not
    p.doCleanupMaintenance()
    assert(p.db.awaitUploads(60000))
    commitVersions(p, 3 to 4)((v, s) => rows(v)(v, s))
    assert(p.db.awaitUploads(60000))
    FaultInjectingFileSystem.reset()
    assert(StoreAudit.audit(remote(), Seq(2L, 3L, 4L), p.conf).missing.isEmpty)
    assertLoads(2 to 4)
  }

  /**
   * A zombie's commit of version 3 pauses for 2.5 s right `when` ("before"/"after") its version
   * file is renamed into place (a GC pause, SIGSTOP), while another executor commits 3, 4 and
   * 5 (`beforeEach` ms apart) and cleans up. Returns how the zombie's commit ended.
   */
  private def pausedZombie(when: String, beforeEach: Long): Option[Throwable] = {
    val grace = Map(RockstateConf.OrphanFileGraceMs.key -> "1000",
      RockstateConf.SnapshotInterval.key -> "100")
    val zombie = provider(scheme = "rsfault", extra = grace)
    commitVersions(zombie, 1 to 2)((v, s) => rows(v)(v, s))
    FaultInjectingFileSystem.setRules(Seq(FaultRule("rename", "/versions/3-[^/]*\\.rsv$",
      when, "pause:2500", 1, "any")))
    val zombieResult = new java.util.concurrent.atomic.AtomicReference[Throwable]()
    val paused = new Thread(() => {
      try commitVersions(zombie, 3 to 3)((v, s) => rows(v)(v, s)) catch {
        case e: Throwable => zombieResult.set(e)
      }
    })
    paused.start()
    Thread.sleep(300)
    val live = provider(executor = 1, extra = grace)
    (3 to 5).foreach { v =>
      Thread.sleep(beforeEach)
      commitVersions(live, v to v)((v, s) => rows(v)(v, s))
    }
    live.doCleanupMaintenance()
    paused.join()
    // Whatever the zombie did, version 3 is the attempt versions 4 and 5 built on.
    val dir = remote()
    assert(dir.listVersionEntries(Some(3L)).size == 1, dir.listVersionEntries(Some(3L)))
    assert(dir.readVersionManifest(4).changelogs.exists(_.path == dir.findVersion(3).get.path))
    assert(StoreAudit.audit(dir, Seq(3L, 4L, 5L), live.conf).missing.isEmpty)
    assertLoads(3 to 5)
    Option(zombieResult.get)
  }

  test("4. a writer paused right before its publish never publishes a broken or stale version") {
    // Its commit fails: cleanup swept its temporary file (older than the grace) so the publish
    // finds nothing to rename, or it publishes, sees version 4 and withdraws its file.
    assert(pausedZombie("before", beforeEach = 600).isDefined,
      "the zombie's commit of version 3 should fail")
  }

  test("4. a writer paused right after its publish withdraws it once a later version exists") {
    val failure = pausedZombie("after", beforeEach = 0)
    // Spark's CANNOT_COMMIT, with rockstate's reason as its cause (SparkErrors).
    assert(failure.exists(f => Iterator.iterate(f)(_.getCause).takeWhile(_ != null)
      .exists(c => Option(c.getMessage).exists(_.contains("stale")))), failure)
  }

  test("5. a hung upload is abandoned, counted failed, and the changelog chain stays bounded") {
    FaultInjectingFileSystem.setRules(Seq(FaultRule.slowUploads(2500)))
    val p = provider(scheme = "rsfault", extra = Map(RockstateConf.SnapshotInterval.key -> "2",
      RockstateConf.SnapshotUploadTimeoutMs.key -> "300"))
    var failed = 0L
    (1 to 9).foreach { v =>
      if (v > 2) Thread.sleep(350) // past the timeout of the upload under way
      val s = commitVersions(p, v to v)((_, s) => rows(v)(v, s)).head
      failed += metric(s, "rockstateSnapshotsFailed")
    }
    assert(failed >= 2, s"abandoned uploads counted: $failed")
    val dir = remote()
    val chains = dir.listVersions().map(v => v -> dir.readVersionManifest(v).changelogs.size)
    assert(chains.forall(_._2 <= p.conf.maxChangelogChain), chains.toString)
    assertLoads(7 to 9)
  }

  test("8. with local recovery off, closing one instance leaves another's files alone") {
    val off = Map(RockstateConf.LocalRecovery.key -> "false", RockstateConf.SnapshotInterval.key -> "2")
    val a = provider(extra = off)
    commitVersions(a, 1 to 2)((v, s) => rows(v)(v, s))
    assert(a.db.awaitUploads(60000))
    // The restarted query's provider of the same store, on the same executor.
    val b = provider(extra = off)
    commitVersions(b, 3 to 3)((v, s) => rows(v)(v, s))
    a.close()
    commitVersions(b, 4 to 5)((v, s) => rows(v)(v, s)) // flushes and snapshots into its DB dir
    assert(b.db.awaitUploads(60000))
    assertLoads(4 to 5)
  }

  test("8. a local checkpoint without RocksDB's CURRENT and MANIFEST is never a snapshot") {
    val p = provider()
    val empty = new File(root, "empty-checkpoint")
    empty.mkdirs()
    val job = SnapshotJob(SnapshotManifest(2, 1, 0, 0, "default", "s", 0, false, Nil, Nil,
      SnapshotStats.Zero, 0, "test"), empty, remote(),
      LocalStoreFiles.forStore("x", "job", new File(root, "job").getPath),
      new ConfirmedFiles(Nil, ""), p.conf, System.nanoTime())
    val e = intercept[java.io.IOException](job.run())
    assert(e.getMessage.contains("CURRENT") && remote().listSnapshots().isEmpty)
  }

  test("8. closed stores' local caches are evicted beyond localCacheMaxMB") {
    val bounded = Map(RockstateConf.LocalCacheMaxMB.key -> "1", RockstateConf.ChangelogCompression.key ->
      "none")
    val stores = (1 to 3).map { i =>
      val p = provider(extra = bounded, checkpoint = new File(root, s"q$i"))
      // ~0.6 MB of changelogs cached per store.
      commitVersions(p, 1 to 1)((_, s) => (1 to 6000).foreach(j => s.put(key(s"$i-$j-" + "x" * 80, j),
        value(j))))
      p
    }
    stores.foreach { p => p.close(); open -= p }
    val cached = new File(root, "executor-0/stores").listFiles().filter(_.isDirectory)
    val total = cached.map(FileUtils.sizeOfDirectory).sum
    assert(total <= 1024 * 1024, s"${cached.length} closed stores keep $total bytes")
    assert(cached.nonEmpty, "the most recently closed store should stay for local recovery")
  }

  /** `count` stores of their own checkpoints (`name`1, `name`2, ...), each one key committed. */
  private def storesOfOneKey(name: String, count: Int): Seq[RockstateStateStoreProvider] =
    (1 to count).map { i =>
      val p = provider(checkpoint = new File(root, s"$name$i"))
      commitVersions(p, 1 to 1)((_, s) => s.put(key(s"k$i", i), value(i)))
      p
    }

  test("8b. a store's release sizes its own directory, not every store's (many stores)") {
    val stores = storesOfOneKey("many", 40)
    val before = LocalStoreFiles.directoryWalks.get
    stores.foreach { p => p.close(); open -= p }
    val walks = LocalStoreFiles.directoryWalks.get - before
    // Each release walks its own directory, and the open ones at most once in 5 s: about 2 a
    // store (each further 5 s the closing takes adds one more). Walking every directory on every
    // release, as before, is 40 * 41 = 1640.
    assert(walks <= 10 * stores.size, s"closing ${stores.size} stores walked $walks directories")
  }

  test("8c. the local cache metric counts closed stores as sized at release, not walked") {
    storesOfOneKey("metric", 40).foreach { p => p.close(); open -= p }
    val base = new File(root, "executor-0")
    val before = LocalStoreFiles.filesSized.get
    val bytes = LocalStoreFiles.cacheBytesUnder(base, System.nanoTime())
    // Every store under this root is closed: each was sized at its release, none again.
    val sized = LocalStoreFiles.filesSized.get - before
    assert(sized == 0, s"the metric sized $sized files of closed stores")
    val onDisk = FileUtils.sizeOfDirectory(new File(base, "stores"))
    assert(onDisk > 0 && bytes == onDisk, s"the metric counts $bytes bytes, $onDisk on disk")
  }

  test("9. a cached file damaged on disk is downloaded again, never replayed") {
    val none = Map(RockstateConf.ChangelogCompression.key -> "none")
    val p = provider(extra = none)
    commitVersions(p, 1 to 2)((v, s) => rows(v)(v, s))
    val reader = provider(executor = 1, extra = none)
    assert(contents(reader.getReadStore(2)) == expectedRows(1 to 2))
    reader.close()
    open -= reader
    // Flip one byte of a cached version file (version 1's, a link of version 2's lineage);
    // its size stays the same.
    val cache = new File(root, "executor-1/stores").listFiles().head
    val log = new File(cache, "cache").listFiles().filter(_.getName.startsWith("versions_1-")).head
    val raf = new RandomAccessFile(log, "rw")
    try {
      raf.seek(log.length() / 2)
      val b = raf.read()
      raf.seek(log.length() / 2)
      raf.write(b ^ 0x5a)
    } finally raf.close()
    val again = provider(executor = 1, extra = none).getReadStore(2).asInstanceOf[StateStore]
    assert(contents(again) == expectedRows(1 to 2))
    assert(metric(again, "rockstateBytesDownloaded") > 0)
  }

  test("9. temporary files of crashed atomic writes are collected after the grace") {
    val p = provider(extra = Map(RockstateConf.OrphanFileGraceMs.key -> "1000"))
    commitVersions(p, 1 to 1)(rows(1))
    val crashed = new File(storeDir, "versions/.7-3f2a.rsv.3f2a.tmp")
    Files.write(crashed.toPath, "{".getBytes("UTF-8"))
    p.doCleanupMaintenance()
    assert(crashed.exists(), "a temporary file within the grace may be a write under way")
    Thread.sleep(1200)
    commitVersions(p, 2 to 2)(rows(2)) // storage time moves on with the store's own commits
    p.doCleanupMaintenance()
    assert(!crashed.exists())
  }

  test("10. a snapshot Spark forces is written; one that cannot begin is not owed later") {
    // Spark forces a snapshot on commit (forceSnapshotOnCommit, SPARK-54063) for a store its
    // coordinator sees lagging. Snapshots are otherwise due only every 100 versions here.
    val p = provider(scheme = "rsfault", extra = Map(RockstateConf.SnapshotInterval.key -> "100"))
    val db = p.db
    def commit(version: Long, force: Boolean): Int = {
      db.load(version - 1)
      db.put(s"k$version".getBytes("UTF-8"), Array[Byte](version.toByte))
      db.commit(version, forceSnapshot = force)
      db.commitStats.forcedSnapshots
    }
    assert(commit(1, force = true) == 1)
    awaitSnapshot(1)
    assert(db.awaitUploads(60000))
    // Version 2's forced upload hangs at its manifest; version 3's cannot begin meanwhile, and
    // is not taken later: version 2's upload reports to Spark's coordinator when it lands, and
    // an owed snapshot would be uploading when the next checkpoint version commits.
    FaultInjectingFileSystem.setRules(Seq(FaultRule("rename", "/snapshots/2-[^/]*\\.json$",
      "before", "pause:3000", 1, "any")))
    assert(commit(2, force = true) == 1)
    assert(commit(3, force = true) == 0)
    assert(db.awaitUploads(60000))
    assert(commit(4, force = false) == 0)
    assert(commit(5, force = true) == 1)
    assert(db.awaitUploads(60000))
    assert(remote().listSnapshots().map(_._2).sorted == Seq(1L, 2L, 5L))
  }
}
