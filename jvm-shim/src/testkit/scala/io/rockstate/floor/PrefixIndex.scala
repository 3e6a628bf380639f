package io.rockstate.floor

import java.util.{HashMap, HashSet}

import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

/**
 * The keys of each prefix of a store opened for prefix scans (a session window's: the group
 * key, then the session's start), kept beside the floor's map as Spark's HDFS provider keeps
 * its own: a prefix scan then costs a lookup and the keys it finds, never a pass over the
 * state. The keys come in no order, as from Spark's HDFS provider (a session window sorts the
 * sessions it reads).
 */
private[floor] final class PrefixIndex(keySchema: StructType, prefixColumns: Int) {
  private val projection = UnsafeProjection.create(
    keySchema.fields.take(prefixColumns).toSeq.zipWithIndex.map { case (field, i) =>
      BoundReference(i, field.dataType, field.nullable)
    })
  private val keysOf = new HashMap[UnsafeRow, HashSet[UnsafeRow]]()

  def columns: Int = prefixColumns

  /** A key new to the map. */
  def add(key: UnsafeRow): Unit = {
    val prefix = prefixOf(key)
    val keys = keysOf.get(prefix)
    if (keys != null) keys.add(key)
    else {
      val fresh = new HashSet[UnsafeRow]()
      fresh.add(key)
      keysOf.put(prefix.copy(), fresh)
    }
  }

  /** A key gone from the map. */
  def remove(key: UnsafeRow): Unit = {
    val prefix = prefixOf(key)
    val keys = keysOf.get(prefix)
    if (keys != null) {
      keys.remove(key)
      if (keys.isEmpty) keysOf.remove(prefix)
    }
  }

  /** The keys under `prefix`, copied: the caller may change the map while it reads them. */
  def keys(prefix: UnsafeRow): Array[UnsafeRow] = {
    val keys = keysOf.get(prefix)
    if (keys == null) Array.empty else keys.toArray(new Array[UnsafeRow](keys.size))
  }

  def clear(): Unit = keysOf.clear()

  // The projection reuses one row: its result is used, or copied, before the next call.
  private def prefixOf(key: UnsafeRow): UnsafeRow = projection(key)
}
