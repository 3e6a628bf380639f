package io.rockstate.storage.retention

/** What one cleanup run did. */
final case class CleanupStats(
    versionsExpired: Int, snapshotsExpired: Int, filesDeleted: Int, orphansDeleted: Int)
