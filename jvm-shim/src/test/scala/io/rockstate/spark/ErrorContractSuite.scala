package io.rockstate.spark

import java.io.{File, RandomAccessFile}

import org.apache.spark.SparkException
import org.apache.spark.sql.execution.streaming.state._
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.format.CorruptCheckpointException
import io.rockstate.testing.{FaultInjectingFileSystem, FaultRule}

/**
 * Spark's error contract (`SparkErrors`), checked side by side with Spark's own
 * RocksDBStateStoreProvider where both can be driven the same way: the error conditions and
 * messages Spark's provider-generic `StateStoreSuiteBase` asserts ("getStore with invalid
 * versions", "does not exist", SPARK-35659 null values, SPARK-18342 a failed commit).
 */
class ErrorContractSuite extends AnyFunSuite with StoreTestKit {

  override def afterEach(): Unit = {
    FaultInjectingFileSystem.reset()
    // Spark's provider keeps its instance locked after some failed loads; its close then
    // waits out lockAcquireTimeoutMs (short here) and fails, which is Spark's to fix.
    sparkProviders.foreach(p => scala.util.Try(p.close()))
    sparkProviders.clear()
    super.afterEach()
  }

  private val sparkProviders = scala.collection.mutable.Buffer.empty[StateStoreProvider]

  /** Spark's RocksDB provider over its own checkpoint folder, configured as StoreTestKit's. */
  private def sparkProvider(): StateStoreProvider = {
    // Spark's class is package-private to Spark: made by name, as Spark makes providers.
    val p = Class.forName("org.apache.spark.sql.execution.streaming.state." +
      "RocksDBStateStoreProvider").getDeclaredConstructor().newInstance()
      .asInstanceOf[StateStoreProvider]
    val sqlConf = new org.apache.spark.sql.internal.SQLConf
    sqlConf.setConfString("spark.sql.streaming.minBatchesToRetain", "3")
    sqlConf.setConfString("spark.sql.streaming.stateStore.rocksdb.lockAcquireTimeoutMs", "1000")
    val conf = hadoopConf
    conf.set("sql.streaming.runId", java.util.UUID.randomUUID.toString) // as a query sets it
    p.init(StateStoreId(new File(root, "spark-checkpoint").getAbsolutePath, 0, 0), keySchema,
      valueSchema, NoPrefixKeyStateEncoderSpec(keySchema), false,
      new StateStoreConf(sqlConf, Map.empty), conf, false, None)
    sparkProviders += p
    p
  }

  private def both: Seq[(String, () => StateStoreProvider)] =
    Seq("rockstate" -> (() => provider()), "Spark's RocksDB provider" -> (() => sparkProvider()))

  private def commitTwo(p: StateStoreProvider): Unit = (1 to 2).foreach { v =>
    val s = p.getStore(v - 1)
    s.put(key("a", v), value(v))
    s.commit()
  }

  test("a negative version is CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION, as Spark's provider") {
    both.foreach { case (name, make) =>
      val p = make()
      Seq[StateStoreProvider => Any](_.getStore(-1), _.getReadStore(-1)).foreach { open =>
        val e = intercept[SparkException](open(p))
        assert(e.getCondition == "CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION", name)
        assert(e.getMessageParameters.get("version") == "-1", name)
      }
    }
  }

  test("a version never written does not exist (CANNOT_READ_STREAMING_STATE_FILE), never " +
    "'corrupt', as Spark's provider") {
    both.foreach { case (name, make) =>
      val p = make()
      def check(version: Long): Unit = {
        val e = intercept[SparkException](p.getStore(version))
        assert(e.getCondition == "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE",
          s"$name, version $version: ${e.getCondition}")
        assert(e.getMessageParameters.containsKey("fileToRead"), name)
        assert(e.getMessage.contains("does not exist"), s"$name: ${e.getMessage}")
        assert(!e.getMessage.toLowerCase.contains("corrupt"), s"$name: ${e.getMessage}")
      }
      check(1) // an empty store
      commitTwo(p)
      check(3)
      val s = p.getStore(2)
      assert(s.get(key("a", 2)).getLong(0) == 2, name)
      s.abort()
    }
  }

  test("put and merge of a null value fail as Spark's provider (IllegalArgumentException)") {
    both.foreach { case (name, make) =>
      val s = make().getStore(0)
      val e = intercept[IllegalArgumentException](s.put(key("a", 1), null))
      assert(e.getMessage.contains("Cannot put a null value"), s"$name: ${e.getMessage}")
      s.abort()
    }
    val multi = provider(multi = true).getStore(0)
    val e = intercept[IllegalArgumentException](multi.merge(key("a", 1), null))
    assert(e.getMessage.contains("Cannot merge a null value"), e.getMessage)
  }

  test("a failed commit is CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT, the failure as its cause") {
    val p = provider(scheme = "rsfault")
    commitTwo(p)
    FaultInjectingFileSystem.setRules(Seq(
      FaultRule("rename", "/versions/3-[^/]*\\.rsv$", "before", "fail", 1, "any"),
      FaultRule("create", "/versions/3-[^/]*\\.rsv$", "before", "fail", 1, "any")))
    val s = p.getStore(2)
    s.put(key("b", 3), value(3))
    val e = intercept[SparkException](s.commit())
    assert(e.getCondition == "CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT")
    assert(e.getMessage.contains("Error writing state store files") &&
      e.getMessage.contains("operatorId=0") && e.getMessage.contains("partitionId=0"),
      e.getMessage)
    assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
      .exists(c => Option(c.getMessage).exists(_.contains("rockstate fault injection"))), e)
    FaultInjectingFileSystem.reset()
    // Nothing of the failed commit is state: version 3 does not exist, version 2 loads.
    val again = provider(executor = 1, scheme = "rsfault")
    assert(intercept[SparkException](again.getStore(3)).getCondition ==
      "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE")
    assert(contents(again.getReadStore(2)) == Map(("a", 1) -> 1L, ("a", 2) -> 2L))
  }

  test("a damaged file is CANNOT_LOAD_STATE_STORE.UNCATEGORIZED, rockstate's error (the file " +
    "named) its cause") {
    val p = provider()
    commitTwo(p)
    val file = new File(storeDir, "versions").listFiles().filter(_.getName.startsWith("2-")).head
    val raf = new RandomAccessFile(file, "rw")
    try raf.setLength(file.length - 3) finally raf.close()
    val e = intercept[SparkException](provider(executor = 1).getReadStore(2))
    assert(e.getCondition == "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED")
    assert(e.getCause.isInstanceOf[CorruptCheckpointException] &&
      e.getCause.getMessage.contains(file.getName), e.getCause)
    assert(loadFailure(provider(executor = 2).getReadStore(2)).getMessage.contains("trailer"))
  }
}
