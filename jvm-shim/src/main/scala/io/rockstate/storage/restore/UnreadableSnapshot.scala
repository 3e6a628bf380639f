package io.rockstate.storage.restore

import io.rockstate.storage.format.SnapshotRef

/**
 * A snapshot that could not be restored: a file missing, or not matching its size and CRC32,
 * named by the cause. Raised by a store's fresh open; `SnapshotRepair` decides what follows.
 */
private[storage] final class UnreadableSnapshot(val ref: SnapshotRef, cause: Throwable)
  extends java.io.IOException(s"the snapshot ${ref.path} of version ${ref.version} cannot " +
    s"be restored: ${cause.getMessage}", cause)
