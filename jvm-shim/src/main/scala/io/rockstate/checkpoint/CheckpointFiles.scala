package io.rockstate.checkpoint

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.rockstate.storage.format.{CorruptCheckpointException, FileKind}
import io.rockstate.storage.location.{CheckpointReader, LocationWriter, StoreCheckpointDir,
  StoreListing}

/**
 * The completed checkpoints of one checkpoint location, on its file system. Every file is read
 * through `CheckpointReader` (no link below the location, a bound per kind of file).
 */
final class CheckpointFiles(val checkpointRoot: String, hadoopConf: Configuration) {
  private val dir = new Path(new Path(checkpointRoot), "rockstate/checkpoints")
  private lazy val fs = dir.getFileSystem(hadoopConf)
  private lazy val writer = new LocationWriter(fs, dir, hadoopConf)
  private lazy val reader = new CheckpointReader(fs, new Path(checkpointRoot))

  def metadataPath(version: Long): Path = new Path(new Path(dir, version.toString), "_metadata")

  /** Versions whose metadata file exists, oldest first (a directory without one is ignored). */
  def completedVersions(): Seq[Long] = {
    val found = Option(fs.globStatus(new Path(dir, "*/_metadata"))).getOrElse(Array.empty)
    found.flatMap(s => s.getPath.getParent.getName.toLongOption).toSeq.sorted
  }

  def write(m: CheckpointMetadata): Unit =
    writer.writeAtomic(metadataPath(m.version), CheckpointMetadata.toJson(m))

  def read(version: Long): CheckpointMetadata = {
    val path = metadataPath(version)
    val bytes = try reader.readAll(path, FileKind.Document, s"completed checkpoint $version")
    catch {
      case e: java.io.FileNotFoundException => throw new CorruptCheckpointException(
        s"rockstate: completed checkpoint $version has no metadata file $path", e)
    }
    CheckpointMetadata.fromJson(bytes, path.toString)
  }

  def abortedPath(version: Long): Path = new Path(new Path(dir, "aborted"), s"$version.json")

  /** Records an aborted checkpoint, then drops all but the newest `AbortedCheckpointFile.Kept`. */
  def writeAborted(r: AbortedCheckpointFile): Unit = {
    writer.writeAtomic(abortedPath(r.version), AbortedCheckpointFile.toJson(r))
    val found = Option(fs.globStatus(new Path(new Path(dir, "aborted"), "*.json")))
      .getOrElse(Array.empty)
    val byVersion = found.flatMap(s => s.getPath.getName.stripSuffix(".json").toLongOption
      .map(_ -> s.getPath)).sortBy(_._1)
    byVersion.dropRight(AbortedCheckpointFile.Kept)
      .foreach { case (_, path) => fs.delete(path, false) }
  }

  /** Drops a completed checkpoint: its metadata first, so it never looks half there. */
  def delete(version: Long): Unit = {
    fs.delete(metadataPath(version), false)
    fs.delete(metadataPath(version).getParent, true)
  }

  /** Whether a file named relative to the checkpoint root exists. */
  def exists(relative: String): Boolean = fs.exists(new Path(new Path(checkpointRoot), relative))

  /** A file's bytes (at most `kind`'s limit), None when it does not exist. */
  def readBytes(relative: String, kind: FileKind, neededBy: => String): Option[Array[Byte]] =
    try Some(reader.readAll(new Path(new Path(checkpointRoot), relative), kind, neededBy)) catch {
      case _: java.io.FileNotFoundException => None
    }

  /** Every file of a store directory (`storeDir` relative to the root), in one listing. */
  def storeListing(storeDir: String): StoreListing =
    new StoreCheckpointDir(new Path(new Path(checkpointRoot), storeDir), hadoopConf,
      Some(new Path(checkpointRoot))).listAll()

  /** Whether Spark's commit log has micro-batch `batchId` (it is written once the batch ends). */
  def batchCommitted(batchId: Long): Boolean = exists(s"commits/$batchId")

  /** The state checkpoint ids Spark's commit log records for `batchId` (format 2 only). */
  def recordedStateIds(batchId: Long): Option[RecordedStateIds] =
    readBytes(s"commits/$batchId", FileKind.LogEntry, s"the state ids of batch $batchId")
      .flatMap(RecordedStateIds.parse)

  /**
   * Deletes temporary files of metadata writes older than `olderThanMs` before `reference`
   * (a storage time): debris of a driver that crashed mid-write.
   */
  def sweepTemporary(reference: Long, olderThanMs: Long): Int = {
    val found = Option(fs.globStatus(new Path(dir, "*/._metadata.*.tmp"))).getOrElse(Array.empty)
    val old = found.filter(_.getModificationTime < reference - olderThanMs)
    old.foreach(s => fs.delete(s.getPath, false))
    old.length
  }

  /** The storage's modification time of a completed checkpoint's metadata. */
  def metadataTime(version: Long): Long = fs.getFileStatus(metadataPath(version)).getModificationTime
}
