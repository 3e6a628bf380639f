package io.rockstate.spark.rewrite

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, StateStoreId, StateStoreProvider}

import io.rockstate.spark.SparkStateStore

/**
 * One key of a transformWithState column family with its value, or a list state's values, as
 * UnsafeRow bytes: the form in which a rewrite moves such state between providers (rockstate
 * and Spark's RocksDB provider encode a family's rows alike, but each provider's store is
 * written and read only through Spark's state store API).
 */
final case class FamilyRow(family: String, key: Array[Byte], values: Seq[Array[Byte]])

/** Opening and creating a transformWithState store's column families on either provider. */
object Families {

  /**
   * Declares `layout`'s family on a store opened for reading, as a transformWithState query
   * does before it reads: Spark's provider decodes a family only once it is declared on the
   * store (a family it never had is then an empty one, in memory only, gone with `abort`).
   */
  def open(store: ReadStateStore, layout: FamilyLayout): Unit = store match {
    case s: SparkStateStore => s.registerFamily(layout.name, layout.keySchema,
      layout.valueSchema, layout.keySpec, layout.multipleValues, layout.isInternal)
    case s: StateStore => create(s, layout)
    case other => throw new UnsupportedOperationException(s"rockstate: the store $other of " +
      s"${other.id} cannot declare column families; a rewrite reads transformWithState " +
      "state from rockstate's or Spark's RocksDB provider only")
  }

  /** Creates `layout`'s family on a store being written, as the query created it. */
  def create(store: StateStore, layout: FamilyLayout): Unit =
    store.createColFamilyIfAbsent(layout.name, layout.keySchema, layout.valueSchema,
      layout.keySpec, layout.multipleValues, layout.isInternal)

  /**
   * A store of `provider` at `version` that column families can be declared on: the read
   * store where it is one (Spark's RocksDB provider and rockstate's), else a write store that
   * the caller aborts.
   */
  def readStore(provider: StateStoreProvider, version: Long): ReadStateStore =
    provider.getReadStore(version) match {
      case s: StateStore => s
      case other => other.abort(); provider.getStore(version)
    }

  /** Keys (rows as stored) in every family of `families` the store holds. */
  def countKeys(store: ReadStateStore, families: Seq[FamilyLayout]): Long = store match {
    case s: SparkStateStore =>
      s.allColumnFamilyNames.toSeq.map { f =>
        val rows = s.storedRows(f)
        try rows.size.toLong finally rows.close()
      }.sum
    case other =>
      families.filterNot(_.name == StateStore.DEFAULT_COL_FAMILY_NAME).map { f =>
        open(other, f)
        other.iterator(f.name).size.toLong
      }.sum
  }

  def row(bytes: Array[Byte], fields: Int): UnsafeRow = {
    val r = new UnsafeRow(fields)
    r.pointTo(bytes, bytes.length)
    r
  }
}

/**
 * Reads one old partition of a transformWithState store through the source provider's API, on
 * an executor: every key of every family in `source.families` (a list state's values by
 * `valuesIterator`: a store's iterator gives a list's first value only), each paired with the
 * new partition Spark's shuffle will send its grouping key to. The store stays open until the
 * task completes and is aborted then: reading writes nothing.
 */
object FamilyRowsReader {

  def read(source: RewriteTarget, version: Long, partitionId: Int, partitions: Int,
      hadoopConf: Configuration): Iterator[(Int, FamilyRow)] = {
    val id = StateStoreId(source.stateRoot, source.operatorId, partitionId, source.storeName)
    val provider = PartitionWriter.newProvider(source, id, hadoopConf)
    val store = try Families.readStore(provider, version) catch {
      case e: Throwable => provider.close(); throw e
    }
    TaskContext.get().addTaskCompletionListener[Unit] { _ =>
      try store.abort() finally provider.close()
    }
    // rockstate's store knows its families; Spark's has every family it is asked for.
    val held: String => Boolean = store match {
      case s: SparkStateStore => s.familyIds.contains
      case _ => _ => true
    }
    val (defaults, named) = source.families.partition(_.name == StateStore.DEFAULT_COL_FAMILY_NAME)
    if (defaults.nonEmpty && held(StateStore.DEFAULT_COL_FAMILY_NAME) && store.iterator().hasNext) {
      throw new IllegalStateException(s"rockstate: the default column family of $id holds " +
        "state, which transformWithState never writes there; the rewrite cannot place it and " +
        "stops before the checkpoint names anything it wrote.")
    }
    named.iterator.filter(f => held(f.name)).flatMap { layout =>
      Families.open(store, layout)
      val placement = new FamilyPlacement(layout, partitions)
      store.iterator(layout.name).map { pair =>
        // The store reuses its rows: keep copies.
        val key = pair.key.copy()
        val values =
          if (!layout.multipleValues) Vector(pair.value.copy().getBytes)
          else store.valuesIterator(key, layout.name).map(_.copy().getBytes).toVector
        (placement.partitionOf(key), FamilyRow(layout.name, key.getBytes, values))
      }
    }
  }
}

/** Writes the rows `FamilyRowsReader` read into a new partition's store. */
object FamilyRowsWriter {

  /**
   * Creates every family the old store had, then puts each row (a list's values by put and
   * merges, the calls a transformWithState query makes); returns the keys written.
   */
  def fill(store: StateStore, families: Seq[FamilyLayout], rows: Iterator[FamilyRow]): Long = {
    val layouts = families.map(f => f.name -> f).toMap
    val created = mutable.Set.empty[String]
    def ensure(layout: FamilyLayout): Unit = if (created.add(layout.name)) {
      if (layout.name != StateStore.DEFAULT_COL_FAMILY_NAME) Families.create(store, layout)
      else store match {
        case s: SparkStateStore => s.createStoredFamily(layout.name) // Spark's always has it
        case _ =>
      }
    }
    families.filter(_.inSource).foreach(ensure)
    rows.foldLeft(0L) { (n, row) =>
      val layout = layouts.getOrElse(row.family, throw new IllegalStateException(
        s"rockstate: a row of column family '${row.family}' reached ${store.id}, whose " +
          "operator has no such family; the rewrite stops before the checkpoint names it."))
      ensure(layout)
      require(row.values.nonEmpty, s"rockstate: key of '${row.family}' without a value")
      val key = Families.row(row.key, layout.keySchema.length)
      val nValue = layout.valueSchema.length
      store.put(key, Families.row(row.values.head, nValue), layout.name)
      row.values.tail.foreach(v => store.merge(key, Families.row(v, nValue), layout.name))
      n + 1
    }
  }
}
