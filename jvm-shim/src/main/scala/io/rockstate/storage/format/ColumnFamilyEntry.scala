package io.rockstate.storage.format

/** A column family of a store and the id its keys are prefixed with. */
final case class ColumnFamilyEntry(name: String, id: Int)
