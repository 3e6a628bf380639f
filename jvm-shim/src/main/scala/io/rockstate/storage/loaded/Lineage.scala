package io.rockstate.storage.loaded

import io.rockstate.storage.format.{ChangelogRef, SnapshotRef, VersionManifest}
import io.rockstate.storage.restore.SnapshotRestore

/**
 * What a loaded version is made of: the snapshot it starts from (`base`; None is the empty
 * state), that snapshot's state id (the version file it was taken from), and the changelogs
 * replayed on top of it, oldest first. Immutable: a load, a rebase, a snapshot on the commit
 * path and a commit each make a new one.
 *
 * {{{
 *   base (snapshot of v4) ── v5.changelog ── v6.changelog ── v7.changelog
 *   stateId = v7's version file (the last link), or the base's own when the chain is empty
 * }}}
 */
final case class Lineage(base: Option[SnapshotRef], baseStateId: String,
    chain: Vector[ChangelogRef]) {

  /** The state id of the version this lineage loads: its last link's version file. */
  def stateId: String = chain.lastOption.map(_.path).getOrElse(baseStateId)

  /** With `version`'s own changes, unless a snapshot of that very version holds them already. */
  def extendedBy(link: ChangelogRef): Lineage =
    if (base.forall(_.version < link.version)) copy(chain = chain :+ link) else this

  /** Whether `ref`, a snapshot taken from version file `refStateId`, is a later point of it. */
  def passesThrough(ref: SnapshotRef, refStateId: String): Boolean =
    base.forall(_.version < ref.version) &&
      chain.exists(c => c.version == ref.version && c.path == refStateId)

  /** Started from `ref` instead, keeping only the changelogs after it. */
  def rebasedOnto(ref: SnapshotRef, refStateId: String): Lineage =
    Lineage(Some(ref), refStateId, chain.filter(_.version > ref.version))

  /** The paths of the files it needs up to, not including, `version`'s own changes. */
  def pathsBefore(version: Long): Seq[String] =
    base.map(_.path).toSeq ++ chain.filter(_.version < version).map(_.path)
}

object Lineage {
  val Empty: Lineage = Lineage(None, SnapshotRestore.EmptyState, Vector.empty)

  /** `m`'s lineage, its base's state id being `baseStateId`. */
  def of(m: VersionManifest, baseStateId: String): Lineage =
    Lineage(m.snapshot, baseStateId, m.changelogs.toVector)

  /** Just snapshotted as `ref`, from version file `stateId`: nothing to replay. */
  def snapshot(ref: SnapshotRef, stateId: String): Lineage =
    Lineage(Some(ref), stateId, Vector.empty)
}
