package io.rockstate.storage.format

/** A full RocksDB snapshot of version `version`, taken after the commit with `stateId`. */
final case class SnapshotManifest(
    formatVersion: Int,
    version: Long,
    operatorId: Long,
    partitionId: Int,
    storeName: String,
    stateId: String,
    numKeys: Long,
    useColumnFamilies: Boolean,
    columnFamilies: Seq[ColumnFamilyEntry],
    files: Seq[StateFile],
    stats: SnapshotStats,
    createdAtMs: Long,
    writer: String,
    metaPack: Option[MetaPackRef] = None) // format 3; format 2 lists meta files in `files`
