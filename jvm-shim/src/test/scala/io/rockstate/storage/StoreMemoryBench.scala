package io.rockstate.storage

import java.io.File
import java.lang.management.ManagementFactory
import java.nio.file.{Files, Paths}
import javax.management.ObjectName

import com.sun.management.HotSpotDiagnosticMXBean

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.commons.io.FileUtils

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.{ExecutorMemory, IdleInstance, LocalRocksDB, LocalStoreFiles,
  NativeHeapTrim, OpenInstances}
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.snapshot.SnapshotUploader

/**
 * The native memory `--stores` RocksDB stores hold in one executor JVM, as rockstate opens them
 * (the shared block cache, memtables charged to it through the write buffer manager), against
 * the bound that cache sets. Each store gets `--keys` keys of 100 bytes, flushed to one SST and
 * read back (so its index and filter blocks are loaded), then a few more keys left in its
 * memtable, as an idle store between batches holds. Prints, after opening, after writing,
 * after reading and after closing every store: the process's resident set and the JVM heap
 * (after a GC), the shared cache's usage, the native memory outside the heap and outside the
 * cache per store, and open files.
 * A benchmark, never a test:
 *
 *   dev/sbt "shim/Test/runMain io.rockstate.storage.StoreMemoryBench --stores 1000"
 *
 * With the JVM's Native Memory Tracking on (`JAVA_TOOL_OPTIONS=-XX:NativeMemoryTracking=summary`
 * before the command), what the JVM itself grew outside its heap (JIT code, metaspace, GC and
 * thread structures) is told apart from RocksDB's memory, and left out of a second ratio.
 *
 * `--block-cache-mb M` sets `rocksdbMemoryMB` (the bound; rockstate's default otherwise), to
 * tell memory that grows with the bound from memory that does not; `--conf name=value,...`
 * sets any other rockstate setting.
 *
 * With `--open-at-once K` the stores are held as Spark 4.1+'s `unloadOnCommit` holds them: K
 * at a time (an executor's task slots), each opened on its directory, written, flushed, read
 * and closed before the next, for `--rounds` rounds (batches); it prints the same figures
 * after every round, so what the C allocator keeps from a thousand opens and closes shows.
 *
 * With `--max-open-stores K` (`default`: the setting's default, a cap derived from the bound)
 * the stores are rockstate's versioned stores under the executor's
 * `maxOpenStores` cap of K: each round loads every store's version, writes `--keys` keys,
 * commits the next version (a changelog each, a snapshot every `snapshotInterval`) and releases
 * it, and the idle instances past K are closed on `OpenInstances`' thread; it prints the same
 * figures after every round of `--rounds`. `--snapshot-interval N` sets `snapshotInterval`
 * (1: every commit flushes and snapshots, so reopens read SSTs through the cache).
 * With `--read-back K` each round writes `--keys` keys of its own, so the state grows, and
 * before its writes reads every K-th key written two rounds before: a reopened instance holds
 * those in its snapshot's SSTs, not in the memtable that replaying the last changelog fills,
 * so the reads go through the cache and enough keys fill it to its bound, as an aggregation's
 * reads of its older keys do. (Keys of the round before are in that memtable: a version
 * file names the snapshot before its own.)
 *
 * Native memory is the resident set's growth less the heap's. The heap's pages count in the
 * resident set only once touched, and a heap committed at the start is touched gradually as
 * the bench allocates: without care, the heap filling its committed pages reads as native
 * memory (80-100 MB of the `--open-at-once 2` figures once were). So the bench runs
 * in a JVM whose heap is fixed and touched before the first sample (`-Xms` = `-Xmx`,
 * `-XX:+AlwaysPreTouch`), relaunching itself in one when started without.
 */
object StoreMemoryBench {

  def main(args: Array[String]): Unit =
    if (heapPreTouched) measure(args) else relaunchWithHeapPreTouched(args)

  private def heapPreTouched: Boolean =
    ManagementFactory.getPlatformMXBean(classOf[HotSpotDiagnosticMXBean])
      .getVMOption("AlwaysPreTouch").getValue == "true"

  /** This bench again, in a JVM with a fixed, pre-touched heap and this one's other options. */
  private def relaunchWithHeapPreTouched(args: Array[String]): Unit = {
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    val inherited = ManagementFactory.getRuntimeMXBean.getInputArguments.asScala
      .filterNot(a => a.startsWith("-Xms") || a.startsWith("-Xmx"))
    val command = Seq(java) ++ inherited ++ Seq("-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch",
      "-cp", System.getProperty("java.class.path"), getClass.getName.stripSuffix("$")) ++ args
    val exit = new ProcessBuilder(command: _*).inheritIO().start().waitFor()
    if (exit != 0) throw new IllegalStateException(s"the relaunched bench exited with $exit")
  }

  private def measure(args: Array[String]): Unit = {
    val opts = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val stores = opts.getOrElse("stores", "1000").toInt
    val keys = opts.getOrElse("keys", "1000").toInt
    val conf = RockstateConf.from(BenchConf.parse(opts.get("conf")) ++
      opts.get("block-cache-mb").map(RockstateConf.RocksdbMemoryMB.key -> _) ++
      opts.get("snapshot-interval").map(RockstateConf.SnapshotInterval.key -> _), 2)
    val dir = Files.createTempDirectory("rockstate-memory-bench").toFile
    val rounds = opts.getOrElse("rounds", "5").toInt
    try (opts.get("open-at-once"), opts.get("max-open-stores")) match {
      case (Some(atOnce), _) => runUnloading(dir, conf, stores, keys, atOnce.toInt, rounds)
      case (None, Some(cap)) =>
        val set = if (cap == "default") conf else conf.updated(RockstateConf.MaxOpenStores, cap)
        val capped = set.updated(RockstateConf.LocalDir, dir.getPath)
        runCapped(dir, capped, stores, keys, rounds, opts.getOrElse("read-back", "0").toInt)
      case _ => run(dir, conf, stores, keys)
    } finally FileUtils.deleteDirectory(dir)
  }

  /** A store of the bench as a provider holds it: closed for the cap when idle. */
  private final class CappedStore(val db: VersionedRocksDB) extends IdleInstance {
    override def closeIfIdle(unreleased: () => Boolean): Boolean = synchronized {
      val closed = unreleased() && db.closeIdle()
      if (closed) OpenInstances.executor.forget(this)
      closed
    }
  }

  /**
   * Every store loaded, written, committed and released in turn, `rounds` times; with
   * `readBack` > 0 each round's keys are its own and every `readBack`-th key of two rounds
   * before is read first.
   */
  private def runCapped(dir: File, conf: RockstateConf, stores: Int, keys: Int,
      rounds: Int, readBack: Int): Unit = {
    def key(round: Int, k: Int): Array[Byte] =
      (if (readBack > 0) f"r$round%04dkey$k%08d" else f"key$k%08d").getBytes
    val memory = ExecutorMemory.get(conf)
    val checkpoint = new File(dir, "checkpoint")
    val all = (0 until stores).map { i =>
      val root = new org.apache.hadoop.fs.Path(new File(checkpoint, s"$i").getAbsolutePath)
      val remote = new StoreCheckpointDir(root, new org.apache.hadoop.conf.Configuration())
      new CappedStore(new VersionedRocksDB(0, i, "default", remote,
        LocalStoreFiles.forStore(root.toString, s"store-$i", conf.localDir), conf,
        useColumnFamilies = false))
    }
    val before = Sample.baseline()
    try (1 to rounds).foreach { round =>
      val value = Array.fill[Byte](100)(round.toByte)
      all.foreach { s =>
        s.synchronized {
          s.db.load(round - 1L)
          if (readBack > 0 && round > 2) {
            (0 until keys by readBack).foreach { k =>
              // A key not found would read no block: the cache would not fill, unsaid.
              require(s.db.rocksDB.get(key(round - 2, k)) != null,
                s"key $k of round ${round - 2} missing from store ${s.db.rocksDB.dir}")
            }
          }
          (0 until keys).foreach(k => s.db.put(key(round, k), value))
          s.db.commit(round, forceSnapshot = false)
          (0 until keys by 10).foreach(k => s.db.rocksDB.get(key(round, k)))
        }
        OpenInstances.executor.released(s, ExecutorMemory.openInstanceCap(conf))
      }
      assert(SnapshotUploader.awaitIdle(600000), "snapshot uploads still running")
      Thread.sleep(1000) // the last closing pass
      report(s"round $round open=${OpenInstances.executor.open}", stores, before, Sample.take(),
        memory)
    } finally all.foreach { s =>
      s.synchronized(s.db.close())
      OpenInstances.executor.forget(s)
    }
  }

  /** Every store opened, written, read and closed in turn, `atOnce` open together. */
  private def runUnloading(dir: File, conf: RockstateConf, stores: Int, keys: Int,
      atOnce: Int, rounds: Int): Unit = {
    val memory = ExecutorMemory.get(conf)
    val before = Sample.baseline()
    (1 to rounds).foreach { round =>
      (0 until stores).grouped(atOnce).foreach { group =>
        val dbs = group.map(openStore(dir, _, conf))
        val value = Array.fill[Byte](100)(round.toByte)
        try group.zip(dbs).foreach { case (i, db) =>
          (0 until keys).foreach(k => db.put(f"key$k%08d".getBytes, value))
          // A commit's snapshot: the memtable flushed, the DB's files linked, then uploaded.
          val snapshot = new File(dir, s"snapshot-$i")
          db.checkpointTo(snapshot)
          FileUtils.deleteDirectory(snapshot)
          (0 until keys by 10).foreach(k => db.get(f"key$k%08d".getBytes))
        } finally dbs.foreach(_.close())
      }
      report(s"round $round", stores, before, Sample.take(), memory)
    }
  }

  private def run(dir: File, conf: RockstateConf, stores: Int, keys: Int): Unit = {
    val memory = ExecutorMemory.get(conf)
    val before = Sample.baseline()
    val dbs = (0 until stores).map(openStore(dir, _, conf))
    try {
      report("opened", stores, before, Sample.take(), memory)
      dbs.foreach { db =>
        (0 until keys).foreach(k => db.put(f"key$k%08d".getBytes, Array.fill[Byte](100)(1)))
        db.flushIfAbove(0)
      }
      dbs.foreach { db =>
        while (db.sstBytes == 0) Thread.sleep(1)
        (0 until 20).foreach(k => db.put(f"idle$k%08d".getBytes, Array.fill[Byte](100)(2)))
      }
      report("written", stores, before, Sample.take(), memory)
      dbs.foreach(db => (0 until keys by 10).foreach(k => db.get(f"key$k%08d".getBytes)))
      report("read", stores, before, Sample.take(), memory)
    } finally dbs.foreach(_.close())
    report("closed", stores, before, Sample.take(), memory)
  }

  /** Store `i`'s RocksDB, opened on its directory under `dir` (made on its first open). */
  private def openStore(dir: File, i: Int, conf: RockstateConf): LocalRocksDB =
    new LocalRocksDB(Files.createDirectories(new File(dir, s"store-$i").toPath).toFile, conf)

  private def report(stage: String, stores: Int, before: Sample, now: Sample,
      memory: ExecutorMemory.Shared): Unit = {
    val mb = 1024.0 * 1024
    val native = (now.rss - before.rss) - (now.heapCommitted - before.heapCommitted)
    val cache = memory.cache.getUsage
    val outside = native - cache
    // What the JVM itself grew outside its heap (JIT code, metaspace, GC and thread
    // structures), when Native Memory Tracking is on: not RocksDB's, so not the bound's.
    val jvm = for (n <- now.jvmNonHeap; b <- before.jvmNonHeap) yield n - b
    val rocksdb = native - jvm.getOrElse(0L)
    val split = jvm.fold(" (JVM's own not told apart: run with NativeMemoryTracking)") { j =>
      f" (the JVM's own +${j / mb}%.1f MB, RocksDB's and the rest " +
        f"${(outside - j) / mb}%.1f MB = ${(outside - j) / 1024.0 / stores}%.1f KB a store)"
    }
    println(f"$stage%-8s stores=$stores rss=+${(now.rss - before.rss) / mb}%.1f MB " +
      f"heap(committed)=+${(now.heapCommitted - before.heapCommitted) / mb}%.1f MB " +
      f"native=${native / mb}%.1f MB cache=${cache / mb}%.1f MB " +
      f"(of ${memory.blockCacheBytes / mb}%.0f MB, bound ${memory.boundBytes / mb}%.0f MB) " +
      f"outside the cache=${outside / mb}%.1f MB" +
      f"$split native/bound=${native.toDouble / memory.boundBytes}%.2f " +
      (if (jvm.isDefined) f"without the JVM's own=${rocksdb.toDouble / memory.boundBytes}%.2f "
       else "") +
      s"open files=+${now.fds - before.fds}")
  }

  /**
   * The process's resident set, committed heap after a GC, open file descriptors, and the
   * JVM's committed memory outside its heap as its Native Memory Tracking counts it (None
   * unless the JVM runs with `-XX:NativeMemoryTracking=summary`).
   */
  private final case class Sample(rss: Long, heapCommitted: Long, fds: Int,
      jvmNonHeap: Option[Long])

  private object Sample {
    /**
     * The first sample: taken after the C allocator hands back the free memory the JVM's start
     * left (glibc's `malloc_trim`, where the JVM has `System.trim_native_heap`), so that an
     * allocator which trims by itself later cannot take the figures below what RocksDB holds.
     */
    def baseline(): Sample = {
      System.gc()
      NativeHeapTrim.diagnosticTrim()
        .foreach(out => println(s"baseline after trimming the native heap: $out".trim))
      take()
    }

    def take(): Sample = {
      System.gc()
      val heap = ManagementFactory.getMemoryMXBean.getHeapMemoryUsage.getCommitted
      val rssKb = Files.readAllLines(Paths.get("/proc/self/status")).asScala
        .find(_.startsWith("VmRSS:")).map(_.split("\\s+")(1).toLong).getOrElse(0L)
      Sample(rssKb * 1024, heap, new File("/proc/self/fd").list().length, jvmNonHeapCommitted)
    }

    private val Committed = """committed=(\d+)KB""".r.unanchored

    /** NMT's total committed less its Java heap's, in bytes; None when NMT is off. */
    private def jvmNonHeapCommitted: Option[Long] = {
      val summary = diagnosticCommand("vmNativeMemory", "summary").getOrElse("")
      def committedOf(label: String): Option[Long] = summary.linesIterator
        .find(_.contains(label)).collect { case Committed(kb) => kb.toLong * 1024 }
      for (total <- committedOf("Total:"); heap <- committedOf("Java Heap")) yield total - heap
    }

    /** The JVM's diagnostic command `op` (as `jcmd` runs it), its output; fails where absent. */
    private def diagnosticCommand(op: String, args: String*): Try[String] =
      Try(ManagementFactory.getPlatformMBeanServer.invoke(
        new ObjectName("com.sun.management:type=DiagnosticCommand"), op,
        Array[AnyRef](args.toArray), Array("[Ljava.lang.String;")).toString)
  }
}
