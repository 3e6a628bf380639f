package io.rockstate.storage.local

/**
 * What reads cost in RocksDB blocks (its per-thread perf counters): blocks found in the block
 * cache, blocks read from the SST files and their bytes, and of the blocks read, how many were
 * index and filter blocks. A filter or index block read again and again is how a cache too
 * small for the state shows: a batch's reads then cost a file read each.
 */
final case class BlockReads(cacheHits: Long, blocksRead: Long, indexBlocksRead: Long,
    filterBlocksRead: Long, bytesRead: Long) {

  /** The reads between `earlier` and this (none where a counter went back: it was reset). */
  def since(earlier: BlockReads): BlockReads = BlockReads(
    delta(cacheHits, earlier.cacheHits), delta(blocksRead, earlier.blocksRead),
    delta(indexBlocksRead, earlier.indexBlocksRead),
    delta(filterBlocksRead, earlier.filterBlocksRead), delta(bytesRead, earlier.bytesRead))

  private def delta(now: Long, before: Long): Long = math.max(0L, now - before)
}

object BlockReads {
  val Zero: BlockReads = BlockReads(0, 0, 0, 0, 0)
}
