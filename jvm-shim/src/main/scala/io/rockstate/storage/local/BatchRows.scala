package io.rockstate.storage.local

import java.util.Arrays

import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32

/**
 * The rows one thread read from or wrote to a RocksDB instance in a batch: for each key,
 * whether it exists and, while the arena has room, its value. A get of a key the batch already
 * read or wrote is then served from here instead of RocksDB, and so is the row count's check
 * before a write. A join reads a key's count and values again for every row of a hot key, and
 * its appends are read by the other side's rows of the same batch: on Nexmark's q4, half of
 * the reads found a row the batch had already read or written (docs/performance.md).
 *
 * Every write to the instance goes through `written` or `merged` (or `clear`), so an answer is
 * never stale for the thread that holds the table. A read or write from another thread starts
 * afresh: only one task writes a store at a time, and another thread's reads may interleave
 * with its writes. A rollback clears it. A commit ends the batch (`endBatch`): the table then
 * holds the committed version's rows, and is kept for the instance's next batch when `kept`
 * (the executor's `keptRowsMB`) has room for it; the store clears it before any load that
 * is not of that version on this instance. Hot keys that come back batch after batch (a
 * join's open auctions) are then read from RocksDB once, not once a batch. At most `maxKeys`
 * keys and `maxBytes` bytes of keys and values are held; later keys are not, and a value that
 * does not fit leaves its key known to exist, its value read from RocksDB.
 *
 * An open-addressing table whose slot is one long: the key's Murmur3 hash, where its entry is
 * in one shared byte array (the arena) and its state. An entry:
 *
 * {{{
 *   | key length (int) | key bytes | value length (int; -1: not held) | value bytes |
 * }}}
 *
 * A probe then reads one slot and, when the hash matches, one place in the arena, and a held
 * row is no array of its own. A new value the old one's space holds is written over it, else
 * appended as a new entry (the old one is left behind until the clear). Nothing is removed: a
 * deleted key keeps its slot, marked absent.
 *
 * A batch reads every key, checks it and writes it, so the table and the arena are sized for
 * the last batch's when a batch starts (growing them key by key rehashed ten times a batch);
 * a write right after a get or check of the same array reuses its slot, and a value written
 * right after its key's check (a new key: no value held yet) grows that last entry in place.
 */
final class BatchRows(maxKeys: Int, maxBytes: Int = BatchRows.MaxArenaBytes,
    kept: KeptRowsBudget = BatchRows.NoneKept) {
  import BatchRows._

  // Per slot: hash << 32 | entry offset << 2 | state; 0 is a free slot.
  private var slots = new Array[Long](InitialSlots)
  private var arena = new Array[Byte](InitialArenaBytes)
  private var arenaUsed = 0
  private var size = 0
  private var owner: Thread = null
  // The table's bytes `kept` holds for it since a batch ended (0: none held).
  private var keptBytes = 0L
  // How many keys and arena bytes the last batch held: the next batch starts at their size.
  private var lastBatchKeys = 0
  private var lastBatchBytes = 0
  // The array a get or check was last given and its slot, for the write that follows.
  private var checkedKey: Array[Byte] = null
  private var checkedSlot = 0

  /**
   * `key`'s value (null: it does not exist): a copy of the held one, else what `read` (RocksDB)
   * returns, which the table then holds.
   */
  def get(key: Array[Byte], read: Array[Byte] => Array[Byte]): Array[Byte] = synchronized {
    claim()
    val h = hash(key)
    val slot = find(key, h)
    val s = slots(slot)
    if (s != 0 && (s & StateMask) == Absent) checked(key, slot, null)
    else if (s != 0 && heldLength(s, key.length) >= 0) {
      val at = valueAt(s, key.length) + LengthBytes
      checked(key, slot, Arrays.copyOfRange(arena, at, at + heldLength(s, key.length)))
    } else readAndHold(slot, h, key, read)
  }

  /** Whether `key` exists: from the table, else from what `read` (RocksDB) returns, then held. */
  def exists(key: Array[Byte], read: Array[Byte] => Array[Byte]): Boolean = synchronized {
    claim()
    val h = hash(key)
    val slot = find(key, h)
    val s = slots(slot)
    if (s != 0) checked(key, slot, (s & StateMask) == Present)
    else readAndHold(slot, h, key, read) != null
  }

  /** `key` was put with `value` (null: deleted). */
  def written(key: Array[Byte], value: Array[Byte]): Unit = synchronized {
    claim()
    record(key, value, if (value == null) Absent else Present)
  }

  /** `key` was merged into: it exists, its value is RocksDB's to compute. */
  def merged(key: Array[Byte]): Unit = synchronized {
    claim()
    record(key, null, Present)
  }

  /**
   * The batch ended with a commit: the table holds the committed version's rows. Kept for
   * the instance's next batch when `kept` has room for its arrays and it is at most half full
   * (so the next batch can still hold its own rows); otherwise cleared.
   */
  def endBatch(): Unit = synchronized {
    val bytes = 8L * slots.length + arena.length
    val roomy = size <= maxKeys / 2 && arenaUsed <= maxBytes / 2
    if (size > 0 && roomy && kept.reserve(bytes - keptBytes)) {
      keptBytes = bytes
      checkedKey = null
      owner = null
    } else clear()
  }

  def clear(): Unit = synchronized {
    kept.release(keptBytes)
    keptBytes = 0
    if (size > 0) {
      // Back to the first size: a dropped table holds no memory through the store's idle time.
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

  /** What `read` (RocksDB) returns for `key`, held in `slot`, the one `find` gave for it. */
  private def readAndHold(slot: Int, h: Int, key: Array[Byte],
      read: Array[Byte] => Array[Byte]): Array[Byte] = {
    val value = read(key)
    store(slot, h, key, value, if (value == null) Absent else Present)
    value
  }

  private def claim(): Unit = if (owner ne Thread.currentThread()) {
    // A kept table (no owner since its batch ended) goes to the next batch's thread.
    if (owner == null && keptBytes > 0) owner = Thread.currentThread()
    else claimCleared()
  }

  private def claimCleared(): Unit = {
    clear()
    owner = Thread.currentThread()
    val wanted = slotsFor(math.min(lastBatchKeys, maxKeys))
    if (wanted > slots.length) slots = new Array[Long](wanted)
    val bytes = math.min(lastBatchBytes, maxBytes)
    if (bytes > arena.length) arena = new Array[Byte](bytes)
  }

  /** Notes `slot` as `key`'s for the write that follows; returns `answer`. */
  private def checked[T](key: Array[Byte], slot: Int, answer: T): T = {
    checkedKey = key
    checkedSlot = slot
    answer
  }

  /** Sets `key`'s state, and its value when `value` is not null (a `Present` key without one
   * is held with its value unknown). */
  private def record(key: Array[Byte], value: Array[Byte], state: Int): Unit = {
    // The slot the check just found for this array, while it still holds these bytes.
    val reuse = (key eq checkedKey) && slots(checkedSlot) != 0 && holds(slots(checkedSlot), key)
    val h = if (reuse) (slots(checkedSlot) >>> 32).toInt else hash(key)
    store(if (reuse) checkedSlot else find(key, h), h, key, value, state)
  }

  /**
   * Sets the state (and value) of `key`, whose slot is `slot` (occupied by it, or the free
   * one where it goes). A key the table has no room for is not held.
   */
  private def store(slot: Int, h: Int, key: Array[Byte], value: Array[Byte], state: Int): Unit = {
    checkedKey = null
    val s = slots(slot)
    if (s != 0) {
      val at = valueAt(s, key.length)
      val held = heldLength(s, key.length)
      if (state == Absent) slots(slot) = (s & ~StateMask) | Absent
      else if (value != null && (value.length <= held ||
          // The arena's last entry (a check's, just before its write) grows in place.
          at + LengthBytes + math.max(held, 0) == arenaUsed &&
            fits(value.length - math.max(held, 0)))) {
        putValue(at, value)
        arenaUsed = math.max(arenaUsed, at + LengthBytes + value.length)
        slots(slot) = (s & ~StateMask) | Present
      } else if (value != null && fits(entryBytes(key.length, value.length))) {
        slots(slot) = (h.toLong << 32) | (append(key, value).toLong << 2) | Present
      } else { // exists, its value not held: the old one is past
        Platform.putInt(arena, Platform.BYTE_ARRAY_OFFSET + at, -1)
        slots(slot) = (s & ~StateMask) | Present
      }
      checkedKey = key
      checkedSlot = slot
    } else if (size < maxKeys) {
      val withValue = state == Present && value != null &&
        fits(entryBytes(key.length, value.length))
      if (withValue || fits(entryBytes(key.length, -1))) {
        slots(slot) = (h.toLong << 32) |
          (append(key, if (withValue) value else null).toLong << 2) | state
        size += 1
        if (size * 2 > slots.length) grow() // every slot may move: no slot is noted
        else {
          checkedKey = key
          checkedSlot = slot
        }
      }
    }
  }

  /** Appends an entry for `key` (its value null: not held); returns its offset. */
  private def append(key: Array[Byte], value: Array[Byte]): Int = {
    val at = arenaUsed
    Platform.putInt(arena, Platform.BYTE_ARRAY_OFFSET + at, key.length)
    System.arraycopy(key, 0, arena, at + LengthBytes, key.length)
    val valueAt = at + LengthBytes + key.length
    if (value == null) Platform.putInt(arena, Platform.BYTE_ARRAY_OFFSET + valueAt, -1)
    else putValue(valueAt, value)
    arenaUsed = valueAt + LengthBytes + (if (value == null) 0 else value.length)
    at
  }

  private def putValue(at: Int, value: Array[Byte]): Unit = {
    Platform.putInt(arena, Platform.BYTE_ARRAY_OFFSET + at, value.length)
    System.arraycopy(value, 0, arena, at + LengthBytes, value.length)
  }

  /** Where the value length of the entry of occupied slot `s`, a key of `keyLength`, is. */
  private def valueAt(s: Long, keyLength: Int): Int =
    ((s & OffsetMask) >>> 2).toInt + LengthBytes + keyLength

  /** The length of the value held for occupied slot `s`; -1 when none is. */
  private def heldLength(s: Long, keyLength: Int): Int =
    Platform.getInt(arena, Platform.BYTE_ARRAY_OFFSET + valueAt(s, keyLength))

  /** Whether `bytes` more fit the arena, which grows (by doubling) up to maxBytes. */
  private def fits(bytes: Int): Boolean = {
    val needed = arenaUsed.toLong + bytes
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

object BatchRows {
  private val InitialSlots = 1024 // a power of two: a slot is the hash masked
  private val InitialArenaBytes = 4 * 1024
  private val LengthBytes = 4
  private val StateMask = 3L
  private val OffsetMask = 0xFFFFFFFCL // bits 2-31: the arena offset, shifted by 2
  // A state is never 0, so an occupied slot is never 0.
  private val Absent = 1
  private val Present = 2

  /**
   * The arena's bound: 30 bits of offset allow 1 GB; a batch's rows are far fewer (100,000
   * rows of a 33-byte key, a string key's UnsafeRow, and a 40-byte value take 8.1 MB).
   */
  val MaxArenaBytes: Int = 64 * 1024 * 1024

  /** No room: every table ends with its batch. */
  val NoneKept = new KeptRowsBudget(0)

  private def entryBytes(keyLength: Int, valueLength: Int): Int =
    2 * LengthBytes + keyLength + math.max(valueLength, 0)

  /** The power of two of slots that holds `keys` at most half full, at least the first size. */
  private def slotsFor(keys: Int): Int = {
    var slots = InitialSlots
    while (slots < 2 * keys + 2 && slots < (1 << 30)) slots *= 2
    slots
  }

  private def hash(key: Array[Byte]): Int =
    Murmur3_x86_32.hashUnsafeBytes(key, Platform.BYTE_ARRAY_OFFSET, key.length, 42)
}
