package io.rockstate.storage

import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.LocalRocksDB

/** One RocksDB instance under the executor's shared memory. */
class LocalRocksDBSuite extends AnyFunSuite {

  test("an idle store keeps at most half its fair share of the write buffer manager") {
    val mb = 1024L * 1024
    assert(LocalRocksDB.idleMemtableShare(128 * mb, 8) == 8 * mb)
    assert(LocalRocksDB.idleMemtableShare(128 * mb, 1000) == 128 * mb / 2000)
    assert(LocalRocksDB.idleMemtableShare(128 * mb, 0) == 64 * mb) // none open yet: this one
  }

  test("memtables above the idle share are flushed in the background, smaller ones stay") {
    val dir = Files.createTempDirectory("rockstate-localdb").toFile
    val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
    try {
      // RocksDB's messages go to the executor's log: no LOG file held open per store.
      assert(!dir.list().exists(_.startsWith("LOG")), dir.list().mkString(", "))
      // A few keys stay in memory even at a thousand stores' share (64 KB of 128 MB).
      (1 to 20).foreach(i => db.put(f"few$i%08d".getBytes, Array.fill[Byte](40)(i.toByte)))
      assert(!db.flushIfAbove(64L * 1024), db.memtableBytes)
      (1 to 20000).foreach(i => db.put(f"key$i%08d".getBytes, Array.fill[Byte](40)(i.toByte)))
      assert(db.sstBytes == 0) // a 64 MB memtable holds about 1.2 MB of writes
      assert(!db.flushIfAbove(64L * 1024 * 1024))
      assert(db.sstBytes == 0)
      assert(db.flushIfAbove(256L * 1024))
      val deadline = System.currentTimeMillis() + 60000
      while (db.sstBytes == 0) {
        assert(System.currentTimeMillis() < deadline, "the background flush never wrote an SST")
        Thread.sleep(10)
      }
      assert(!db.flushIfAbove(256L * 1024)) // the active memtable is empty now
      assert(db.get("key00000007".getBytes).length == 40) // flushed, still read
    } finally {
      db.close()
      FileUtils.deleteDirectory(dir)
    }
  }

  test("an open store's own structures are kept small: one table cache shard, 16 KB writers") {
    val dir = Files.createTempDirectory("rockstate-localdb").toFile
    val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
    try {
      // What RocksDB opened the instance with, as it wrote it down (not what was asked for).
      val options = dir.listFiles().filter(_.getName.startsWith("OPTIONS-"))
        .maxBy(_.getName.stripPrefix("OPTIONS-").toLong)
      val settings = FileUtils.readLines(options, "UTF-8").toArray.map(_.toString.trim)
      assert(settings.contains(s"writable_file_max_buffer_size=${16 * 1024}"), options)
      assert(settings.contains("table_cache_numshardbits=0"), options)
      assert(settings.contains(s"arena_block_size=${32 * 1024}"), options)
    } finally {
      db.close()
      FileUtils.deleteDirectory(dir)
    }
  }

  test("level figures count the flushes and the files they left, under RocksDB's names") {
    val dir = Files.createTempDirectory("rockstate-localdb").toFile
    val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
    try {
      def figure(name: String): Double = db.levelStats(s"compaction.$name").toDouble
      // A level with no file and no compaction yet has no figures.
      assert(db.levelStats.get("compaction.L0.CompCount").forall(_.toDouble == 0))
      (1 to 2).foreach { round =>
        (1 to 1000).foreach(i => db.put(f"key$round-$i%05d".getBytes, Array.fill[Byte](40)(1)))
        db.checkpointTo(new java.io.File(dir.getParentFile, s"${dir.getName}-cp$round"))
      }
      // Two flushes, two level-0 files (RocksDB compacts from four), bytes written by both.
      assert(figure("L0.CompCount") == 2 && figure("L0.NumFiles") == 2)
      assert(figure("Sum.NumFiles") == 2 && figure("L0.WriteGB") > 0)
      assert(figure("L0.SizeBytes") == db.sstBytes.toDouble)
      assert(LocalRocksDB.openLevelStats().size >= 1) // this instance, and any other open
      // Both were the checkpoint's own flushes, and RocksDB says so (its listener runs after
      // the flush is installed, so it is waited for).
      val deadline = System.nanoTime() + 10L * 1000 * 1000 * 1000
      while (db.levelStats.get("flush.MANUAL_FLUSH.Count").forall(_.toLong < 2) &&
        System.nanoTime() < deadline) Thread.sleep(10)
      assert(db.levelStats.get("flush.MANUAL_FLUSH.Count").contains("2"))
      val flushed = db.levelStats("flush.MANUAL_FLUSH.Bytes").toDouble
      assert(flushed > 0 && flushed <= figure("L0.SizeBytes")) // the files less their footers
      assert(!db.levelStats.keys.exists(_.startsWith("flush.WRITE_BUFFER")))
    } finally {
      db.close()
      (1 to 2).foreach(r =>
        FileUtils.deleteDirectory(new java.io.File(dir.getParentFile, s"${dir.getName}-cp$r")))
      FileUtils.deleteDirectory(dir)
    }
  }

  test("a store closed under open scans ends them; their reader's close then does nothing") {
    val dir = Files.createTempDirectory("rockstate-localdb").toFile
    val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
    try {
      (1 to 3).foreach(i => db.put(f"key$i".getBytes, Array[Byte](i.toByte)))
      val read = db.scan(Array.emptyByteArray, None)
      assert(read.next()._1.sameElements("key1".getBytes))
      val unread = db.scan("key2".getBytes, Some("key3".getBytes))
      val done = db.scan(Array.emptyByteArray, None)
      assert(done.size == 3) // read to its end: closed by its reader
      db.close()
      // Reading a closed RocksDB iterator would crash the JVM: these end instead.
      assert(!read.hasNext && !unread.hasNext)
      read.close()
      unread.close()
    } finally {
      db.close()
      FileUtils.deleteDirectory(dir)
    }
  }

  test("an executor's shutdown stops every open store's flushes; reads, writes and close work") {
    val dirs = Seq.fill(2)(Files.createTempDirectory("rockstate-localdb").toFile)
    val dbs = dirs.map(new LocalRocksDB(_, RockstateConf.from(Map.empty, 2)))
    try {
      dbs.foreach(_.put("before".getBytes, Array[Byte](1)))
      dbs.head.close() // closed ones are left alone
      assert(LocalRocksDB.stopAllBackgroundWork() >= 1)
      val db = dbs(1)
      db.put("after".getBytes, Array[Byte](2))
      assert(db.get("before".getBytes).sameElements(Array[Byte](1)))
      // No flush runs any more: RocksDB refuses it as shutting down.
      val refused = intercept[org.rocksdb.RocksDBException](
        db.checkpointTo(new java.io.File(dirs(1), "checkpoint")))
      assert(refused.getMessage.toLowerCase.contains("shutdown"), refused.getMessage)
      assert(db.sstBytes == 0)
    } finally {
      dbs.foreach(_.close())
      dbs.head.close() // twice: nothing happens
      dirs.foreach(FileUtils.deleteDirectory)
    }
  }

  test("figures read while another thread closes the store come from the open DB or none") {
    // Spark's operators read a store's metrics after its commit while Spark's maintenance
    // thread may close it (unloadOnCommit): a property read of a closed RocksDB crashed the
    // JVM (SIGSEGV in GetIntProperty). Each round closes a store under a reader.
    (1 to 40).foreach { round =>
      val dir = Files.createTempDirectory("rockstate-localdb").toFile
      val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
      (1 to 200).foreach(i => db.put(f"key$i%05d".getBytes, Array.fill[Byte](40)(1)))
      val checkpoint = new java.io.File(dir.getParentFile, s"${dir.getName}-cp")
      db.checkpointTo(checkpoint)
      val sst = db.sstBytes
      val closing = new java.util.concurrent.CountDownLatch(1)
      val failed = new java.util.concurrent.atomic.AtomicReference[Throwable]
      val reader = new Thread(() => {
        closing.countDown()
        try {
          while (db.approximateMemoryBytes > 0) {
            val levels = db.levelStats
            assert(levels.isEmpty || levels.contains("compaction.Sum.NumFiles"), levels)
            assert(db.sstBytes == sst)
          }
        } catch { case e: Throwable => failed.set(e) }
      })
      try {
        reader.start()
        closing.await()
        if (round % 2 == 0) Thread.sleep(1) // some rounds close mid-read, some before the first
        db.close()
        reader.join(60000)
        assert(!reader.isAlive, s"round $round: the reader never saw the store closed")
        assert(failed.get == null, s"round $round: ${failed.get}")
        assert(db.approximateMemoryBytes == 0 && db.levelStats.isEmpty && db.sstBytes == sst)
      } finally {
        db.close() // a second close does nothing
        FileUtils.deleteDirectory(checkpoint)
        FileUtils.deleteDirectory(dir)
      }
    }
  }
}
