package io.rockstate.storage.format

/** What the commit itself wrote to the checkpoint location (the task's path). */
final case class CommitStats(changelogBytes: Long, changelogRecords: Long, commitMs: Long)
