package io.rockstate.state

import java.io.{File, RandomAccessFile}
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/** The store driven directly, without a query: every version, family and encoding. */
class RockstateStoreSuite extends AnyFunSuite with BeforeAndAfterEach {

  private val keySchema = StructType(Seq(StructField("k", StringType), StructField("n", IntegerType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private var root: File = _
  private val open = scala.collection.mutable.Buffer.empty[RockstateStateStoreProvider]

  override def beforeEach(): Unit = root = Files.createTempDirectory("rockstate-suite").toFile
  override def afterEach(): Unit = {
    open.foreach(_.close())
    open.clear()
    FileUtils.deleteDirectory(root)
  }

  private def key(k: String, n: Int): UnsafeRow =
    UnsafeProjection.create(keySchema).apply(InternalRow(UTF8String.fromString(k), n)).copy()
  private def value(v: Long): UnsafeRow =
    UnsafeProjection.create(valueSchema).apply(InternalRow(v)).copy()
  private def keyOf(r: UnsafeRow): (String, Int) = (r.getUTF8String(0).toString, r.getInt(1))

  private def provider(
      spec: KeyStateEncoderSpec = NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies: Boolean = false,
      multi: Boolean = false,
      extra: Map[String, String] = Map.empty): RockstateStateStoreProvider = {
    val p = new RockstateStateStoreProvider
    val sqlConf = new org.apache.spark.sql.internal.SQLConf
    sqlConf.setConfString("spark.sql.streaming.minBatchesToRetain", "3")
    extra.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    p.init(StateStoreId(root.getAbsolutePath, 0, 0), keySchema, valueSchema, spec,
      useColumnFamilies, new StateStoreConf(sqlConf, Map.empty), new Configuration(), multi, None)
    open += p
    p
  }

  private def contents(s: ReadStateStore): Map[(String, Int), Long] =
    s.iterator().map(p => keyOf(p.key) -> p.value.getLong(0)).toMap

  private def storeDir = new File(root, "0/0")

  test("put, get, remove and iterate across committed versions") {
    val p = provider()
    val s1 = p.getStore(0)
    s1.put(key("a", 1), value(10))
    s1.put(key("b", 2), value(20))
    assert(s1.get(key("a", 1)).getLong(0) == 10)
    assert(s1.commit() == 1)
    assert(s1.metrics.numKeys == 2)

    val s2 = p.getStore(1)
    s2.remove(key("a", 1))
    s2.put(key("c", 3), value(30))
    assert(s2.commit() == 2)

    assert(contents(p.getReadStore(1)) == Map(("a", 1) -> 10L, ("b", 2) -> 20L))
    assert(contents(p.getReadStore(2)) == Map(("b", 2) -> 20L, ("c", 3) -> 30L))
    assert(p.getStore(2).metrics.numKeys == 2)
  }

  test("abort throws away the batch's writes") {
    val p = provider()
    val s1 = p.getStore(0)
    s1.put(key("a", 1), value(1))
    s1.commit()
    val s2 = p.getStore(1)
    s2.put(key("b", 1), value(2))
    s2.remove(key("a", 1))
    s2.abort()
    assert(contents(p.getStore(1)) == Map(("a", 1) -> 1L))
  }

  test("a fresh provider (new local dir) restores a version from the checkpoint location") {
    val p = provider()
    (1 to 3).foreach { v =>
      val s = p.getStore(v - 1)
      (1 to 100).foreach(i => s.put(key(s"k$i", v), value(i.toLong * v)))
      s.commit()
    }
    val fresh = provider()
    val s = fresh.getReadStore(3)
    assert(contents(s).size == 300)
    assert(s.asInstanceOf[StateStore].metrics.customMetrics
      .collectFirst { case (m, v) if m.name == "rockstateBytesDownloaded" => v }.get > 0)
  }

  test("a later version uploads only its new SST files") {
    val p = provider()
    val s1 = p.getStore(0)
    (1 to 5000).foreach(i => s1.put(key(s"key-$i", i), value(i.toLong)))
    s1.commit()
    val s2 = p.getStore(1)
    s2.put(key("one-more", 0), value(0))
    s2.commit()
    val m = new StoreCheckpointDir(new org.apache.hadoop.fs.Path(storeDir.getAbsolutePath),
      new Configuration()).readManifest(2)
    assert(m.stats.filesReused >= 1)
    assert(m.stats.bytesReused > m.stats.bytesUploaded)
    assert(m.numKeys == 5001)
  }

  test("re-running a batch replaces its version and never touches the one before") {
    val p = provider()
    val s1 = p.getStore(0)
    s1.put(key("a", 1), value(1))
    s1.commit()
    val first = p.getStore(1)
    first.put(key("first-attempt", 1), value(1))
    first.commit()
    // The batch runs again (task retry, restarted query) from the same version, on a new
    // executor: its commit lands as the version, the version before stays as it was.
    val again = provider().getStore(1)
    again.put(key("second-attempt", 1), value(2))
    again.commit()
    assert(contents(provider().getReadStore(1)) == Map(("a", 1) -> 1L))
    assert(contents(provider().getReadStore(2)) == Map(("a", 1) -> 1L, ("second-attempt", 1) -> 2L))
  }

  test("prefix scan returns exactly the keys with that prefix") {
    val p = provider(PrefixKeyScanStateEncoderSpec(keySchema, 1))
    val s = p.getStore(0)
    Seq("a" -> 1, "a" -> 2, "ab" -> 1, "b" -> 1).foreach { case (k, n) => s.put(key(k, n), value(n)) }
    val prefix = UnsafeProjection.create(StructType(keySchema.take(1)))
      .apply(InternalRow(UTF8String.fromString("a"))).copy()
    assert(s.prefixScan(prefix).map(r => keyOf(r.key)).toSet == Set("a" -> 1, "a" -> 2))
  }

  test("range scan and deleteRange follow the ordering Spark expects for timers") {
    val tsSchema = StructType(Seq(StructField("ts", LongType), StructField("k", StringType)))
    def tsKey(ts: Long, k: String) =
      UnsafeProjection.create(tsSchema).apply(InternalRow(ts, UTF8String.fromString(k))).copy()
    val p = new RockstateStateStoreProvider
    p.init(StateStoreId(root.getAbsolutePath, 1, 0), tsSchema, valueSchema,
      RangeKeyScanStateEncoderSpec(tsSchema, Seq(0)), false,
      new StateStoreConf(new org.apache.spark.sql.internal.SQLConf, Map.empty),
      new Configuration(), false, None)
    open += p
    val s = p.getStore(0)
    Seq(-5L, 100L, 3L, 0L, 42L, -100L).foreach(ts => s.put(tsKey(ts, s"t$ts"), value(ts)))
    assert(s.iterator().map(_.key.getLong(0)).toSeq == Seq(-100L, -5L, 0L, 3L, 42L, 100L))
    val window = s.rangeScan(Some(tsKey(0, "")), Some(tsKey(50, ""))).map(_.key.getLong(0)).toSeq
    assert(window == Seq(0L, 3L, 42L))
    s.deleteRange(tsKey(-5, ""), tsKey(42, ""))
    assert(s.iterator().map(_.key.getLong(0)).toSeq == Seq(-100L, 42L, 100L))
    assert(s.metrics.numKeys == 3)
  }

  test("column families: create, multi-value, list, remove, and survive a reload") {
    val p = provider(useColumnFamilies = true)
    val s = p.getStore(0)
    s.createColFamilyIfAbsent("list", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), useMultipleValuesPerKey = true)
    s.createColFamilyIfAbsent("other", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema))
    s.put(key("x", 1), value(1))
    s.putList(key("x", 1), Array(value(1), value(2)), "list")
    s.merge(key("x", 1), value(3), "list")
    s.mergeList(key("x", 1), Array(value(4), value(5)), "list")
    s.put(key("x", 1), value(7), "other")
    assert(s.valuesIterator(key("x", 1), "list").map(_.getLong(0)).toSeq == Seq(1L, 2L, 3L, 4L, 5L))
    assert(s.iterator("other").map(_.value.getLong(0)).toSeq == Seq(7L))
    assert(s.iterator().map(_.value.getLong(0)).toSeq == Seq(1L)) // families do not mix
    assert(s.allColumnFamilyNames == Set("default", "list", "other"))
    s.commit()

    val fresh = provider(useColumnFamilies = true)
    val r = fresh.getStore(1)
    r.createColFamilyIfAbsent("list", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), useMultipleValuesPerKey = true)
    r.createColFamilyIfAbsent("other", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema))
    assert(r.iteratorWithMultiValues("list").map(_.value.getLong(0)).toSeq == Seq(1L, 2L, 3L, 4L, 5L))
    assert(r.removeColFamilyIfExists("other"))
    assert(!r.removeColFamilyIfExists("other"))
    assert(r.allColumnFamilyNames == Set("default", "list"))
    assert(r.metrics.numKeys == 2)
    r.commit()
    assert(provider(useColumnFamilies = true).getReadStore(2).allColumnFamilyNames ==
      Set("default", "list"))
  }

  test("a damaged SST fails the load with the file and the version named") {
    val p = provider()
    val s = p.getStore(0)
    (1 to 1000).foreach(i => s.put(key(s"k$i", i), value(i)))
    s.commit()
    val sst = new File(storeDir, "sst").listFiles().filter(f => !f.getName.startsWith(".")).head
    val raf = new RandomAccessFile(sst, "rw")
    try raf.setLength(sst.length() / 2) finally raf.close()
    val e = intercept[CorruptCheckpointException](provider().getReadStore(1))
    assert(e.getMessage.contains(sst.getName) && e.getMessage.contains("version 1"))
  }

  test("a missing manifest is an error, never empty state") {
    val p = provider()
    val s = p.getStore(0)
    s.put(key("a", 1), value(1))
    s.commit()
    new File(storeDir, "manifests/1.json").delete()
    val e = intercept[CorruptCheckpointException](provider().getReadStore(1))
    assert(e.getMessage.contains("manifest of version 1"))
  }

  test("cleanup keeps the retained versions loadable and removes the rest") {
    val p = provider(extra = Map(RockstateConf.OrphanFileGraceMs -> "0"))
    (1 to 8).foreach { v =>
      val s = p.getStore(v - 1)
      (1 to 200).foreach(i => s.put(key(s"k${i % 50}", v), value(i)))
      s.commit()
    }
    p.doCleanupMaintenance()
    val dir = new StoreCheckpointDir(new org.apache.hadoop.fs.Path(storeDir.getAbsolutePath),
      new Configuration())
    assert(dir.listVersions() == Seq(6L, 7L, 8L))
    val referenced = Seq(6L, 7L, 8L).flatMap(v => dir.readManifest(v).files.map(_.path)).toSet
    assert(dir.listDataFiles().map(_._1).toSet == referenced)
    Seq(6L, 7L, 8L).foreach(v => assert(contents(provider().getReadStore(v)).size == 50 * v.toInt))
  }

  test("bad settings are refused with the key named") {
    val e = intercept[IllegalArgumentException](
      provider(extra = Map(RockstateConf.BlockCacheSizeMB -> "lots")))
    assert(e.getMessage.contains(RockstateConf.BlockCacheSizeMB))
  }
}
