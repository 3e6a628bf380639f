package io.rockstate.floor

import java.util.{ArrayList, HashMap, UUID}
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * The floor: a benchmark-only StateStoreProvider that keeps each partition's state in a hash
 * map in this JVM's memory and writes nothing, so a batch on it costs what the query costs
 * without a state store's own work (encoding, RocksDB, changelogs, snapshots, uploads).
 * `bench/provider_bench.py --providers ...,floor` runs it beside the real providers, and each
 * provider's store cost is its batch p50 minus the floor's. It lives in the test kit (never in
 * the user's jar) and serves only what the benches run: one key and one value a row (the
 * aggregation's NoPrefixKeyStateEncoderSpec), no column families, no multiple values per key;
 * `init` refuses anything else.
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
    keyStateEncoderSpec match {
      case _: NoPrefixKeyStateEncoderSpec =>
      case other => throw refused(s"the key encoder $other (prefix or range scans)", stateStoreId)
    }
    storeId = stateStoreId
    hadoop = hadoopConf
    state = states.computeIfAbsent(stateStoreId, _ => new FloorState(stateStoreId))
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
  /** Every partition's state in this JVM, by store id; kept until the JVM exits. */
  private val states = new ConcurrentHashMap[StateStoreId, FloorState]()

  /** Undo logs kept after commits: the versions below the newest a load may go back to. */
  private[floor] val KeptVersions = 2

  private[floor] def refused(what: String, id: StateStoreId): UnsupportedOperationException =
    new UnsupportedOperationException(s"floor: benchmark-only provider " +
      s"(io.rockstate.floor.FloorStateStoreProvider) of $id: $what is not supported; it serves " +
      "the benches' aggregation only (one key and one value a row, the default column family)")

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

/** The previous value of each key a version touched, in order (null: the key was absent). */
private[floor] final class UndoLog {
  private val keys = new ArrayList[UnsafeRow]()
  private val previous = new ArrayList[UnsafeRow]()

  def add(key: UnsafeRow, old: UnsafeRow): Unit = {
    keys.add(key)
    previous.add(old)
  }

  /** Puts back what the version changed, newest change first. */
  def undo(map: HashMap[UnsafeRow, UnsafeRow]): Unit = {
    var i = keys.size - 1
    while (i >= 0) {
      val old = previous.get(i)
      if (old == null) map.remove(keys.get(i)) else map.put(keys.get(i), old)
      i -= 1
    }
  }
}

/** One partition's live state in this JVM. Loads, commits and aborts hold its lock. */
private[floor] final class FloorState(id: StateStoreId) {
  import FloorStateStoreProvider.{KeptVersions, refused}

  val map = new HashMap[UnsafeRow, UnsafeRow]()
  private var version = 0L
  private var started = false
  // Undo logs of the newest commits, newest first: the head made `version` from `version - 1`.
  private var history: List[UndoLog] = Nil
  // The unique id each retained version was committed with (checkpoint format 2).
  private var ids = Map.empty[Long, String]
  // The open write store's log; a store whose log is no longer this one may not commit.
  private var pending: UndoLog = null

  /**
   * Brings the live map to `version` and, for a write store, opens its undo log. A read store
   * leaves an open write store's log alone: Spark 4.0 opens a task's read store after its
   * write store, both at the same version.
   */
  def load(want: Long, uniqueId: Option[String], loadEmpty: Boolean, write: Boolean): UndoLog =
    synchronized {
      if (write || want != version) undoPending()
      if (loadEmpty) {
        map.clear()
        history = Nil
        ids = Map.empty
        version = want
        started = true
      } else if (!started) {
        if (want != 0) throw notHere(want, "this JVM holds no state of it")
        started = true
      } else if (want > version) {
        throw notHere(want, s"this JVM's newest version of it is $version")
      } else {
        while (version > want) {
          history match {
            case log :: rest =>
              log.undo(map)
              history = rest
              ids -= version
              version -= 1
            case Nil =>
              throw notHere(want, s"this JVM keeps the newest version ($version) and the " +
                s"$KeptVersions before it")
          }
        }
      }
      for (given <- uniqueId; have <- ids.get(want) if given != have) {
        throw new IllegalStateException(s"floor: version $want of $id was committed as " +
          s"$have in this JVM; Spark asked for $given")
      }
      if (write) {
        pending = new UndoLog
        pending
      } else null
    }

  /** Makes `log`'s version the newest; its id. */
  def commit(log: UndoLog, from: Long): String = synchronized {
    if ((pending ne log) || version != from) {
      throw new IllegalStateException(s"floor: the store of $id at version $from can no " +
        "longer commit: another store of this partition was opened since")
    }
    pending = null
    history = (log :: history).take(KeptVersions)
    version = from + 1
    val uniqueId = UUID.randomUUID().toString
    ids = ids.filter { case (v, _) => v >= version - KeptVersions } + (version -> uniqueId)
    uniqueId
  }

  def abort(log: UndoLog): Unit = synchronized {
    if (pending eq log) undoPending()
  }

  private def undoPending(): Unit = {
    if (pending != null) {
      pending.undo(map)
      pending = null
    }
  }

  private def notHere(want: Long, why: String): IllegalStateException =
    new IllegalStateException(s"floor: version $want of $id is not in this JVM's memory ($why). " +
      "The floor (io.rockstate.floor.FloorStateStoreProvider, benchmark-only) keeps state in " +
      "memory only and writes nothing: run it on a fresh checkpoint in one JVM (local[N])")

  def checkFamily(name: String): Unit = {
    val default = StateStore.DEFAULT_COL_FAMILY_NAME
    if ((name ne default) && name != default) throw refused(s"column family '$name'", id)
  }

  def refuse(what: String): Nothing = throw refused(what, id)
}

/** What a read store and a write store read alike: the live map. */
private[floor] abstract class FloorReads(state: FloorState, val id: StateStoreId,
    val version: Long) {

  def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    state.checkFamily(colFamilyName)
    state.map.get(key)
  }

  def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    state.refuse("valuesIterator (multiple values per key)")

  def prefixScan(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = state.refuse("prefixScan")

  /** Over a copy of the entries: a write store's puts may go on while it is read. */
  def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    state.checkFamily(colFamilyName)
    val entries = new ArrayList[java.util.Map.Entry[UnsafeRow, UnsafeRow]](state.map.entrySet())
      .asScala
    val pair = new UnsafeRowPair()
    new StateStoreIterator(entries.iterator.map(e => pair.withRows(e.getKey, e.getValue)))
  }

  // Spark 4.2+ (abstract there).
  def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = state.refuse("prefixScanWithMultiValues")

  def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    state.refuse("iteratorWithMultiValues")

  def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)
}

/** A read-only view; abort and release leave the live map alone. */
private[floor] final class FloorReadStore(state: FloorState, storeId: StateStoreId,
    loaded: Long) extends FloorReads(state, storeId, loaded) with ReadStateStore {

  override def abort(): Unit = ()

  // Spark 4.1+ (abstract on ReadStateStore).
  def release(): Unit = ()

  override def toString: String = s"FloorReadStore[$id, version=$version]"
}

/** A batch's writes to the live map, committed as `version + 1`. */
private[floor] final class FloorWriteStore(state: FloorState, storeId: StateStoreId,
    loaded: Long, baseId: Option[String], log: UndoLog, hadoopConf: Configuration)
  extends FloorReads(state, storeId, loaded) with StateStore {

  @volatile private var committed = false
  @volatile private var done = false // committed or aborted
  @volatile private var info = StateStoreCheckpointInfo(id.partitionId, version, None, None)

  private def checkOpen(op: String): Unit =
    if (done) throw new IllegalStateException(s"floor: $op on $this after it was closed")

  // The rows Spark passes are reused: the key is copied once (the map keeps the first copy
  // of a key it already holds; the log keeps this one), the value once.
  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkOpen("put")
    state.checkFamily(colFamilyName)
    val k = key.copy()
    log.add(k, state.map.put(k, value.copy()))
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    checkOpen("remove")
    state.checkFamily(colFamilyName)
    val old = state.map.remove(key)
    if (old != null) log.add(key.copy(), old)
  }

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    state.refuse("merge (multiple values per key)")

  // Spark 4.2+ (abstract there).
  def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    state.refuse("putList (multiple values per key)")

  def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    state.refuse("mergeList (multiple values per key)")

  override def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType,
      valueSchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    state.refuse(s"createColFamilyIfAbsent('$colFamilyName')")

  override def removeColFamilyIfExists(colFamilyName: String): Boolean =
    state.refuse(s"removeColFamilyIfExists('$colFamilyName')")

  override def commit(): Long = {
    checkOpen("commit")
    val uniqueId = state.commit(log, version)
    committed = true
    done = true
    info = StateStoreCheckpointInfo(id.partitionId, version + 1, Some(uniqueId), baseId)
    FloorStateStoreProvider.reportCommitToCoordinator(version + 1, id, hadoopConf)
    version + 1
  }

  // Spark aborts every store its task did not commit, once the task ends; after a commit it
  // is a no-op.
  override def abort(): Unit = {
    if (!done) {
      done = true
      state.abort(log)
    }
  }

  override def hasCommitted: Boolean = committed

  override def metrics: StateStoreMetrics = StateStoreMetrics(state.map.size.toLong, 0L, Map.empty)

  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo = info

  override def toString: String = s"FloorWriteStore[$id, version=$version]"
}
