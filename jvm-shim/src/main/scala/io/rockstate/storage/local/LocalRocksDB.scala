package io.rockstate.storage.local

import java.io.File
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.rocksdb._

import io.rockstate.storage.conf.RockstateConf

/**
 * One RocksDB instance in a local directory, opened with the executor's shared memory.
 * Writes go straight to the DB with the WAL off: a version becomes durable only through the
 * checkpoint upload, and an aborted batch is undone by reopening the last committed version.
 * `mustExist`: the directory holds a database already, and opening fails if it does not (an
 * emptied directory is never opened as a new, empty database).
 */
final class LocalRocksDB(val dir: File, conf: RockstateConf, mustExist: Boolean = false)
    extends AutoCloseable {
  import LocalRocksDB._

  private val memory = ExecutorMemory.get(conf)

  // A native object of its own: closed with the store, or each open leaks it.
  private val bloomFilter =
    Option.when(conf.bloomFilterBitsPerKey > 0)(new BloomFilter(conf.bloomFilterBitsPerKey))

  private val tableConfig = newTableConfig(conf, memory.cache, bloomFilter)

  private val mergeOperator = new StringAppendOperator(Delimiter)

  private val flushReasons = new FlushReasons

  private val options = new Options()
    .setCreateIfMissing(!mustExist)
    .setWriteBufferManager(memory.writeBufferManager)
    .setWriteBufferSize(conf.writeBufferSizeMB * 1024 * 1024)
    // A memtable's memory grows a block at a time, and one with a single key holds a whole
    // block (RocksDB's default: 1 MB). Small blocks keep a mostly idle store's memtable small,
    // so a thousand stores fit a write buffer manager of 128 MB (`idleMemtableShare`).
    .setArenaBlockSize(ArenaBlockBytes)
    .setMaxWriteBufferNumber(3)
    .setTableFormatConfig(tableConfig)
    .setMergeOperator(mergeOperator)
    .setCompressionType(compressionType(conf.compression))
    .setAvoidFlushDuringShutdown(true)
    // A store's table cache holds its own few SSTs' readers, used by one task at a time: one
    // shard, not RocksDB's 64, is 20 KB less native memory for every store an executor holds
    // (StoreMemoryBench: 164 -> 145 KB a store opened).
    .setTableCacheNumshardbits(0)
    // Every open instance keeps two file writers, its MANIFEST's and its (unused) WAL's, each
    // with a buffer of the smaller of this and 64 KB; an SST's writer grows its buffer to it.
    // 16 KB instead of RocksDB's 1 MB: 12-26 KB less native memory a store held open
    // (StoreMemoryBench, 1000 open: 162-166 -> 144-150 KB a store opened), and an SST
    // written in 16 KB appends.
    .setWritableFileMaxBufferSize(WritableFileBufferBytes)
    // RocksDB opens a DB's table files on this many threads, and starts them all on every
    // open, however few files there are: 15 new threads for a store of one SST, each open.
    .setMaxFileOpeningThreads(fileOpeningThreads(dir))
    .setInfoLogLevel(InfoLogLevel.WARN_LEVEL)
    .setLogger(RocksDBLog.logger)
    .setListeners(java.util.List.of(flushReasons))

  private val writeOptions = new WriteOptions().setDisableWAL(true)
  private val readOptions = new ReadOptions()
  private val flushOptions = new FlushOptions().setWaitForFlush(true)
  private val backgroundFlush = new FlushOptions().setWaitForFlush(false)

  // `close`, `stopBackgroundWork` and the figures (`whileOpen`) run one at a time, and none
  // of them on a closed DB.
  private val lifecycle = new Object
  private var closed = false
  // The version's SST bytes as the store closed: its files outlive the instance.
  private var sstBytesAtClose = 0L

  private val db: RocksDB = try RocksDB.open(options, dir.getAbsolutePath) catch {
    case e: Throwable =>
      closeNativeObjects()
      throw e
  }
  live.add(this)

  // Iterators still open when the DB closes would crash the JVM; close them first.
  private val openIterators = ConcurrentHashMap.newKeySet[KvIterator]()

  // The rows the task read or wrote in the batch, so a read of one again, and the row count's
  // check before a write, rarely reads RocksDB (`batchRowsHeld` 0: none held, every read and
  // check reads RocksDB).
  private val holdsRows = conf.batchRowsHeld > 0
  private val batchRows = new BatchRows(conf.batchRowsHeld, kept = memory.keptRows)

  private val readRocksDB: Array[Byte] => Array[Byte] = key => db.get(readOptions, key)

  def get(key: Array[Byte]): Array[Byte] =
    if (holdsRows) batchRows.get(key, readRocksDB) else db.get(readOptions, key)

  /** Whether `key` exists: from this thread's batch if it read or wrote it, else RocksDB. */
  def exists(key: Array[Byte]): Boolean =
    if (holdsRows) batchRows.exists(key, readRocksDB) else db.get(readOptions, key) != null

  /** Forgets the rows held (a rollback, or a load of any version but the one they hold). */
  def forgetBatchRows(): Unit = batchRows.clear()

  /** The batch committed: its rows are those of the new version, kept if the budget allows. */
  def endBatch(): Unit = batchRows.endBatch()

  def multiGet(keys: Seq[Array[Byte]]): Seq[Array[Byte]] =
    db.multiGetAsList(keys.asJava).asScala.toSeq

  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    db.put(writeOptions, key, value)
    if (holdsRows) batchRows.written(key, value)
  }

  def merge(key: Array[Byte], value: Array[Byte]): Unit = {
    db.merge(writeOptions, key, value)
    if (holdsRows) batchRows.merged(key)
  }

  def delete(key: Array[Byte]): Unit = {
    db.delete(writeOptions, key)
    if (holdsRows) batchRows.written(key, null)
  }

  def deleteRange(begin: Array[Byte], end: Array[Byte]): Unit = {
    db.deleteRange(writeOptions, begin, end)
    batchRows.clear()
  }

  /**
   * Key-value pairs from `from` (inclusive) up to `until` (exclusive, None for the end), in
   * RocksDB's byte order. The caller must close the returned iterator (the store's close
   * closes those still open).
   */
  def scan(from: Array[Byte], until: Option[Array[Byte]]): KvIterator = {
    val ro = new ReadOptions()
    val bound = until.map(u => new Slice(u))
    bound.foreach(ro.setIterateUpperBound)
    val it = db.newIterator(ro)
    val iterator =
      new KvIterator(it, Seq(ro) ++ bound, closed => { openIterators.remove(closed); () })
    openIterators.add(iterator)
    if (from.isEmpty) it.seekToFirst() else it.seek(from)
    iterator
  }

  /** Flushes the memtables and hard-links a consistent copy of the DB into `target`. */
  def checkpointTo(target: File): Unit = {
    flush()
    HardLinkCheckpoint.write(db, dir, target)
  }

  /** Writes the memtables to SSTs and waits: the directory then holds everything written. */
  def flush(): Unit = db.flush(flushOptions)

  /**
   * As a batch ends: starts a background flush of the memtables when they hold more than
   * `memtableShare` bytes, and returns whether it did. An idle store's memtables count against
   * the executor's write buffer manager like a busy one's; once idle ones fill it, RocksDB
   * flushes whichever store writes next, on each write, into SSTs of a few KB (measured: 700
   * in one store at 4M keys on 8 partitions).
   */
  def flushIfAbove(memtableShare: Long): Boolean = {
    val held = memtableBytes
    if (held > memtableShare) db.flush(backgroundFlush)
    held > memtableShare
  }

  /** `flushIfAbove` this store's idle share of the executor's write buffer manager. */
  def flushIfAboveIdleShare(): Boolean =
    flushIfAbove(idleMemtableShare(memory.writeBufferManagerBytes))

  /** Bytes the active memtable holds (its arena's allocation, as the manager counts it). */
  def memtableBytes: Long = db.getLongProperty("rocksdb.cur-size-active-mem-table")

  /** Bytes of the SST files the current version uses (as it closed, once closed). */
  def sstBytes: Long = whileOpen(sstBytesAtClose)(liveSstBytes)

  private def liveSstBytes: Long = db.getLongProperty("rocksdb.live-sst-files-size")

  /**
   * `read` of the open DB, or `whenClosed` once it closed. Figures are read by threads that
   * do not hold the store: Spark's operators read a store's metrics after its commit released
   * it, when Spark's maintenance thread may close it, and a property of a closed RocksDB reads
   * freed memory (it crashed the JVM with `unloadOnCommit`).
   */
  private def whileOpen[T](whenClosed: => T)(read: => T): T =
    lifecycle.synchronized(if (closed) whenClosed else read)

  /**
   * Turns on RocksDB's per-thread perf counters on the calling thread (a thread-local setting
   * of RocksDB's, not this instance's): `threadBlockReads` counts from then on.
   */
  def countThreadReads(): Unit = db.setPerfLevel(PerfLevel.ENABLE_COUNT)

  /** The calling thread's block reads so far, in every instance (`ThreadBlockReads`). */
  def threadBlockReads: BlockReads = {
    val p = db.getPerfContext // the thread's own counters; closing it frees nothing
    BlockReads(p.getBlockCacheHitCount, p.getBlockReadCount, p.getIndexBlockReadCount,
      p.getFilterBlockReadCount, p.getBlockReadByte)
  }

  /**
   * RocksDB's figures of this instance's levels (files, bytes) and of the flushes and
   * compactions since it opened, by level: `compaction.<level>.<figure>` (`L0`.., `Sum`;
   * `NumFiles`, `SizeBytes`, `WriteGB`, `MovedGB`, `CompCount`, ...), as RocksDB names them;
   * and why its flushes ran (`FlushReasons.figures`: `flush.<REASON>.Count`, `.Bytes`).
   */
  def levelStats: Map[String, String] = whileOpen(Map.empty[String, String]) {
    db.getMapProperty("rocksdb.cfstats").asScala.toMap ++ flushReasons.figures
  }

  /** Native memory of its memtables and table readers (none once closed). */
  def approximateMemoryBytes: Long = whileOpen(0L) {
    db.getLongProperty("rocksdb.cur-size-all-mem-tables") +
      db.getLongProperty("rocksdb.estimate-table-readers-mem")
  }

  /**
   * Ends this instance's flushes and compactions for good, waiting for a running one; reads and
   * writes still work. For a JVM about to lose the directory (`stopAllBackgroundWork`).
   */
  def stopBackgroundWork(): Unit = lifecycle.synchronized {
    if (!closed) db.cancelAllBackgroundWork(true)
  }

  override def close(): Unit = lifecycle.synchronized {
    if (!closed) {
      closed = true // even if closing fails half-way: its handles must not be closed twice
      closeOnce()
    }
  }

  private def closeOnce(): Unit = {
    sstBytesAtClose = Try(liveSstBytes).getOrElse(0L)
    batchRows.clear() // gives its kept rows' heap back to the executor's budget
    openIterators.asScala.toSeq.foreach(_.close())
    try db.cancelAllBackgroundWork(true) finally {
      db.close()
      live.remove(this)
      closeNativeObjects()
      if (conf.trimNativeHeap) NativeHeapTrim.executor.afterClose()
    }
  }

  /** The options and helpers the instance was opened with (native objects of their own). */
  private def closeNativeObjects(): Unit = {
    writeOptions.close()
    readOptions.close()
    flushOptions.close()
    backgroundFlush.close()
    options.close()
    mergeOperator.close()
    flushReasons.close()
    bloomFilter.foreach(_.close())
  }
}

object LocalRocksDB {
  /** Separator the merge operator puts between values of one key (Spark's multi-value format). */
  val Delimiter: Char = ','

  /**
   * How a store's SST files are laid out and cached: blocks, index and filters in the
   * executor's shared `cache`, the filter `bloom` (none: no filter).
   */
  def newTableConfig(conf: RockstateConf, cache: Cache,
      bloom: Option[Filter]): BlockBasedTableConfig = {
    val t = new BlockBasedTableConfig()
      .setBlockCache(cache)
      .setCacheIndexAndFilterBlocks(true)
      .setCacheIndexAndFilterBlocksWithHighPriority(true) // the pool of highPriorityPoolRatio
      .setPinL0FilterAndIndexBlocksInCache(!conf.partitionedIndex)
      .setFormatVersion(5)
    bloom.foreach(f => t.setFilterPolicy(f))
    // A file's index and filter in partitions of a few KB, found through a small top-level
    // index pinned with the file: a point read needs one partition of each, cached like a data
    // block. Whole, a 64 MB file of small rows has a filter and an index of several MB, more
    // than a cache shard keeps once memtables hold most of the cache; every read then read
    // them again (64M keys on 8 partitions: a 66 s batch that read 24,869 index and as many
    // filter blocks, 264 GB).
    // Only the top level is pinned: pinning level 0 would pin every partition of a level-0
    // file with it (RocksDB's kFlushedAndSimilar), which a load's flushes fill the cache with.
    if (conf.partitionedIndex) {
      t.setIndexType(IndexType.kTwoLevelIndexSearch)
        .setPartitionFilters(bloom.isDefined)
        .setMetadataBlockSize(MetadataBlockBytes)
        .setPinTopLevelIndexAndFilter(true)
    }
    t
  }

  /**
   * Threads to open `dir`'s table files with: one per `TablesPerOpeningThread` of them, at most
   * RocksDB's default 16. A thread opens a table of a few blocks in well under a millisecond,
   * less than starting the thread costs.
   */
  def fileOpeningThreads(dir: File): Int = {
    val tables = Option(dir.list()).map(_.count(_.endsWith(".sst"))).getOrElse(0)
    math.min(MaxFileOpeningThreads, 1 + tables / TablesPerOpeningThread)
  }

  val TablesPerOpeningThread = 8
  val MaxFileOpeningThreads = 16

  /** The size of an index or filter partition (RocksDB's default `metadata_block_size`). */
  val MetadataBlockBytes: Long = 4096

  /** A memtable's allocation unit (`idleMemtableShare` at 1000 stores and 128 MB is 64 KB). */
  val ArenaBlockBytes: Long = 32L * 1024

  /** The most a RocksDB file writer buffers before it writes (`writable_file_max_buffer_size`). */
  val WritableFileBufferBytes: Long = 16L * 1024

  // RocksDB instances open in this JVM.
  private val live = ConcurrentHashMap.newKeySet[LocalRocksDB]()

  /**
   * The memtable bytes an idle store may keep: half its fair share of the write buffer
   * manager (`managerBytes` over the instances open in this JVM), so idle stores together
   * hold at most half of it and the busy ones always have the other half.
   */
  def idleMemtableShare(managerBytes: Long, openInstances: Int = live.size): Long =
    managerBytes / (2L * math.max(1, openInstances))

  /** `levelStats` of every instance open in this JVM (a closing one left out), for py4j. */
  def openLevelStats(): java.util.List[java.util.Map[String, String]] =
    live.asScala.toSeq.flatMap(db => Try(db.levelStats).toOption.filter(_.nonEmpty))
      .map(_.asJava).asJava

  /**
   * Stops the background work of every instance open in this JVM, as its executor shuts down,
   * and returns how many there were. Spark does not close its stores then, and goes on to
   * delete the directory they live in (in local mode, `SparkContext.stop` deletes the driver's
   * `userFiles`). A compaction then fails on a vanished file and RocksDB reports it through the
   * JNI logger, again every second; if that happens as the JVM exits, the VM waits for
   * RocksDB's thread while the thread waits to attach to the VM, and the process never ends.
   */
  def stopAllBackgroundWork(): Int = {
    val open = live.asScala.toSeq
    open.foreach(_.stopBackgroundWork())
    open.size
  }

  private def compressionType(name: String): CompressionType = name match {
    case "none" => CompressionType.NO_COMPRESSION
    case "snappy" => CompressionType.SNAPPY_COMPRESSION
    case "zstd" => CompressionType.ZSTD_COMPRESSION
    case _ => CompressionType.LZ4_COMPRESSION
  }

  /**
   * A forward iterator over raw pairs; yields fresh arrays so callers may keep them. Closed by
   * its reader or by the store's close, whichever comes first: then it ends, and its RocksDB
   * iterator and `options` (native objects) are closed once, and `onClose` is told.
   */
  final class KvIterator(it: RocksIterator, options: Seq[AutoCloseable],
      onClose: KvIterator => Unit)
    extends Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {
    @volatile private var closed = false

    override def hasNext: Boolean = {
      if (closed) false
      else if (it.isValid) true
      else {
        try it.status() // surfaces a read error (e.g. a corrupt block) instead of ending early
        finally close()
        false
      }
    }

    override def next(): (Array[Byte], Array[Byte]) = {
      if (!hasNext) throw new NoSuchElementException("end of rockstate iterator")
      val kv = (it.key(), it.value())
      it.next()
      kv
    }

    override def close(): Unit = synchronized {
      if (!closed) {
        closed = true
        try {
          it.close()
          options.foreach(_.close())
        } finally onClose(this)
      }
    }
  }
}
