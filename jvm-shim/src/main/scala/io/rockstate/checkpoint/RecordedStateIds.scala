package io.rockstate.checkpoint

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.rockstate.storage.format.CheckpointJson

/**
 * The state checkpoint ids Spark recorded in its commit log for one micro-batch (checkpoint
 * format 2): per operator, per partition, the id each store committed, which is the unique id
 * of a rockstate version file. Spark loads the next batch by exactly these ids, so they, not
 * the storage's write order, say which attempt of a version counts.
 *
 * The commit log file `commits/<batchId>` is "v<N>" and one JSON line; `stateUniqueIds` maps
 * an operator id to one array of ids per partition: one id per store, in the order Spark's
 * stream-stream join keeps its four stores (`JoinStoreOrder`), else a single id.
 */
final case class RecordedStateIds(ids: Map[(Long, Int), Seq[String]]) {
  /** The id recorded for a store, if Spark recorded ids for its operator and partition. */
  def of(store: StoreKey): Option[String] = ids.get((store.operatorId, store.partitionId))
    .flatMap { perStore =>
      if (perStore.size == 1) perStore.headOption
      else RecordedStateIds.JoinStoreOrder.indexOf(store.storeName) match {
        case -1 => None
        case i => perStore.lift(i)
      }
    }
}

object RecordedStateIds {
  /** SymmetricHashJoinStateManager's order of a join's four stores in the id arrays. */
  val JoinStoreOrder: Seq[String] = Seq("left-keyToNumValues", "left-keyWithIndexToValue",
    "right-keyToNumValues", "right-keyWithIndexToValue")

  /** Parses a commit log file; None when it records no ids (checkpoint format 1). */
  def parse(bytes: Array[Byte]): Option[RecordedStateIds] = try {
    val lines = new String(bytes, "UTF-8").split("\n")
    if (lines.length < 2) None
    else {
      val node = CheckpointJson.mapper.readTree(lines(1)).path("stateUniqueIds")
      if (!node.isObject) None
      else {
        val ids = node.fields().asScala.flatMap { op =>
          op.getValue.elements().asScala.zipWithIndex.map { case (perStore, partition) =>
            (op.getKey.toLong, partition) -> perStore.elements().asScala.map(_.asText).toSeq
          }
        }.toMap
        if (ids.isEmpty) None else Some(RecordedStateIds(ids))
      }
    }
  } catch {
    case NonFatal(_) => None // not Spark's format as known: fall back to the storage's order
  }
}
