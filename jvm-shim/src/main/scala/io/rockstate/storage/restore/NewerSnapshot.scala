package io.rockstate.storage.restore

import scala.util.control.NonFatal

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{SnapshotManifest, SnapshotRef, VersionManifest}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * The newest snapshot of a version's own lineage that landed after the version file was
 * written. A snapshot uploads after its commit, so a snapshot version's file (and the ones
 * after it, until the upload lands) names the snapshot before: a fresh load of it would replay
 * every change since, a whole first batch's load included. A snapshot manifest's state id is
 * the exact version file it was taken from, so it is a point of the lineage only if that file
 * is a link of it. Listing the snapshots is a request on an object store, so a load looks only
 * when it would replay many changes.
 */
object NewerSnapshot {

  /**
   * Changes a fresh load would replay before it looks for a newer snapshot: a replay costs by
   * the record (a load replaying a million, 838 KB of changelog, took 2.5 s), a listing one
   * request.
   */
  val MinReplayRecords: Long = 100000

  /**
   * `m` rebased onto the newest snapshot of its lineage after the one it names, with that
   * snapshot's manifest (read once here: the restore takes it as read, no second request), or
   * None. Only a snapshot cleanup keeps until the next commit names it is taken
   * (`RockstateConf.keepsSnapshotUntil`, as a commit's own rebase); a manifest that cannot
   * be read is passed over, and one that fails to restore is the caller's to fall back from.
   */
  def of(m: VersionManifest, dir: StoreCheckpointDir, conf: RockstateConf,
      neededBy: String): Option[(VersionManifest, SnapshotManifest)] = {
    val lineage = m.changelogs.map(c => c.version -> c.path).toMap
    def rebased(path: String, version: Long): Option[(VersionManifest, SnapshotManifest)] = {
      val taken = try Some(dir.readSnapshotManifest(path, neededBy)) catch {
        case NonFatal(_) => None
      }
      taken.filter(s => s.version == version && s.stateId == lineage(version)).map(s =>
        (m.copy(snapshot = Some(SnapshotRef(version, path)),
          changelogs = m.changelogs.filter(_.version > version)), s))
    }
    if (m.isFormat1 || m.changelogs.map(_.records).sum < MinReplayRecords) None
    else dir.listSnapshots().reverseIterator
      .filter { case (_, v, _) => lineage.contains(v) && conf.keepsSnapshotUntil(v, m.version + 1) }
      .flatMap { case (path, v, _) => rebased(path, v) }
      .nextOption()
  }
}
