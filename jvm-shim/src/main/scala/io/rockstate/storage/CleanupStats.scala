package io.rockstate.storage

/** What one cleanup run did. */
final case class CleanupStats(
    versionsExpired: Int, snapshotsExpired: Int, filesDeleted: Int, orphansDeleted: Int)
