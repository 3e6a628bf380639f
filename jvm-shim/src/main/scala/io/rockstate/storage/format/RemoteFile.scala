package io.rockstate.storage.format

/**
 * A checkpoint file to fetch, as a manifest records it: `size` bytes with CRC32 `crc32`, the
 * whole object at `path` or, for a packed SST, the bytes from `offset` of the pack there.
 */
final case class RemoteFile(path: String, size: Long, crc32: Long, offset: Option[Long] = None) {

  /**
   * Its name in an executor's cache: the path, or for a pack member the pack's path and the
   * member's offset (`LocalStoreFiles.packOf` reads it back).
   */
  def cacheKey: String = offset.fold(path)(o => s"$path${RemoteFile.MemberMark}$o")
}

object RemoteFile {
  val MemberMark = "@"
}
