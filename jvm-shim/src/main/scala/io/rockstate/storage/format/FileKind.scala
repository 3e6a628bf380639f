package io.rockstate.storage.format

/**
 * What kind of file a reader asks a checkpoint location for, and the most bytes one may hold:
 * a larger file is refused before its bytes are held (docs/guarantees.md, "Trust model"). The
 * kinds and limits are those of the offline tools (python/rockstate/checkpoint/file_kind.py,
 * same names; UntrustedInputSuite pins them): far above what Spark or rockstate write for each
 * kind, far below what would exhaust a reader's memory or disk.
 */
sealed abstract class FileKind(val name: String, val limit: Long) {
  override def toString: String = name
}

object FileKind {
  // A constant, inlined: a kind's constructor never waits on this object's initialization.
  private final val MiB = 1048576L

  /** Spark's query metadata: one line of JSON with the query id. */
  case object QueryMetadata extends FileKind("QUERY_METADATA", 1 * MiB)

  /** A commit log entry (state ids: about 600 KB at 4,000 partitions x 4 stores). */
  case object LogEntry extends FileKind("LOG_ENTRY", 64 * MiB)

  /** Spark's operator metadata and state schema files. */
  case object SparkMetadata extends FileKind("SPARK_METADATA", 16 * MiB)

  /**
   * rockstate's JSON documents: snapshot and format 1/2 manifests (a meta pack inline), the
   * coordinator's checkpoint metadata and abort records.
   */
  case object Document extends FileKind("DOCUMENT", 256 * MiB)

  /** Data: version files (a changelog inline), SSTs and packs, changelogs. */
  case object Data extends FileKind("DATA", 4096 * MiB)

  // Lazy: initializing this object may start from one of the kinds, not yet complete.
  lazy val all: Seq[FileKind] = Seq(QueryMetadata, LogEntry, SparkMetadata, Document, Data)
}
