package io.rockstate.storage.format

/**
 * What a version file records of the commit that wrote it (its header's `commit`): the
 * changelog written to the checkpoint location on the task's path and the commit's time.
 */
final case class CommitRecord(changelogBytes: Long, changelogRecords: Long, commitMs: Long)
