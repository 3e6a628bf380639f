package io.rockstate.checkpoint

/** The figures of one partition's snapshot, as its snapshot manifest records them. */
final case class SnapshotFigures(
    syncMs: Long,
    asyncMs: Long,
    bytesUploaded: Long,
    bytesReused: Long,
    filesUploaded: Int,
    filesReused: Int,
    stateBytes: Long, // every file of the snapshot, new and shared
    numKeys: Long)
