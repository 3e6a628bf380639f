package io.rockstate.storage.location

/**
 * What a version manifest's registration was read from: its modification time and length,
 * and the storage time when it was read.
 */
private[storage] case class ManifestStamp(mtime: Long, length: Long, readAt: Long) {
  /**
   * Whether a manifest now listed as `seen` is still the one read. A rewrite within the file
   * system's timestamp granularity can keep both mtime and length, so a manifest read while
   * it was that young is read once more.
   */
  def stillDescribes(seen: ManifestStamp): Boolean =
    seen.mtime == mtime && seen.length == length && readAt - mtime > ManifestStamp.SameTickMs
}

private[storage] object ManifestStamp {
  val SameTickMs = 2000L
}
