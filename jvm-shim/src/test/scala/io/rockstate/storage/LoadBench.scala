package io.rockstate.storage

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import scala.util.Using

import org.rocksdb.{BlockBasedTableConfig, BloomFilter, CompressionType, FlushOptions, LRUCache,
  Options, ReadOptions, RocksDB, WriteOptions}

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.LocalRocksDB

/**
 * A streaming aggregation's first batch, on RocksDB alone: `--stores` stores (one thread each,
 * as tasks run) each take `--keys` new keys, read first (Spark's restore: every key absent),
 * then checked and written in key order (Spark's save: the row count asks whether the key
 * exists, then puts it). Keys are 33 bytes and values 17, as the UnsafeRows of a string key
 * and a count. Prints each phase's time per store and the files left, for rockstate's
 * `LocalRocksDB` (settings as `--conf key=value,...`) and for a RocksDB opened as Spark's
 * provider opens one by default (its own 64 MB memtables, two at most, no shared bound).
 * `--kinds` picks which, in order (default `rockstate,spark`). With `--existing N` it runs
 * steady batches instead: after a load of N keys (not timed), `--batches` batches each read
 * `--keys` of them in one random order and check and write them in another (the hash
 * aggregation between restore and save reorders them), as a store's later batches do. A
 * benchmark, never a test:
 *
 *   dev/sbt "shim/Test/runMain io.rockstate.storage.LoadBench --keys 8000000 --stores 2"
 *   dev/sbt "shim/Test/runMain io.rockstate.storage.LoadBench --existing 500000 --keys 100000
 *     --batches 20 --kinds rockstate,rockstate --conf batchRowsHeld=0"
 */
object LoadBench {

  def main(args: Array[String]): Unit = {
    val opts = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val keys = opts.getOrElse("keys", "8000000").toInt
    val stores = opts.getOrElse("stores", "2").toInt
    val confs = BenchConf.parse(opts.get("conf"))
    val kinds = opts.getOrElse("kinds", "rockstate,spark").split(",").toSeq
    val existing = opts.get("existing").map(_.toInt)
    val batches = opts.getOrElse("batches", "10").toInt
    RocksDB.loadLibrary()
    // In the steady mode the kinds alternate between the defaults and `--conf`, for an A/B.
    kinds.zipWithIndex.foreach { case (kind, kindIndex) =>
      val dir = Files.createTempDirectory("rockstate-load-bench").toFile
      try {
        val started = System.nanoTime()
        val runs = (0 until stores).map { i =>
          val store = new File(dir, s"store-$i")
          store.mkdirs()
          val result = new Array[String](1)
          val thread = new Thread(() => result(0) = kind match {
            case "spark" => loadSparkLike(store, keys, existing.map((_, batches, i)))
            case _ if existing.isDefined =>
              steadyRockstate(store, existing.get, keys, batches, i,
                RockstateConf.from(if (kindIndex % 2 == 0) Map.empty else confs, 2))
            case _ => loadRockstate(store, keys, RockstateConf.from(confs, 2))
          }, s"load-$i")
          thread.start()
          (thread, result)
        }
        val figures = runs.map { case (thread, result) => thread.join(); result(0) }
        val seconds = (System.nanoTime() - started) / 1e9
        val settings =
          if (kind == "spark" || (existing.isDefined && kindIndex % 2 == 0)) ""
          else confs.mkString(" ", ",", "")
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

  /**
   * Steady batches on one store: `existing` keys loaded and flushed, then `batches` of
   * `changed` of them, read in one random order and checked and written in another, the
   * batch's reads forgotten at its end, as a commit does. Seeded per store, so every kind sees
   * the same keys.
   */
  private def steady(store: SteadyStore, existing: Int, changed: Int, batches: Int,
      seed: Int): String = {
    (0 until existing).foreach(i => store.put(key(i)))
    store.flush()
    val random = new scala.util.Random(seed)
    val times = (0 until batches).map { _ =>
      val picked = random.shuffle((0 until existing).toVector).take(changed).map(key)
      val saved = random.shuffle(picked)
      val t0 = System.nanoTime()
      picked.foreach(store.get)
      val t1 = System.nanoTime()
      saved.foreach { k =>
        store.exists(k)
        store.put(k)
      }
      val t2 = System.nanoTime()
      store.endBatch()
      (t1 - t0, t2 - t1)
    }
    val (reads, writes) = times.drop(1).unzip // the first batch warms the JIT up
    def median(ns: Seq[Long]) = ns.sorted.apply(ns.size / 2) / 1e6
    f"batches 2-$batches median: restore reads ${median(reads)}%.1f ms, checked writes " +
      f"${median(writes)}%.1f ms (sum ${(reads.sum + writes.sum) / 1e9}%.2f s)"
  }

  /** What `steady` does to a store. */
  private trait SteadyStore {
    def get(k: Array[Byte]): Unit
    def exists(k: Array[Byte]): Unit
    def put(k: Array[Byte]): Unit
    def flush(): Unit
    def endBatch(): Unit
  }

  private def steadyRockstate(dir: File, existing: Int, changed: Int, batches: Int, seed: Int,
      conf: RockstateConf): String = {
    val db = new LocalRocksDB(dir, conf)
    try {
      steady(new SteadyStore {
        def get(k: Array[Byte]): Unit = db.get(k)
        def exists(k: Array[Byte]): Unit = db.exists(k)
        def put(k: Array[Byte]): Unit = db.put(k, Value)
        def flush(): Unit = db.checkpointTo(new File(dir.getParentFile, s"flushed-$seed"))
        def endBatch(): Unit = db.forgetBatchRows()
      }, existing, changed, batches, seed)
    } finally db.close()
  }

  /** RocksDB as Spark's provider opens it when memory is not bounded (its defaults). */
  private def loadSparkLike(dir: File, keys: Int,
      steadyRun: Option[(Int, Int, Int)] = None): String = {
    val cache = new LRUCache(8L * 1024 * 1024)
    val bloom = new BloomFilter(10, false)
    val table = new BlockBasedTableConfig().setBlockCache(cache).setFilterPolicy(bloom)
      .setFormatVersion(5)
    val options = new Options().setCreateIfMissing(true).setTableFormatConfig(table)
      .setCompressionType(CompressionType.LZ4_COMPRESSION)
    val writeOptions = new WriteOptions().setDisableWAL(true)
    val readOptions = new ReadOptions()
    val db = RocksDB.open(options, dir.getAbsolutePath)
    try steadyRun match {
      case Some((existing, batches, seed)) =>
        steady(new SteadyStore {
          def get(k: Array[Byte]): Unit = db.get(readOptions, k)
          def exists(k: Array[Byte]): Unit = db.get(readOptions, k)
          def put(k: Array[Byte]): Unit = db.put(writeOptions, k, Value)
          def flush(): Unit = Using.resource(new FlushOptions().setWaitForFlush(true))(db.flush)
          def endBatch(): Unit = ()
        }, existing, keys, batches, seed)
      case None =>
        val p = phases(k => db.get(readOptions, k), k => db.get(readOptions, k),
          k => db.put(writeOptions, k, Value), keys)
        s"$p; L0 files ${db.getProperty("rocksdb.num-files-at-level0")}"
    } finally {
      db.close()
      Seq(readOptions, writeOptions, options, bloom, cache).foreach(_.close())
    }
  }
}
