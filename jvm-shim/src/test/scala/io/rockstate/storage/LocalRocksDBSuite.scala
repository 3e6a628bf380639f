package io.rockstate.storage

import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

/** One RocksDB instance under the executor's shared memory. */
class LocalRocksDBSuite extends AnyFunSuite {

  /** Flushes `db`'s memtable in the background and waits for its SST. */
  private def flushNow(db: LocalRocksDB): Unit = {
    val before = db.sstBytes
    assert(db.flushIfAbove(0))
    val deadline = System.currentTimeMillis() + 60000
    while (db.sstBytes == before) {
      assert(System.currentTimeMillis() < deadline, "the background flush never wrote an SST")
      Thread.sleep(10)
    }
  }

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

  test("a snapshot merges the level-0 files made since the last upload; uploaded ones stay") {
    val root = Files.createTempDirectory("rockstate-localdb").toFile
    val db = new LocalRocksDB(new java.io.File(root, "db"),
      RockstateConf.from(Map(RockstateConf.WriteBufferSizeMB -> "1"), 2))
    def ssts(dir: java.io.File) = dir.list().filter(_.endsWith(".sst")).toSet
    def value(s: String) = s.getBytes
    try {
      (1 to 100).foreach(i => db.put(f"key$i%04d".getBytes, value(s"v1-$i")))
      val first = new java.io.File(root, "first")
      db.checkpointTo(first, _ => false)
      val uploaded = ssts(first)
      assert(uploaded.size == 1)
      // Two flushes before the next snapshot: an idle flush and the snapshot's own (a third
      // would make four level-0 files, and RocksDB's own compaction of them).
      (1 to 50).foreach(i => db.put(f"key$i%04d".getBytes, value(s"v2-$i")))
      flushNow(db)
      db.delete("key0002".getBytes)
      db.merge("key0003".getBytes, value("m"))
      db.put("key0200".getBytes, value("new"))
      val second = new java.io.File(root, "second")
      db.checkpointTo(second, uploaded.contains)
      // The uploaded file is shared as it was; the two new ones are one.
      assert(uploaded.subsetOf(ssts(second)), ssts(second))
      assert(ssts(second).size == 2, ssts(second))
      // Compressed as the store's options say (LZ4 by default), like a flush.
      val packed = new java.io.File(second, (ssts(second) -- uploaded).head)
      val options = new org.rocksdb.Options()
      val reader = new org.rocksdb.SstFileReader(options)
      try {
        reader.open(packed.getPath)
        assert(reader.getTableProperties.getCompressionName == "LZ4")
      } finally {
        reader.close()
        options.close()
      }
      val copy = new LocalRocksDB(second, RockstateConf.from(Map.empty, 2))
      try {
        assert(new String(copy.get("key0001".getBytes)) == "v2-1")
        assert(copy.get("key0002".getBytes) == null)
        assert(new String(copy.get("key0003".getBytes)) == "v2-3,m")
        assert(new String(copy.get("key0099".getBytes)) == "v1-99")
        assert(new String(copy.get("key0200".getBytes)) == "new")
        assert(copy.scan(Array.emptyByteArray, None).size == 100)
      } finally copy.close()
      assert(db.packNewLevel0(ssts(second).contains) == 0) // nothing new to merge
    } finally {
      db.close()
      FileUtils.deleteDirectory(root)
    }
  }

  test("level-0 files holding more than snapshotPackMB together are not merged") {
    val root = Files.createTempDirectory("rockstate-localdb").toFile
    val db = new LocalRocksDB(root, RockstateConf.from(
      Map(RockstateConf.WriteBufferSizeMB -> "1", RockstateConf.SnapshotPackMB -> "2"), 2))
    try {
      val random = new scala.util.Random(7)
      // Three flushes of 800 KB that do not compress: 2.4 MB, more than 2 MB.
      (1 to 3).foreach { round =>
        (1 to 800).foreach(i => db.put(f"key$round-$i%04d".getBytes, random.nextBytes(1000)))
        flushNow(db)
      }
      assert(root.list().count(_.endsWith(".sst")) == 3)
      assert(db.packNewLevel0(_ => false) == 0)
      assert(root.list().count(_.endsWith(".sst")) == 3)
    } finally {
      db.close()
      FileUtils.deleteDirectory(root)
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
        db.checkpointTo(new java.io.File(dirs(1), "checkpoint"), _ => false))
      assert(refused.getMessage.toLowerCase.contains("shutdown"), refused.getMessage)
      assert(db.sstBytes == 0)
    } finally {
      dbs.foreach(_.close())
      dbs.head.close() // twice: nothing happens
      dirs.foreach(FileUtils.deleteDirectory)
    }
  }
}
