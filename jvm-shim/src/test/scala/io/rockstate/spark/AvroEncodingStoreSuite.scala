package io.rockstate.spark

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
/**
 * The Avro state encoding (`encodingFormat=avro`): rows are Spark's AvroStateEncoder bytes
 * with their schema id, and a row written under an older schema reads through it.
 */
class AvroEncodingStoreSuite extends AnyFunSuite with StoreTestKit {
  private val avro = Map("spark.sql.streaming.stateStore.encodingFormat" -> "avro")
  private val evolved = valueSchema.add(StructField("note", StringType))

  /** Spark's schema provider for family "rich", one value schema per id (0, 1, ...). */
  private def schemas(values: StructType*): StateSchemaProvider = {
    val p = new TestStateSchemaProvider
    values.zipWithIndex.foreach { case (v, id) =>
      p.captureSchema("rich", keySchema, v, 0.toShort, id.toShort)
    }
    p
  }

  private def withRich(s: StateStore, schema: StructType): StateStore = {
    s.createColFamilyIfAbsent("rich", keySchema, schema, NoPrefixKeyStateEncoderSpec(keySchema))
    s
  }

  private def storedOf(p: SparkStateStoreProvider, k: String): Seq[Byte] =
    p.db.rocksDB.get(p.codec("rich", "test").encodeKey(key(k, 1))).toSeq

  test("rows are Avro with their schema id; an older schema's row reads through it") {
    val p = provider(useColumnFamilies = true, extra = avro, schemas = Some(schemas(valueSchema)))
    val s = withRich(p.getStore(0), valueSchema)
    s.put(key("a", 1), value(10), "rich")
    // Version byte 0, schema id 0 (2 bytes, little-endian), union branch 1, zig-zag 10.
    assert(storedOf(p, "a") == Seq[Byte](0, 0, 0, 2, 20))
    assert(s.get(key("a", 1), "rich").getLong(0) == 10)
    s.commit()

    // The processor's value gains a field (schema id 1), on another executor.
    val q = provider(useColumnFamilies = true, extra = avro, executor = 1,
      schemas = Some(schemas(valueSchema, evolved)))
    val r = withRich(q.getStore(1), evolved)
    val old = r.get(key("a", 1), "rich")
    assert(old.getLong(0) == 10 && old.isNullAt(1))
    val row = UnsafeProjection.create(evolved)
      .apply(InternalRow(20L, UTF8String.fromString("x"))).copy()
    r.put(key("b", 1), row, "rich")
    assert(storedOf(q, "b").take(3) == Seq[Byte](0, 1, 0))
    assert(storedOf(q, "a").take(3) == Seq[Byte](0, 0, 0)) // untouched: still schema 0
    r.commit()

    val reread = withRich(provider(useColumnFamilies = true, extra = avro, executor = 2,
      schemas = Some(schemas(valueSchema, evolved))).getStore(2), evolved)
    val rows = reread.iterator("rich").map { p =>
      keyOf(p.key)._1 -> (p.value.getLong(0), Option(p.value.getUTF8String(1)).map(_.toString))
    }.toMap
    reread.abort()
    assert(rows == Map("a" -> (10L, None), "b" -> (20L, Some("x"))))
  }

  test("an unknown encoding is refused with the setting named") {
    val e = intercept[IllegalArgumentException](
      provider(extra = Map("spark.sql.streaming.stateStore.encodingFormat" -> "json")))
    assert(e.getMessage.contains("encodingFormat") && e.getMessage.contains("'json'"))
  }
}
