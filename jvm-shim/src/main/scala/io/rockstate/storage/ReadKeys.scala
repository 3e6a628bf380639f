package io.rockstate.storage

import java.nio.ByteBuffer

/**
 * The keys one thread read from a RocksDB instance and not written since, with whether each
 * existed: the row count's check before a put asks here before it asks RocksDB. A streaming
 * aggregation reads every key of a batch (restore) and then writes it (save), so the check
 * costs a hash lookup instead of a second RocksDB read, which a profile of the large-batch
 * benchmark put at a quarter of the task's CPU (docs/development.md, "Benchmarks").
 *
 * Every write to the instance goes through `written` (or `clear`), so an answer is never
 * stale for the thread that noted it. A read or write from another thread starts afresh:
 * only one task writes a store at a time, and another thread's reads may interleave with its
 * writes. At most `maxKeys` keys are held; later reads are not noted.
 */
final class ReadKeys(maxKeys: Int) {
  private val existed = new java.util.HashMap[ByteBuffer, java.lang.Boolean]()
  private var owner: Thread = null

  /** Notes that `key` (copied) was read and whether it existed. */
  def noteRead(key: Array[Byte], found: Boolean): Unit = synchronized {
    claim()
    if (existed.size < maxKeys) existed.put(ByteBuffer.wrap(key.clone()), found)
  }

  /** 1 if this thread read `key` and found it, 0 if it found it absent, -1 if it cannot say. */
  def lookup(key: Array[Byte]): Int = synchronized {
    if (owner ne Thread.currentThread()) -1
    else existed.get(ByteBuffer.wrap(key)) match {
      case null => -1
      case found => if (found) 1 else 0
    }
  }

  /** `key` was written (put, merged or deleted): whatever was read of it is past. */
  def written(key: Array[Byte]): Unit = synchronized {
    if (owner ne Thread.currentThread()) clear()
    else if (!existed.isEmpty) existed.remove(ByteBuffer.wrap(key))
  }

  def clear(): Unit = synchronized {
    existed.clear()
    owner = null
  }

  private def claim(): Unit = if (owner ne Thread.currentThread()) {
    existed.clear()
    owner = Thread.currentThread()
  }
}
