package io.rockstate.storage

import org.rocksdb.{Cache, LRUCache, RocksDB, WriteBufferManager}

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
      val cache = new LRUCache(cacheBytes, -1, false, conf.highPriorityPoolRatio)
      // Memtables are charged to the block cache, so the two share one bound.
      val wbm = new WriteBufferManager(wbmBytes, cache)
      val s = Shared(cache, wbm, cacheBytes, wbmBytes)
      shared = Some(s)
      s
    }
  }

  def current: Option[Shared] = shared

  /** Bytes in the shared cache now (block cache plus charged memtables). */
  def usedBytes: Long = shared.map(_.cache.getUsage).getOrElse(0L)
}
