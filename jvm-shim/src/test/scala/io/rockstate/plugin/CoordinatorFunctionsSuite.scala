package io.rockstate.plugin

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Literal}
import org.apache.spark.sql.types.StringType
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.checkpoint.CheckpointCoordinator
import io.rockstate.spark.{CheckpointsOfRun, CompletedSince}

/** rockstate's SQL functions: folded on the driver, answering from its coordinator. */
class CoordinatorFunctionsSuite extends AnyFunSuite {

  private def withCoordinator[T](body: => T): T = {
    val c = new CheckpointCoordinator(new org.apache.hadoop.conf.Configuration(), () => 0L,
      _ => Right(Set.empty), (_, _) => ())
    RockstateDriverPlugin.coordinator = Some(c)
    try body finally RockstateDriverPlugin.coordinator = None
  }

  test("with a literal they fold, and answer what the plugin answers") {
    withCoordinator {
      val checkpoints = CheckpointsOfRun(Literal("run-1"))
      assert(checkpoints.foldable && checkpoints.dataType == StringType)
      assert(checkpoints.eval().toString == RockstateDriverPlugin.checkpointsJson("run-1"))
      assert(CompletedSince(Literal(-1L)).eval().toString ==
        RockstateDriverPlugin.completedSinceJson(-1))
      assert(CompletedSince(Literal("-1")).eval().toString == "[]")
    }
  }

  test("with a column they do not fold, so Spark would evaluate them on executors") {
    assert(!CheckpointsOfRun(AttributeReference("run", StringType)()).foldable)
  }

  test("without the coordinator, or with a bad sequence number, they say why") {
    val none = intercept[IllegalStateException](CheckpointsOfRun(Literal("r")).eval())
    assert(none.getMessage.contains("finds no checkpoint coordinator"))
    withCoordinator {
      val bad = intercept[IllegalArgumentException](CompletedSince(Literal("soon")).eval())
      assert(bad.getMessage.contains("takes a sequence number, not 'soon'"))
    }
  }
}
