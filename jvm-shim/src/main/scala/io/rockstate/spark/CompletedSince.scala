package io.rockstate.spark

import org.apache.spark.sql.catalyst.expressions.Expression

import io.rockstate.plugin.RockstateDriverPlugin

/**
 * `rockstate_completed_since(seq)`: the checkpoints the coordinator completed after its
 * sequence number `seq`, for every query, as JSON `[[seq, run_id, version], ...]` (-1: all it
 * still remembers).
 */
case class CompletedSince(child: Expression) extends CoordinatorFunction {
  override def prettyName: String = CompletedSince.Name
  override protected def answer(argument: String): String = {
    val after = argument.trim.toLongOption.getOrElse(throw new IllegalArgumentException(
      s"rockstate: $prettyName takes a sequence number, not '$argument'"))
    RockstateDriverPlugin.completedSinceJson(after)
  }
  override protected def withNewChildInternal(newChild: Expression): CompletedSince =
    copy(child = newChild)
}

object CompletedSince {
  val Name = "rockstate_completed_since"
  val Usage = s"$Name(seq) - the checkpoints completed after sequence number seq, as JSON."
}
