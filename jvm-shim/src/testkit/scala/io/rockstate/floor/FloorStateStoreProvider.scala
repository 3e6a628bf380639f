package io.rockstate.floor

import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * The floor: a benchmark-only StateStoreProvider that keeps each partition's state in a hash
 * map in this JVM's memory and writes nothing, so a batch on it costs what the query costs
 * without a state store's own work (encoding, RocksDB, changelogs, snapshots, uploads).
 * `bench/provider_bench.py --providers ...,floor` runs it beside the real providers, and each
 * provider's store cost is its batch p50 minus the floor's. It lives in the test kit (never in
 * the user's jar) and serves what the benches run: one key and one value a row, looked up by
 * the whole key (aggregations, deduplication, joins, flatMapGroupsWithState) or, for a
 * session window, also scanned by a prefix of it. It refuses, when a store opens, what only
 * transformWithState uses: column families, multiple values per key, range scans.
 *
 * The state outlives the provider (Spark makes a new provider per query run): a JVM-wide
 * registry keyed by the store's id (checkpoint root, operator, partition, store name) holds one
 * live map per partition and, for the version being written, an undo log (each touched key's
 * previous value), which `abort` replays. A commit keeps the last two undo logs, so a retried
 * batch or a query restarted in this JVM may load the newest version or either of the two
 * before it; an older version, or state this JVM never had (another JVM, another executor),
 * fails clearly instead of starting empty. `loadEmpty` (Spark 4.2+) clears the partition. Every
 * commit gets a new unique id (checkpoint format 2). A read store is a view of the live map, as
 * Spark's RocksDB provider shares one instance between a task's read and write stores.
 *
 * One source for every Spark line: `getStore` is defined in both lines' shapes, and members
 * only some lines declare (abstract where declared) are defined without `override`.
 */
class FloorStateStoreProvider extends StateStoreProvider {
  import FloorStateStoreProvider._

  @volatile private var storeId: StateStoreId = _
  @volatile private var state: FloorState = _
  @volatile private var hadoop: Configuration = _

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    if (useColumnFamilies) throw refused("column families (useColumnFamilies)", stateStoreId)
    if (useMultipleValuesPerKey) {
      throw refused("multiple values per key (useMultipleValuesPerKey)", stateStoreId)
    }
    val prefixColumns = keyStateEncoderSpec match {
      case _: NoPrefixKeyStateEncoderSpec => 0
      case spec: PrefixKeyScanStateEncoderSpec => spec.numColsPrefixKey
      case other => throw refused(s"the key encoder $other (range scans)", stateStoreId)
    }
    storeId = stateStoreId
    hadoop = hadoopConf
    state = states.computeIfAbsent(stateStoreId, _ => new FloorState(stateStoreId,
      Option.when(prefixColumns > 0)(new PrefixIndex(keySchema, prefixColumns))))
    if (state.prefixes.fold(0)(_.columns) != prefixColumns) {
      throw new IllegalStateException(s"floor: $stateStoreId was opened with " +
        s"${state.prefixes.fold(0)(_.columns)} prefix columns in this JVM; now with " +
        s"$prefixColumns")
    }
  }

  override def stateStoreId: StateStoreId = storeId

  /** Spark 4.0 and 4.1. */
  def getStore(version: Long, uniqueId: Option[String]): StateStore =
    openWrite(version, uniqueId, loadEmpty = false)

  /** Spark 4.2 and later (a forced snapshot means nothing here: nothing is written). */
  def getStore(version: Long, uniqueId: Option[String], forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore =
    openWrite(version, uniqueId, loadEmpty)

  // Spark's default wraps a write store, whose release() throws on 4.1+: a view of its own.
  // Spark's default upgradeReadStoreToWriteStore (4.1+) calls getStore, which is what is wanted.
  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore = {
    state.load(version, uniqueId, loadEmpty = false, write = false)
    new FloorReadStore(state, storeId, version)
  }

  private def openWrite(version: Long, uniqueId: Option[String], loadEmpty: Boolean)
      : StateStore = {
    val log = state.load(version, uniqueId, loadEmpty, write = true)
    new FloorWriteStore(state, storeId, version, uniqueId, log, hadoop)
  }

  // The state stays in the registry: a restarted query's new provider continues from it.
  override def close(): Unit = ()

  override def toString: String = s"FloorStateStoreProvider[$storeId]"
}

object FloorStateStoreProvider {
  /** Every partition's state in this JVM, by store id; kept until the JVM exits or forgetAll. */
  private val states = new ConcurrentHashMap[StateStoreId, FloorState]()

  /**
   * Drops every partition's state from the registry; how many. For a bench that runs one
   * query after another in one JVM (the Nexmark bench), so that a finished query's state does
   * not stay on the heap. A provider already open keeps its partition's state; a new one (a
   * restarted query) finds none and fails its load, by name.
   */
  def forgetAll(): Int = {
    val dropped = states.size
    states.clear()
    dropped
  }

  /** Undo logs kept after commits: the versions below the newest a load may go back to. */
  private[floor] val KeptVersions = 2

  private[floor] def refused(what: String, id: StateStoreId): UnsupportedOperationException =
    new UnsupportedOperationException(s"floor: benchmark-only provider " +
      s"(io.rockstate.floor.FloorStateStoreProvider) of $id: $what is not supported; it serves " +
      "the benches' operators only (one key and one value a row, the default column family, " +
      "lookups by key and scans by a prefix)")

  // Spark 4.1+'s StateStore.reportCommitToCoordinator, as Spark's own providers call it on
  // every commit (4.3's coordinator fails a batch some store of which did not report); 4.0
  // has none. Looked up once: one call a commit, not a row.
  private lazy val reportCommit: Option[java.lang.reflect.Method] =
    try {
      Some(classOf[StateStore].getMethod("reportCommitToCoordinator", classOf[Long],
        classOf[StateStoreId], classOf[Configuration]))
    } catch {
      case _: NoSuchMethodException => None
    }

  private[floor] def reportCommitToCoordinator(version: Long, id: StateStoreId,
      hadoopConf: Configuration): Unit =
    reportCommit.foreach { m =>
      try m.invoke(null, Long.box(version), id, hadoopConf)
      catch { case e: java.lang.reflect.InvocationTargetException => throw e.getCause }
    }
}
