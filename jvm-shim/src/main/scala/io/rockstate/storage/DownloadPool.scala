package io.rockstate.storage

import java.util.concurrent.{ExecutorService, Executors}
import java.util.concurrent.atomic.AtomicInteger

/** The JVM's threads for parallel downloads on load (daemon, shared by every store). */
private[storage] object DownloadPool {
  @volatile private var executor: ExecutorService = _

  def pool(threads: Int): ExecutorService = synchronized {
    if (executor == null) {
      val n = new AtomicInteger()
      executor = Executors.newFixedThreadPool(threads, (r: Runnable) => {
        val t = new Thread(r, s"rockstate-download-${n.incrementAndGet()}")
        t.setDaemon(true)
        t
      })
    }
    executor
  }
}
