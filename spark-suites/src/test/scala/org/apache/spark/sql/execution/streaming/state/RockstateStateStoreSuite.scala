package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalactic.source.Position
import org.scalatest.{BeforeAndAfter, Tag}

import org.apache.spark.SparkException
import org.apache.spark.sql.catalyst.util.quietly
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.test.SharedSparkSession
import org.apache.spark.sql.types.StructType

import io.rockstate.state.RockstateStateStoreProvider
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * Spark's provider-generic state store suite (`StateStoreSuiteBase`, from Spark's own `tests`
 * jar, unmodified) run against rockstate, the way Spark runs it against its RocksDB provider:
 * same provider set-up and harness (a shared session, Spark's StateStore stopped around each
 * test), every test with and without column families and with every compression codec. The
 * tests that cannot apply to a provider other than Spark's two are registered as ignored with
 * the reason (`NotApplicable`); where one checks something rockstate should do too, a test
 * below checks it of rockstate.
 */
class RockstateStateStoreSuite extends StateStoreSuiteBase[RockstateStateStoreProvider]
  with SharedSparkSession with BeforeAndAfter {
  import StateStoreTestsHelper._

  before {
    StateStore.stop()
    require(!StateStore.isMaintenanceRunning)
    spark.streams.stateStoreCoordinator // initialises the lazy coordinator
  }

  after {
    StateStore.stop()
  }

  // Both of Spark's parents define it alike; Spark's RocksDB suite settles it the same way.
  override def testQuietly(name: String)(f: => Unit): Unit = test(name)(quietly(f))

  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)
      (implicit pos: Position): Unit =
    NotApplicable.reason(getClass, testName) match {
      case Some(why) => ignore(s"$testName (not applicable: $why)")(testBody)
      case None => super.test(testName, testTags: _*)(testBody)
    }

  override def testWithAllCodec(name: String)(func: Boolean => Any): Unit =
    Seq(true, false).foreach { colFamiliesEnabled =>
      (codecsInShortName ++ org.apache.spark.io.CompressionCodec.ALL_COMPRESSION_CODECS)
        .foreach { codec =>
          test(s"$name - with codec $codec - colFamiliesEnabled=$colFamiliesEnabled") {
            withSQLConf(SQLConf.STATE_STORE_COMPRESSION_CODEC.key -> codec) {
              func(colFamiliesEnabled)
            }
          }
        }
    }

  test("rockstate: SPARK-18342's checks of a commit whose rename fails, rockstate's store named") {
    val conf = new Configuration()
    conf.set(s"fs.${RenameReturnsFalseFileSystem.scheme}.impl",
      classOf[RenameReturnsFalseFileSystem].getName)
    val dir = s"${RenameReturnsFalseFileSystem.scheme}://${newDir()}"
    tryWithProviderResource(newStoreProvider(StateStoreId(dir, 0, 0), conf)) { provider =>
      val store = provider.getStore(0)
      put(store, "a", 0, 0)
      val e = intercept[SparkException](store.commit())
      assert(e.getCondition == "CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT")
      Seq("RockstateStateStore", "operatorId=0", "partitionId=0",
        "Error writing state store files").foreach(part => assert(e.getMessage.contains(part)))
      assert(Iterator.iterate[Throwable](e.getCause)(_.getCause).takeWhile(_ != null)
        .exists(c => String.valueOf(c.getMessage).contains("rename")), e)
      assert(!store.hasCommitted)
    }
  }

  test("rockstate: SPARK-38320's iterators see what they see on Spark's RocksDB store") {
    // An iterator reads the store as it was when the iterator was made, as on Spark's RocksDB
    // store (SPARK-38320 expects this only of a class named RocksDBStateStore).
    val storeId = StateStoreId(newDir(), 0L, 1)
    val committed = tryWithProviderResource(newStoreProvider(storeId)) { provider =>
      val store = provider.getStore(0)
      val before = store.iterator()
      put(store, "1", 11, 100)
      put(store, "2", 22, 200)
      val midway = store.iterator()
      put(store, "1", 11, 101)
      put(store, "3", 33, 300)
      val after = store.iterator()
      assert(rowPairsToDataSet(before).isEmpty)
      assert(rowPairsToDataSet(midway) == Set(("1", 11) -> 100, ("2", 22) -> 200))
      assert(rowPairsToDataSet(after) == Set(("1", 11) -> 101, ("2", 22) -> 200, ("3", 33) -> 300))
      store.commit()
    }
    tryWithProviderResource(newStoreProvider(storeId)) { provider =>
      val store = provider.getStore(committed)
      val before = store.iterator()
      put(store, "3", 33, 301)
      val midway = store.iterator()
      put(store, "4", 44, 400)
      assert(rowPairsToDataSet(before) == Set(("1", 11) -> 101, ("2", 22) -> 200, ("3", 33) -> 300))
      assert(rowPairsToDataSet(midway) == Set(("1", 11) -> 101, ("2", 22) -> 200, ("3", 33) -> 301))
      assert(rowPairsToDataSet(store.iterator()) ==
        Set(("1", 11) -> 101, ("2", 22) -> 200, ("3", 33) -> 301, ("4", 44) -> 400))
      store.abort()
    }
  }

  override def newStoreProvider(): RockstateStateStoreProvider =
    newStoreProvider(StateStoreId(newDir(), Random.nextInt(), 0))

  override def newStoreProvider(storeId: StateStoreId): RockstateStateStoreProvider =
    make(storeId, NoPrefixKeyStateEncoderSpec(keySchema))

  override def newStoreProvider(storeId: StateStoreId,
      useColumnFamilies: Boolean): RockstateStateStoreProvider =
    make(storeId, NoPrefixKeyStateEncoderSpec(keySchema), useColumnFamilies = useColumnFamilies)

  override def newStoreProvider(storeId: StateStoreId,
      conf: Configuration): RockstateStateStoreProvider =
    make(storeId, NoPrefixKeyStateEncoderSpec(keySchema), hadoopConf = conf)

  override def newStoreProvider(minDeltasForSnapshot: Int,
      numOfVersToRetainInMemory: Int): RockstateStateStoreProvider =
    make(StateStoreId(newDir(), Random.nextInt(), 0), NoPrefixKeyStateEncoderSpec(keySchema),
      sqlConf = Some(getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory)))

  override def newStoreProvider(keySchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean): RockstateStateStoreProvider =
    make(StateStoreId(newDir(), Random.nextInt(), 0), keyStateEncoderSpec, keySchema,
      useColumnFamilies = useColumnFamilies)

  override def newStoreProvider(useColumnFamilies: Boolean): RockstateStateStoreProvider =
    make(StateStoreId(newDir(), Random.nextInt(), 0), NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = useColumnFamilies)

  override def newStoreProviderWithClonedConf(storeId: StateStoreId): RockstateStateStoreProvider =
    make(storeId, NoPrefixKeyStateEncoderSpec(keySchema), sqlConf = Some(cloneSQLConf()))

  override def newStoreProviderNoInit(): RockstateStateStoreProvider =
    new RockstateStateStoreProvider

  override def getLatestData(provider: RockstateStateStoreProvider,
      useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    getData(provider, -1, useColumnFamilies)

  override def getData(provider: RockstateStateStoreProvider, version: Int,
      useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    tryWithProviderResource(newStoreProvider(provider.stateStoreId, useColumnFamilies)) {
      reloaded =>
        val storeDir = new StoreCheckpointDir(
          new Path(provider.stateStoreId.storeCheckpointLocation().toString), new Configuration)
        val wanted = if (version >= 0) Some(version.toLong)
          else storeDir.listVersionEntries().map(_.version).maxOption
        wanted.fold(Set.empty[((String, Int), Int)]) { v =>
          val store = reloaded.getStore(v)
          try store.iterator().map(rowPairToDataPair).toSet
          finally if (!store.hasCommitted) store.abort()
        }
    }

  override def getDefaultSQLConf(minDeltasForSnapshot: Int,
      numOfVersToRetainInMemory: Int): SQLConf = {
    val sqlConf = SQLConf.get.clone()
    sqlConf.setConfString(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.key,
      minDeltasForSnapshot.toString)
    sqlConf
  }

  /** A provider made and initialised as Spark's suite makes its RocksDB provider. */
  private def make(storeId: StateStoreId, keyStateEncoderSpec: KeyStateEncoderSpec,
      keySchema: StructType = keySchema, sqlConf: Option[SQLConf] = None,
      hadoopConf: Configuration = new Configuration,
      useColumnFamilies: Boolean = false): RockstateStateStoreProvider = {
    val provider = new RockstateStateStoreProvider
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    provider.init(storeId, keySchema, valueSchema, keyStateEncoderSpec, useColumnFamilies,
      new StateStoreConf(sqlConf.getOrElse(SQLConf.get)), hadoopConf)
    provider
  }
}
