package io.rockstate.storage.format

/**
 * Where a packed SST lies inside its pack (`SstPacks`): it starts at `offset` of the object
 * at the file's path, which holds `packSize` bytes in all. The member's own size and CRC32 are
 * its `StateFile`'s; `packSize` lets a listing check the whole object without reading it.
 */
final case class PackSlice(offset: Long, packSize: Long)
