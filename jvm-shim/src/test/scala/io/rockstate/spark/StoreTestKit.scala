package io.rockstate.spark

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.scalatest.{BeforeAndAfterEach, Suite}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.rockstate.state.RockstateStateStoreProvider
import io.rockstate.storage._
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.CorruptCheckpointException
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.snapshot.SnapshotUploader

/** Stores of one (operator 0, partition 0) driven directly, without a query. */
trait StoreTestKit extends BeforeAndAfterEach { this: Suite =>

  protected val keySchema = StructType(Seq(StructField("k", StringType), StructField("n", IntegerType)))
  protected val valueSchema = StructType(Seq(StructField("v", LongType)))
  protected var root: File = _
  protected val open = scala.collection.mutable.Buffer.empty[RockstateStateStoreProvider]

  override def beforeEach(): Unit = root = Files.createTempDirectory("rockstate-suite").toFile
  override def afterEach(): Unit = {
    assert(SnapshotUploader.awaitIdle(120000), "snapshot uploads still running")
    open.foreach(_.close())
    open.clear()
    FileUtils.deleteDirectory(root)
  }

  protected val keyProjection = UnsafeProjection.create(keySchema)
  protected val valueProjection = UnsafeProjection.create(valueSchema)
  protected def key(k: String, n: Int): UnsafeRow =
    keyProjection.apply(InternalRow(UTF8String.fromString(k), n)).copy()
  protected def value(v: Long): UnsafeRow = valueProjection.apply(InternalRow(v)).copy()
  protected def keyOf(r: UnsafeRow): (String, Int) = (r.getUTF8String(0).toString, r.getInt(1))

  /** A provider of store (0, 0); `executor` picks the local directory, as a real one would. */
  protected def provider(
      spec: KeyStateEncoderSpec = NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies: Boolean = false,
      multi: Boolean = false,
      extra: Map[String, String] = Map.empty,
      executor: Int = 0,
      checkpoint: File = null,
      scheme: String = "file",
      schemas: Option[StateSchemaProvider] = None): RockstateStateStoreProvider = {
    val p = new RockstateStateStoreProvider
    val sqlConf = new org.apache.spark.sql.internal.SQLConf
    sqlConf.setConfString("spark.sql.streaming.minBatchesToRetain", "3")
    sqlConf.setConfString(RockstateConf.LocalDir.key, new File(root, s"executor-$executor").getPath)
    extra.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    val location = Option(checkpoint).getOrElse(new File(root, "checkpoint"))
    p.init(StateStoreId(s"$scheme://${location.getAbsolutePath}", 0, 0), keySchema, valueSchema,
      spec, useColumnFamilies, new StateStoreConf(sqlConf, Map.empty), hadoopConf, multi, schemas)
    open += p
    p
  }

  protected def contents(s: ReadStateStore): Map[(String, Int), Long] =
    s.iterator().map(p => keyOf(p.key) -> p.value.getLong(0)).toMap

  protected def storeDir = new File(root, "checkpoint/0/0")
  protected val snapshotEveryVersion = Map(RockstateConf.SnapshotInterval.key -> "1")

  protected def remote(location: File = new File(root, "checkpoint")) = new StoreCheckpointDir(
    new org.apache.hadoop.fs.Path(new File(location, "0/0").getAbsolutePath), hadoopConf)

  /** Hadoop's conf with the fault-injecting file system (`rsfault://`) registered. */
  protected def hadoopConf: Configuration = {
    val c = new Configuration()
    c.set("fs.rsfault.impl", classOf[io.rockstate.testing.FaultInjectingFileSystem].getName)
    c
  }

  /** Waits for the background upload of a snapshot of `version` or later. */
  protected def awaitSnapshot(version: Long, dir: StoreCheckpointDir = remote()): Unit = {
    val deadline = System.currentTimeMillis() + 60000
    while (!dir.listSnapshots().exists(_._2 >= version)) {
      assert(System.currentTimeMillis() < deadline, s"no snapshot of version $version uploaded")
      Thread.sleep(20)
    }
  }

  /**
   * The rockstate error behind a failed load: Spark's error contract (`SparkErrors`) reports
   * it as a CANNOT_LOAD_STATE_STORE condition whose cause names the file and the version.
   */
  protected def loadFailure(load: => Any): CorruptCheckpointException = {
    val e = org.scalatest.Assertions.intercept[org.apache.spark.SparkException](load)
    assert(e.getCondition.startsWith("CANNOT_LOAD_STATE_STORE."), e.getCondition)
    e.getCause match {
      case c: CorruptCheckpointException => c
      case other => throw new AssertionError(s"the cause of a failed load is $other", e)
    }
  }

  protected def metric(s: StateStore, name: String): Long =
    s.metrics.customMetrics.collectFirst { case (m, v) if m.name == name => v }.get

  /** Commits the given versions in order, each after `write(version, store)`. */
  protected def commitVersions(p: RockstateStateStoreProvider, versions: Range)(
      write: (Int, StateStore) => Unit): Seq[StateStore] = versions.map { v =>
    val s = p.getStore(v - 1)
    write(v, s)
    s.commit()
    s
  }

}
