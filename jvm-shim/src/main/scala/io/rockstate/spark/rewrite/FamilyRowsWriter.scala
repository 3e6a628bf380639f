package io.rockstate.spark.rewrite

import scala.collection.mutable

import org.apache.spark.sql.execution.streaming.state.StateStore

import io.rockstate.spark.SparkStateStore

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
