package io.rockstate.storage.format

/** The snapshot a version is rebuilt from; `path` names its snapshot manifest. */
final case class SnapshotRef(version: Long, path: String)
