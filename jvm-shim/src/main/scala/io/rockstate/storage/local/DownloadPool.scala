package io.rockstate.storage.local

import java.util.concurrent.ExecutorService

/** The JVM's threads for parallel downloads on load (daemon, shared by every store). */
private[storage] object DownloadPool {
  @volatile private var executor: ExecutorService = _

  def pool(threads: Int): ExecutorService = synchronized {
    if (executor == null) executor = DaemonThreadPool.fixed("rockstate-download", threads)
    executor
  }
}
