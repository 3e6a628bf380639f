package io.rockstate.spark.rewrite

import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreId}

import io.rockstate.spark.SparkStateStore

/**
 * Reads one old partition of a transformWithState store through the source provider's API, on
 * an executor: every key of every family in `source.families` (a list state's values by
 * `valuesIterator`: a store's iterator gives a list's first value only), each paired with the
 * new partition Spark's shuffle will send its grouping key to. The store stays open until the
 * task completes and is aborted then: reading writes nothing.
 */
object FamilyRowsReader {

  def read(source: RewriteTarget, version: Long, partitionId: Int, partitions: Int,
      hadoopConf: Configuration): Iterator[(Int, FamilyRow)] = {
    val id = StateStoreId(source.stateRoot, source.operatorId, partitionId, source.storeName)
    val provider = PartitionWriter.newProvider(source, id, hadoopConf)
    val store = try Families.readStore(provider, version) catch {
      case e: Throwable => provider.close(); throw e
    }
    TaskContext.get().addTaskCompletionListener[Unit] { _ =>
      try store.abort() finally provider.close()
    }
    // rockstate's store knows its families; Spark's has every family it is asked for.
    val held: String => Boolean = store match {
      case s: SparkStateStore => s.familyIds.contains
      case _ => _ => true
    }
    val (defaults, named) = source.families.partition(_.name == StateStore.DEFAULT_COL_FAMILY_NAME)
    if (defaults.nonEmpty && held(StateStore.DEFAULT_COL_FAMILY_NAME) && store.iterator().hasNext) {
      throw new IllegalStateException(s"rockstate: the default column family of $id holds " +
        "state, which transformWithState never writes there; the rewrite cannot place it and " +
        "stops before the checkpoint names anything it wrote.")
    }
    named.iterator.filter(f => held(f.name)).flatMap { layout =>
      Families.open(store, layout)
      val placement = new FamilyPlacement(layout, partitions)
      store.iterator(layout.name).map { pair =>
        // The store reuses its rows: keep copies.
        val key = pair.key.copy()
        val values =
          if (!layout.multipleValues) Vector(pair.value.copy().getBytes)
          else store.valuesIterator(key, layout.name).map(_.copy().getBytes).toVector
        (placement.partitionOf(key), FamilyRow(layout.name, key.getBytes, values))
      }
    }
  }
}
