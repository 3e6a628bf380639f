package io.rockstate.storage.loaded

import io.rockstate.storage.local.LocalRocksDB

/** Whether a store's RocksDB instance is open, and what a closed one left. */
sealed trait StoreInstance

object StoreInstance {
  final case class Open(db: LocalRocksDB) extends StoreInstance

  /**
   * No instance open. `stateBytes`: the SST bytes of the version the last one held as it
   * closed. `flushedIdle`: `closeIdle` closed it with the loaded version flushed into the
   * store's work directory, which nothing has touched since, so a load the open instance could
   * have served reopens it from there.
   */
  final case class Closed(stateBytes: Long, flushedIdle: Boolean) extends StoreInstance

  val None: StoreInstance = Closed(0L, flushedIdle = false)
}
