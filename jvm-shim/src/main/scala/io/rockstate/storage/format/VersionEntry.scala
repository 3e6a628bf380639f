package io.rockstate.storage.format

/**
 * One version file (`versions/<version>-<id>.rsv`) or format 1/2 manifest
 * (`manifests/<version>.json`) present, with its modification time and length.
 */
final case class VersionEntry(version: Long, path: String, mtime: Long, length: Long) {
  /** A format 1 or 2 manifest, not a version file. */
  def isManifest: Boolean = path.startsWith("manifests/")
}

object VersionEntry {
  /**
   * The entry a file is, by its path relative to the store directory: a version file
   * (`versions/<version>-<id>.rsv`) or a format 1/2 manifest (`manifests/<version>.json`).
   */
  def parse(relative: String, mtime: Long, length: Long): Option[VersionEntry] = {
    def numbered(dir: String, end: String, upTo: String => String): Option[Long] =
      if (!relative.startsWith(dir) || !relative.endsWith(end)) None
      else {
        val name = relative.stripPrefix(dir)
        val digits = upTo(name)
        if (name.contains('/') || digits.isEmpty || !digits.forall(_.isDigit)) None
        else digits.toLongOption
      }
    numbered("versions/", ".rsv", _.takeWhile(_ != '-')).orElse(
      numbered("manifests/", ".json", _.stripSuffix(".json")))
      .map(v => VersionEntry(v, relative, mtime, length))
  }

  /**
   * Of several attempts of one version, the one that landed: the one the storage wrote last
   * (then the greatest name, so every reader agrees), as a rename over one name would have
   * decided. Readers on either side (JVM, Python, the driver) pick with this rule.
   */
  def landed(attempts: Seq[VersionEntry]): Option[VersionEntry] =
    if (attempts.isEmpty) None else Some(attempts.maxBy(e => (e.mtime, e.path)))
}
