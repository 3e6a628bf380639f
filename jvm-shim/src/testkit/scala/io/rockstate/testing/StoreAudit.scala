package io.rockstate.testing

import java.nio.file.Files

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.rockstate.storage._
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{CheckpointJson, CorruptCheckpointException, VersionEntry}
import io.rockstate.storage.local.LocalStoreFiles
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.snapshot.SnapshotUploader

/**
 * Checks a store's directory against the format's rules: every data file is referenced by a
 * manifest present, every referenced file exists, and the requested versions load from the
 * checkpoint location alone (a fresh local directory, as on a new executor) with the number
 * of keys their manifests record. Used by the tests and callable from Python through py4j.
 */
object StoreAudit {
  import StoreDirReads._

  /** How often an audit is redone when the store changed while it was read. */
  val MaxReads = 5

  /**
   * Audits `dir`, redoing the audit while a cleanup or commit changes the store under it: a
   * stopped query's executors may still run maintenance, which expires versions between this
   * audit's listing and its reads. A report counts only if the listing of version files and
   * snapshot manifests was the same before and after it; a file that vanished without the
   * listing changing is an error, as is a store that changed on every one of `MaxReads` reads.
   */
  def audit(dir: StoreCheckpointDir, load: Seq[Long], conf: RockstateConf): StoreAuditReport = {
    def listing() = (dir.listVersionEntries(), dir.listSnapshots().map(_._1))
    def paths(l: (Seq[VersionEntry], Seq[String])) = (l._1.map(_.path), l._2)
    @annotation.tailrec
    def attempt(n: Int): StoreAuditReport = {
      val before = listing()
      val report = try Right(auditOnce(dir, before._1, before._2, load, conf)) catch {
        case e: CorruptCheckpointException => Left(e)
      }
      val stable = paths(listing()) == paths(before)
      (report, stable) match {
        case (Right(r), true) => r
        case (Left(e), true) => throw e
        case (_, false) if n < MaxReads => attempt(n + 1)
        case (_, false) => StoreAuditReport(dir.root.toString, Nil, Nil, Map.empty, Nil, Nil,
          Seq(s"the store changed during each of $MaxReads audits; stop the query (and " +
            "wait for its maintenance) before auditing"))
      }
    }
    attempt(1)
  }

  /** One audit of the store whose version entries and snapshot manifests were listed. */
  private def auditOnce(dir: StoreCheckpointDir, entries: Seq[VersionEntry],
      snapshots: Seq[String], load: Seq[Long], conf: RockstateConf): StoreAuditReport = {
    val versions = entries.map(_.version).distinct
    val headers = entries.map(e => e -> dir.readEntryManifest(e))
    val manifests = versions.flatMap(v =>
      VersionEntry.landed(entries.filter(_.version == v)).map(e => headers.find(_._1 == e).get._2))
    val snapshotFiles = snapshots.flatMap(p => dir.readSnapshotManifest(p, "audit").files.map(_.path))
    val referenced = (headers.flatMap(_._2.references) ++ snapshotFiles).toSet
    // Version files are owners: present whether or not a later lineage names them.
    val versionFiles = entries.filterNot(_.isManifest).map(_.path).toSet
    val present = dir.listAll().dataFiles.map(_._1).toSet
    val missing = (referenced -- present -- versionFiles).filterNot(p =>
      p.startsWith("snapshots/") && snapshots.contains(p)).toSeq.sorted
    val errors = Seq.newBuilder[String]
    val loaded = load.flatMap { v =>
      val tmp = Files.createTempDirectory("rockstate-audit").toFile
      val m = manifests.find(_.version == v)
      val db = new VersionedRocksDB(m.map(_.operatorId).getOrElse(-1L),
        m.map(_.partitionId).getOrElse(-1), m.map(_.storeName).getOrElse("?"), dir,
        LocalStoreFiles.forStore(dir.root.toString, "audit", tmp.getAbsolutePath),
        conf.updated(RockstateConf.LocalRecovery, "false"), m.exists(_.useColumnFamilies))
      try {
        db.load(v)
        val it = db.rocksDB.scan(Array.emptyByteArray, None)
        val n = try it.size.toLong finally it.close()
        if (m.exists(_.numKeys != n)) {
          errors += s"version $v: manifest records ${m.get.numKeys} keys, $n read back"
        }
        Some(v -> n)
      } catch {
        case NonFatal(e) =>
          errors += s"version $v: ${e.getMessage}"
          None
      } finally {
        db.close()
        FileUtils.deleteQuietly(tmp)
      }
    }.toMap
    StoreAuditReport(dir.root.toString, versions, snapshots, loaded,
      (present -- referenced).toSeq.sorted, missing, errors.result())
  }

  /**
   * Audits every rockstate store under `<checkpointLocation>/state`, loading the newest
   * `retained` versions of each; returns the reports as JSON (for Python). Snapshot uploads
   * still running in this JVM are waited for first, so their files do not look like orphans.
   */
  def auditCheckpointJson(checkpointLocation: String, retained: Int): String = {
    SnapshotUploader.awaitIdle(120000)
    val conf = RockstateConf.from(Map.empty, retained)
    // The running application's Hadoop settings (an object store's endpoint and keys, say).
    val hadoopConf = org.apache.spark.sql.SparkSession.getActiveSession
      .orElse(org.apache.spark.sql.SparkSession.getDefaultSession)
      .map(_.sparkContext.hadoopConfiguration).getOrElse(new Configuration())
    val stateDir = new Path(checkpointLocation, "state")
    val fs = stateDir.getFileSystem(hadoopConf)
    def stores(p: Path, depth: Int): Seq[Path] =
      if (depth > 3 || !fs.exists(p)) Seq.empty
      else if (fs.exists(new Path(p, "versions")) || fs.exists(new Path(p, "manifests"))) Seq(p)
      else fs.listStatus(p).toSeq.filter(_.isDirectory).flatMap(s => stores(s.getPath, depth + 1))
    val reports = stores(stateDir, 0).map { p =>
      val dir = new StoreCheckpointDir(p, hadoopConf)
      audit(dir, dir.listVersions().takeRight(retained), conf)
    }
    new String(CheckpointJson.pretty(reports), "UTF-8")
  }
}
