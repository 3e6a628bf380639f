package io.rockstate.storage.format

import java.io.{BufferedInputStream, BufferedOutputStream, ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream, EOFException, File, OutputStream}
import java.util.Base64
import java.util.zip.CRC32
import java.nio.charset.StandardCharsets
import java.nio.file.{FileAlreadyExistsException, Files, StandardOpenOption}

import scala.util.Using

import com.github.luben.zstd.{ZstdInputStream, ZstdOutputStream}

/**
 * RocksDB's small files of one snapshot (CURRENT, MANIFEST-n, OPTIONS-n, an empty WAL), packed
 * and compressed into the snapshot's manifest (docs/checkpoint-format.md, "Meta packs"): on an
 * object store every file is a request, and these are a handful of KB each, one set per
 * snapshot.
 *
 *   "RSMP" | format u8 (1) | a zstd frame of: count i32, then per file:
 *   nameLen i32 | name (UTF-8) | length i64 | bytes
 *
 * Its size and CRC32 are in the snapshot manifest, checked before it is unpacked.
 */
object MetaPack {
  val Magic: Array[Byte] = "RSMP".getBytes(StandardCharsets.US_ASCII)
  val Format: Byte = 1
  // RocksDB's MANIFEST of a large database is a few MB at most; anything larger is damage.
  private val MaxFileBytes = 1L << 30
  // The least one file takes in a pack: name length, a 1-byte name, length.
  private val MinEntryBytes = 4 + 1 + 8

  /** Packs `files` (plain files, by their names) into a manifest's inline pack. */
  def inline(files: Seq[File]): MetaPackRef = {
    val out = new ByteArrayOutputStream()
    val raw = write(files, out)
    val bytes = out.toByteArray
    // Readers refuse a pack expanding past DecompressionBound of its size; RocksDB's small
    // files never compress that far (it takes more than 64 MiB of them), but never write one.
    if (raw > DecompressionBound.limitFor(bytes.length)) {
      throw new java.io.IOException(s"rockstate: RocksDB's small files (${files.map(_.getName)
        .mkString(", ")}) take $raw bytes, packed into ${bytes.length}: past what a reader " +
        "accepts from a meta pack (DecompressionBound); the snapshot is not uploaded.")
    }
    val crc = new CRC32()
    crc.update(bytes)
    MetaPackRef(bytes.length, crc.getValue, Base64.getEncoder.encodeToString(bytes))
  }

  /** Unpacks a manifest's inline pack into `into`, after checking its size and CRC32. */
  def unpackInline(pack: MetaPackRef, into: File, where: String): Seq[String] = {
    val bytes = try Base64.getDecoder.decode(pack.data) catch {
      case _: IllegalArgumentException => throw new CorruptCheckpointException(
        s"rockstate: the meta pack of $where is not valid base64; the manifest is damaged.")
    }
    val crc = new CRC32()
    crc.update(bytes)
    if (bytes.length != pack.size || crc.getValue != pack.crc32) {
      throw new CorruptCheckpointException(s"rockstate: the meta pack of $where is damaged: " +
        s"expected ${pack.size} bytes with CRC32 ${pack.crc32}, found ${bytes.length} with " +
        s"CRC32 ${crc.getValue}. Restore the file or restart the query from an earlier version.")
    }
    unpack(bytes, into, where)
  }

  /** Writes the pack of `files` to `raw`; returns the bytes of its body before compression. */
  private def write(files: Seq[File], raw: OutputStream): Long = {
    raw.write(Magic)
    raw.write(Format.toInt)
    Using.resource(new DataOutputStream(new BufferedOutputStream(
        new ZstdOutputStream(raw, 3), 1 << 16))) { data =>
      data.writeInt(files.size)
      4L + files.map { f =>
        val name = f.getName.getBytes(StandardCharsets.UTF_8)
        data.writeInt(name.length)
        data.write(name)
        data.writeLong(f.length)
        4L + name.length + 8 + Files.copy(f.toPath, data)
      }.sum
    }
  }

  /** Unpacks a (checked) pack into directory `into`; returns the names written. */
  private def unpack(pack: Array[Byte], into: File, where: String): Seq[String] = {
    def corrupt(why: String) = new CorruptCheckpointException(
      s"rockstate: the meta pack of $where is damaged ($why). Restore the file or restart the " +
        "query from an earlier version (`rockstate verify` lists every damaged version).")
    Using.resource(new ByteArrayInputStream(pack)) { raw =>
      val header = raw.readNBytes(Magic.length + 1)
      if (header.length < Magic.length + 1 || !header.take(Magic.length).sameElements(Magic)) {
        throw corrupt("not a rockstate meta pack")
      }
      if (header(Magic.length) != Format) throw corrupt(s"unknown format ${header(Magic.length)}")
      // Counted outside the buffer: `remaining` is exact for what was read so far.
      val counted = new DecompressionBound.Counted(new BufferedInputStream(
        new ZstdInputStream(raw), 1 << 16), pack.length, s"the meta pack of $where")
      val in = new DataInputStream(counted)
      try {
        val count = in.readInt()
        if (count < 0 || count > 10000 || count.toLong * MinEntryBytes > counted.remaining) {
          throw corrupt(s"file count $count out of range")
        }
        (0 until count).map { i =>
          val n = in.readInt()
          if (n <= 0 || n > 4096) throw corrupt(s"name length $n out of range")
          val nameBytes = new Array[Byte](n)
          in.readFully(nameBytes)
          val name = new String(nameBytes, StandardCharsets.UTF_8)
          // Checkpoint input: one plain name, written inside `into` and nowhere else.
          val target = CheckpointPath.localFile(into, name, s"the meta pack of $where, file $i")
          val length = in.readLong()
          if (length < 0 || length > MaxFileBytes) throw corrupt(s"length $length out of range")
          counted.require(length) // a bomb's length is refused before anything is written
          // A new file only: never over (or through) a file or link already there.
          val created = try Files.newOutputStream(target.toPath, StandardOpenOption.CREATE_NEW,
            StandardOpenOption.WRITE) catch {
            case _: FileAlreadyExistsException => throw corrupt(s"file '$name' is there already")
          }
          Using.resource(created) { out =>
            val buf = new Array[Byte](1 << 16)
            var left = length
            while (left > 0) {
              val got = in.read(buf, 0, math.min(buf.length.toLong, left).toInt)
              if (got < 0) throw new EOFException()
              out.write(buf, 0, got)
              left -= got
            }
          }
          name
        }
      } catch {
        case _: EOFException => throw corrupt("it ends early")
        case e: java.io.IOException if !e.isInstanceOf[CorruptCheckpointException] =>
          throw corrupt(e.getMessage)
      } finally in.close()
    }
  }
}
