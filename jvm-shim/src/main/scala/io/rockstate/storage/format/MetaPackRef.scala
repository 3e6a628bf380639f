package io.rockstate.storage.format

/** A snapshot's small RocksDB files (`MetaPack`), inline in its manifest: base64, checked. */
final case class MetaPackRef(size: Long, crc32: Long, data: String)
