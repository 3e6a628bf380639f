package io.rockstate.spark

import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec
import org.apache.spark.sql.types.StructType

/** What an operator declared for a column family: enough to rebuild its codec. */
final case class ColumnFamilySpec(
    keySchema: StructType,
    valueSchema: StructType,
    keySpec: KeyStateEncoderSpec,
    multipleValues: Boolean)
