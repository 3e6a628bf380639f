package io.rockstate.floor

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._

/** What a read store and a write store read alike: the live map. */
private[floor] abstract class FloorReads(state: FloorState, val id: StateStoreId,
    val version: Long) {

  def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    state.checkFamily(colFamilyName)
    state.get(key)
  }

  def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    state.refuse("valuesIterator (multiple values per key)")

  /** The entries whose key starts with `prefixKey` (a store opened for prefix scans). */
  def prefixScan(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = {
    state.checkFamily(colFamilyName)
    val index = state.prefixes.getOrElse(
      state.refuse("prefixScan on a store not opened for prefix scans"))
    val pair = new UnsafeRowPair()
    new StateStoreIterator(index.keys(prefixKey).iterator.map { key =>
      val value = state.get(key)
      if (value == null) {
        throw new IllegalStateException(s"floor: $id's prefix index holds a key its map does not")
      }
      pair.withRows(key, value)
    })
  }

  def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    state.checkFamily(colFamilyName)
    val pair = new UnsafeRowPair()
    new StateStoreIterator(state.entries.iterator.map(e => pair.withRows(e.getKey, e.getValue)))
  }

  // Spark 4.2+ (abstract there).
  def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = state.refuse("prefixScanWithMultiValues")

  def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    state.refuse("iteratorWithMultiValues")

  def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)
}
