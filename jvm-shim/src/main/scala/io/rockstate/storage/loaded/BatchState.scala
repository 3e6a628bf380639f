package io.rockstate.storage.loaded

import io.rockstate.storage.format.Changelog

/**
 * What the batch on the loaded version has done so far: when it began (its load: a commit long
 * after it is checked as a late one), the column family table as it stands, whether it changed
 * anything, and the changelog its writes go to. A load or a commit starts a new one.
 */
final case class BatchState(
    startedAtNanos: Long,
    families: Map[String, Int],
    // Something its changelog field does not show: a family added or dropped, empty state
    // begun on purpose, or writes handed to a commit that has not ended.
    changed: Boolean,
    changelog: Option[Changelog.Writer]) {

  /** Whether anything would differ from the loaded version if it committed now. */
  def wrote: Boolean = changed || changelog.isDefined
}

object BatchState {
  /** A batch that has done nothing yet on a version with `families`. */
  def begin(families: Map[String, Int]): BatchState =
    BatchState(System.nanoTime(), families, changed = false, changelog = None)
}
