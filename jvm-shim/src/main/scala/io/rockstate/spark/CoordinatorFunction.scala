package io.rockstate.spark

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import io.rockstate.plugin.RockstateDriverPlugin

/**
 * A SQL function that answers from the driver's checkpoint coordinator, as JSON text: how a
 * client that cannot reach the driver's JVM (Spark Connect) sees rockstate's checkpoints. With a
 * literal argument it is folded into a constant while the driver optimises the query, so it is
 * evaluated there, where the coordinator lives; anywhere else it fails and says so.
 */
abstract class CoordinatorFunction extends UnaryExpression with CodegenFallback {
  /** The answer for the argument's text. */
  protected def answer(argument: String): String

  override def dataType: DataType = StringType
  override def foldable: Boolean = child.foldable

  override protected def nullSafeEval(input: Any): Any = {
    if (!RockstateDriverPlugin.coordinatorRunning) {
      val where = Option(SparkEnv.get).map(_.executorId).getOrElse("driver")
      throw new IllegalStateException(
        if (where == "driver") {
          s"rockstate: $prettyName() finds no checkpoint coordinator in this driver; start the " +
            "session (or the Spark Connect server) with rockstate's plugin " +
            "(spark.plugins=io.rockstate.plugin.RockstatePlugin, or `rockstate connect-server`)."
        } else {
          s"rockstate: $prettyName() ran on executor $where; it answers on the driver only. " +
            s"Call it with a literal argument: SELECT $prettyName('...')."
        })
    }
    UTF8String.fromString(answer(input.toString))
  }
}

object CoordinatorFunction {
  /** The function's one argument, or an error naming its use. */
  def single(name: String, usage: String, args: Seq[Expression]): Expression = args match {
    case Seq(one) => one
    case _ => throw new IllegalArgumentException(
      s"rockstate: $name takes one argument (${args.size} given): $usage")
  }
}
