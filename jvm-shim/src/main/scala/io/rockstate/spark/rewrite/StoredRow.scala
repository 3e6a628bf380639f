package io.rockstate.spark.rewrite

/** One row of a column family as a rockstate store holds it (the key without the family id). */
final case class StoredRow(family: String, key: Array[Byte], value: Array[Byte])
