package io.rockstate.storage

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/** A store's versions over one local RocksDB: what a commit does beyond writing its files. */
class VersionedRocksDBSuite extends AnyFunSuite {

  test("a commit that begins no snapshot flushes a memtable above the idle share") {
    val work = Files.createTempDirectory("rockstate-vdb").toFile
    val conf = RockstateConf.from(Map(RockstateConf.SnapshotInterval -> "1000"), 2)
      .copy(localRecovery = false, localDir = new File(work, "local").getPath)
    val store = new File(work, "query/store")
    Files.createDirectories(store.toPath)
    val dir = new StoreCheckpointDir(new Path("file:" + store.getAbsolutePath), new Configuration())
    val db = new VersionedRocksDB(0, 0, "default", dir,
      LocalStoreFiles.forStore(dir.root.toString, "vdb", conf.localDir), conf,
      useColumnFamilies = false)
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
      assert(db.commitFigures.forcedSnapshots == 0)
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
      FileUtils.deleteDirectory(work)
    }
  }
}
