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
 *
 * A batch reads every key, checks it and writes it, so the table is sized for the last
 * batch's keys when a batch starts (growing it key by key rehashed it ten times a batch), and
 * the write right after a check of the same array reuses the check's slot: a profile of the
 * large-batch benchmark had the table at 7% of the task's CPU, more than the RocksDB read it
 * saves.
 */
final class ReadKeys(maxKeys: Int) {
  import ReadKeys._

  private var keys = new Array[Array[Byte]](InitialSlots)
  private var hashes = new Array[Int](InitialSlots)
  private var states = new Array[Byte](InitialSlots) // Free, Absent, Present or Unknown
  private var size = 0
  private var owner: Thread = null
  // How many keys the last batch noted: the next batch's table starts at their size.
  private var lastBatchKeys = 0
  // The array `lookup` was last given and the slot it found, for the write that follows.
  private var checkedKey: Array[Byte] = null
  private var checkedSlot = 0

  /** Notes that `key` (copied) was read and whether it existed. */
  def noteRead(key: Array[Byte], found: Boolean): Unit = synchronized {
    claim()
    checkedKey = null // an insert may move every slot
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
    else {
      val slot = find(key, hash(key))
      checkedKey = key
      checkedSlot = slot
      states(slot) match {
        case Present => 1
        case Absent => 0
        case _ => -1
      }
    }
  }

  /** `key` was written (put, merged or deleted): whatever was read of it is past. */
  def written(key: Array[Byte]): Unit = synchronized {
    if (owner ne Thread.currentThread()) clear()
    else if (size > 0) {
      // The slot `lookup` just found for this array, while it still holds these bytes.
      val slot =
        if ((key eq checkedKey) && states(checkedSlot) != Free &&
          Arrays.equals(keys(checkedSlot), key)) checkedSlot
        else find(key, hash(key))
      if (states(slot) != Free) states(slot) = Unknown
    }
    checkedKey = null
  }

  def clear(): Unit = synchronized {
    if (size > 0) {
      // Back to the first size: a batch's table is not kept for the store's idle time.
      lastBatchKeys = size
      allocate(InitialSlots)
      size = 0
    }
    checkedKey = null
    owner = null
  }

  private def claim(): Unit = if (owner ne Thread.currentThread()) {
    clear()
    owner = Thread.currentThread()
    val slots = slotsFor(math.min(lastBatchKeys, maxKeys))
    if (slots > keys.length) allocate(slots)
  }

  private def allocate(slots: Int): Unit = {
    keys = new Array[Array[Byte]](slots)
    hashes = new Array[Int](slots)
    states = new Array[Byte](slots)
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
    allocate(oldKeys.length * 2)
    val mask = keys.length - 1
    var i = 0
    while (i < oldKeys.length) { // a plain loop: this runs on the task's thread, per key
      if (oldStates(i) != Free) {
        var slot = oldHashes(i) & mask
        while (states(slot) != Free) slot = (slot + 1) & mask
        keys(slot) = oldKeys(i)
        hashes(slot) = oldHashes(i)
        states(slot) = oldStates(i)
      }
      i += 1
    }
  }
}

object ReadKeys {
  private val InitialSlots = 1024 // a power of two: a slot is the hash masked
  private val Free: Byte = 0
  private val Absent: Byte = 1
  private val Present: Byte = 2
  private val Unknown: Byte = 3 // written since it was read

  /** The power of two of slots that holds `keys` at most half full, at least the first size. */
  private def slotsFor(keys: Int): Int = {
    var slots = InitialSlots
    while (slots < 2 * keys + 2 && slots < (1 << 30)) slots *= 2
    slots
  }

  private def hash(key: Array[Byte]): Int =
    Murmur3_x86_32.hashUnsafeBytes(key, Platform.BYTE_ARRAY_OFFSET, key.length, 42)
}
