package io.rockstate.storage

import java.util.Arrays

import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32

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
 *
 * An open-addressing table of byte arrays with their Murmur3 hashes: a profile showed
 * `HashMap[ByteBuffer, _]` (a byte-at-a-time hash, a wrapper and a node per key) at an eighth
 * of the task's CPU. A written key keeps its slot, marked unknown, so nothing is ever removed.
 */
final class ReadKeys(maxKeys: Int) {
  import ReadKeys._

  private var keys = new Array[Array[Byte]](InitialSlots)
  private var hashes = new Array[Int](InitialSlots)
  private var states = new Array[Byte](InitialSlots) // Free, Absent, Present or Unknown
  private var size = 0
  private var owner: Thread = null

  /** Notes that `key` (copied) was read and whether it existed. */
  def noteRead(key: Array[Byte], found: Boolean): Unit = synchronized {
    claim()
    val h = hash(key)
    val slot = find(key, h)
    val state = if (found) Present else Absent
    if (states(slot) != Free) states(slot) = state
    else if (size < maxKeys) {
      keys(slot) = key.clone()
      hashes(slot) = h
      states(slot) = state
      size += 1
      if (size * 2 > keys.length) grow()
    }
  }

  /** 1 if this thread read `key` and found it, 0 if it found it absent, -1 if it cannot say. */
  def lookup(key: Array[Byte]): Int = synchronized {
    if (owner ne Thread.currentThread()) -1
    else states(find(key, hash(key))) match {
      case Present => 1
      case Absent => 0
      case _ => -1
    }
  }

  /** `key` was written (put, merged or deleted): whatever was read of it is past. */
  def written(key: Array[Byte]): Unit = synchronized {
    if (owner ne Thread.currentThread()) clear()
    else if (size > 0) {
      val slot = find(key, hash(key))
      if (states(slot) != Free) states(slot) = Unknown
    }
  }

  def clear(): Unit = synchronized {
    if (size > 0) {
      // Back to the first size: a batch's table is not kept for the store's idle time.
      keys = new Array[Array[Byte]](InitialSlots)
      hashes = new Array[Int](InitialSlots)
      states = new Array[Byte](InitialSlots)
      size = 0
    }
    owner = null
  }

  private def claim(): Unit = if (owner ne Thread.currentThread()) {
    clear()
    owner = Thread.currentThread()
  }

  /** The slot holding `key`, or the free slot where it would go (linear probing). */
  private def find(key: Array[Byte], h: Int): Int = {
    val mask = keys.length - 1
    var slot = h & mask
    while (states(slot) != Free && !(hashes(slot) == h && Arrays.equals(keys(slot), key))) {
      slot = (slot + 1) & mask
    }
    slot
  }

  private def grow(): Unit = {
    val (oldKeys, oldHashes, oldStates) = (keys, hashes, states)
    keys = new Array[Array[Byte]](oldKeys.length * 2)
    hashes = new Array[Int](oldKeys.length * 2)
    states = new Array[Byte](oldKeys.length * 2)
    val mask = keys.length - 1
    oldKeys.indices.filter(oldStates(_) != Free).foreach { i =>
      var slot = oldHashes(i) & mask
      while (states(slot) != Free) slot = (slot + 1) & mask
      keys(slot) = oldKeys(i)
      hashes(slot) = oldHashes(i)
      states(slot) = oldStates(i)
    }
  }
}

object ReadKeys {
  private val InitialSlots = 1024 // a power of two: a slot is the hash masked
  private val Free: Byte = 0
  private val Absent: Byte = 1
  private val Present: Byte = 2
  private val Unknown: Byte = 3 // written since it was read

  private def hash(key: Array[Byte]): Int =
    Murmur3_x86_32.hashUnsafeBytes(key, Platform.BYTE_ARRAY_OFFSET, key.length, 42)
}
