package io.rockstate.storage

/** Figures of the last load, reported as custom metrics. */
final case class LoadStats(loadMs: Long, bytesDownloaded: Long, filesDownloaded: Int,
    changelogsReplayed: Int, snapshotsRepaired: Int = 0) // 1: rebuilt past a damaged snapshot
