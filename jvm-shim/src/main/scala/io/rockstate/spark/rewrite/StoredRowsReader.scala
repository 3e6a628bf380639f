package io.rockstate.spark.rewrite

import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state.StateStoreId

import io.rockstate.spark.{ColumnFamilyCodec, RowChecks}

/**
 * Reads one old partition of a transformWithState store, on an executor: every row of every
 * column family at `version`, paired with the new partition Spark's shuffle will send its
 * grouping key to. The store stays open until the task completes.
 */
object StoredRowsReader {

  def read(target: RewriteTarget, version: Long, partitionId: Int, partitions: Int,
      hadoopConf: Configuration): Iterator[(Int, StoredRow)] = {
    val id = StateStoreId(target.stateRoot, target.operatorId, partitionId, target.storeName)
    val provider = PartitionWriter.newProvider(target, id, hadoopConf)
    val store = try provider.getReadStore(version) catch {
      case e: Throwable => provider.close(); throw e
    }
    TaskContext.get().addTaskCompletionListener[Unit] { _ =>
      try store.abort() finally provider.close()
    }
    val rockstate = PartitionWriter.rockstateStore(store)
    val layouts = target.families.map(f => f.name -> f).toMap
    val ids = rockstate.familyIds
    ids.keys.toSeq.sorted.iterator.flatMap { family =>
      val rows = rockstate.storedRows(family)
      layouts.get(family) match {
        case Some(layout) =>
          // Keys only, in the store's encoding: the values `storedRows` gives are opened
          // already, and move as stored (an Avro value keeps its schema id).
          val codec = new ColumnFamilyCodec(family, ids(family), true, layout.storedSpec,
            new RowChecks(None, id.toString), rockstate.rowEncoding)
          val placement = new FamilyPlacement(layout, partitions)
          rows.map { case (k, v) =>
            (placement.partitionOf(codec.decodeStoredKey(k)), StoredRow(family, k, v))
          }
        case None if !rows.hasNext => Iterator.empty
        case None =>
          throw new IllegalStateException(s"rockstate: column family '$family' of $id holds " +
            "state but is not in the operator's state schema; the rewrite cannot place its " +
            "keys and stops before the checkpoint names anything it wrote.")
      }
    }
  }
}
