package io.rockstate.spark

import org.apache.spark.sql.{SparkSessionExtensions, SparkSessionExtensionsProvider}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}

/**
 * rockstate's SQL functions, in every session of a JVM that has the jar: Spark finds this class
 * through `META-INF/services` (no `spark.sql.extensions` to set), and Spark Connect's sessions
 * get them too. They are how a Connect client sees the driver's checkpoint coordinator.
 */
class RockstateExtensions extends SparkSessionExtensionsProvider {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    register(extensions, CheckpointsOfRun.Name, CheckpointsOfRun.Usage,
      classOf[CheckpointsOfRun], CheckpointsOfRun(_))
    register(extensions, CompletedSince.Name, CompletedSince.Usage,
      classOf[CompletedSince], CompletedSince(_))
  }

  private def register(extensions: SparkSessionExtensions, name: String, usage: String,
                       cls: Class[_], make: Expression => Expression): Unit =
    extensions.injectFunction((
      FunctionIdentifier(name),
      new ExpressionInfo(cls.getName, null, name, usage, ""),
      (args: Seq[Expression]) => make(CoordinatorFunction.single(name, usage, args))))
}
