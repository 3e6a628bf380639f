package io.rockstate.storage.location

import io.rockstate.storage.format.VersionEntry

/**
 * Every file of one store directory from one recursive listing (on an object store, one flat
 * listing request per thousand files, where checking each file would take a request each):
 * what the driver's checkpoint coordinator checks a completing checkpoint against, and what
 * a cleanup decides from.
 */
final case class StoreListing(files: Map[String, StoreListing.Entry]) {

  /** A file's length (`relative` to the store directory), None when it is not there. */
  def length(relative: String): Option[Long] = files.get(relative).map(_.length)

  /** The attempts of `version` present (version files, or a format 1/2 manifest). */
  def versionEntries(version: Long): Seq[VersionEntry] =
    allVersionEntries.filter(_.version == version)

  /** The attempt of `version` that landed (`VersionEntry.landed`), if the version exists. */
  def landed(version: Long): Option[VersionEntry] = VersionEntry.landed(versionEntries(version))

  /** Every version file and format 1/2 manifest, by version, then as `landed` orders them. */
  def allVersionEntries: Seq[VersionEntry] = files.toSeq.flatMap {
    case (path, e) => VersionEntry.parse(path, e.mtime, e.length)
  }.sortBy(e => (e.version, e.mtime, e.path))

  /** Snapshot manifests: path, version, modification time; by version. */
  def snapshots: Seq[(String, Long, Long)] = files.toSeq.flatMap { case (path, e) =>
    StoreListing.snapshotVersion(path).map(v => (path, v, e.mtime))
  }.sortBy(s => (s._2, s._1))

  /** Files under sst/, meta/ and changelog/ (what manifests reference), with their mtimes. */
  def dataFiles: Seq[(String, Long)] = files.toSeq.collect {
    case (path, e) if StoreListing.DataDirs.exists(d => path.startsWith(d + "/")) => (path, e.mtime)
  }.sortBy(_._1)

  /**
   * Temporary files of atomic writes (`.<name>.<uuid>.tmp`, CheckpointFileManager's naming)
   * in versions/, manifests/ and snapshots/, with their mtimes: a writer that crashed
   * mid-write leaves one behind.
   */
  def tempFiles: Seq[(String, Long)] = files.toSeq.collect {
    case (path, e) if StoreListing.isTempFile(path) => (path, e.mtime)
  }.sortBy(_._1)
}

object StoreListing {
  final case class Entry(length: Long, mtime: Long)

  private val DataDirs = Seq("sst", "meta", "changelog")
  private val WriteDirs = Set("versions", "manifests", "snapshots")

  /** The version of a snapshot manifest's path (`snapshots/<version>-<id>.json`). */
  def snapshotVersion(relative: String): Option[Long] = {
    val name = relative.stripPrefix("snapshots/")
    val version = name.takeWhile(_ != '-')
    if (relative.startsWith("snapshots/") && !name.contains('/') && name.endsWith(".json") &&
        version.nonEmpty && version.forall(_.isDigit)) version.toLongOption
    else None
  }

  private def isTempFile(relative: String): Boolean = relative.split('/') match {
    case Array(dir, name) => WriteDirs(dir) && name.startsWith(".") && name.endsWith(".tmp")
    case _ => false
  }
}
