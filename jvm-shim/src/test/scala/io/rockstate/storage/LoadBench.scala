package io.rockstate.storage

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.rocksdb.{BlockBasedTableConfig, BloomFilter, CompressionType, LRUCache, Options,
  ReadOptions, RocksDB, WriteOptions}

/**
 * A streaming aggregation's first batch, on RocksDB alone: `--stores` stores (one thread each,
 * as tasks run) each take `--keys` new keys, read first (Spark's restore: every key absent),
 * then checked and written in key order (Spark's save: the row count asks whether the key
 * exists, then puts it). Keys are 33 bytes and values 17, as the UnsafeRows of a string key
 * and a count. Prints each phase's time per store and the files left, for rockstate's
 * `LocalRocksDB` (settings as `--conf key=value,...`) and for a RocksDB opened as Spark's
 * provider opens one by default (its own 64 MB memtables, two at most, no shared bound).
 * `--kinds` picks which, in order (default `rockstate,spark`). A benchmark, never a test:
 *
 *   dev/sbt "shim/Test/runMain io.rockstate.storage.LoadBench --keys 8000000 --stores 2"
 */
object LoadBench {

  def main(args: Array[String]): Unit = {
    val opts = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val keys = opts.getOrElse("keys", "8000000").toInt
    val stores = opts.getOrElse("stores", "2").toInt
    val confs = opts.get("conf").toSeq.flatMap(_.split(",")).map { kv =>
      val Array(k, v) = kv.split("=", 2)
      (RockstateConf.Prefix + k) -> v
    }.toMap
    val kinds = opts.getOrElse("kinds", "rockstate,spark").split(",").toSeq
    RocksDB.loadLibrary()
    kinds.foreach { kind =>
      val dir = Files.createTempDirectory("rockstate-load-bench").toFile
      try {
        val started = System.nanoTime()
        val runs = (0 until stores).map { i =>
          val store = new File(dir, s"store-$i")
          store.mkdirs()
          val result = new Array[String](1)
          val thread = new Thread(() => result(0) = kind match {
            case "spark" => loadSparkLike(store, keys)
            case _ => loadRockstate(store, keys, RockstateConf.from(confs, 2))
          }, s"load-$i")
          thread.start()
          (thread, result)
        }
        val figures = runs.map { case (thread, result) => thread.join(); result(0) }
        val seconds = (System.nanoTime() - started) / 1e9
        val settings = if (kind == "spark") "" else confs.mkString(" ", ",", "")
        println(f"$kind$settings: $stores stores of $keys keys in $seconds%.1f s")
        figures.foreach(f => println(s"  $f"))
      } finally FileUtils.deleteDirectory(dir)
    }
  }

  /** `k-` and `i` in 31 decimal digits (formatting with `f"..."` would cost more than a read). */
  private def key(i: Int): Array[Byte] = {
    val k = Array.fill[Byte](33)('0')
    k(0) = 'k'
    k(1) = '-'
    var rest = i
    var at = 32
    while (rest > 0) {
      k(at) = ('0' + rest % 10).toByte
      rest /= 10
      at -= 1
    }
    k
  }

  private val Value = Array.fill[Byte](17)(7)

  /** The three phases' seconds through `get`, `exists`, `put` of one store. */
  private def phases(get: Array[Byte] => Unit, exists: Array[Byte] => Unit,
      put: Array[Byte] => Unit, keys: Int): String = {
    val t0 = System.nanoTime()
    (0 until keys).foreach(i => get(key(i)))
    val t1 = System.nanoTime()
    (0 until keys).foreach { i =>
      val k = key(i)
      exists(k)
      put(k)
    }
    val t2 = System.nanoTime()
    f"restore reads ${(t1 - t0) / 1e9}%.1f s, checked writes ${(t2 - t1) / 1e9}%.1f s"
  }

  private def loadRockstate(dir: File, keys: Int, conf: RockstateConf): String = {
    val db = new LocalRocksDB(dir, conf)
    try {
      val p = phases(db.get, db.exists, k => db.put(k, Value), keys)
      val levels = db.levelStats
      s"$p; L0 files ${levels.getOrElse("compaction.L0.NumFiles", "?")}, flushes " +
        s"${levels.getOrElse("compaction.L0.CompCount", "?")}, files " +
        s"${levels.getOrElse("compaction.Sum.NumFiles", "?")}"
    } finally db.close()
  }

  /** RocksDB as Spark's provider opens it when memory is not bounded (its defaults). */
  private def loadSparkLike(dir: File, keys: Int): String = {
    val cache = new LRUCache(8L * 1024 * 1024)
    val bloom = new BloomFilter(10, false)
    val table = new BlockBasedTableConfig().setBlockCache(cache).setFilterPolicy(bloom)
      .setFormatVersion(5)
    val options = new Options().setCreateIfMissing(true).setTableFormatConfig(table)
      .setCompressionType(CompressionType.LZ4_COMPRESSION)
    val writeOptions = new WriteOptions().setDisableWAL(true)
    val readOptions = new ReadOptions()
    val db = RocksDB.open(options, dir.getAbsolutePath)
    try {
      val p = phases(k => db.get(readOptions, k), k => db.get(readOptions, k),
        k => db.put(writeOptions, k, Value), keys)
      s"$p; L0 files ${db.getProperty("rocksdb.num-files-at-level0")}"
    } finally {
      db.close()
      Seq(readOptions, writeOptions, options, bloom, cache).foreach(_.close())
    }
  }
}
