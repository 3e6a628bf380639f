package io.rockstate.plugin

/** Sent by each executor once its shared RocksDB memory is set up. */
final case class ExecutorReady(executorId: String, host: String, blockCacheBytes: Long,
    writeBufferManagerBytes: Long)
