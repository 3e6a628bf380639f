package io.rockstate.storage

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.{BlockReads, LocalRocksDB, ThreadBlockReads}

/** Block reads counted per thread by RocksDB and charged to the commits of a task's stores. */
class ThreadBlockReadsSuite extends AnyFunSuite {
  private val conf = RockstateConf.from(Map.empty, 2)
  private val keys = 20000

  private def key(i: Int) = f"key$i%08d".getBytes

  /** An instance whose `keys` keys are all in SST files (a flushed copy), none in memory. */
  private def onDisk(root: File, name: String): LocalRocksDB = {
    val written = new LocalRocksDB(new File(root, s"$name-written"), conf)
    try {
      (1 to keys).foreach(i => written.put(key(i), Array.fill[Byte](100)(i.toByte)))
      written.checkpointTo(new File(root, name))
    } finally written.close()
    val db = new LocalRocksDB(new File(root, name), conf)
    assert(db.sstBytes > 0 && db.memtableBytes <= LocalRocksDB.ArenaBlockBytes * 2)
    db
  }

  private def plus(a: BlockReads, b: BlockReads) = BlockReads(a.cacheHits + b.cacheHits,
    a.blocksRead + b.blocksRead, a.indexBlocksRead + b.indexBlocksRead,
    a.filterBlocksRead + b.filterBlocksRead, a.bytesRead + b.bytesRead)

  private def withTwo(test: (LocalRocksDB, LocalRocksDB) => Unit): Unit = {
    val root = Files.createTempDirectory("rockstate-blockreads").toFile
    val a = onDisk(root, "a")
    val b = onDisk(root, "b")
    try test(a, b) finally {
      a.close()
      b.close()
      FileUtils.deleteDirectory(root)
    }
  }

  test("a task's commits share out exactly what its thread read, in commit order") {
    withTwo { (a, b) =>
      val task = 101L
      ThreadBlockReads.begin(a, task)
      ThreadBlockReads.begin(b, task) // the same task: the count goes on from the first begin
      val before = a.threadBlockReads
      (1 to keys by 37).foreach { i =>
        assert(a.get(key(i)) != null)
        assert(b.get(key(keys + 1 - i)) != null)
      }
      val total = a.threadBlockReads.since(before)
      val first = ThreadBlockReads.end(a)
      val second = ThreadBlockReads.end(b)
      assert(total.blocksRead > 0 && total.bytesRead > 0, total)
      assert(plus(first, second) == total)
      assert(first == total && second == BlockReads.Zero) // charged to the first to commit
    }
  }

  test("a new task counts from its first store; reads on other threads are not its own") {
    withTwo { (a, b) =>
      ThreadBlockReads.begin(a, 201L)
      (1 to keys by 11).foreach(i => a.get(key(i)))
      val cold = ThreadBlockReads.end(a)
      assert(cold.blocksRead > 100 && cold.bytesRead > cold.blocksRead * 100, cold)
      // Between tasks, and on another thread: neither is charged to the next task.
      (1 to keys by 13).foreach(i => b.get(key(i)))
      val elsewhere = new Thread(() => {
        b.countThreadReads()
        (1 to keys by 7).foreach(i => b.get(key(i)))
      })
      elsewhere.start()
      elsewhere.join()
      a.forgetBatchRows() // as the commit does: the batch's rows held are gone, the next task reads
      ThreadBlockReads.begin(a, 202L)
      (1 to keys by 11).foreach(i => a.get(key(i))) // the same keys again: in the cache now
      val warm = ThreadBlockReads.end(a)
      assert(warm.cacheHits >= keys / 11, warm)
      assert(warm.blocksRead * 10 <= cold.blocksRead, s"$warm after $cold")
    }
  }

  test("outside a task each store counts from its own begin") {
    withTwo { (a, b) =>
      ThreadBlockReads.begin(a, ThreadBlockReads.NoOwner)
      (1 to keys by 5).foreach(i => a.get(key(i)))
      ThreadBlockReads.begin(b, ThreadBlockReads.NoOwner)
      assert(ThreadBlockReads.end(b) == BlockReads.Zero)
      assert(BlockReads(5, 4, 3, 2, 1).since(BlockReads(6, 1, 1, 1, 1)) ==
        BlockReads(0, 3, 2, 1, 0)) // a counter that went back (a reset) reads as none
    }
  }
}
