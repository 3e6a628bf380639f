package io.rockstate.floor

import java.util.ArrayList

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/** The previous value of each key a version touched, in order (null: the key was absent). */
private[floor] final class UndoLog {
  private val keys = new ArrayList[UnsafeRow]()
  private val previous = new ArrayList[UnsafeRow]()

  def add(key: UnsafeRow, old: UnsafeRow): Unit = {
    keys.add(key)
    previous.add(old)
  }

  /** Puts back what the version changed, newest change first. */
  def undo(state: FloorState): Unit = {
    var i = keys.size - 1
    while (i >= 0) {
      val old = previous.get(i)
      if (old == null) state.remove(keys.get(i)) else state.put(keys.get(i), old)
      i -= 1
    }
  }
}
