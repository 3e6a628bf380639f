package io.rockstate.storage.local

import java.util.concurrent.{Executors, ThreadPoolExecutor}
import java.util.concurrent.atomic.AtomicInteger

/** Fixed pools of named daemon threads: the executor's background work never holds it open. */
private[storage] object DaemonThreadPool {
  /** `threads` threads named `<prefix>-1`, `<prefix>-2`, and so on. */
  def fixed(prefix: String, threads: Int): ThreadPoolExecutor = {
    val n = new AtomicInteger()
    Executors.newFixedThreadPool(threads, (r: Runnable) => {
      val t = new Thread(r, s"$prefix-${n.incrementAndGet()}")
      t.setDaemon(true)
      t
    }).asInstanceOf[ThreadPoolExecutor]
  }
}
