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
  /**
   * The executor's RocksDB memory: `boundBytes` (`rocksdbMemoryMB`) holds the block cache
   * (memtables charged to it) and the instances open between tasks, up to `openInstanceCap`
   * of them (0: no cap, the whole bound is cache and the instances hold memory past it).
   */
  final case class Shared(cache: Cache, writeBufferManager: WriteBufferManager,
      boundBytes: Long, blockCacheBytes: Long, writeBufferManagerBytes: Long,
      openInstanceCap: Int, keptRows: KeptRowsBudget)

  @volatile private var shared: Option[Shared] = None

  def get(conf: RockstateConf): Shared = synchronized {
    shared.getOrElse {
      RocksDB.loadLibrary()
      val boundBytes = conf.rocksdbMemoryMB * 1024 * 1024
      val cap = openInstanceCap(conf.maxOpenStores, boundBytes)
      val cacheBytes = boundBytes - instanceReserve(cap, boundBytes)
      val wbmBytes = math.min(conf.writeBufferManagerMB * 1024 * 1024, cacheBytes)
      // Index and filter blocks go to the cache's high-priority pool: without one (RocksJava's
      // one-argument LRUCache), data blocks and the memtables' reservations evict them, and
      // point reads of a large state read them again (16M keys on 8 partitions: the slowest
      // batch after the first 8.1-9.6 s without the pool, 3.2-4.1 s with 0.1).
      val cache = newCache(cacheBytes, conf.highPriorityPoolRatio)
      // Memtables are charged to the block cache, so the two share one bound.
      val wbm = new WriteBufferManager(wbmBytes, cache)
      // The rows stores keep between batches are on the heap, beside this bound.
      val kept = new KeptRowsBudget(conf.keptRowsMB * 1024 * 1024)
      val s = Shared(cache, wbm, boundBytes, cacheBytes, wbmBytes, cap, kept)
      shared = Some(s)
      s
    }
  }

  /**
   * The cap on instances open between tasks for a store with setting `maxOpenStores`: the
   * setting, or with -1 (the default) the executor's own, one instance per MB of its bound.
   */
  def openInstanceCap(conf: RockstateConf): Int =
    if (conf.maxOpenStores >= 0) conf.maxOpenStores else get(conf).openInstanceCap

  /** `maxOpenStores`, or one instance per MB of the bound (at least one) for -1. */
  def openInstanceCap(maxOpenStores: Int, boundBytes: Long): Int =
    if (maxOpenStores >= 0) maxOpenStores
    else math.max(1L, boundBytes / (1024 * 1024)).toInt

  /**
   * What the cache leaves of the bound for `cap` open instances: `InstanceReserveBytes` each,
   * at most half the bound; none without a cap.
   */
  def instanceReserve(cap: Int, boundBytes: Long): Long =
    math.min(cap.toLong * InstanceReserveBytes, boundBytes / 2)

  /**
   * An open instance's native memory outside the cache (about 160 KB: its MANIFEST's and WAL's
   * writers, table cache, statistics, a memtable block), and what the C allocator keeps from
   * its closes and reopens (StoreMemoryBench, 1000 stores, glibc trimmed: 27 MB + 160 KB an
   * open instance outside the cache at caps of 64 and 200). At 256 KB an instance, a capped
   * executor's total stays within the bound's +20% (docs/performance.md).
   */
  val InstanceReserveBytes: Long = 256L * 1024

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
