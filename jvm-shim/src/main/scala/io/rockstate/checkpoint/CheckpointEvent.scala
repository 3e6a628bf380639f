package io.rockstate.checkpoint

import org.apache.spark.scheduler.SparkListenerEvent

/**
 * What the coordinator tells Spark's listener bus, so that the event log carries it and the
 * rockstate tab (live, and in the History Server from the log) shows it. The event log names
 * each event by its class name: renaming one or changing a field's meaning breaks the tab for
 * older logs (docs/observability.md lists them).
 */
trait CheckpointEvent extends SparkListenerEvent {
  def queryId: String
  def runId: String
  def version: Long
}
