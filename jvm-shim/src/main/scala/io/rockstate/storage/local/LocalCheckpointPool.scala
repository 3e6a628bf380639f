package io.rockstate.storage.local

import java.util.concurrent.CompletableFuture

/**
 * The JVM's threads for snapshots' synchronous parts (flush and local checkpoint), run after
 * their commits returned (daemon, shared by every store). One per core: the work is CPU
 * (the flush compresses the memtable) and each store has at most one under way.
 */
private[storage] object LocalCheckpointPool {
  /** The pool's size. */
  val threads: Int = Runtime.getRuntime.availableProcessors

  private lazy val pool = DaemonThreadPool.fixed("rockstate-local-checkpoint", threads)

  /** Runs `work` on the pool; `join()` on the result waits for it, uninterruptibly. */
  def submit(work: () => Unit): CompletableFuture[Void] =
    CompletableFuture.runAsync(() => work(), pool)
}
