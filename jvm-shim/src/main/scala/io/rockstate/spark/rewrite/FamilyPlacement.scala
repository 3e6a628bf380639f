package io.rockstate.spark.rewrite

import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, GetStructField, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning

/**
 * Places the rows of one family: computes Spark's `HashPartitioning` of the grouping key's
 * fields (found in each key) for `partitions` partitions, the expression the restarted query's
 * shuffle evaluates on the same values.
 */
final class FamilyPlacement(layout: FamilyLayout, partitions: Int) {

  private val partitionId = {
    val grouping = layout.groupingKeySchema
    val fields: Seq[Expression] = layout.groupingPath match {
      case Seq() => grouping.fields.toSeq.zipWithIndex.map { case (f, i) =>
        BoundReference(i, f.dataType, f.nullable)
      }
      case first +: rest =>
        val top = layout.keySchema(first)
        val struct = rest.foldLeft[Expression](BoundReference(first, top.dataType, top.nullable)) {
          (e, i) => GetStructField(e, i)
        }
        grouping.indices.map(i => GetStructField(struct, i))
    }
    // The expression Spark's shuffle evaluates: pmod(murmur3(fields), partitions).
    UnsafeProjection.create(Seq(HashPartitioning(fields, partitions).partitionIdExpression))
  }

  /** The new partition of a (decoded) key of this family. */
  def partitionOf(key: UnsafeRow): Int = partitionId(key).getInt(0)
}
