package io.rockstate.storage.location

import java.io.FileNotFoundException
import java.nio.file.{Files, LinkOption, NoSuchFileException, Paths}
import java.nio.file.attribute.BasicFileAttributes

import scala.util.Using

import org.apache.hadoop.fs.{ChecksumFileSystem, FSDataInputStream, FileSystem, LocalFileSystem, Path, RawLocalFileSystem}

import io.rockstate.storage.format.{CorruptCheckpointException, FileKind}

/**
 * The one way rockstate reads a file of a checkpoint location (stores' and the driver's reads
 * alike), whose files are untrusted input (docs/guarantees.md, "Trust model"; the offline
 * tools' twin is python/rockstate/checkpoint/local_read.py):
 *
 *  - on the local disk, no component of a path below `location` (the query's checkpoint
 *    location, resolved once, links and all: the user named it) may be a symbolic link, and the
 *    file must be a regular file: a link would take the read elsewhere, a FIFO would block it,
 *    a device would never end. Each component is looked at without following it, from the
 *    root down, before Hadoop opens the file: a checkpoint's links come with its files;
 *  - anywhere, a read holds no more than its `FileKind`'s limit: a length is checked before
 *    anything is read where it is known (the local disk, a listing), counted where it is not.
 */
final class CheckpointReader(fs: FileSystem, location: Path) {

  // getUri, not getScheme: a FileSystem need not implement getScheme (Hadoop's default
  // throws), and Spark's own test file systems do not.
  private val onLocalDisk: Boolean = Option(fs.getUri.getScheme).contains("file") &&
    (fs.isInstanceOf[LocalFileSystem] || fs.isInstanceOf[RawLocalFileSystem])

  // The location's path as given: how messages name what is under it.
  private lazy val base: String = pathOf(location).stripSuffix("/")

  // Resolved on the first local read (a new store's folder may not exist before); a lazy val
  // whose initializer throws is tried again next time.
  private lazy val realRoot: java.nio.file.Path =
    try Paths.get(if (base.isEmpty) "/" else base).toRealPath() catch {
      case e: NoSuchFileException => throw missing(location, e)
    }

  /**
   * Opens file `path` of the location to read `kind` from its start, or with `range`
   * ((offset, length), a pack member's) that many bytes at an offset the caller seeks to. The
   * caller reads at most the range's length, the size a manifest records, or `kind.limit`
   * bytes. FileNotFoundException when it is missing; CorruptCheckpointException naming it and
   * `neededBy` when the rule refuses it.
   */
  def open(path: Path, kind: FileKind, neededBy: => String,
      range: Option[(Long, Long)] = None): FSDataInputStream = {
    range.foreach { case (_, length) => checkAsked(path, kind, length, neededBy) }
    if (onLocalDisk) {
      val size = checkLocal(path, neededBy, folder = false)
      // A pack may be larger than one member may be: only the range is bounded then.
      if (range.isEmpty) checkLength(path, kind, size, neededBy)
    }
    fs.open(path)
  }

  /**
   * Refuses folder `path` of the location (or the location itself) when, on the local disk, a
   * component of it is a symbolic link or not a folder: what is listed there may be deleted,
   * and nothing is deleted through a link. FileNotFoundException when it is missing.
   */
  def checkFolder(path: Path, neededBy: => String): Unit =
    if (onLocalDisk) checkLocal(path, neededBy, folder = true)

  /** The whole file `path`: at most `kind.limit` bytes, else refused (the excess unread). */
  def readAll(path: Path, kind: FileKind, neededBy: => String): Array[Byte] = {
    require(kind.limit < Int.MaxValue - 8, s"a whole $kind file does not fit an array")
    Using.resource(open(path, kind, neededBy)) { in =>
      // One byte past the limit shows a larger file without holding more of it.
      val bytes = in.readNBytes(kind.limit.toInt + 1)
      if (bytes.length > kind.limit) {
        throw refused(path, neededBy, s"holds more than such a file may (${kind.limit} bytes)",
          "Restore it from a trusted copy")
      }
      bytes
    }
  }

  /** Refuses `path` when its length (local, listed, or counted) is past `kind`'s limit. */
  def checkLength(path: Path, kind: FileKind, length: Long, neededBy: => String): Unit =
    if (length > kind.limit) {
      throw refused(path, neededBy, s"holds $length bytes, more than such a file may " +
        s"(${kind.limit})", "Restore it from a trusted copy")
    }

  /** Refuses a read of `bytes` of `path` (a size or range a manifest records) past the limit. */
  def checkAsked(path: Path, kind: FileKind, bytes: Long, neededBy: => String): Unit =
    if (bytes > kind.limit) {
      throw refused(path, neededBy, s"is asked for $bytes bytes, more than such a file may " +
        s"hold (${kind.limit}); the manifest naming it is damaged",
        "Restore the checkpoint from a trusted copy")
    }

  /**
   * Checks local file (or `folder`) `path` component by component, following none; returns
   * its size.
   */
  private def checkLocal(path: Path, neededBy: => String, folder: Boolean): Long = {
    val full = pathOf(path).stripSuffix("/")
    if (folder && full == base) {
      // The location itself, resolved: links and all.
      if (!Files.isDirectory(realRoot)) {
        throw refused(path, neededBy, "is not a folder", "Restore the checkpoint location")
      }
      return 0L
    }
    if (!full.startsWith(base + "/")) {
      throw new IllegalArgumentException(s"rockstate: $path is not inside the checkpoint " +
        s"location $location it is read from")
    }
    val parts = full.substring(base.length + 1).split('/').filter(_.nonEmpty).toSeq
    @annotation.tailrec
    def walk(real: java.nio.file.Path, shown: String, rest: Seq[String]): Long = {
      val at = real.resolve(rest.head)
      val atShown = s"$shown/${rest.head}"
      val attrs = try Files.readAttributes(at, classOf[BasicFileAttributes],
        LinkOption.NOFOLLOW_LINKS) catch {
        case e: NoSuchFileException => throw missing(path, e)
      }
      if (attrs.isSymbolicLink) {
        throw refused(path, neededBy, s"goes through the symbolic link $atShown; rockstate " +
          "follows no link in a checkpoint", "Replace the link with the folder or file itself")
      }
      if (rest.tail.nonEmpty || folder) {
        if (!attrs.isDirectory) {
          throw refused(path, neededBy, s"goes through $atShown, which is not a folder",
            "Restore the checkpoint from a trusted copy")
        }
        if (rest.tail.nonEmpty) walk(at, atShown, rest.tail) else 0L
      } else {
        if (!attrs.isRegularFile) {
          throw refused(path, neededBy, s"is not a regular file (${describe(attrs)})",
            "Replace it with the file itself")
        }
        checkSidecar(at, atShown, path, neededBy)
        attrs.size
      }
    }
    walk(realRoot, base, parts)
  }

  /** Hadoop's local file system also reads the checksum file beside a file, when one is there. */
  private def checkSidecar(real: java.nio.file.Path, shown: String, path: Path,
      neededBy: => String): Unit = if (fs.isInstanceOf[ChecksumFileSystem]) {
    val name = s".${real.getFileName}.crc"
    val attrs = try Some(Files.readAttributes(real.resolveSibling(name),
      classOf[BasicFileAttributes], LinkOption.NOFOLLOW_LINKS)) catch {
      case _: NoSuchFileException => None
    }
    attrs.filterNot(_.isRegularFile).foreach { a =>
      val where = shown.substring(0, shown.lastIndexOf('/') + 1) + name
      throw refused(path, neededBy, s"has a checksum file $where that is not a regular file " +
        s"(${describe(a)})", "Delete the checksum file")
    }
  }

  private def describe(attrs: BasicFileAttributes): String =
    if (attrs.isSymbolicLink) "a symbolic link"
    else if (attrs.isDirectory) "a folder"
    else "a FIFO, device or socket"

  private def pathOf(p: Path): String = fs.makeQualified(p).toUri.getPath

  private def missing(path: Path, cause: NoSuchFileException): FileNotFoundException = {
    val e = new FileNotFoundException(s"$path does not exist (${cause.getFile} is missing)")
    e.initCause(cause)
    e
  }

  private def refused(path: Path, neededBy: String, why: String,
      fix: String): CorruptCheckpointException = new CorruptCheckpointException(
    s"rockstate: $path, needed by $neededBy, $why. $fix; nothing was read from it.")
}
