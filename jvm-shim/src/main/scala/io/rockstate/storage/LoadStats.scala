package io.rockstate.storage

/**
 * Figures of the last load, reported as custom metrics. `snapshotsRepaired`: 1 when it rebuilt
 * its version past a damaged snapshot; `reopened`: 1 when it reopened an instance closed for
 * `maxOpenStores` from its local directory.
 */
final case class LoadStats(loadMs: Long, bytesDownloaded: Long, filesDownloaded: Int,
    changelogsReplayed: Int, snapshotsRepaired: Int = 0, reopened: Int = 0)
