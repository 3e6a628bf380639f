package io.rockstate.storage

/** One file of a snapshot, as its manifest lists it (checked by size and CRC32 on use). */
final case class StateFile(
    localName: String, // the file's name inside the RocksDB directory
    path: String, // where it lives, relative to the store's checkpoint directory
    size: Long,
    crc32: Long,
    kind: String) // "sst" (shared across snapshots) or, in format 2, "meta" (a small file)
