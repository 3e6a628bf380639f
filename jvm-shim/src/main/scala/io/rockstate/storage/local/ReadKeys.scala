package io.rockstate.storage.local

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
 * writes. At most `maxKeys` keys of `maxBytes` bytes together are held; later reads are not
 * noted.
 *
 * An open-addressing table whose slot is one long: the key's Murmur3 hash, where its bytes
 * are in one shared byte array (the arena: a length, then the bytes) and its state. A probe
 * then reads one slot and, when the hash matches, one place in the arena, and a noted key is
 * no array of its own. With references, hashes and states in three arrays, checking 100,000
 * keys took 13.1-13.6 ms against 9.0-9.1 ms this way (`ReadKeysBench`). A written key keeps
 * its slot, marked unknown, so nothing is ever removed.
 *
 * A batch reads every key, checks it and writes it, so the table and the arena are sized for
 * the last batch's keys when a batch starts (growing them key by key rehashed ten times a
 * batch), and the write right after a check of the same array reuses the check's slot.
 */
final class ReadKeys(maxKeys: Int, maxBytes: Int = ReadKeys.MaxArenaBytes) {
  import ReadKeys._

  // Per slot: hash << 32 | arena offset << 2 | state; 0 is a free slot.
  private var slots = new Array[Long](InitialSlots)
  private var arena = new Array[Byte](InitialArenaBytes)
  private var arenaUsed = 0
  private var size = 0
  private var owner: Thread = null
  // How many keys and arena bytes the last batch noted: the next batch starts at their size.
  private var lastBatchKeys = 0
  private var lastBatchBytes = 0
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
    val s = slots(slot)
    if (s != 0) slots(slot) = (s & ~StateMask) | state
    else if (size < maxKeys && fits(key.length)) {
      val at = arenaUsed
      Platform.putInt(arena, Platform.BYTE_ARRAY_OFFSET + at, key.length)
      System.arraycopy(key, 0, arena, at + LengthBytes, key.length)
      arenaUsed = at + LengthBytes + key.length
      slots(slot) = (h.toLong << 32) | (at.toLong << 2) | state
      size += 1
      if (size * 2 > slots.length) grow()
    }
  }

  /** 1 if this thread read `key` and found it, 0 if it found it absent, -1 if it cannot say. */
  def lookup(key: Array[Byte]): Int = synchronized {
    if (owner ne Thread.currentThread()) -1
    else {
      val slot = find(key, hash(key))
      checkedKey = key
      checkedSlot = slot
      (slots(slot) & StateMask).toInt match {
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
        if ((key eq checkedKey) && slots(checkedSlot) != 0 && holds(slots(checkedSlot), key)) {
          checkedSlot
        } else find(key, hash(key))
      val s = slots(slot)
      if (s != 0) slots(slot) = (s & ~StateMask) | Unknown
    }
    checkedKey = null
  }

  def clear(): Unit = synchronized {
    if (size > 0) {
      // Back to the first size: a batch's table is not kept for the store's idle time.
      lastBatchKeys = size
      lastBatchBytes = arenaUsed
      slots = new Array[Long](InitialSlots)
      arena = new Array[Byte](InitialArenaBytes)
      arenaUsed = 0
      size = 0
    }
    checkedKey = null
    owner = null
  }

  private def claim(): Unit = if (owner ne Thread.currentThread()) {
    clear()
    owner = Thread.currentThread()
    val wanted = slotsFor(math.min(lastBatchKeys, maxKeys))
    if (wanted > slots.length) slots = new Array[Long](wanted)
    val bytes = math.min(lastBatchBytes, maxBytes)
    if (bytes > arena.length) arena = new Array[Byte](bytes)
  }

  /** Whether a key of `length` bytes fits the arena, which grows (by doubling) up to maxBytes. */
  private def fits(length: Int): Boolean = {
    val needed = arenaUsed.toLong + LengthBytes + length
    needed <= maxBytes && {
      if (needed > arena.length) {
        val grown = math.min(maxBytes.toLong, math.max(needed, 2L * arena.length)).toInt
        arena = Arrays.copyOf(arena, grown)
      }
      true
    }
  }

  /** Whether the occupied slot `s` holds `key`'s bytes. */
  private def holds(s: Long, key: Array[Byte]): Boolean = {
    val at = ((s & OffsetMask) >>> 2).toInt
    Platform.getInt(arena, Platform.BYTE_ARRAY_OFFSET + at) == key.length &&
      Arrays.equals(arena, at + LengthBytes, at + LengthBytes + key.length, key, 0, key.length)
  }

  /** The slot holding `key`, or the free slot where it would go (linear probing). */
  private def find(key: Array[Byte], h: Int): Int = {
    val mask = slots.length - 1
    var slot = h & mask
    var s = slots(slot)
    while (s != 0 && !((s >>> 32).toInt == h && holds(s, key))) {
      slot = (slot + 1) & mask
      s = slots(slot)
    }
    slot
  }

  private def grow(): Unit = {
    val old = slots
    slots = new Array[Long](old.length * 2)
    val mask = slots.length - 1
    var i = 0
    while (i < old.length) { // a plain loop: this runs on the task's thread, per key
      val s = old(i)
      if (s != 0) {
        var slot = (s >>> 32).toInt & mask
        while (slots(slot) != 0) slot = (slot + 1) & mask
        slots(slot) = s
      }
      i += 1
    }
  }
}

object ReadKeys {
  private val InitialSlots = 1024 // a power of two: a slot is the hash masked
  private val InitialArenaBytes = 4 * 1024
  private val LengthBytes = 4
  private val StateMask = 3L
  private val OffsetMask = 0xFFFFFFFCL // bits 2-31: the arena offset, shifted by 2
  // A state is never 0, so an occupied slot is never 0.
  private val Absent = 1
  private val Present = 2
  private val Unknown = 3 // written since it was read

  /**
   * The arena's bound: 30 bits of offset allow 1 GB; a batch's keys are far fewer (100,000
   * keys of 33 bytes, a string key's UnsafeRow, take 3.7 MB).
   */
  val MaxArenaBytes: Int = 64 * 1024 * 1024

  /** The power of two of slots that holds `keys` at most half full, at least the first size. */
  private def slotsFor(keys: Int): Int = {
    var slots = InitialSlots
    while (slots < 2 * keys + 2 && slots < (1 << 30)) slots *= 2
    slots
  }

  private def hash(key: Array[Byte]): Int =
    Murmur3_x86_32.hashUnsafeBytes(key, Platform.BYTE_ARRAY_OFFSET, key.length, 42)
}
