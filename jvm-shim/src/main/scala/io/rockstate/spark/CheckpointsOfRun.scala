package io.rockstate.spark

import org.apache.spark.sql.catalyst.expressions.Expression

import io.rockstate.plugin.RockstateDriverPlugin

/**
 * `rockstate_checkpoints(run_id)`: the coordinator's pending, completed and aborted checkpoints
 * of a query run (the JSON of `RockstateDriverPlugin.checkpointsJson`; "null" when no store of
 * the run has acknowledged anything yet).
 */
case class CheckpointsOfRun(child: Expression) extends CoordinatorFunction {
  override def prettyName: String = CheckpointsOfRun.Name
  override protected def answer(argument: String): String =
    RockstateDriverPlugin.checkpointsJson(argument)
  override protected def withNewChildInternal(newChild: Expression): CheckpointsOfRun =
    copy(child = newChild)
}

object CheckpointsOfRun {
  val Name = "rockstate_checkpoints"
  val Usage = s"$Name(run_id) - the rockstate checkpoints of a streaming query run, as JSON."
}
