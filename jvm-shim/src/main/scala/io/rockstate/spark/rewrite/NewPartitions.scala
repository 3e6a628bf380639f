package io.rockstate.spark.rewrite

import org.apache.spark.Partitioner

/** Sends each row to the partition it is keyed by (the one computed by `FamilyPlacement`). */
final class NewPartitions(override val numPartitions: Int) extends Partitioner {
  override def getPartition(key: Any): Int = key.asInstanceOf[Int]
}
