package io.rockstate.plugin

/**
 * Sent by each executor once its shared RocksDB memory is set up: its bound, the block cache
 * and write buffer manager within it, and the cap on instances open between tasks (0: none).
 */
final case class ExecutorReady(executorId: String, host: String, memoryBoundBytes: Long,
    blockCacheBytes: Long, writeBufferManagerBytes: Long, openInstanceCap: Int)
