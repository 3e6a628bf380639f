package io.rockstate.storage.format

import java.nio.{ByteBuffer, ByteOrder}
import java.util.zip.CRC32C

/**
 * Per-row checksums (Spark's SPARK-54106 idea, rockstate's layout): in a store written with
 * them every value RocksDB holds is `checksum (4 bytes) + length (4 bytes) + value`, both
 * little-endian, where checksum = CRC32C over the key (without its column family id) then the
 * value. A key's merged values (a list) are such parts joined by the merge delimiter, each with
 * its own checksum, so a merge appends one part without reading the others.
 *
 * Keys stay as they are (their order is the store's order). A version manifest records whether
 * its store has them (`rowChecksums`, format 4); docs/checkpoint-format.md describes the layout
 * and the Python reader (`rockstate.row_checksum`) implements the same.
 */
object RowChecksum {
  val HeaderBytes = 8

  /** CRC32C of `key` from `keyFrom` on, then of `value(from until from + length)`. */
  def of(key: Array[Byte], keyFrom: Int, value: Array[Byte], from: Int, length: Int): Int = {
    val crc = new CRC32C()
    crc.update(key, keyFrom, key.length - keyFrom)
    crc.update(value, from, length)
    crc.getValue.toInt
  }

  /** One value as stored: its checksum header, then the value. */
  def seal(key: Array[Byte], keyFrom: Int, value: Array[Byte]): Array[Byte] = {
    val out = new Array[Byte](HeaderBytes + value.length)
    writeHeader(out, 0, of(key, keyFrom, value, 0, value.length), value.length)
    System.arraycopy(value, 0, out, HeaderBytes, value.length)
    out
  }

  /** Several values of one key as stored: each sealed, joined by `delimiter`. */
  def sealAll(key: Array[Byte], keyFrom: Int, values: Seq[Array[Byte]],
      delimiter: Byte): Array[Byte] = joined(values.map(seal(key, keyFrom, _)), delimiter)

  /** `parts` joined by `delimiter`, as the merge operator joins a key's values. */
  def joined(parts: Seq[Array[Byte]], delimiter: Byte): Array[Byte] = {
    val out = new java.io.ByteArrayOutputStream(parts.map(_.length + 1).sum)
    parts.zipWithIndex.foreach { case (p, i) =>
      if (i > 0) out.write(delimiter.toInt)
      out.write(p)
    }
    out.toByteArray
  }

  /**
   * The value(s) of `stored` without their headers, parts joined by `delimiter` as the merge
   * operator joins values without checksums. Each part's checksum is checked when `verify()`
   * says so (a sampling ratio); a mismatch throws `RowChecksumMismatchException`. Lengths are
   * checked before use: a header naming more bytes than there are is damage, never a value.
   */
  def open(key: Array[Byte], keyFrom: Int, stored: Array[Byte], delimiter: Byte,
      verify: () => Boolean, where: => String): Array[Byte] = {
    // The usual case: one part, returned without a second pass.
    if (stored.length >= HeaderBytes && HeaderBytes + lengthAt(stored, 0) == stored.length) {
      check(key, keyFrom, stored, 0, verify, where)
      java.util.Arrays.copyOfRange(stored, HeaderBytes, stored.length)
    } else {
      val out = new java.io.ByteArrayOutputStream(stored.length)
      var at = 0
      while (at < stored.length) {
        if (at > 0) {
          if (stored(at) != delimiter) throw malformed(at, stored.length, where)
          out.write(delimiter.toInt)
          at += 1
        }
        val length = check(key, keyFrom, stored, at, verify, where)
        out.write(stored, at + HeaderBytes, length)
        at += HeaderBytes + length
      }
      out.toByteArray
    }
  }

  /** Checks the part at `at` (its header within `stored`, its checksum if `verify()`). */
  private def check(key: Array[Byte], keyFrom: Int, stored: Array[Byte], at: Int,
      verify: () => Boolean, where: => String): Int = {
    if (stored.length - at < HeaderBytes) throw malformed(at, stored.length, where)
    val length = lengthAt(stored, at)
    if (length < 0 || length > stored.length - at - HeaderBytes) {
      throw malformed(at, stored.length, where)
    }
    if (verify()) {
      val expected = buffer(stored, at).getInt
      val computed = of(key, keyFrom, stored, at + HeaderBytes, length)
      if (expected != computed) {
        throw new RowChecksumMismatchException(expected, computed, s"rockstate: a row of " +
          s"$where fails its checksum (expected $expected, computed $computed): the row is " +
          "damaged. Restore the state from an earlier checkpoint; `rockstate verify` on the " +
          "checkpoint location finds every damaged row of its changelogs and snapshots.")
      }
    }
    length
  }

  private def lengthAt(stored: Array[Byte], at: Int): Int = buffer(stored, at + 4).getInt

  private def buffer(bytes: Array[Byte], at: Int): ByteBuffer =
    ByteBuffer.wrap(bytes, at, 4).order(ByteOrder.LITTLE_ENDIAN)

  private def writeHeader(out: Array[Byte], at: Int, checksum: Int, length: Int): Unit = {
    val b = ByteBuffer.wrap(out, at, HeaderBytes).order(ByteOrder.LITTLE_ENDIAN)
    b.putInt(checksum).putInt(length)
  }

  private def malformed(at: Int, size: Int, where: String) = new CorruptCheckpointException(
    s"rockstate: a row of $where has no valid checksum header at byte $at of its $size-byte " +
      "value (a length past its end, or no merge delimiter between parts): the row is " +
      "damaged. Restore the state from an earlier checkpoint.")
}
