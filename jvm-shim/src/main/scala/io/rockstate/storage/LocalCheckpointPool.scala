package io.rockstate.storage

import java.util.concurrent.{CompletableFuture, ExecutorService, Executors}
import java.util.concurrent.atomic.AtomicInteger

/**
 * The JVM's threads for snapshots' synchronous parts (flush and local checkpoint), run after
 * their commits returned (daemon, shared by every store). One per core: the work is CPU
 * (the flush compresses the memtable) and each store has at most one under way.
 */
private[storage] object LocalCheckpointPool {
  @volatile private var executor: ExecutorService = _

  /** The pool's size. */
  val threads: Int = Runtime.getRuntime.availableProcessors

  private def pool: ExecutorService = synchronized {
    if (executor == null) {
      val n = new AtomicInteger()
      executor = Executors.newFixedThreadPool(threads,
        (r: Runnable) => {
          val t = new Thread(r, s"rockstate-local-checkpoint-${n.incrementAndGet()}")
          t.setDaemon(true)
          t
        })
    }
    executor
  }

  /** Runs `work` on the pool; `join()` on the result waits for it, uninterruptibly. */
  def submit(work: () => Unit): CompletableFuture[Void] =
    CompletableFuture.runAsync(() => work(), pool)
}
