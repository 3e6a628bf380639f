package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

import io.rockstate.spark.ChangeRow
import io.rockstate.storage.format.Changelog

/**
 * rockstate's state change feed as Spark's change data reader hands it out (Spark's iterator
 * type is private to Spark's packages, hence this class's package): each change with its
 * record type, key, value and batch id.
 */
final class RockstateChangeDataReader(rows: Iterator[ChangeRow])
  extends NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] {

  override protected def getNext(): (RecordType.Value, UnsafeRow, UnsafeRow, Long) =
    if (rows.hasNext) {
      val r = rows.next()
      (RockstateChangeDataReader.recordType(r.op), r.key, r.value, r.batchId)
    } else {
      finished = true
      null
    }

  override protected def close(): Unit = ()
}

object RockstateChangeDataReader {
  // Spark 4.2 added range deletes to its record types; earlier lines never see one from
  // rockstate (their stores have no deleteRange call).
  private val deleteRange = RecordType.values.find(_.toString == "delete_range_record")

  def recordType(op: Byte): RecordType.Value = op match {
    case Changelog.Put => RecordType.PUT_RECORD
    case Changelog.Merge => RecordType.MERGE_RECORD
    case Changelog.Delete => RecordType.DELETE_RECORD
    case Changelog.DeleteRange => deleteRange.getOrElse(throw new UnsupportedOperationException(
      "rockstate: this Spark line's change feed has no record type for a range delete"))
    case other => throw new IllegalArgumentException(s"rockstate: change kind $other")
  }
}
