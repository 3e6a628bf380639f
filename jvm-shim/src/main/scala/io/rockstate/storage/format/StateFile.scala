package io.rockstate.storage.format

import com.fasterxml.jackson.annotation.JsonInclude

/** One file of a snapshot, as its manifest lists it (checked by size and CRC32 on use). */
@JsonInclude(JsonInclude.Include.NON_ABSENT) // no "inPack" for a file of its own
final case class StateFile(
    localName: String, // the file's name inside the RocksDB directory
    path: String, // where it lives, relative to the store's checkpoint directory
    size: Long,
    crc32: Long,
    kind: String, // "sst" (shared across snapshots) or, in format 2, "meta" (a small file)
    inPack: Option[PackSlice] = None) { // format 5: `size` bytes of the pack at `path`

  /** How to fetch it: the whole object at `path`, or its slice of the pack there. */
  def remote: RemoteFile = RemoteFile(path, size, crc32, inPack.map(_.offset))
}
