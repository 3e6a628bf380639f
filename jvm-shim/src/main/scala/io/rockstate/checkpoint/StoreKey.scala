package io.rockstate.checkpoint

/** One store instance of a query: what a checkpoint expects an acknowledgement from. */
final case class StoreKey(operatorId: Long, storeName: String, partitionId: Int) {
  override def toString: String = s"operator $operatorId store $storeName partition $partitionId"
}
