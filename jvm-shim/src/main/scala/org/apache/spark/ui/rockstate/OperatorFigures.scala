package org.apache.spark.ui.rockstate

/**
 * A rockstate state operator of a query as its latest progress reports it (summed over its
 * partitions by Spark): Spark's own figures, and rockstate's custom metrics by name.
 */
final case class OperatorFigures(
    operatorName: String,
    batchId: Long,
    numRowsTotal: Long,
    numRowsUpdated: Long,
    memoryUsedBytes: Long,
    commitTimeMs: Long,
    numShufflePartitions: Long,
    metrics: Seq[NamedFigure]) {

  def metric(name: String): Long = metrics.find(_.name == name).map(_.value).getOrElse(0L)
}
