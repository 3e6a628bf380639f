package io.rockstate.checkpoint

/** How the coordinator took an acknowledgement (Flink's TaskAcknowledgeResult). */
sealed abstract class AckResult(val name: String) {
  override def toString: String = name
}

object AckResult {
  /** Counted towards its checkpoint. */
  case object Success extends AckResult("SUCCESS")
  /** The store already acknowledged this checkpoint; the first one counts. */
  case object Duplicate extends AckResult("DUPLICATE")
  /** Not a checkpoint this run has: a version off the interval, or a store it does not expect. */
  case object Unknown extends AckResult("UNKNOWN")
  /** The checkpoint was already aborted, subsumed or completed without it: a late ack. */
  case object Discarded extends AckResult("DISCARDED")
}
