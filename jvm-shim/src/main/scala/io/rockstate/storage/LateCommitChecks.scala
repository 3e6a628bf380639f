package io.rockstate.storage

import io.rockstate.storage.format.CorruptCheckpointException
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * The checks of a commit that outlived half the orphan grace (a paused task, a zombie): one
 * that began that long after its load checks before publishing, one that took that long
 * itself checks again after publishing. A later version means the attempt is stale (its batch
 * ran elsewhere and moved on); a file of its lineage gone means cleanup moved past it. Either
 * way it must not go on as if its commit were the one Spark built on.
 */
private[storage] final class LateCommitChecks(storeId: String, checkpointDir: StoreCheckpointDir) {

  /**
   * Fails unless `version` is still the newest and every file of `lineage` (the paths of its
   * snapshot and changelogs, its own changes excluded) is still there.
   */
  def beforePublish(version: Long, lineage: Seq[String]): Unit = {
    checkNotStale(version)
    checkLineage(version, lineage)
  }

  /**
   * The same checks after `path` was published: on failure it is withdrawn (it could never
   * load, or would displace the attempt later versions built on) and the commit fails.
   */
  def afterPublish(version: Long, path: String, lineage: Seq[String]): Unit = {
    try {
      checkLineage(version, lineage)
      checkNotStale(version)
    } catch {
      case e: java.io.IOException =>
        checkpointDir.delete(path)
        throw e
    }
  }

  private def checkNotStale(version: Long): Unit = {
    if (checkpointDir.findVersion(version + 1).isDefined) {
      throw new java.io.IOException(s"rockstate: version ${version + 1} of $storeId exists " +
        s"already, so this attempt of version $version is stale (a paused task or a zombie " +
        "whose batch ran elsewhere); its commit fails.")
    }
  }

  private def checkLineage(version: Long, lineage: Seq[String]): Unit = {
    val missing = lineage.filterNot(checkpointDir.exists)
    if (missing.nonEmpty) {
      throw new CorruptCheckpointException(s"rockstate: this attempt of version $version of " +
        s"$storeId started long ago and its lineage lost ${missing.mkString(", ")} to cleanup " +
        "meanwhile; it is not published (the batch is retried from the current state).")
    }
  }
}
