package io.rockstate.storage.format

/**
 * One change a committed version made, as its changelog holds it: `op` is one of Changelog's
 * record kinds, `key` is without the column family id. For a DeleteRange `key` is the range's
 * first key and `value` its end (exclusive), or null when the range runs to the family's end
 * (a dropped family). `rowChecksums`: whether a put's or merge's value carries its row
 * checksums (`RowChecksum`), as the store's values do.
 */
final case class ChangeRecord(version: Long, op: Byte, family: String, familyId: Int,
    key: Array[Byte], value: Array[Byte], rowChecksums: Boolean)
