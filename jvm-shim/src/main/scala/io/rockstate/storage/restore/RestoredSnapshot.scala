package io.rockstate.storage.restore

import io.rockstate.storage.format.SnapshotManifest
import io.rockstate.storage.snapshot.ConfirmedFiles

/**
 * What a restore put in a work directory: the snapshot it holds (None: empty state) and the
 * SST files later snapshots may share rather than upload again.
 */
final case class RestoredSnapshot(manifest: Option[SnapshotManifest], confirmed: ConfirmedFiles) {
  /** The state id of what was restored: the snapshot's, or empty state's. */
  def stateId: String = manifest.map(_.stateId).getOrElse(SnapshotRestore.EmptyState)
}
