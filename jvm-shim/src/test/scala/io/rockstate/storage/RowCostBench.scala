package io.rockstate.storage

import java.nio.file.Files

import org.apache.commons.io.FileUtils

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.LocalRocksDB

/**
 * What a RocksDB point read and write cost alone, with rockstate's options and the executor's
 * shared cache (`LocalRocksDB`, the batch's reads not remembered): the floor of a store that
 * reads and writes RocksDB once a row. Loads `--keys` keys (33 bytes, a string key's UnsafeRow;
 * 24-byte values) and flushes them, then each round reads `--changed` consecutive keys from a
 * moving start and writes them, as the state steps' aggregation does, with a checkpoint (a
 * flush) every 2 rounds as snapshots every 2 versions make; prints the median per
 * read and per write of the rounds after the first two. `--set name=value[,name=value]` gives
 * rockstate settings (`partitionedIndex=false`, ...). A benchmark, never a test; one partition
 * of the state steps' 1M keys on 8 partitions:
 *
 *   dev/sbt "shim/Test/runMain io.rockstate.storage.RowCostBench --keys 125000 --changed 25000"
 */
object RowCostBench {
  def main(args: Array[String]): Unit = {
    val opts = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val keys = opts.getOrElse("keys", "1000000").toInt
    val changed = opts.getOrElse("changed", "200000").toInt
    val rounds = opts.getOrElse("rounds", "10").toInt
    def key(i: Int): Array[Byte] = {
      val k = new Array[Byte](33)
      val text = s"k$i".getBytes
      System.arraycopy(text, 0, k, 0, text.length)
      k
    }
    val all = Array.tabulate(keys)(key)
    val value = Array.fill[Byte](24)(1)
    val dir = Files.createTempDirectory("rockstate-rowcost").toFile
    val settings = opts.get("set").toSeq.flatMap(_.split(",")).map { kv =>
      val (k, v) = kv.splitAt(kv.indexOf('='))
      (RockstateConf.Prefix + k) -> v.drop(1)
    }
    val conf = RockstateConf.from(Map(RockstateConf.BatchRowsHeld.key -> "0") ++ settings, 2)
    val db = new LocalRocksDB(dir, conf)
    try {
      all.foreach(db.put(_, value))
      db.checkpointTo(new java.io.File(dir.getParentFile, dir.getName + "-loaded"))
      val times = (0 until rounds).map { round =>
        val start = (round.toLong * changed * 7 % keys).toInt
        val batch = (0 until changed).map(i => all((start + i) % keys))
        val t0 = System.nanoTime()
        val found = batch.count(db.get(_) != null)
        val t1 = System.nanoTime()
        batch.foreach(db.put(_, value))
        val t2 = System.nanoTime()
        require(found == changed, s"$found of $changed keys found")
        if (round % 2 == 1) { // a snapshot every 2 versions flushes the memtable, as queries do
          val snapshot = new java.io.File(dir.getParentFile, s"${dir.getName}-$round")
          db.checkpointTo(snapshot)
          FileUtils.deleteDirectory(snapshot)
        }
        ((t1 - t0).toDouble / changed / 1000, (t2 - t1).toDouble / changed / 1000)
      }
      val (reads, writes) = times.drop(2).unzip
      def median(us: Seq[Double]) = us.sorted.apply(us.size / 2)
      println(f"RocksDB alone, $keys keys, $changed a round, ${settings.mkString(" ")}, " +
        f"median of ${rounds - 2} rounds: " +
        f"a read ${median(reads)}%.2f µs, a write ${median(writes)}%.2f µs " +
        f"(reads by round: ${reads.map(r => f"$r%.2f").mkString(", ")})")
    } finally {
      db.close()
      FileUtils.deleteDirectory(dir)
      FileUtils.deleteDirectory(new java.io.File(dir.getParentFile, dir.getName + "-loaded"))
    }
  }
}
