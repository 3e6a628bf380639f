package io.rockstate.storage

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

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

  test("a snapshot merges the SSTs no confirmed snapshot holds, up to a memtable's bytes") {
    val root = Files.createTempDirectory("rockstate-merge").toFile
    val dir = new File(root, "db")
    dir.mkdir()
    val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
    def value(batch: Int, i: Int) = f"batch$batch%d-value$i%06d".getBytes
    def batch(n: Int, keys: Range): Unit = keys.foreach(i => db.put(f"key$i%08d".getBytes, value(n, i)))
    // A batch that ends above its idle share flushes, as the store idles (`flushIfAbove`).
    def idleFlush(): Unit = {
      val before = db.sstBytes
      assert(db.flushIfAbove(0L))
      val deadline = System.currentTimeMillis() + 60000
      while (db.sstBytes == before) {
        assert(System.currentTimeMillis() < deadline, "the background flush never wrote an SST")
        Thread.sleep(10)
      }
    }
    def ssts(dir: File) = dir.listFiles().filter(_.getName.endsWith(".sst")).map(_.getName).toSet
    try {
      batch(1, 0 until 20000)
      idleFlush()
      batch(2, 0 until 5000)
      val first = new File(root, "cp-1")
      db.checkpointTo(first, new ConfirmedFiles(Nil, ""))
      // Two flushes, one SST: what a store that kept batch 1 in its memtable would upload.
      assert(ssts(first).size == 1, ssts(first))
      assert(db.get("key00000007".getBytes).sameElements(value(2, 7)))
      assert(db.get("key00010007".getBytes).sameElements(value(1, 10007)))

      // Once that snapshot is confirmed its SST is shared, never rewritten: the next snapshot
      // merges only what came after it.
      val confirmed = new ConfirmedFiles(
        ssts(first).map(n => StateFile(n, s"sst/$n", new File(first, n).length, 0L, "sst")), "1")
      batch(3, 100 until 9000)
      idleFlush()
      batch(4, 200 until 300)
      val second = new File(root, "cp-2")
      db.checkpointTo(second, confirmed)
      assert(ssts(second).size == 2, ssts(second))
      assert(ssts(first).subsetOf(ssts(second)))
      assert(db.get("key00000250".getBytes).sameElements(value(4, 250)))
      assert(db.get("key00005000".getBytes).sameElements(value(3, 5000)))
      assert(db.get("key00015000".getBytes).sameElements(value(1, 15000)))
    } finally {
      db.close()
      FileUtils.deleteDirectory(root)
    }
  }

  test("new SSTs above a memtable's bytes together are uploaded as they are") {
    val root = Files.createTempDirectory("rockstate-merge").toFile
    val dir = new File(root, "db")
    dir.mkdir()
    // 1 MB memtables: no merge may produce an SST above 1 MB.
    val db = new LocalRocksDB(dir, RockstateConf.from(Map(RockstateConf.WriteBufferSizeMB -> "1"), 2))
    val random = new scala.util.Random(7)
    def ssts() = dir.listFiles().filter(_.getName.endsWith(".sst")).map(f => f.getName -> f.length).toMap
    def flushed(batch: Int, keys: Int): Unit = {
      val before = db.sstBytes
      (0 until keys).foreach(i => db.put(f"key$batch%d-$i%08d".getBytes, random.nextBytes(50)))
      assert(db.flushIfAbove(0L))
      val deadline = System.currentTimeMillis() + 60000
      while (db.sstBytes == before) {
        assert(System.currentTimeMillis() < deadline, "the background flush never wrote an SST")
        Thread.sleep(10)
      }
    }
    try {
      (1 to 2).foreach(flushed(_, 9000)) // about 0.55 MB each: together above the cap
      val large = ssts()
      assert(large.size == 2 && large.values.forall(_ > 512 * 1024), large)
      assert(db.mergeNewFiles(new ConfirmedFiles(Nil, "")) == 0)
      assert(ssts() == large)
      // A small one merges with the newest large one, not with both.
      flushed(3, 100)
      assert(db.mergeNewFiles(new ConfirmedFiles(Nil, "")) == 2)
      val after = ssts()
      assert(after.size == 2 && after.exists { case (n, size) => large.get(n).contains(size) }, after)
      assert(Seq(1, 2, 3).forall(b => db.get(f"key$b%d-00000042".getBytes) != null))
    } finally {
      db.close()
      FileUtils.deleteDirectory(root)
    }
  }
}
