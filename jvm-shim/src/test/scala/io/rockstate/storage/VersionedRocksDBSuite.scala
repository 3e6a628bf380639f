package io.rockstate.storage

import java.io.File
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.concurrent.{Await, Future}
import scala.concurrent.ExecutionContext.Implicits.global
import scala.concurrent.duration._

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.{ExecutorMemory, LocalCheckpointPool, LocalRocksDB,
  LocalStoreFiles}
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.restore.NewerSnapshot

/** A store's versions over one local RocksDB: what a commit does beyond writing its files. */
class VersionedRocksDBSuite extends AnyFunSuite {

  /**
   * Runs `f` with a temporary folder, the settings, and a way to open one store (its
   * checkpoint directory in the folder) with local files of a name of its own; then removes
   * the folder.
   */
  private def withStore(f: (File, RockstateConf, String => VersionedRocksDB) => Unit): Unit =
    withStoreSet(Map.empty)(f)

  /** `fsPrefix` and `hadoop`: the file system the store's checkpoint directory is reached by. */
  private def withStoreSet(settings: Map[String, String], fsPrefix: String = "file:",
      hadoop: Configuration = new Configuration())(
      f: (File, RockstateConf, String => VersionedRocksDB) => Unit): Unit = {
    val work = Files.createTempDirectory("rockstate-vdb").toFile
    val conf = RockstateConf.from(Map(RockstateConf.SnapshotInterval.key -> "1000") ++ settings, 2)
      .updated(RockstateConf.LocalRecovery, "false")
      .updated(RockstateConf.LocalDir, new File(work, "local").getPath)
    val store = new File(work, "query/store")
    Files.createDirectories(store.toPath)
    val dir = new StoreCheckpointDir(new Path(fsPrefix + store.getAbsolutePath), hadoop)
    def open(name: String) = new VersionedRocksDB(0, 0, "default", dir,
      LocalStoreFiles.forStore(dir.root.toString, name, conf.localDir), conf,
      useColumnFamilies = false)
    try f(work, conf, open) finally FileUtils.deleteDirectory(work)
  }

  /**
   * Holds every thread of the local-checkpoint pool until `release`: a commit's snapshot (its
   * local checkpoint, then its upload) waits in the pool's queue meanwhile.
   */
  private final class HeldPool {
    private val latch = new CountDownLatch(1)
    private val holders = (1 to LocalCheckpointPool.threads).map(_ =>
      LocalCheckpointPool.submit(() => latch.await()))

    /** Lets `ms` pass with the pool still held. */
    def stillHeldAfter(ms: Long): Unit = assert(!latch.await(ms, TimeUnit.MILLISECONDS))

    /** Frees the pool (again: a no-op) and waits for its holders to end. */
    def release(): Unit = {
      latch.countDown()
      holders.foreach(_.join())
    }
  }

  test("a commit that begins no snapshot flushes a memtable above the idle share") {
    withStore { (work, conf, open) =>
      val db = open("vdb")
      // The share is the manager's bytes over twice the stores open in this JVM: other idle
      // stores open beside this one bring it to 1 MB or less, a size a test can write.
      val managerBytes = ExecutorMemory.get(conf).writeBufferManagerBytes
      val idle = (1 to (managerBytes / (2L * 1024 * 1024)).toInt).map { i =>
        new LocalRocksDB(Files.createDirectories(new File(work, s"idle-$i").toPath).toFile, conf)
      }
      try {
        db.load(0)
        val share = LocalRocksDB.idleMemtableShare(managerBytes)
        assert(share <= 1024 * 1024, s"$share bytes with ${idle.size + 1} stores open")
        // Below the share: the memtable stays in memory.
        (1 to 100).foreach(i => db.put(f"few$i%08d".getBytes, Array.fill[Byte](40)(1)))
        db.commit(1, forceSnapshot = false)
        assert(db.stateBytes == 0 && db.rocksDB.memtableBytes > 0)
        // Above it: the commit asks RocksDB for a flush, which lands an SST in the background.
        var i = 0
        while (db.rocksDB.memtableBytes <= 2 * share) {
          i += 1
          db.put(f"key$i%08d".getBytes, Array.fill[Byte](100)(2))
        }
        assert(db.stateBytes == 0)
        db.commit(2, forceSnapshot = false)
        assert(db.commitStats.forcedSnapshots == 0)
        val deadline = System.currentTimeMillis() + 60000
        while (db.stateBytes == 0) {
          assert(System.currentTimeMillis() < deadline, "the commit's flush never wrote an SST")
          Thread.sleep(10)
        }
        assert(db.rocksDB.memtableBytes < share)
        assert(db.rocksDB.get("key00000007".getBytes).length == 100)
      } finally {
        idle.foreach(_.close())
        db.close()
      }
    }
  }

  test("a snapshot's local checkpoint runs after its commit and no write reaches it") {
    withStore { (_, _, open) =>
      val db = open("writer")
      // Every thread of the pool is held: the commit's local checkpoint waits in its queue.
      val pool = new HeldPool
      try {
        db.load(0)
        (1 to 50).foreach(i => db.put(f"v1-$i%03d".getBytes, Array[Byte](1)))
        db.commit(1, forceSnapshot = true)
        assert(db.commitStats.forcedSnapshots == 1 && db.commitStats.snapshotSyncMs == 0)
        // The next batch's first write waits until the checkpoint has read version 1.
        val write = Future(db.put("v2-only".getBytes, Array[Byte](2)))
        pool.stillHeldAfter(300)
        assert(!write.isCompleted, "a write reached the database before its snapshot was taken")
        pool.release()
        Await.result(write, 60.seconds)
        db.commit(2, forceSnapshot = false)
        assert(db.awaitUploads(60000))
        // Version 1 from its snapshot alone holds version 1's writes and nothing after.
        val reader = open("reader")
        try {
          reader.loadFromSnapshot(1, 1, None)
          assert(reader.rocksDB.get("v1-050".getBytes).sameElements(Array[Byte](1)))
          assert(reader.rocksDB.get("v2-only".getBytes) == null)
        } finally reader.close()
      } finally {
        pool.release()
        db.close()
      }
    }
  }

  test("an instance opened before another one's snapshot upload landed rebases onto it") {
    // Spark may open a store's next instance while the previous one is still uploading (it
    // unloads providers from its maintenance thread and closes them later): the new instance's
    // commit must still find the snapshot once it landed, not only what was confirmed when it
    // opened.
    withStore { (_, _, open) =>
      val first = open("first")
      val pool = new HeldPool
      val next = try {
        first.load(0)
        (1 to 20).foreach(i => first.put(f"k$i%03d".getBytes, Array[Byte](1)))
        first.commit(1, forceSnapshot = true) // its snapshot waits for the pool
        val next = open("next")
        next.load(1)
        next
      } finally {
        pool.release()
      }
      try {
        assert(first.awaitUploads(60000))
        next.put("k999".getBytes, Array[Byte](2))
        val m = next.commit(2, forceSnapshot = false)
        assert(m.snapshot.map(_.version).contains(1L), m)
        assert(m.changelogs.map(_.version) == Seq(2L), m)
        val reader = open("reader")
        try {
          reader.load(2)
          assert(reader.loadStats.changelogsReplayed == 1)
          assert(reader.rocksDB.get("k007".getBytes).sameElements(Array[Byte](1)))
        } finally reader.close()
      } finally {
        next.close()
        first.close()
      }
    }
  }

  test("with unloadOnCommit a commit waits for an earlier instance's snapshot upload") {
    // The earlier instance was closed off the task (by Spark's maintenance thread), so no task
    // waited for its upload: the next instance's commit does, and rebases onto it.
    withStoreSet(Map(RockstateConf.UnloadOnCommit.key -> "true")) { (_, _, open) =>
      val first = open("first")
      val pool = new HeldPool
      val next = open("next")
      try {
        first.load(0)
        (1 to 20).foreach(i => first.put(f"k$i%03d".getBytes, Array[Byte](1)))
        first.commit(1, forceSnapshot = true) // its snapshot waits for the pool
        next.load(1)
        next.put("k999".getBytes, Array[Byte](2))
        val committing = Future(next.commit(2, forceSnapshot = false))
        pool.stillHeldAfter(300)
        assert(!committing.isCompleted, "the commit did not wait for the earlier upload")
        pool.release()
        val m = Await.result(committing, 60.seconds)
        assert(m.snapshot.map(_.version).contains(1L), m)
        assert(m.changelogs.map(_.version) == Seq(2L), m)
      } finally {
        pool.release()
        next.close()
        first.close()
      }
    }
  }

  test("a fresh load starts from a snapshot of its lineage that landed after its version file") {
    // A snapshot uploads after its commit, so version 1's file names no snapshot: a fresh load
    // of it replayed the whole first batch, though version 1's own snapshot had landed.
    withStore { (work, _, open) =>
      val writer = open("writer")
      val keys = (NewerSnapshot.MinReplayRecords + 64).toInt
      val values = (0 until keys).map(i => s"value-$i".getBytes)
      try {
        writer.load(0)
        values.zipWithIndex.foreach { case (v, i) => writer.put(f"k$i%06d".getBytes, v) }
        val m = writer.commit(1, forceSnapshot = true)
        assert(m.snapshot.isEmpty, m)
        assert(m.changelogs.map(_.records).sum >= NewerSnapshot.MinReplayRecords, m)
        assert(writer.awaitUploads(60000))
        // A new instance (local files of its own) loads version 1, replaying `replayed`.
        def loadReplaying(name: String, replayed: Int): Unit = {
          val reader = open(name)
          try {
            reader.load(1)
            assert(reader.loadStats.changelogsReplayed == replayed)
            Seq(0, keys / 2, keys - 1).foreach { i =>
              assert(reader.rocksDB.get(f"k$i%06d".getBytes).sameElements(values(i)), s"key $i")
            }
          } finally reader.close()
        }
        loadReplaying("reader", 0)
        // With that snapshot damaged, the load replays the changes as before.
        val store = new File(work, "query/store")
        val dir = new StoreCheckpointDir(new Path("file:" + store.getAbsolutePath),
          new Configuration())
        val (snapshotPath, version, _) = dir.listSnapshots().last
        assert(version == 1L)
        val sst = dir.readSnapshotManifest(snapshotPath, "the test").files.find(_.kind == "sst")
        val damaged = new File(store, sst.get.path).toPath
        val bytes = Files.readAllBytes(damaged)
        bytes(bytes.length / 2) = (bytes(bytes.length / 2) ^ 0xff).toByte
        Files.write(damaged, bytes)
        loadReplaying("second-reader", 1)
      } finally writer.close()
    }
  }

  test("a load from a newer snapshot of its lineage reads that snapshot's manifest once") {
    // The lookup reads the manifest to check it is of the lineage; the restore takes it as
    // read. On an object store each read is a GET (it read it twice).
    withCountedStore { (_, open) =>
      val writer = open("writer")
      val keys = (NewerSnapshot.MinReplayRecords + 64).toInt
      try {
        writer.load(0)
        (0 until keys).foreach(i => writer.put(f"k$i%06d".getBytes, s"value-$i".getBytes))
        assert(writer.commit(1, forceSnapshot = true).snapshot.isEmpty)
        assert(writer.awaitUploads(60000))
      } finally writer.close()
      val reader = open("reader")
      try {
        io.rockstate.testing.CountingFileSystem.reset()
        reader.load(1)
        assert(reader.loadStats.changelogsReplayed == 0)
        assert(reader.rocksDB.get(f"k${keys - 1}%06d".getBytes)
          .sameElements(s"value-${keys - 1}".getBytes))
        assert(io.rockstate.testing.CountingFileSystem.opensOf(_.contains("/snapshots/")) == 1,
          io.rockstate.testing.CountingFileSystem.counts)
      } finally reader.close()
    }
  }

  /** A store over the counting file system (`counted` returns the calls a step made). */
  private def withCountedStore(f: (File, String => VersionedRocksDB) => Unit): Unit = {
    val hadoop = new Configuration()
    hadoop.set("fs.rscount.impl", classOf[io.rockstate.testing.CountingFileSystem].getName)
    hadoop.setBoolean("fs.rscount.impl.disable.cache", true)
    withStoreSet(Map.empty, s"${io.rockstate.testing.CountingFileSystem.Scheme}://", hadoop) {
      (work, _, open) => f(work, open)
    }
  }

  /** Opens a store of each name (local files of its own) for `f`; closes them all after it. */
  private def withOpen(open: String => VersionedRocksDB, names: String*)(
      f: Seq[VersionedRocksDB] => Unit): Unit = {
    val stores = names.map(open)
    try f(stores) finally stores.reverse.foreach(_.close())
  }

  private def counted(f: => Unit): Map[String, Long] = {
    io.rockstate.testing.CountingFileSystem.reset()
    f
    io.rockstate.testing.CountingFileSystem.counts
  }

  private def value(db: VersionedRocksDB, key: String): Option[String] =
    Option(db.rocksDB.get(key.getBytes)).map(new String(_))

  /** The working directories (`db-*`) of the stores under `work`'s local files. */
  private def workDirs(work: File): Seq[File] =
    FileUtils.listFilesAndDirs(new File(work, "local"), org.apache.commons.io.filefilter
      .FalseFileFilter.INSTANCE, org.apache.commons.io.filefilter.TrueFileFilter.INSTANCE)
      .toArray(Array.empty[File]).toSeq.filter(_.getName.startsWith("db-"))

  test("an instance closed while idle reopens from its directory, its memtable's writes kept") {
    withCountedStore { (_, open) =>
      withOpen(open, "idle") { case Seq(db) =>
        db.load(0)
        (1 to 100).foreach(i => db.put(f"k$i%03d".getBytes, s"v1-$i".getBytes))
        db.commit(1, forceSnapshot = false)
        assert(db.rocksDB.memtableBytes > 0 && db.stateBytes == 0) // nothing flushed yet
        assert(db.closeIdle() && !db.isOpen)
        // The same version again, as the open instance would have served it: no request.
        assert(counted(db.load(1)).isEmpty)
        assert(db.isOpen && db.loadStats.reopened == 1 && db.loadStats.changelogsReplayed == 0)
        assert(value(db, "k100").contains("v1-100"))
        db.put("k001".getBytes, "v2".getBytes)
        db.commit(2, forceSnapshot = false)
        assert(db.closeIdle())
        assert(counted(db.load(2)).isEmpty && db.loadStats.reopened == 1)
        assert(value(db, "k001").contains("v2") && value(db, "k002").contains("v1-2"))
        // Loaded by its own commit, the next batch's load is the open instance's again.
        db.put("k003".getBytes, "v3".getBytes)
        db.commit(3, forceSnapshot = false)
        db.load(3)
        assert(db.loadStats.reopened == 0)
      }
    }
  }

  test("a closed idle instance catches up on its lineage's later versions from its directory") {
    withCountedStore { (_, open) =>
      // `other`: the partition's next executor.
      withOpen(open, "first", "other") { case Seq(first, other) =>
        first.load(0)
        first.put("a".getBytes, "1".getBytes)
        first.commit(1, forceSnapshot = false)
        assert(first.closeIdle())
        other.load(1)
        other.put("b".getBytes, "2".getBytes)
        other.commit(2, forceSnapshot = false)
        val calls = counted(first.load(2))
        assert(first.loadStats.reopened == 1 && first.loadStats.changelogsReplayed == 1, calls)
        assert(value(first, "a").contains("1") && value(first, "b").contains("2"))
      }
    }
  }

  test("a closed idle instance is not reopened for another attempt or an earlier version") {
    withCountedStore { (_, open) =>
      withOpen(open, "first", "other") { case Seq(first, other) =>
        first.load(0)
        first.put("x".getBytes, "1".getBytes)
        first.commit(1, forceSnapshot = false)
        first.put("x".getBytes, "2".getBytes)
        first.commit(2, forceSnapshot = false)
        assert(first.closeIdle())
        // Another attempt of version 2 (Spark's checkpoint format 2 names the one it wants).
        other.load(1)
        other.put("x".getBytes, "3".getBytes)
        other.commit(2, forceSnapshot = false)
        first.load(2, Some(other.lastCommitId))
        assert(first.loadStats.reopened == 0 && value(first, "x").contains("3"))
        first.put("x".getBytes, "4".getBytes)
        first.commit(3, forceSnapshot = false)
        assert(first.closeIdle())
        // An earlier version of its own lineage (a batch run again after a restart).
        first.load(2, Some(other.lastCommitId))
        assert(first.loadStats.reopened == 0 && value(first, "x").contains("3"))
      }
    }
  }

  test("a closed idle instance's damaged or emptied directory is restored, never read as empty") {
    withCountedStore { (work, open) =>
      withOpen(open, "damaged") { case Seq(db) =>
        db.load(0)
        (1 to 20).foreach(i => db.put(s"k$i".getBytes, s"v$i".getBytes))
        db.commit(1, forceSnapshot = false)
        assert(db.closeIdle())
        val Seq(dir) = workDirs(work)
        val ssts = dir.listFiles().filter(_.getName.endsWith(".sst"))
        assert(ssts.nonEmpty, dir.list().toSeq) // the close flushed the memtable
        ssts.foreach(f => assert(f.delete()))
        db.load(1)
        assert(db.loadStats.reopened == 0 && db.loadStats.changelogsReplayed == 1)
        assert(value(db, "k20").contains("v20"))
        db.commit(2, forceSnapshot = false)
        assert(db.closeIdle())
        FileUtils.cleanDirectory(dir) // what a cleaner of temporary files could do
        db.load(2)
        assert(db.loadStats.reopened == 0 && db.loadStats.changelogsReplayed == 2)
        assert(value(db, "k1").contains("v1") && value(db, "k20").contains("v20"))
      }
    }
  }
}
