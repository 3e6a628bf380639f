package io.rockstate.checkpoint

import io.rockstate.storage.format.{CheckpointJson, StateVersion, VersionManifest}

/**
 * `<checkpointLocation>/rockstate/checkpoints/aborted/<version>.json`: why a checkpoint never
 * completed, kept so that offline tools (`rockstate report`) can show aborted checkpoints next
 * to the completed ones once the driver is gone. A later abort of the same version (a restarted
 * run) replaces it; the newest `AbortRecord.Kept` stay.
 */
final case class AbortRecord(
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

object AbortRecord {
  val FormatVersion = 1
  val Kept = 20

  def of(c: AbortedCheckpoint, queryId: String, runId: String,
      triggeredAtMs: Long): AbortRecord =
    AbortRecord(FormatVersion, c.version, StateVersion.batchOf(c.version), queryId, runId, c.reason,
      c.countsAsFailure, triggeredAtMs, c.abortedAtMs, c.acknowledged, c.expected,
      VersionManifest.Writer)

  def toJson(r: AbortRecord): Array[Byte] = CheckpointJson.pretty(r)
}
