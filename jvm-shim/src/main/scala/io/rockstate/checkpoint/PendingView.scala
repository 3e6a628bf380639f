package io.rockstate.checkpoint

/** A pending checkpoint as the Python view shows it. */
final case class PendingView(
    version: Long,
    triggeredAtMs: Long,
    stores: Seq[AcknowledgedStore],
    missing: Seq[StoreKey])
