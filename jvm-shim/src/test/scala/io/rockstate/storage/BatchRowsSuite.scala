package io.rockstate.storage

import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.local.{BatchRows, KeptRowsBudget}

/** The table of a batch's rows alone: what it answers after each kind of read and write. */
class BatchRowsSuite extends AnyFunSuite {
  private def b(xs: Int*): Array[Byte] = xs.map(_.toByte).toArray
  private case object ReadRocksDB extends RuntimeException
  private val notRead: Array[Byte] => Array[Byte] = _ => throw ReadRocksDB

  /** A read of RocksDB that found `value` (null: absent), as the store's get makes it. */
  private def read(rows: BatchRows, key: Array[Byte], value: Array[Byte]): Array[Byte] =
    rows.get(key, _ => value)

  /** The value the table answers for `key` (Some(None): absent); None when it would read. */
  private def held(rows: BatchRows, key: Array[Byte]): Option[Option[Seq[Byte]]] =
    try Some(Option(rows.get(key, notRead)).map(_.toSeq)) catch { case ReadRocksDB => None }

  /** Whether the table knows `key` exists; None when it would read. */
  private def knows(rows: BatchRows, key: Array[Byte]): Option[Boolean] =
    try Some(rows.exists(key, notRead)) catch { case ReadRocksDB => None }

  private def some(xs: Int*) = Some(Some(xs.map(_.toByte)))

  test("reads, checks, puts, deletes and merges each leave what RocksDB would answer") {
    val rows = new BatchRows(maxKeys = 100)
    assert(read(rows, b(1), b(10, 11)).toSeq == Seq[Byte](10, 11))
    assert(read(rows, b(2), null) == null)
    assert(held(rows, b(1)) == some(10, 11) && held(rows, b(2)) == Some(None))
    assert(knows(rows, b(1)) == Some(true) && knows(rows, b(2)) == Some(false))
    assert(held(rows, b(3)).isEmpty && knows(rows, b(3)).isEmpty)
    rows.written(b(1), b(12)) // shorter: over the old value
    assert(held(rows, b(1)) == some(12))
    rows.written(b(1), b(13, 14, 15)) // longer: a new entry
    assert(held(rows, b(1)) == some(13, 14, 15))
    rows.written(b(2), b(20)) // was absent
    assert(held(rows, b(2)) == some(20) && knows(rows, b(2)) == Some(true))
    rows.written(b(1), null) // deleted
    assert(held(rows, b(1)) == Some(None) && knows(rows, b(1)) == Some(false))
    rows.merged(b(2)) // exists; its value is RocksDB's to compute
    assert(held(rows, b(2)).isEmpty && knows(rows, b(2)) == Some(true))
    assert(read(rows, b(2), b(20, 21)).toSeq == Seq[Byte](20, 21)) // read, then held
    assert(held(rows, b(2)) == some(20, 21))
    rows.written(b(4), b(40)) // a key the batch never read
    assert(held(rows, b(4)) == some(40))
    assert(!rows.exists(b(6), _ => null)) // a check that read: absent, then written
    rows.written(b(6), b(60, 61, 62)) // grows the check's entry in place
    rows.written(b(7), Array.emptyByteArray) // an empty value is held
    assert(held(rows, b(6)) == some(60, 61, 62) && held(rows, b(7)) == some())
    val copy = rows.get(b(4), notRead)
    copy(0) = 99 // the caller's copy: what is held stays
    assert(held(rows, b(4)) == some(40))
    rows.clear()
    Seq(1, 2, 4, 6, 7).foreach(i => assert(held(rows, b(i)).isEmpty && knows(rows, b(i)).isEmpty))
  }

  test("a batch's rows belong to one thread and are dropped by any other thread's use") {
    val rows = new BatchRows(maxKeys = 2)
    val k = b(1, 2, 3)
    read(rows, k, b(7))
    k(0) = 9 // the caller's buffer changes: what was held is a copy
    assert(held(rows, b(1, 2, 3)) == some(7) && held(rows, k).isEmpty)
    def onOtherThread[T](f: => T): T = {
      val task = new java.util.concurrent.FutureTask[T](() => f)
      new Thread(task).start()
      task.get(60, java.util.concurrent.TimeUnit.SECONDS)
    }
    assert(onOtherThread(held(rows, b(1, 2, 3))).isEmpty) // another thread's read starts afresh
    assert(held(rows, b(1, 2, 3)).isEmpty) // and this thread's rows are gone
    read(rows, b(1, 2, 3), b(7))
    onOtherThread(rows.written(b(7), b(1))) // another thread wrote: nothing held stands
    assert(held(rows, b(1, 2, 3)).isEmpty && held(rows, b(7)).isEmpty)
    read(rows, b(1), null)
    read(rows, b(2), b(2))
    read(rows, b(3), b(3)) // past maxKeys: not held
    assert(held(rows, b(1)) == Some(None) && held(rows, b(2)) == some(2))
    assert(held(rows, b(3)).isEmpty)
    rows.written(b(3), b(3)) // nor when written
    assert(held(rows, b(3)).isEmpty && knows(rows, b(3)).isEmpty)
  }

  test("held rows stay exact as the table grows past its first size") {
    val rows = new BatchRows(maxKeys = 3000)
    def k(i: Int) = s"key-$i".getBytes
    def v(i: Int) = s"value-$i".getBytes.toSeq
    (0 until 5000).foreach(i => read(rows, k(i), if (i % 3 != 0) v(i).toArray else null))
    (0 until 3000).foreach(i => assert(held(rows, k(i)) == Some(Option.when(i % 3 != 0)(v(i))), i))
    (3000 until 5000).foreach(i => assert(held(rows, k(i)).isEmpty, i)) // past maxKeys
    (0 until 3000 by 2).foreach(i => rows.written(k(i), v(i + 1).toArray))
    (0 until 3000).foreach(i => assert(held(rows, k(i)) == Some(
      if (i % 2 == 0) Some(v(i + 1)) else Option.when(i % 3 != 0)(v(i))), i))
  }

  test("a write right after a check of the same array marks what the array holds then") {
    val rows = new BatchRows(maxKeys = 100)
    read(rows, b(1), b(10))
    read(rows, b(2), null)
    val checked = b(1)
    assert(knows(rows, checked) == Some(true))
    rows.written(checked, null) // the slot the check found
    assert(knows(rows, b(1)) == Some(false) && knows(rows, b(2)) == Some(false))
    val reused = b(2)
    assert(knows(rows, reused) == Some(false))
    reused(0) = 3 // the caller changed the array between its check and its write
    read(rows, b(3), b(30))
    assert(knows(rows, reused) == Some(true))
    reused(0) = 2
    rows.written(reused, b(20)) // key 2 is written, whatever slot the check found for key 3
    assert(held(rows, b(2)) == some(20) && held(rows, b(3)) == some(30))
    val fresh = b(4)
    assert(!rows.exists(fresh, _ => null)) // read: absent, now held
    fresh(0) = 5 // changed before its write: written where its new bytes belong
    rows.written(fresh, b(50))
    assert(held(rows, b(5)) == some(50) && held(rows, b(4)) == Some(None))
  }

  test("rows of any length are held exactly within the arena's bound; past it a key is known") {
    val rows = new BatchRows(maxKeys = 10000, maxBytes = 20000)
    // Keys of 1 to 300 bytes, each a prefix of the longer ones of its byte, a value of 8.
    def k(i: Int) = Array.fill[Byte](i % 300 + 1)((i / 300 + 1).toByte)
    def v(i: Int) = BigInt(i).toByteArray.padTo(8, 0.toByte)
    // Which rows the arena takes: each needs 8 bytes of lengths and its own, while they fit.
    val fitting = (0 until 900).foldLeft((0, Set.empty[Int])) { case ((used, in), i) =>
      val needs = 8 + k(i).length + 8
      if (used + needs <= 20000) (used + needs, in + i) else (used, in)
    }._2
    assert(fitting.size > 100 && fitting.size < 900 && fitting.exists(_ >= 300))
    (0 until 900).foreach(i => read(rows, k(i), v(i)))
    (0 until 900).foreach(i =>
      assert(held(rows, k(i)) == (if (fitting(i)) Some(Some(v(i).toSeq)) else None), i))
    assert(held(rows, Array.fill[Byte](301)(1)).isEmpty) // longer than every held key of 1s
    // A held key's longer value does not fit the full arena: known to exist, value not held.
    val first = fitting.min
    rows.written(k(first), Array.fill[Byte](20000)(7))
    assert(knows(rows, k(first)) == Some(true) && held(rows, k(first)).isEmpty)
    rows.clear() // the next batch starts with the arena at this batch's size, and empty
    (0 until 900).foreach(i => assert(knows(rows, k(i)).isEmpty, i))
  }

  test("held rows stay exact in a batch that starts at the last batch's size") {
    val rows = new BatchRows(maxKeys = 3000)
    def k(i: Int) = s"key-$i".getBytes
    (0 until 2000).foreach(i => read(rows, k(i), k(i)))
    rows.clear() // a commit: the next batch's table starts sized for 2000 keys
    (0 until 2000).foreach(i => assert(held(rows, k(i)).isEmpty, i))
    (1000 until 5000).foreach(i => read(rows, k(i), if (i % 2 == 0) k(i) else null))
    (1000 until 4000).foreach(i =>
      assert(held(rows, k(i)) == Some(Option.when(i % 2 == 0)(k(i).toSeq)), i))
    (4000 until 5000).foreach(i => assert(held(rows, k(i)).isEmpty, i)) // past maxKeys
    (0 until 1000).foreach(i => assert(held(rows, k(i)).isEmpty, i))
  }

  /** `f` on a thread of its own, as the next batch's task runs. */
  private def onAnotherThread[T](f: => T): T = {
    val task = new java.util.concurrent.FutureTask[T](() => f)
    new Thread(task).start()
    task.get(60, java.util.concurrent.TimeUnit.SECONDS)
  }

  test("a committed batch's rows are kept for the next batch's thread while the budget allows") {
    val budget = new KeptRowsBudget(1L << 20)
    val rows = new BatchRows(maxKeys = 100, kept = budget)
    read(rows, b(1), b(10))
    rows.written(b(2), b(20))
    rows.endBatch()
    val keptBytes = budget.usedBytes
    assert(keptBytes > 0)
    // The next batch, on another thread: the rows are there, and it adds its own.
    onAnotherThread {
      assert(held(rows, b(1)) == some(10) && held(rows, b(2)) == some(20))
      rows.written(b(3), b(30))
      rows.endBatch()
    }
    assert(budget.usedBytes == keptBytes) // the same arrays: nothing more taken
    // A thread that takes the table from a running batch drops it, and the budget's share.
    onAnotherThread(assert(held(rows, b(3)) == some(30)))
    assert(held(rows, b(3)).isEmpty && budget.usedBytes == 0)
    // A rollback (or a load of another version) clears a kept table too.
    read(rows, b(4), b(40))
    rows.endBatch()
    assert(budget.usedBytes > 0)
    rows.clear()
    assert(budget.usedBytes == 0 && onAnotherThread(held(rows, b(4))).isEmpty)
  }

  test("a batch's rows end with it when the budget has no room or the table is half full") {
    val none = new BatchRows(maxKeys = 100) // the budget of 0
    read(none, b(1), b(10))
    none.endBatch()
    assert(onAnotherThread(held(none, b(1))).isEmpty)
    // Two tables, a budget for one: the second store's rows end with its batch.
    val budget = new KeptRowsBudget(16 * 1024) // one first-size table: 12 KB
    val first = new BatchRows(maxKeys = 100, kept = budget)
    val second = new BatchRows(maxKeys = 100, kept = budget)
    Seq(first, second).foreach { rows => read(rows, b(1), b(10)); rows.endBatch() }
    assert(onAnotherThread(held(first, b(1))) == some(10))
    assert(onAnotherThread(held(second, b(1))).isEmpty)
    // More than half of maxKeys held: cleared, so that the next batch has room for its own.
    val full = new BatchRows(maxKeys = 4, kept = new KeptRowsBudget(1L << 20))
    (1 to 3).foreach(i => read(full, b(i), b(i)))
    full.endBatch()
    assert(onAnotherThread(held(full, b(1))).isEmpty)
  }
}
