package io.rockstate.storage.format

import java.io.{BufferedInputStream, DataInputStream, EOFException, File, FileInputStream, FileOutputStream, InputStream, OutputStream}
import java.nio.file.{Files, StandardCopyOption}

import scala.util.Using

import com.github.luben.zstd.{ZstdInputStream, ZstdOutputStream}

/**
 * A batch's changes to one store, in the order they were made (docs/checkpoint-format.md,
 * "Changelog files"): a 6-byte header (`RSCL`, format byte 1, codec byte), then, through the
 * codec (0: none, 1: a zstd frame), records `op:u8 keyLen:i32 key [valueLen:i32 value]` and
 * the end record `0:u8 count:i64`. The end record makes a truncated file detectable even
 * before its CRC32 is checked. Format 2 uploads it as its own file; format 3 embeds it in the
 * version file (`VersionFile`).
 */
object Changelog {
  val Magic: Array[Byte] = "RSCL".getBytes("US-ASCII")
  val Format: Byte = 1
  val Codecs: Map[String, Byte] = Map("none" -> 0, "zstd" -> 1)
  // A key or value larger than this is damage, not data (Spark's rows are far smaller).
  private val MaxRecordBytes = 1 << 30

  val End: Byte = 0
  val Put: Byte = 1
  val Merge: Byte = 2
  val Delete: Byte = 3
  val DeleteRange: Byte = 4 // key = begin (inclusive), value = end (exclusive)

  /** Applies one record to a database. */
  trait Target {
    def put(key: Array[Byte], value: Array[Byte]): Unit
    def merge(key: Array[Byte], value: Array[Byte]): Unit
    def delete(key: Array[Byte]): Unit
    def deleteRange(begin: Array[Byte], end: Array[Byte]): Unit
  }

  /**
   * Appends records to a local file; `finish()` writes the end record and closes it. A body
   * that would expand past `DecompressionBound` of the file's size (only pathological data,
   * such as huge runs of zeros, compresses that far), or past what a Python reader holds
   * (`DecompressionBound.MaxHeldBytes`), is stored uncompressed instead, so readers never
   * refuse what a writer wrote.
   */
  final class Writer(val file: File, codec: String) extends AutoCloseable {
    private val body: OutputStream = {
      val raw = new FileOutputStream(file)
      raw.write(Magic)
      raw.write(Array(Format, Codecs(codec)))
      if (codec == "zstd") new ZstdOutputStream(raw, 1) else raw
    }
    // Records are laid out here and handed to `body` a buffer at a time: a put costs array
    // copies, not a synchronized stream call per field (a profile at 1M keys saw those).
    private val buf = new Array[Byte](1 << 16)
    private var pos = 0
    private var count = 0L
    private var rawBytes = 0L // the body's bytes before compression
    private var open = true

    def records: Long = count

    def put(key: Array[Byte], value: Array[Byte]): Unit = write(Put, key, value)
    def merge(key: Array[Byte], value: Array[Byte]): Unit = write(Merge, key, value)
    def delete(key: Array[Byte]): Unit = write(Delete, key, null)
    def deleteRange(begin: Array[Byte], end: Array[Byte]): Unit = write(DeleteRange, begin, end)

    private def write(op: Byte, key: Array[Byte], value: Array[Byte]): Unit = {
      room(5)
      buf(pos) = op
      pos += 1
      putInt(key.length)
      putBytes(key)
      if (value != null) {
        room(4)
        putInt(value.length)
        putBytes(value)
      }
      count += 1
      rawBytes += 1 + 4 + key.length + (if (value != null) 4 + value.length else 0)
    }

    /** Makes room for `n` bytes (at most the buffer's size) at `pos`. */
    private def room(n: Int): Unit = if (pos + n > buf.length) drain()

    private def drain(): Unit = {
      body.write(buf, 0, pos)
      pos = 0
    }

    /** Big-endian, as `DataOutputStream` wrote it; `room(4)` was made. */
    private def putInt(v: Int): Unit = {
      buf(pos) = (v >>> 24).toByte
      buf(pos + 1) = (v >>> 16).toByte
      buf(pos + 2) = (v >>> 8).toByte
      buf(pos + 3) = v.toByte
      pos += 4
    }

    private def putBytes(a: Array[Byte]): Unit = {
      if (a.length > buf.length - pos) drain()
      if (a.length > buf.length) body.write(a)
      else {
        System.arraycopy(a, 0, buf, pos, a.length)
        pos += a.length
      }
    }

    def finish(): Unit = if (open) {
      room(9)
      buf(pos) = End
      pos += 1
      putInt((count >>> 32).toInt)
      putInt(count.toInt)
      rawBytes += 1 + 8
      close()
      if (codec == "zstd" && (rawBytes > DecompressionBound.limitFor(file.length) ||
          rawBytes > DecompressionBound.MaxHeldBytes)) {
        storeUncompressed()
      }
    }

    /** Rewrites the finished file with codec none: the same records, no compression. */
    private def storeUncompressed(): Unit = {
      val plain = new File(file.getParentFile, file.getName + ".plain")
      try {
        Using.resources(new FileInputStream(file), new FileOutputStream(plain)) { (in, o) =>
          in.skipNBytes(Magic.length + 2L)
          o.write(Magic)
          o.write(Array(Format, Codecs("none")))
          Using.resource(new ZstdInputStream(in))(_.transferTo(o))
        }
        Files.move(plain.toPath, file.toPath, StandardCopyOption.REPLACE_EXISTING)
      } finally Files.deleteIfExists(plain.toPath)
    }

    override def close(): Unit = if (open) {
      open = false
      try drain() finally body.close()
    }
  }

  /**
   * Replays a changelog file into `target`, returning the number of records. A file that is
   * not a changelog, is cut short or counts differently fails with the file named.
   */
  def replay(file: File, where: String, target: Target): Long =
    replay(new FileInputStream(file), file.length, where, target)

  /**
   * Replays a changelog from a stream (closed at the end): a file's, or a version file's.
   * `compressedBytes` is the changelog's whole length (header included): its body may expand
   * to `DecompressionBound.limitFor` of it, no further.
   */
  def replay(stream: InputStream, compressedBytes: Long, where: String, target: Target): Long = {
    def corrupt(why: String) = new CorruptCheckpointException(
      s"rockstate: changelog $where is damaged ($why). Restore the file or restart the query " +
        "from an earlier version (`rockstate verify` lists every damaged version).")
    Using.resource(stream) { raw =>
      val header = new Array[Byte](Magic.length + 2)
      if (raw.readNBytes(header, 0, header.length) < header.length ||
        !java.util.Arrays.equals(header.take(Magic.length), Magic)) {
        throw corrupt("not a rockstate changelog")
      }
      if (header(4) != Format) throw corrupt(s"unknown changelog format ${header(4)}")
      val body = header(5) match {
        case 0 => raw
        case 1 => new ZstdInputStream(raw)
        case other => throw corrupt(s"unknown changelog codec $other")
      }
      // Counted outside the buffer: `remaining` is exact for the records read so far.
      val counted = new DecompressionBound.Counted(new BufferedInputStream(body, 1 << 16),
        compressedBytes, s"changelog $where")
      val in = new DataInputStream(counted)
      try {
        def bytes(): Array[Byte] = {
          val n = in.readInt()
          if (n < 0 || n > MaxRecordBytes) throw corrupt(s"record length $n out of range")
          counted.require(n) // before allocating: a bomb's length is refused, not allocated
          val b = new Array[Byte](n)
          in.readFully(b)
          b
        }
        var count = 0L
        var op = in.readByte()
        while (op != End) {
          op match {
            case Put => target.put(bytes(), bytes())
            case Merge => target.merge(bytes(), bytes())
            case Delete => target.delete(bytes())
            case DeleteRange => target.deleteRange(bytes(), bytes())
            case other => throw corrupt(s"unknown record type $other")
          }
          count += 1
          op = in.readByte()
        }
        val expected = in.readLong()
        if (expected != count) throw corrupt(s"$count records found, the end record says $expected")
        if (in.read() != -1) throw corrupt("data after the end record")
        count
      } catch {
        case _: EOFException => throw corrupt("it ends before its end record")
        case e: java.io.IOException if !e.isInstanceOf[CorruptCheckpointException] =>
          throw corrupt(e.getMessage)
      } finally in.close()
    }
  }
}
