package org.apache.spark.ui.rockstate

import io.rockstate.checkpoint.{AbortedCheckpoint, AcknowledgedStore, CheckpointAborted, CheckpointAcknowledged, CheckpointCompleted, CheckpointTotals, SnapshotAckStats}
import io.rockstate.storage.ExecutorStoreFigures

/**
 * rockstate's events as the tab takes them from an event log, which may come from anyone: a
 * field that is missing (null once Jackson read it) refuses the event with the field named,
 * and every string is cut to `UiLimits.MaxName` characters (a reason to `MaxText`), so a
 * crafted log cannot make an entry large. Numbers are taken as they are: the page shows any.
 */
private[rockstate] object UiEvents {
  type Checked[T] = Either[String, T]

  def acknowledged(a: CheckpointAcknowledged): Checked[CheckpointAcknowledged] = for {
    ids <- ids(a.queryId, a.runId, a.checkpointRoot)
    store <- present("store", a.store).flatMap(acknowledgedStore)
  } yield a.copy(queryId = ids._1, runId = ids._2, checkpointRoot = ids._3, store = store)

  def completed(c: CheckpointCompleted): Checked[CheckpointCompleted] = for {
    ids <- ids(c.queryId, c.runId, c.checkpointRoot)
    totals <- present[CheckpointTotals]("totals", c.totals)
  } yield c.copy(queryId = ids._1, runId = ids._2, checkpointRoot = ids._3, totals = totals)

  def aborted(a: CheckpointAborted): Checked[CheckpointAborted] = for {
    ids <- ids(a.queryId, a.runId, a.checkpointRoot)
    why <- present[AbortedCheckpoint]("aborted", a.aborted)
    reason <- text("aborted.reason", why.reason, UiLimits.MaxText)
  } yield a.copy(queryId = ids._1, runId = ids._2, checkpointRoot = ids._3,
    aborted = why.copy(reason = reason))

  def executor(f: ExecutorStoreFigures): Checked[ExecutorStoreFigures] =
    name("executorId", f.executorId).map(id => f.copy(executorId = id))

  private def acknowledgedStore(s: AcknowledgedStore): Checked[AcknowledgedStore] = for {
    storeName <- name("store.storeName", s.storeName)
    executorId <- name("store.executorId", s.executorId)
    storeDir <- name("store.storeDir", s.storeDir)
    snapshot <- name("store.snapshotManifest", s.snapshotManifest)
    version <- name("store.versionManifest", s.versionManifest)
    _ <- present[SnapshotAckStats]("store.figures", s.figures)
  } yield s.copy(storeName = storeName, executorId = executorId, storeDir = storeDir,
    snapshotManifest = snapshot, versionManifest = version)

  private def ids(queryId: String, runId: String,
      root: String): Checked[(String, String, String)] = for {
    q <- name("queryId", queryId)
    r <- name("runId", runId)
    c <- name("checkpointRoot", root)
  } yield (q, r, c)

  /** `s` cut to `UiLimits.MaxName`, or why there is none. */
  def name(field: String, s: String): Checked[String] = text(field, s, UiLimits.MaxName)

  private def text(field: String, s: String, max: Int): Checked[String] =
    present(field, s).map(UiLimits.cut(_, max))

  private def present[T <: AnyRef](field: String, value: T): Checked[T] =
    if (value == null) Left(s"no $field") else Right(value)
}
