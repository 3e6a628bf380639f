package io.rockstate.checkpoint

import io.rockstate.storage.format.{CheckpointJson, StateVersion, VersionManifest}

/**
 * The file of an [[AbortedCheckpoint]]:
 * `<checkpointLocation>/rockstate/checkpoints/aborted/<version>.json`, why a checkpoint never
 * completed, kept so that offline tools (`rockstate report`) can show aborted checkpoints next
 * to the completed ones once the driver is gone. Written from the [[CheckpointAborted]] event the
 * coordinator posts, so the file, the event log and the live view say the same. A later abort of
 * the same version (a restarted run) replaces it; the newest `AbortedCheckpointFile.Kept` stay.
 */
final case class AbortedCheckpointFile(
    formatVersion: Int,
    version: Long,
    batchId: Long,
    queryId: String,
    runId: String,
    reason: String,
    countsAsFailure: Boolean,
    triggeredAtMs: Long,
    abortedAtMs: Long,
    acknowledged: Int,
    expected: Int,
    writer: String)

object AbortedCheckpointFile {
  val FormatVersion = 1
  val Kept = 20

  def of(event: CheckpointAborted): AbortedCheckpointFile = {
    val c = event.aborted
    AbortedCheckpointFile(FormatVersion, c.version, StateVersion.batchOf(c.version),
      event.queryId, event.runId, c.reason, c.countsAsFailure, event.triggeredAtMs,
      c.abortedAtMs, c.acknowledged, c.expected, VersionManifest.Writer)
  }

  def toJson(r: AbortedCheckpointFile): Array[Byte] = CheckpointJson.pretty(r)
}
