package io.rockstate.state

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream, EOFException, File, FileInputStream, FileOutputStream}

import scala.util.Using

/**
 * A batch's changes to one store, in the order they were made (docs/checkpoint-format.md,
 * "Changelog files"): a 5-byte header (`RSCL` and format byte 1), then records
 * `op:u8 keyLen:i32 key [valueLen:i32 value]`, then the end record `0:u8 count:i64`. The end
 * record makes a truncated file detectable even before its CRC32 is checked.
 */
object Changelog {
  val Magic: Array[Byte] = "RSCL".getBytes("US-ASCII")
  val Format: Byte = 1

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

  /** Appends records to a local file; `finish()` writes the end record and closes it. */
  final class Writer(val file: File) extends AutoCloseable {
    private val out = new DataOutputStream(
      new BufferedOutputStream(new FileOutputStream(file), 1 << 16))
    private var count = 0L
    private var open = true
    out.write(Magic)
    out.writeByte(Format)

    def records: Long = count

    def put(key: Array[Byte], value: Array[Byte]): Unit = write(Put, key, value)
    def merge(key: Array[Byte], value: Array[Byte]): Unit = write(Merge, key, value)
    def delete(key: Array[Byte]): Unit = write(Delete, key, null)
    def deleteRange(begin: Array[Byte], end: Array[Byte]): Unit = write(DeleteRange, begin, end)

    private def write(op: Byte, key: Array[Byte], value: Array[Byte]): Unit = {
      out.writeByte(op)
      out.writeInt(key.length)
      out.write(key)
      if (value != null) {
        out.writeInt(value.length)
        out.write(value)
      }
      count += 1
    }

    def finish(): Unit = if (open) {
      out.writeByte(End)
      out.writeLong(count)
      close()
    }

    override def close(): Unit = if (open) {
      open = false
      out.close()
    }
  }

  /**
   * Replays a changelog file into `target`, returning the number of records. A file that is
   * not a changelog, is cut short or counts differently fails with the file named.
   */
  def replay(file: File, where: String, target: Target): Long = {
    def corrupt(why: String) = new CorruptCheckpointException(
      s"rockstate: changelog $where is damaged ($why). Restore the file or restart the query " +
        "from an earlier version (`rockstate verify` lists every damaged version).")
    Using.resource(new DataInputStream(new BufferedInputStream(new FileInputStream(file), 1 << 16))) {
      in =>
        try {
          val magic = new Array[Byte](Magic.length)
          in.readFully(magic)
          if (!java.util.Arrays.equals(magic, Magic)) throw corrupt("not a rockstate changelog")
          val format = in.readByte()
          if (format != Format) throw corrupt(s"unknown changelog format $format")
          def bytes(): Array[Byte] = {
            val n = in.readInt()
            if (n < 0 || n > file.length) throw corrupt(s"record length $n out of range")
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
        }
    }
  }
}
