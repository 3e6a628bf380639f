package io.rockstate.floor

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The benches' floor: its prefix index follows the map through puts, removals, aborts and
 * loads of earlier versions (each an undo), and what only transformWithState uses is refused
 * by name when a store opens.
 */
class FloorStateStoreProviderSuite extends AnyFunSuite {
  private val keySchema = StructType(Seq(StructField("group", StringType),
    StructField("start", LongType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val keyRow = UnsafeProjection.create(keySchema)
  private val valueRow = UnsafeProjection.create(valueSchema)
  private val prefixRow = UnsafeProjection.create(StructType(keySchema.fields.take(1)))

  private def key(group: String, start: Long): UnsafeRow =
    keyRow(InternalRow(UTF8String.fromString(group), start)).copy()
  private def value(v: Long): UnsafeRow = valueRow(InternalRow(v)).copy()
  private def prefix(group: String): UnsafeRow =
    prefixRow(InternalRow(UTF8String.fromString(group))).copy()

  private def provider(
      spec: KeyStateEncoderSpec = PrefixKeyScanStateEncoderSpec(keySchema, 1),
      useColumnFamilies: Boolean = false,
      multi: Boolean = false): FloorStateStoreProvider = {
    val p = new FloorStateStoreProvider
    // A store id of its own: the floor's state is JVM-wide, by store id.
    p.init(StateStoreId(s"/floor-suite/${UUID.randomUUID()}", 0, 0), keySchema, valueSchema,
      spec, useColumnFamilies, new StateStoreConf(new SQLConf, Map.empty), new Configuration,
      multi, None)
    p
  }

  /** Each group's sessions (start -> value) as a prefix scan gives them. */
  private def scanned(store: ReadStateStore, groups: String*): Map[String, Map[Long, Long]] =
    groups.map { g =>
      g -> store.prefixScan(prefix(g)).map(p => p.key.getLong(1) -> p.value.getLong(0)).toMap
    }.filter(_._2.nonEmpty).toMap

  test("a prefix scan finds the keys of its prefix through puts, removals, aborts and reloads") {
    val p = provider()
    val v0 = p.getStore(0, None)
    v0.put(key("a", 1), value(10))
    v0.put(key("a", 2), value(20))
    v0.put(key("b", 1), value(30))
    assert(v0.commit() == 1)

    val v1 = p.getStore(1, None)
    assert(scanned(v1, "a", "b", "c") ==
      Map("a" -> Map(1L -> 10L, 2L -> 20L), "b" -> Map(1L -> 30L)))
    v1.remove(key("a", 1)) // sessions merge: one gone, one rewritten
    v1.put(key("a", 2), value(21))
    v1.remove(key("b", 1)) // a group's last session closes
    v1.put(key("c", 5), value(50))
    assert(scanned(v1, "a", "b", "c") == Map("a" -> Map(2L -> 21L), "c" -> Map(5L -> 50L)))
    v1.abort()

    val again = p.getStore(1, None)
    assert(scanned(again, "a", "b", "c") ==
      Map("a" -> Map(1L -> 10L, 2L -> 20L), "b" -> Map(1L -> 30L)))
    again.remove(key("a", 1))
    again.remove(key("b", 1))
    again.put(key("b", 7), value(70))
    assert(again.commit() == 2)
    assert(scanned(p.getReadStore(2, None), "a", "b") ==
      Map("a" -> Map(2L -> 20L), "b" -> Map(7L -> 70L)))

    // A retried batch loads version 1 again: the commit's undo log puts the keys back.
    val retried = p.getStore(1, None)
    assert(scanned(retried, "a", "b") ==
      Map("a" -> Map(1L -> 10L, 2L -> 20L), "b" -> Map(1L -> 30L)))
    retried.abort()
  }

  test("a store opened without a prefix refuses prefix scans, by name") {
    val store = provider(spec = NoPrefixKeyStateEncoderSpec(keySchema)).getStore(0, None)
    val e = intercept[UnsupportedOperationException](store.prefixScan(prefix("a")))
    assert(e.getMessage.contains("prefixScan on a store not opened for prefix scans"))
    store.abort()
  }

  test("what only transformWithState uses is refused when a store opens, by name") {
    val refusals = Seq(
      "column families" -> (() => provider(useColumnFamilies = true)),
      "multiple values per key" -> (() => provider(multi = true)),
      "range scans" -> (() => provider(spec = RangeKeyScanStateEncoderSpec(keySchema, Seq(1)))))
    for ((what, open) <- refusals) {
      val e = intercept[UnsupportedOperationException](open())
      assert(e.getMessage.contains(what) && e.getMessage.contains("benchmark-only"), e.getMessage)
    }
  }
}
