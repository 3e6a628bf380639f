package io.rockstate.storage.loaded

import io.rockstate.storage.snapshot.ConfirmedFiles

/**
 * The version a store's RocksDB instance holds, as the load or the commit that made it left it:
 * one value, replaced whole, so no part of it can speak of another version than the rest.
 *
 * @param version the version (-1: none)
 * @param lineage what it is made of: its base snapshot and the changelogs replayed on it
 * @param numKeys its key count
 * @param families its column family table (a commit that changes it snapshots on its path)
 * @param rowChecksums whether its values carry row checksums (fixed when the store began)
 * @param confirmedFiles the SST files a snapshot of this instance may reuse
 * @param byCommit whether this instance's own commit made it (the next batch loads nothing)
 * @param commitId the unique id of this instance's last commit (its version file's uuid)
 */
final case class LoadedVersion(
    version: Long,
    lineage: Lineage,
    numKeys: Long,
    families: Map[String, Int],
    rowChecksums: Boolean,
    confirmedFiles: ConfirmedFiles,
    byCommit: Boolean,
    commitId: String) {

  /** The version's identity: the path of its changelog (unique per commit attempt). */
  def stateId: String = lineage.stateId

  /** Whether it is `v`, and the attempt `wanted` names when it names one. */
  def holds(v: Long, wanted: Option[String]): Boolean = version == v && wanted.forall(_ == stateId)

  /** Nothing loaded, the last commit's id kept. */
  def unloaded: LoadedVersion = copy(version = -1L, byCommit = false)
}

object LoadedVersion {
  val DefaultFamilies: Map[String, Int] = Map("default" -> 0)

  /** Empty state, nothing committed yet: what a store holds before its first load. */
  def empty(rowChecksums: Boolean): LoadedVersion = LoadedVersion(-1L, Lineage.Empty, 0L,
    DefaultFamilies, rowChecksums, new ConfirmedFiles(Nil, ""), byCommit = false, commitId = "")
}
