package io.rockstate.storage.local

/** Milliseconds since a `System.nanoTime()` reading: the storage layer's timings. */
private[storage] object Elapsed {
  def sinceMs(nanos: Long): Long = (System.nanoTime() - nanos) / 1000000
}
