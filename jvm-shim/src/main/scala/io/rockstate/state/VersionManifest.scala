package io.rockstate.state

import com.fasterxml.jackson.databind.{DeserializationFeature, ObjectMapper}
import com.fasterxml.jackson.databind.json.JsonMapper
import com.fasterxml.jackson.module.scala.DefaultScalaModule

/**
 * The manifest of one committed version of one store: every file the version needs, with its
 * size and checksum. docs/checkpoint-format.md is the schema's one description; the Python
 * tools read the same JSON. Bump `FormatVersion` on any incompatible change and keep reading
 * the older ones.
 */
final case class StateFile(
    localName: String, // the file's name inside the RocksDB directory
    path: String, // where it lives, relative to the store's checkpoint directory
    size: Long,
    crc32: Long,
    kind: String) // "sst" (shared across versions) or "meta" (this version only)

final case class ColumnFamilyEntry(name: String, id: Int)

final case class SnapshotStats(
    syncMs: Long, // on the task: flush and local checkpoint
    asyncMs: Long, // upload of new files and the manifest
    bytesUploaded: Long,
    bytesReused: Long,
    filesUploaded: Int,
    filesReused: Int)

final case class VersionManifest(
    formatVersion: Int,
    version: Long,
    operatorId: Long,
    partitionId: Int,
    storeName: String,
    numKeys: Long,
    useColumnFamilies: Boolean,
    columnFamilies: Seq[ColumnFamilyEntry],
    files: Seq[StateFile],
    stats: SnapshotStats,
    createdAtMs: Long,
    writer: String) {

  def stateBytes: Long = files.map(_.size).sum
}

object VersionManifest {
  val FormatVersion = 1
  val Writer = "rockstate-jvm"

  private val mapper: ObjectMapper = JsonMapper.builder()
    .addModule(DefaultScalaModule)
    .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
    .build()

  def toJson(m: VersionManifest): Array[Byte] =
    mapper.writerWithDefaultPrettyPrinter().writeValueAsBytes(m)

  /** Parses a manifest; `where` names the file in the error so a user can find it. */
  def fromJson(bytes: Array[Byte], where: String): VersionManifest = {
    val m = try mapper.readValue(bytes, classOf[VersionManifest]) catch {
      case e: Exception =>
        throw new CorruptCheckpointException(
          s"rockstate: manifest $where is not valid JSON (${e.getMessage.takeWhile(_ != '\n')}); " +
            "the checkpoint is corrupt. Restore the file from a backup or run " +
            "`rockstate verify` on the checkpoint location to see what else is affected.", e)
    }
    if (m == null || m.files == null || m.formatVersion <= 0) {
      throw new CorruptCheckpointException(
        s"rockstate: manifest $where is missing required fields; the checkpoint is corrupt.")
    }
    if (m.formatVersion > FormatVersion) {
      throw new CorruptCheckpointException(
        s"rockstate: manifest $where has format version ${m.formatVersion}, newer than this " +
          s"rockstate reads ($FormatVersion); upgrade rockstate to read this checkpoint.")
    }
    m
  }
}

/** A checkpoint file that is missing, truncated or fails its checksum. Never read as empty. */
class CorruptCheckpointException(message: String, cause: Throwable = null)
  extends java.io.IOException(message, cause)
