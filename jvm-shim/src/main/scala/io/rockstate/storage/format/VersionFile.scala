package io.rockstate.storage.format

import java.io.{BufferedOutputStream, DataOutputStream, File, FileInputStream, FileOutputStream, InputStream, RandomAccessFile}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.util.zip.CRC32

import scala.util.Using

/**
 * A version file (format 3, docs/checkpoint-format.md "Version files"): one commit's whole
 * output in one file, so a commit is one write.
 *
 *   "RSVF" | layout u8 (1) | headerLen i32 | header: the version manifest (JSON)
 *   | changes: a complete changelog (Changelog's format) | crc32 u32 | "RSVE"
 *
 * The trailer's CRC32 covers every byte before it, so a truncated or altered file is detected
 * before anything in it is used. The header names the version's lineage (snapshot and the
 * earlier versions' changes); the file's own changes are the last link of that lineage.
 */
object VersionFile {
  val Magic: Array[Byte] = "RSVF".getBytes(StandardCharsets.US_ASCII)
  val EndMagic: Array[Byte] = "RSVE".getBytes(StandardCharsets.US_ASCII)
  val Layout: Byte = 1
  private val HeaderStart = Magic.length + 1 + 4
  private val TrailerBytes = 4 + EndMagic.length
  // A header larger than this is damage: a lineage is at most 3 × snapshotInterval entries.
  private val MaxHeaderBytes = 64 << 20

  /** The path of the version file of `version` made by the commit with unique id `id`. */
  def pathOf(version: Long, id: String): String = {
    require(id.nonEmpty && id.forall(c => c.isLetterOrDigit || c == '-'),
      s"rockstate: '$id' is not a rockstate checkpoint id")
    s"versions/$version-$id.rsv"
  }

  /** Whether a checkpoint path names a version file (rather than a format-2 changelog). */
  def isVersionFile(path: String): Boolean = path.startsWith("versions/")

  /** Writes the version file for `manifest` with `changes` (a finished changelog) to `out`. */
  def write(manifest: VersionManifest, changes: File, out: File): Unit = {
    val header = CheckpointJson.compact(manifest)
    val crc = new CRC32()
    Using.resource(new DataOutputStream(new BufferedOutputStream(
        new FileOutputStream(out), 1 << 16))) { data =>
      def put(bytes: Array[Byte], n: Int): Unit = {
        data.write(bytes, 0, n)
        crc.update(bytes, 0, n)
      }
      put(Magic, Magic.length)
      put(Array(Layout), 1)
      put(ByteBuffer.allocate(4).putInt(header.length).array(), 4)
      put(header, header.length)
      Using.resource(new FileInputStream(changes))(in => ChecksummedCopy.copy(in, data, crc))
      data.writeInt(crc.getValue.toInt)
      data.write(EndMagic)
    }
  }

  /** A version file's header and where its changes lie. */
  final case class Parsed(manifest: VersionManifest, changesOffset: Long, changesLength: Long)

  /**
   * Parses a local copy of the version file at checkpoint path `path`, checking its trailer
   * and (with `checkCrc`; off only when the whole file was just checked against a lineage's
   * CRC32) the CRC32 the trailer holds. The manifest's lineage then ends with the file's own
   * changes, described by `size` and `crc32` of the whole file.
   */
  def read(file: File, path: String, where: String, size: Long, crc32: Long,
      checkCrc: Boolean = true): Parsed = {
    val length = file.length
    if (length < HeaderStart + TrailerBytes) throw corrupt(where, "it is shorter than a header")
    Using.resource(new RandomAccessFile(file, "r")) { raf =>
      val trailer = new Array[Byte](TrailerBytes)
      raf.seek(length - TrailerBytes)
      raf.readFully(trailer)
      if (!java.util.Arrays.equals(trailer.drop(4), EndMagic)) {
        throw corrupt(where, "it does not end with its trailer (cut short?)")
      }
      val expected = ByteBuffer.wrap(trailer, 0, 4).getInt.toLong & 0xffffffffL
      if (checkCrc) checkContent(file, length, expected, where)
    }
    val (m, changesOffset) = Using.resource(new Limited(new FileInputStream(file),
      length - TrailerBytes))(in => readStart(in, where, Some(length - TrailerBytes)))
    Parsed(withOwnChanges(m, path, size, crc32), changesOffset,
      length - TrailerBytes - changesOffset)
  }

  /**
   * The lineage with the file's own changes as its last link, unless the version's snapshot is
   * of this very version (taken on the commit path): then they are in the snapshot already.
   */
  def withOwnChanges(m: VersionManifest, path: String, size: Long, crc32: Long): VersionManifest =
    if (m.snapshot.exists(_.version >= m.version)) m
    else m.copy(changelogs = m.changelogs :+
      ChangelogRef(m.version, path, size, crc32, m.commit.get.changelogRecords))

  private def checkContent(file: File, length: Long, expected: Long, where: String): Unit = {
    val crc = new CRC32()
    Using.resource(new Limited(new FileInputStream(file), length - TrailerBytes)) { in =>
      ChecksummedCopy.copy(in, java.io.OutputStream.nullOutputStream(), crc)
    }
    if (crc.getValue != expected) {
      throw corrupt(where, s"its CRC32 is ${crc.getValue}, its trailer says $expected")
    }
  }

  /**
   * Reads only the header of a version file (cleanup and listings need the lineage, not the
   * changes); the trailer is not checked here, loads check it.
   */
  def readHeader(in: InputStream, where: String): VersionManifest = readStart(in, where, None)._1

  /**
   * Reads magic, layout and header from the file's start; returns them and where they end.
   * With `end` (where the trailer starts), a header length reaching past it is refused.
   */
  private def readStart(in: InputStream, where: String,
      end: Option[Long]): (VersionManifest, Long) = {
    val start = in.readNBytes(HeaderStart)
    if (start.length < HeaderStart || !java.util.Arrays.equals(start.take(Magic.length), Magic)) {
      throw corrupt(where, "not a rockstate version file")
    }
    if (start(Magic.length) != Layout) {
      throw corrupt(where, s"unknown version file layout ${start(Magic.length)}")
    }
    val headerLen = ByteBuffer.wrap(start, Magic.length + 1, 4).getInt
    if (headerLen <= 0 || headerLen > MaxHeaderBytes) {
      throw corrupt(where, s"header length $headerLen out of range")
    }
    end.filter(HeaderStart.toLong + headerLen > _).foreach { e =>
      throw corrupt(where, s"header length $headerLen reaches past the end of the file " +
        s"(${e + TrailerBytes} bytes)")
    }
    val header = in.readNBytes(headerLen)
    if (header.length < headerLen) throw corrupt(where, "it ends inside its header")
    val m = VersionManifest.fromJson(header, where)
    if (m.formatVersion < 3) throw corrupt(where, s"its header has format ${m.formatVersion}")
    (m, HeaderStart.toLong + headerLen)
  }

  /** The changes of a checked local version file, as a stream for `Changelog.replay`. */
  def changes(file: File, parsed: Parsed): InputStream = {
    val in = new FileInputStream(file)
    in.getChannel.position(parsed.changesOffset)
    new Limited(in, parsed.changesLength)
  }

  /** The first `limit` bytes of a stream (commons-io's bounded stream differs across lines). */
  private final class Limited(in: InputStream, limit: Long) extends java.io.FilterInputStream(in) {
    private var left = limit
    override def read(): Int = if (left <= 0) -1 else {
      val b = in.read()
      if (b >= 0) left -= 1
      b
    }
    override def read(b: Array[Byte], off: Int, len: Int): Int = if (left <= 0) -1 else {
      val n = in.read(b, off, math.min(len.toLong, left).toInt)
      if (n > 0) left -= n
      n
    }
  }

  private def corrupt(where: String, why: String) = new CorruptCheckpointException(
    s"rockstate: version file $where is damaged ($why). Restore the file or restart the query " +
      "from an earlier version (`rockstate verify` lists every damaged version).")
}
