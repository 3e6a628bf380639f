package io.rockstate.floor

import java.util.{HashMap, UUID}

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreId}

/**
 * One partition's live state in this JVM: its map and, for a store opened for prefix scans,
 * the map's keys by prefix. Loads, commits and aborts hold its lock; rows are read and written
 * by the one task that has the partition open.
 */
private[floor] final class FloorState(id: StateStoreId, val prefixes: Option[PrefixIndex]) {
  import FloorStateStoreProvider.{KeptVersions, refused}

  private val map = new HashMap[UnsafeRow, UnsafeRow]()
  private var version = 0L
  private var started = false
  // Undo logs of the newest commits, newest first: the head made `version` from `version - 1`.
  private var history: List[UndoLog] = Nil
  // The unique id each retained version was committed with (checkpoint format 2).
  private var ids = Map.empty[Long, String]
  // The open write store's log; a store whose log is no longer this one may not commit.
  private var pending: UndoLog = null

  def get(key: UnsafeRow): UnsafeRow = map.get(key)

  /** Maps `key` (the map keeps it: a copy of the caller's row) to `value`; the old value. */
  def put(key: UnsafeRow, value: UnsafeRow): UnsafeRow = {
    val old = map.put(key, value)
    if (old == null) prefixes.foreach(_.add(key))
    old
  }

  /** Drops `key`; its old value (null: there was none). */
  def remove(key: UnsafeRow): UnsafeRow = {
    val old = map.remove(key)
    if (old != null) prefixes.foreach(_.remove(key))
    old
  }

  def size: Int = map.size

  /** The entries, copied: a write store's puts may go on while they are read. */
  def entries: Array[java.util.Map.Entry[UnsafeRow, UnsafeRow]] =
    map.entrySet().toArray(new Array[java.util.Map.Entry[UnsafeRow, UnsafeRow]](map.size))

  /**
   * Brings the live map to `version` and, for a write store, opens its undo log. A read store
   * leaves an open write store's log alone: Spark 4.0 opens a task's read store after its
   * write store, both at the same version.
   */
  def load(want: Long, uniqueId: Option[String], loadEmpty: Boolean, write: Boolean): UndoLog =
    synchronized {
      if (write || want != version) undoPending()
      if (loadEmpty) {
        map.clear()
        prefixes.foreach(_.clear())
        history = Nil
        ids = Map.empty
        version = want
        started = true
      } else if (!started) {
        if (want != 0) throw notHere(want, "this JVM holds no state of it")
        started = true
      } else if (want > version) {
        throw notHere(want, s"this JVM's newest version of it is $version")
      } else {
        while (version > want) {
          history match {
            case log :: rest =>
              log.undo(this)
              history = rest
              ids -= version
              version -= 1
            case Nil =>
              throw notHere(want, s"this JVM keeps the newest version ($version) and the " +
                s"$KeptVersions before it")
          }
        }
      }
      for (given <- uniqueId; have <- ids.get(want) if given != have) {
        throw new IllegalStateException(s"floor: version $want of $id was committed as " +
          s"$have in this JVM; Spark asked for $given")
      }
      if (write) {
        pending = new UndoLog
        pending
      } else null
    }

  /** Makes `log`'s version the newest; its id. */
  def commit(log: UndoLog, from: Long): String = synchronized {
    if ((pending ne log) || version != from) {
      throw new IllegalStateException(s"floor: the store of $id at version $from can no " +
        "longer commit: another store of this partition was opened since")
    }
    pending = null
    history = (log :: history).take(KeptVersions)
    version = from + 1
    val uniqueId = UUID.randomUUID().toString
    ids = ids.filter { case (v, _) => v >= version - KeptVersions } + (version -> uniqueId)
    uniqueId
  }

  def abort(log: UndoLog): Unit = synchronized {
    if (pending eq log) undoPending()
  }

  private def undoPending(): Unit = {
    if (pending != null) {
      pending.undo(this)
      pending = null
    }
  }

  private def notHere(want: Long, why: String): IllegalStateException =
    new IllegalStateException(s"floor: version $want of $id is not in this JVM's memory ($why). " +
      "The floor (io.rockstate.floor.FloorStateStoreProvider, benchmark-only) keeps state in " +
      "memory only and writes nothing: run it on a fresh checkpoint in one JVM (local[N])")

  def checkFamily(name: String): Unit = {
    val default = StateStore.DEFAULT_COL_FAMILY_NAME
    if ((name ne default) && name != default) throw refused(s"column family '$name'", id)
  }

  def refuse(what: String): Nothing = throw refused(what, id)
}
