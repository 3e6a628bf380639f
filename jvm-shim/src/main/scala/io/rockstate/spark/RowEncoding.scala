package io.rockstate.spark

import java.util.Locale

import org.apache.spark.sql.execution.streaming.state.{AvroStateEncoder, RocksDBDataEncoder, StateSchemaProvider, UnsafeRowDataEncoder}

/**
 * How an operator's rows become bytes (`spark.sql.streaming.stateStore.encodingFormat`):
 * Spark's UnsafeRow layout, or Avro. With Avro and a schema provider from Spark
 * (transformWithState's schema evolution) every row carries the id of the schema it was
 * written with, and is read back through that schema. Both are Spark's own data encoders, so
 * the bytes are exactly those Spark's RocksDB provider writes.
 */
private[spark] final case class RowEncoding(avro: Boolean, schemas: Option[StateSchemaProvider]) {

  def dataEncoder(family: String, spec: ColumnFamilySpec): RocksDBDataEncoder =
    if (avro) new AvroStateEncoder(spec.keySpec, spec.valueSchema, schemas, family)
    else new UnsafeRowDataEncoder(spec.keySpec, spec.valueSchema)
}

private[spark] object RowEncoding {

  val UnsafeRow: RowEncoding = RowEncoding(avro = false, None)

  def of(format: String, schemas: Option[StateSchemaProvider]): RowEncoding =
    format.toLowerCase(Locale.ROOT) match {
      case "unsaferow" => UnsafeRow
      case "avro" => RowEncoding(avro = true, schemas)
      case other => throw new IllegalArgumentException(
        s"rockstate: unknown state encoding '$other' " +
          "(spark.sql.streaming.stateStore.encodingFormat); use 'unsaferow' or 'avro'.")
    }
}
