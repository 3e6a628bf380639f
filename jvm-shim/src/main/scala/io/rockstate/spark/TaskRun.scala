package io.rockstate.spark

import org.apache.spark.TaskContext

import io.rockstate.checkpoint.{AckSource, QueryRun}
import io.rockstate.spark.line.SparkLine

/** The streaming query run of the task on the calling thread, from its local properties. */
object TaskRun {
  def current: Option[QueryRun] = Option(TaskContext.get()).flatMap { task =>
    val queryId = Option(task.getLocalProperty(SparkLine.QueryIdProperty))
    // Spark sets the run id as the job group of every streaming job too.
    val runId = Option(task.getLocalProperty(SparkLine.RunIdProperty))
      .orElse(Option(task.getLocalProperty(AckSource.JobGroupProperty)))
    for (q <- queryId; r <- runId) yield QueryRun(q, r)
  }
}
