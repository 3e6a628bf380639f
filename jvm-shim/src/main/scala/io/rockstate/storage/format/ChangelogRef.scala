package io.rockstate.storage.format

/** One batch's changes, uploaded on the commit path. */
final case class ChangelogRef(version: Long, path: String, size: Long, crc32: Long, records: Long)
