package io.rockstate.storage

/**
 * One version file (`versions/<version>-<id>.rsv`) or format 1/2 manifest
 * (`manifests/<version>.json`) present, with its modification time and length.
 */
final case class VersionEntry(version: Long, path: String, mtime: Long, length: Long) {
  def isLegacy: Boolean = path.startsWith("manifests/")
}

object VersionEntry {
  /**
   * Of several attempts of one version, the one that landed: the one the storage wrote last
   * (then the greatest name, so every reader agrees), as a rename over one name would have
   * decided. Readers on either side (JVM, Python, the driver) pick with this rule.
   */
  def landed(attempts: Seq[VersionEntry]): Option[VersionEntry] =
    if (attempts.isEmpty) None else Some(attempts.maxBy(e => (e.mtime, e.path)))
}
