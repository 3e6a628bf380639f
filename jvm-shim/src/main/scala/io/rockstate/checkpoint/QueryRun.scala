package io.rockstate.checkpoint

/** The streaming query run a task belongs to (Spark's query id and run id). */
final case class QueryRun(queryId: String, runId: String)
