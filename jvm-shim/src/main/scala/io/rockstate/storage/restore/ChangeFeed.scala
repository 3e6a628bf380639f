package io.rockstate.storage.restore

import scala.annotation.tailrec
import scala.collection.mutable.ArrayBuffer

import io.rockstate.storage.format.{ChangeRecord, Changelog, ChangelogRef,
  CorruptCheckpointException, RemoteFile, VersionEntry, VersionFile, VersionManifest}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * The changes of a range of committed versions of one store, read from their version files in
 * the order they were made (Spark's state change feed). Which attempt of each version is read
 * follows the lineage back from the last version's manifest: the version files its lineage
 * names, then through each snapshot to the version file it was taken from. Where a lineage
 * does not say (a snapshot taken on the commit path, format 1 and 2 checkpoints), the attempt
 * that landed is read. One version's changes are held in memory at a time.
 */
final class ChangeFeed(remote: StoreCheckpointDir, restore: SnapshotRestore,
    fetch: CheckpointFetch) {

  import ChangeFeed._

  /**
   * The version file paths (or format 2 changelogs) of versions `from` to `end.version`, in
   * order, on `end`'s lineage; `endPath` is the attempt `end` was read from.
   */
  def lineage(from: Long, end: VersionManifest, endPath: Option[String]): Seq[ChangelogRef] =
    sources(from, end, endPath).map {
      case Linked(ref) => ref
      case Listed(v, path) =>
        // Fetched and checked now, so that replaying it later checks it against this CRC32.
        val entry = entryOf(v, path)
        val (file, crc) = fetch.selfChecked(entry.path, entry.length)
        val parsed = VersionFile.read(file, entry.path, remote.resolve(entry.path).toString,
          entry.length, crc)
        ChangelogRef(v, entry.path, entry.length, crc,
          parsed.manifest.commit.map(_.changelogRecords).getOrElse(0L))
    }

  /** Every change of versions `from` to `end.version`, version by version. */
  def records(from: Long, end: VersionManifest, endPath: Option[String]): Iterator[ChangeRecord] =
    sources(from, end, endPath).iterator.flatMap(s => changesOf(s, end))

  private def sources(from: Long, end: VersionManifest, endPath: Option[String]): Seq[Source] = {
    require(from >= 1 && from <= end.version,
      s"rockstate: changes are read from version 1 on, up to the last (asked from $from to " +
        s"${end.version})")
    @tailrec def walk(m: VersionManifest, path: Option[String], acc: List[Source]): List[Source] = {
      val below = m.snapshot.map(_.version).getOrElse(0L) // versions up to it: not in `m`
      val own: Source = Listed(m.version, path)
      val linked = m.changelogs.filter(c => c.version >= from && c.version < m.version &&
        c.version > below).map(Linked(_)).toList
      val found = linked ++ (own :: acc)
      if (below < from) found
      else {
        val earlier = m.snapshot.map(s => remote.readSnapshotManifest(s.path, fetch.neededBy))
          .map(_.stateId).filter(VersionFile.isVersionFile)
        if (below == m.version || earlier.isEmpty) {
          // The lineage before the snapshot is not recorded: the attempts that landed.
          (from to below).filter(_ < m.version).map(v => Listed(v, None): Source).toList ++
            found
        } else walk(restore.readVersion(below, earlier, fetch), earlier, found)
      }
    }
    val all = walk(end, endPath, Nil).filter(_.version >= from)
    val versions = all.map(_.version)
    if (versions != (from to end.version)) {
      throw new CorruptCheckpointException(s"rockstate: the lineage of version ${end.version} " +
        s"of ${remote.root} names versions ${versions.mkString(", ")}, not each of $from to " +
        s"${end.version} once; the checkpoint is corrupt.")
    }
    all
  }

  private def entryOf(version: Long, path: Option[String]): VersionEntry = path match {
    case Some(p) => remote.versionEntry(version, p).getOrElse(
      throw remote.missingVersion(version, s" (attempt $p)"))
    case None => remote.findVersion(version).getOrElse(throw remote.missingVersion(version))
  }

  /** One version's changes, with each key's family named by that version's family table. */
  private def changesOf(source: Source, end: VersionManifest): Iterator[ChangeRecord] = {
    // A lineage link is checked whole against the CRC32 its lineage recorded; a listed file
    // against the CRC32 in its own trailer.
    val (file, path, size, crc, listed) = source match {
      case Linked(ref) =>
        (fetch(RemoteFile(ref.path, ref.size, ref.crc32)), ref.path, ref.size, ref.crc32, false)
      case Listed(v, p) =>
        val entry = entryOf(v, p)
        if (entry.isManifest) {
          throw new IllegalStateException(s"rockstate: version $v of ${remote.root} was " +
            "written in checkpoint format 1, which keeps no per-version changes to read.")
        }
        val (f, c) = fetch.selfChecked(entry.path, entry.length)
        (f, entry.path, entry.length, c, true)
    }
    val where = remote.resolve(path).toString
    val (changes, length, families) = if (!VersionFile.isVersionFile(path)) {
      (new java.io.FileInputStream(file), file.length, end.columnFamilies)
    } else {
      val parsed = VersionFile.read(file, path, where, size, crc, checkCrc = listed)
      if (parsed.manifest.version != source.version) {
        throw new CorruptCheckpointException(s"rockstate: version file $where says version " +
          s"${parsed.manifest.version}, its lineage ${source.version}; the checkpoint is corrupt.")
      }
      (VersionFile.changes(file, parsed), parsed.changesLength, parsed.manifest.columnFamilies)
    }
    val useFamilies = end.useColumnFamilies
    val names = families.map(f => f.id -> f.name).toMap
    val out = ArrayBuffer.empty[ChangeRecord]
    def split(key: Array[Byte]): (String, Int, Array[Byte]) =
      if (!useFamilies) (ChangeFeed.DefaultFamily, 0, key)
      else {
        if (key.length < 2) {
          throw new CorruptCheckpointException(s"rockstate: changelog $where has a key " +
            "without its column family id; the checkpoint is corrupt.")
        }
        val id = ((key(0) & 0xff) << 8) | (key(1) & 0xff)
        val name = names.getOrElse(id, throw new CorruptCheckpointException(
          s"rockstate: changelog $where has a key of column family id $id, which version " +
            s"${source.version}'s family table does not name; the checkpoint is corrupt."))
        (name, id, java.util.Arrays.copyOfRange(key, 2, key.length))
      }
    val v = source.version
    Changelog.replay(changes, length, where, new Changelog.Target {
      def put(k: Array[Byte], value: Array[Byte]): Unit = add(Changelog.Put, k, value)
      def merge(k: Array[Byte], value: Array[Byte]): Unit = add(Changelog.Merge, k, value)
      def delete(k: Array[Byte]): Unit = add(Changelog.Delete, k, null)
      def deleteRange(b: Array[Byte], e: Array[Byte]): Unit = {
        val (name, id, begin) = split(b)
        val sameFamily = !useFamilies || (e.length >= 2 && e(0) == b(0) && e(1) == b(1))
        val endKey = if (!sameFamily) null else if (useFamilies) e.drop(2) else e
        out += ChangeRecord(v, Changelog.DeleteRange, name, id, begin, endKey, end.rowChecksums)
      }
      private def add(op: Byte, k: Array[Byte], value: Array[Byte]): Unit = {
        val (name, id, key) = split(k)
        out += ChangeRecord(v, op, name, id, key, value, end.rowChecksums)
      }
    })
    out.iterator
  }
}

object ChangeFeed {
  /** Where one version's changes are: a lineage link, or a version file found by listing. */
  private sealed trait Source { def version: Long }
  private final case class Linked(ref: ChangelogRef) extends Source {
    def version: Long = ref.version
  }
  private final case class Listed(version: Long, path: Option[String]) extends Source

  /** Spark's default column family: every key of a store without column families. */
  val DefaultFamily = "default"
}
