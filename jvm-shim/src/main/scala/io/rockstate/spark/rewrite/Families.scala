package io.rockstate.spark.rewrite

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, StateStoreProvider}

import io.rockstate.spark.SparkStateStore

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
