package io.rockstate.spark

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.execution.streaming.state._

import io.rockstate.storage._
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{RowChecksum, RowChecksumMismatchException}
import io.rockstate.testing.StoreDirReads._

/** Row checksums in a store: written, checked on read, kept by the store whatever the conf. */
class RowChecksumStoreSuite extends AnyFunSuite with StoreTestKit {
  private val on = Map(RockstateConf.RowChecksumEnabled.key -> "true")

  private def withFamilies(s: StateStore): StateStore = {
    s.createColFamilyIfAbsent("list", keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), useMultipleValuesPerKey = true)
    s
  }

  /** The bytes RocksDB holds for `k` in the default family of `p`'s loaded version. */
  private def storedOf(p: SparkStateStoreProvider, s: StateStore, k: String): Array[Byte] =
    p.db.rocksDB.get(p.codec(StateStore.DEFAULT_COL_FAMILY_NAME, "test").encodeKey(key(k, 1)))

  test("every value is sealed and read back; a store keeps what it was created with") {
    val p = provider(useColumnFamilies = true, extra = on)
    val s = withFamilies(p.getStore(0))
    s.put(key("a", 1), value(10))
    s.putList(key("a", 1), Array(value(1), value(2)), "list")
    s.merge(key("a", 1), value(3), "list")
    s.mergeList(key("a", 1), Array(value(4), value(5)), "list")
    val plain = p.codec(StateStore.DEFAULT_COL_FAMILY_NAME, "test")
    assert(storedOf(p, s, "a").length == RowChecksum.HeaderBytes + 1 + 16) // version byte, row
    assert(s.get(key("a", 1)).getLong(0) == 10 && plain.checksummed)
    s.commit()
    assert(remote().readVersionManifest(1).rowChecksums)

    // Another executor, the setting off: the store still has checksums, reads and writes them.
    val q = provider(useColumnFamilies = true, executor = 1)
    val r = withFamilies(q.getStore(1))
    assert(r.get(key("a", 1)).getLong(0) == 10)
    assert(r.valuesIterator(key("a", 1), "list").map(_.getLong(0)).toSeq == (1L to 5L))
    r.put(key("b", 1), value(20))
    assert(storedOf(q, r, "b").length == RowChecksum.HeaderBytes + 1 + 16)
    r.commit()
    assert(remote().readVersionManifest(2).rowChecksums)

    // A store created without them keeps none when the setting is turned on.
    val elsewhere = new java.io.File(root, "other")
    val w = provider(checkpoint = elsewhere).getStore(0)
    w.put(key("a", 1), value(1))
    w.commit()
    val later = provider(checkpoint = elsewhere, extra = on, executor = 2)
    val l = later.getStore(1)
    assert(l.get(key("a", 1)).getLong(0) == 1 && storedOf(later, l, "a").length == 1 + 16)
    l.commit()
    assert(!remote(elsewhere).readVersionManifest(2).rowChecksums)
  }

  test("a damaged row fails its read with Spark's error; the ratio says which reads check") {
    def damaged(ratio: String): (SparkStateStoreProvider, StateStore) = {
      val p = provider(extra = on + (RockstateConf.RowChecksumReadRatio.key -> ratio),
        checkpoint = new java.io.File(root, s"ratio-$ratio"))
      val s = p.getStore(0)
      s.put(key("a", 1), value(10))
      val k = p.codec(StateStore.DEFAULT_COL_FAMILY_NAME, "test").encodeKey(key("a", 1))
      val bad = p.db.rocksDB.get(k).clone()
      bad(bad.length - 8) = (bad(bad.length - 8) ^ 1).toByte // the long value: 10 becomes 11
      p.db.rocksDB.put(k, bad) // under the store: as a memory or disk fault would
      (p, s)
    }
    def failsItsChecksum(read: => Any): Unit = {
      intercept[Exception](read) match {
        // Spark 4.2+ has a condition for it (rockstate's error beside it); 4.0 and 4.1 get
        // rockstate's error.
        case t: SparkThrowable =>
          assert(t.getCondition == "STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED")
          assert(t.asInstanceOf[Throwable].getSuppressed.exists(
            _.isInstanceOf[RowChecksumMismatchException]))
        case other => assert(other.isInstanceOf[RowChecksumMismatchException], other)
      }
    }
    val (_, every) = damaged("1")
    failsItsChecksum(every.get(key("a", 1)))
    failsItsChecksum(every.iterator().toList)
    val (_, second) = damaged("2")
    assert(second.get(key("a", 1)).getLong(0) == 11) // read unchecked: the damage shows
    failsItsChecksum(second.get(key("a", 1)))
    val (_, never) = damaged("0")
    assert((1 to 3).forall(_ => never.get(key("a", 1)).getLong(0) == 11))
  }
}
