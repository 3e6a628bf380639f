package io.rockstate.storage

import io.rockstate.storage.local.BatchRows

/**
 * The table of a batch's rows alone (`BatchRows`, no RocksDB): each round notes `--keys` keys
 * of 33 bytes (a string key's UnsafeRow) as read with a value of 16, then checks and writes them
 * in another order, as a streaming aggregation's restore and save do, and clears the table as a
 * commit does. Prints the median of the rounds after the first five (the JIT's warm-up).
 * A benchmark, never a test:
 *
 *   dev/sbt "shim/Test/runMain io.rockstate.storage.BatchRowsBench --keys 100000"
 */
object BatchRowsBench {
  def main(args: Array[String]): Unit = {
    val opts = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val keys = opts.getOrElse("keys", "100000").toInt
    val rounds = opts.getOrElse("rounds", "40").toInt
    val random = new scala.util.Random(1)
    def key(i: Int): Array[Byte] = {
      val k = new Array[Byte](33)
      val digits = s"k-$i".getBytes
      System.arraycopy(digits, 0, k, 0, digits.length)
      k
    }
    val table = new BatchRows(keys)
    val value = new Array[Byte](16)
    val times = (0 until rounds).map { _ =>
      val read = random.shuffle((0 until 10 * keys).toVector).take(keys).map(key)
      val saved = random.shuffle(read).map(_.clone()) // the save's rows are arrays of their own
      val t0 = System.nanoTime()
      read.foreach(k => table.get(k, _ => value))
      val t1 = System.nanoTime()
      val known = saved.count { k =>
        val found = table.exists(k, _ => null)
        table.written(k, value)
        found
      }
      val t2 = System.nanoTime()
      table.clear()
      require(known == keys, s"only $known of $keys keys were remembered")
      (t1 - t0, t2 - t1)
    }
    val (noted, checked) = times.drop(5).unzip
    def median(ns: Seq[Long]) = ns.sorted.apply(ns.size / 2) / 1e6
    println(f"BatchRows, $keys keys a round, median of ${rounds - 5} rounds: get " +
      f"${median(noted)}%.2f ms, exists and written ${median(checked)}%.2f ms")
  }
}
