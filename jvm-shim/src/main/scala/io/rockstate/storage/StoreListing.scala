package io.rockstate.storage

/**
 * Every file of one store directory from one recursive listing (on an object store, one flat
 * listing request per thousand files, where checking each file would take a request each):
 * what the driver's checkpoint coordinator checks a completing checkpoint against.
 */
final case class StoreListing(files: Map[String, StoreListing.Entry]) {

  /** A file's length (`relative` to the store directory), None when it is not there. */
  def length(relative: String): Option[Long] = files.get(relative).map(_.length)

  /** The attempts of `version` present (version files, or a format 1/2 manifest). */
  def versionEntries(version: Long): Seq[VersionEntry] = files.toSeq.flatMap {
    case (path, e) => VersionEntry.parse(path, e.mtime, e.length).filter(_.version == version)
  }.sortBy(e => (e.mtime, e.path))

  /** The attempt of `version` that landed (`VersionEntry.landed`), if the version exists. */
  def landed(version: Long): Option[VersionEntry] = VersionEntry.landed(versionEntries(version))
}

object StoreListing {
  final case class Entry(length: Long, mtime: Long)
}
