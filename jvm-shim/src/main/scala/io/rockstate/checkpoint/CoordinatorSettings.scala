package io.rockstate.checkpoint

/** A query's checkpoint settings (docs/configuration.md), carried by its acknowledgements. */
final case class CoordinatorSettings(retained: Int, timeoutMs: Long, tolerableFailures: Int)
