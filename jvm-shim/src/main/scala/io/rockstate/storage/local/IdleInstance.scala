package io.rockstate.storage.local

/** A store whose RocksDB instance may be closed while no task attempt holds it. */
trait IdleInstance {
  /**
   * Closes the instance if no task attempt holds it, it holds nothing uncommitted and
   * `unreleased()` (asked under the lock the store's releases take) says it was not released
   * again since it was chosen; keeps its local files so that its next load reopens from them,
   * and tells `OpenInstances` when it closed. Whether it closed one.
   */
  def closeIfIdle(unreleased: () => Boolean): Boolean
}
