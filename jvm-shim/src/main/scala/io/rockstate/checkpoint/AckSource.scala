package io.rockstate.checkpoint

object AckSource {
  /** The task property holding a job's group: a streaming query's run id (private in Spark). */
  val JobGroupProperty = "spark.jobGroup.id"
}

/** Who acknowledges: the store, the query run and the state version. */
final case class AckSource(
    queryId: String,
    runId: String,
    checkpointRoot: String, // the query's checkpoint location, qualified
    snapshotInterval: Int, // checkpoints are the versions that are multiples of it
    settings: CoordinatorSettings, // the query's own, from its SQL conf
    store: StoreKey,
    version: Long,
    executorId: String)
