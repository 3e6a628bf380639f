package io.rockstate.storage

import java.nio.file.Files

import scala.util.Using

import org.apache.commons.io.FileUtils
import org.rocksdb._
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.{ExecutorMemory, LocalRocksDB}

/** The block cache every store of an executor shares. */
class ExecutorMemorySuite extends AnyFunSuite {
  private val mb = 1024L * 1024

  test("the shared cache's shards hold at least 32 MB each, and are at most 64") {
    assert(ExecutorMemory.shardBits(8 * mb) == 0)
    assert(ExecutorMemory.shardBits(63 * mb) == 0)
    assert(ExecutorMemory.shardBits(64 * mb) == 1)
    assert(ExecutorMemory.shardBits(128 * mb) == 2) // the default: 4 shards of 32 MB
    assert(ExecutorMemory.shardBits(2048 * mb) == 6)
    assert(ExecutorMemory.shardBits(64 * 1024 * mb) == 6)
  }

  test("the default cap is one open instance per MB of the bound, kept out of the cache") {
    assert(RockstateConf.from(Map.empty, 2).maxOpenStores == -1)
    assert(ExecutorMemory.openInstanceCap(-1, 128 * mb) == 128)
    assert(ExecutorMemory.openInstanceCap(-1, mb / 2) == 1)
    assert(ExecutorMemory.openInstanceCap(0, 128 * mb) == 0) // no cap
    assert(ExecutorMemory.openInstanceCap(5, 128 * mb) == 5)
    // 256 KB an instance: the default's cache is three quarters of the bound.
    assert(ExecutorMemory.instanceReserve(128, 128 * mb) == 32 * mb)
    assert(ExecutorMemory.instanceReserve(0, 128 * mb) == 0)
    assert(ExecutorMemory.instanceReserve(100000, 128 * mb) == 64 * mb) // at most half
    // A store with the default takes the executor's cap, whatever bound set it up.
    val conf = RockstateConf.from(Map.empty, 2)
    val shared = ExecutorMemory.get(conf)
    assert(ExecutorMemory.openInstanceCap(conf) == shared.openInstanceCap)
    assert(shared.blockCacheBytes ==
      shared.boundBytes - ExecutorMemory.instanceReserve(shared.openInstanceCap, shared.boundBytes))
    assert(shared.writeBufferManagerBytes <= shared.blockCacheBytes)
  }

  // One SST of 400k keys: at 20 bits a key its filter is about 1 MB, as a 64 MB SST's filter
  // is to 2 MB shards.
  private val keys = 400000

  /**
   * `measure`'s figure over 2000 random reads of one SST of `keys` keys written under
   * `options`, at the bottom level and opened afresh, so nothing is pinned as level 0 may be.
   */
  private def overRandomReads(options: Options)(measure: RocksDB => Long): Long = {
    val dir = Files.createTempDirectory("rockstate-cache").toFile
    try {
      Using.resource(RocksDB.open(options, dir.getAbsolutePath)) { db =>
        val value = Array.fill[Byte](16)(1)
        (0 until keys).foreach(i => db.put(f"key$i%09d".getBytes, value))
        Using.resource(new FlushOptions().setWaitForFlush(true))(db.flush)
        db.compactRange() // the bottom level (a move: a pinned file would stay pinned)
      }
      Using.resource(RocksDB.open(options, dir.getAbsolutePath)) { db =>
        val before = measure(db)
        val random = new scala.util.Random(7)
        (1 to 2000).foreach { _ =>
          assert(db.get(f"key${random.nextInt(keys)}%09d".getBytes) != null)
        }
        measure(db) - before
      }
    } finally FileUtils.deleteDirectory(dir)
  }

  test("an SST's filter larger than RocksDB's default shard stays cached between reads") {
    // 8 MB: RocksDB's own shard count would cut it into 16 shards of 512 KB.
    def filterMisses(cache: Cache): Long =
      Using.resource(new BloomFilter(20)) { bloom =>
        Using.resource(new Statistics()) { stats =>
          val table = new BlockBasedTableConfig()
            .setBlockCache(cache)
            .setCacheIndexAndFilterBlocks(true)
            .setCacheIndexAndFilterBlocksWithHighPriority(true)
            .setFilterPolicy(bloom)
          Using.resource(new Options().setCreateIfMissing(true).setStatistics(stats)
              .setTableFormatConfig(table)) { options =>
            overRandomReads(options)(_ => stats.getTickerCount(TickerType.BLOCK_CACHE_FILTER_MISS))
          }
        }
      }
    RocksDB.loadLibrary()
    val ours = Using.resource(ExecutorMemory.newCache(8 * mb, 0.1))(filterMisses)
    val rocksDefault = Using.resource(new LRUCache(8 * mb, -1, false, 0.1))(filterMisses)
    assert(ours <= 1, s"the filter was read $ours times in 2000 reads")
    // The control: in RocksDB's default shards the same reads read the filter each time.
    assert(rocksDefault > 1000, s"RocksDB's default shards read the filter $rocksDefault times")
  }

  test("a partitioned index reads a partition of a large file's filter, never all of it") {
    // RocksDB's own shards (16 of 512 KB in 8 MB) against the 1 MB filter: a whole filter is
    // read again at each read, as at 64M keys a 64 MB file's was in 32 MB shards whose
    // memtables left too little room.
    def bytesRead(partitioned: Boolean): Long = {
      val conf = RockstateConf.from(Map(RockstateConf.PartitionedIndex.key -> partitioned.toString,
        RockstateConf.BloomFilterBitsPerKey.key -> "20"), 2)
      Using.resource(new LRUCache(8 * mb, -1, false, 0.1)) { cache =>
        Using.resource(new BloomFilter(conf.bloomFilterBitsPerKey)) { bloom =>
          val table = LocalRocksDB.newTableConfig(conf, cache, Some(bloom))
          Using.resource(new Options().setCreateIfMissing(true).setTableFormatConfig(table)) {
            options =>
              overRandomReads(options) { db =>
                db.setPerfLevel(PerfLevel.ENABLE_COUNT)
                db.getPerfContext.getBlockReadByte
              }
          }
        }
      }
    }
    RocksDB.loadLibrary()
    val partitioned = bytesRead(partitioned = true)
    val whole = bytesRead(partitioned = false)
    info(s"bytes read by 2000 reads: partitioned $partitioned, whole $whole")
    // 2000 reads of a data block, an index and a filter partition each: at most 24 MB.
    assert(partitioned < 32 * mb, s"partitioned: $partitioned bytes read by 2000 reads")
    assert(whole > 1000 * mb, s"whole: $whole bytes read by 2000 reads")
  }
}
