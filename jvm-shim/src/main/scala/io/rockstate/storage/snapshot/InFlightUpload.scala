package io.rockstate.storage.snapshot

import java.util.concurrent.{Future => JFuture}

/** A snapshot upload under way: what to tell and what to cancel if it never ends. */
private[storage] final class InFlightUpload(val version: Long, val startedNanos: Long,
    val listener: SnapshotListener) {
  @volatile var future: JFuture[_] = _
}
