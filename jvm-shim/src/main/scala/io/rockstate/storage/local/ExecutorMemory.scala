package io.rockstate.storage.local

import org.rocksdb.{Cache, LRUCache, RocksDB, WriteBufferManager}

import io.rockstate.storage.conf.RockstateConf

/**
 * The RocksDB memory every rockstate store in one executor JVM shares: one block cache and one
 * write buffer manager, so the executor's native memory stays bounded however many partitions
 * it holds. Created by the first store (or the executor plugin) with that conf; later settings
 * in the same JVM are ignored, as they would be for any per-executor resource.
 */
object ExecutorMemory {
  final case class Shared(cache: Cache, writeBufferManager: WriteBufferManager,
      blockCacheBytes: Long, writeBufferManagerBytes: Long)

  @volatile private var shared: Option[Shared] = None

  def get(conf: RockstateConf): Shared = synchronized {
    shared.getOrElse {
      RocksDB.loadLibrary()
      val cacheBytes = conf.blockCacheSizeMB * 1024 * 1024
      val wbmBytes = conf.writeBufferManagerMB * 1024 * 1024
      // Index and filter blocks go to the cache's high-priority pool: without one (RocksJava's
      // one-argument LRUCache), data blocks and the memtables' reservations evict them, and
      // point reads of a large state read them again (16M keys on 8 partitions: the slowest
      // batch after the first 8.1-9.6 s without the pool, 3.2-4.1 s with 0.1).
      val cache = newCache(cacheBytes, conf.highPriorityPoolRatio)
      // Memtables are charged to the block cache, so the two share one bound.
      val wbm = new WriteBufferManager(wbmBytes, cache)
      val s = Shared(cache, wbm, cacheBytes, wbmBytes)
      shared = Some(s)
      s
    }
  }

  def current: Option[Shared] = shared

  /**
   * The shared block cache, in shards of at least `MinShardBytes`. RocksDB's own choice
   * (`numShardBits` -1) is shards of 512 KB up to 64 of them: 2 MB at 128 MB. A block larger
   * than what its shard has left is freed as soon as its reader releases it, and the whole-file
   * filter of a 64 MB SST is 1-2.5 MB: every point read then reads and checks it again (64M keys
   * on 8 partitions: the twelfth batch 54.7 s with 64 shards, 4.2 s with 4).
   */
  def newCache(cacheBytes: Long, highPriorityPoolRatio: Double): LRUCache =
    new LRUCache(cacheBytes, shardBits(cacheBytes), false, highPriorityPoolRatio)

  /** Shards of at least 32 MB, at most RocksDB's 64; one below 64 MB. */
  def shardBits(cacheBytes: Long): Int =
    (0 until MaxShardBits).takeWhile(bits => (cacheBytes >> (bits + 1)) >= MinShardBytes).size

  val MinShardBytes: Long = 32L * 1024 * 1024
  private val MaxShardBits = 6

  /** Bytes in the shared cache now (block cache plus charged memtables). */
  def usedBytes: Long = shared.map(_.cache.getUsage).getOrElse(0L)
}
