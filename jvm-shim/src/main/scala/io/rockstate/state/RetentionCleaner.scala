package io.rockstate.state

import scala.util.control.NonFatal

/**
 * Deletes what no retained version needs, in an order that is safe to interrupt anywhere:
 * first the manifests of versions past retention (a version without its manifest no longer
 * exists), then the files only those versions used, then orphans (files of uploads that never
 * got a manifest) once they are older than the grace period, so an upload still under way is
 * never taken for an orphan.
 */
object RetentionCleaner {

  /** Returns the paths of every file the retained versions reference. */
  def clean(dir: StoreCheckpointDir, conf: RockstateConf, nowMs: Long): Set[String] = {
    val versions = dir.listVersions()
    val retained = versions.takeRight(conf.minVersionsToRetain)
    // A retained manifest that cannot be read stops the cleanup: never delete on a doubt.
    val referenced = retained.flatMap(v => dir.readManifest(v).files.map(_.path)).toSet
    val expired = versions.dropRight(conf.minVersionsToRetain)
    val expiredFiles = expired.flatMap { v =>
      val files = try dir.readManifest(v).files.map(_.path) catch {
        case NonFatal(_) => Seq.empty // left to the orphan sweep below
      }
      dir.deleteManifest(v)
      files
    }.toSet
    (expiredFiles -- referenced).foreach(dir.delete)
    dir.listDataFiles().foreach { case (path, status) =>
      if (!referenced.contains(path) && !expiredFiles.contains(path) &&
        status.getModificationTime < nowMs - conf.orphanFileGraceMs) {
        dir.delete(path)
      }
    }
    dir.deleteEmptyMetaDirs()
    referenced
  }
}
