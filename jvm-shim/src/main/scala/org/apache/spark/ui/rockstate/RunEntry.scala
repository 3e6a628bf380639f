package org.apache.spark.ui.rockstate

import scala.annotation.meta.getter

import org.apache.spark.util.kvstore.KVIndex

/** A streaming query run, from Spark's query events: its name, its state and its stores. */
final case class RunEntry(
    @(KVIndex @getter) runId: String,
    queryId: String,
    name: Option[String],
    startedAtMs: Long, // -1 if its start was not seen
    terminated: Boolean,
    exception: Option[String],
    lastProgressAtMs: Long, // -1 before its first progress with rockstate stores
    operators: Seq[OperatorFigures]) { // the rockstate ones, from the latest progress

  def status: String =
    if (!terminated) "running" else if (exception.isDefined) "failed" else "stopped"
}
