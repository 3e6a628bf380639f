package io.rockstate.storage.format

import com.fasterxml.jackson.databind.ObjectMapper

/**
 * The JSON documents rockstate writes per store: a version manifest per committed version (this)
 * and a snapshot manifest per uploaded RocksDB snapshot (`SnapshotManifest`).
 * docs/checkpoint-format.md is their one description; the Python tools read the same JSON. Bump
 * `FormatVersion` on any incompatible change and keep reading the older ones.
 *
 * Version `version` of a store = the snapshot `snapshot` (None: empty state) plus the replay of
 * `changelogs`, every version after the snapshot's up to this one, in order. Self-contained:
 * loading a version reads this manifest, the snapshot's manifest and the files they name.
 *
 * Format 5 (the one written) lets a snapshot's small SSTs share one object, a pack: a file
 * entry with `inPack` is `size` bytes at `inPack.offset` of the `inPack.packSize`-byte object
 * at its `path` (`SstPacks`). Format 4 adds `rowChecksums`: whether the store's values carry per-row
 * checksums (`RowChecksum`), fixed when the store is created and kept by every later version;
 * earlier formats have none. Format 3 is the header of a version file (`VersionFile`), which also holds
 * the version's own changes: on disk `changelogs` lists the earlier versions' changes only, and
 * `VersionFile.read` appends the file itself, so in memory every format lists the whole
 * lineage. Format 2 is a JSON file of its own (`manifests/<version>.json`) naming changelog
 * files. Format 1 manifests (rockstate 0.1) had no changelogs and listed the snapshot's files
 * in `files`. All three are read.
 */
final case class VersionManifest(
    formatVersion: Int,
    version: Long,
    operatorId: Long,
    partitionId: Int,
    storeName: String,
    numKeys: Long,
    useColumnFamilies: Boolean,
    columnFamilies: Seq[ColumnFamilyEntry],
    snapshot: Option[SnapshotRef],
    changelogs: Seq[ChangelogRef],
    commit: Option[CommitRecord],
    createdAtMs: Long,
    writer: String,
    files: Seq[StateFile] = Nil, // format 1 only
    rowChecksums: Boolean = false) { // format 4: every value carries a checksum (`RowChecksum`)

  /** Format 1: the manifest lists the version's files; later formats name a lineage. */
  @com.fasterxml.jackson.annotation.JsonIgnore
  def isFormat1: Boolean = formatVersion == 1

  /** Every checkpoint path this manifest keeps alive (for the shared-file registry). */
  def references: Seq[String] =
    if (isFormat1) files.map(_.path) else snapshot.map(_.path).toSeq ++ changelogs.map(_.path)

  /**
   * Whether the snapshot manifest at `snapshotPath`, taken after the commit `snapshotStateId`,
   * holds this version's state: the snapshot of the attempt whose manifest landed, not of an
   * attempt it replaced.
   */
  def isStateOf(snapshotPath: String, snapshotStateId: String): Boolean =
    changelogs.lastOption match {
      case Some(c) => c.version == version && c.path == snapshotStateId
      case None => snapshot.exists(s => s.version == version && s.path == snapshotPath)
    }

  /** The identity of the state this version holds: its own changelog's unique path. */
  def stateId: String = changelogs.lastOption.map(_.path).orElse(snapshot.map(_.path))
    .getOrElse(if (isFormat1) s"legacy:$version" else "empty")
}

object VersionManifest {
  val FormatVersion = 5
  val Writer = "rockstate-jvm"


  /** Parses a version manifest; `where` names the file in the error so a user can find it. */
  def fromJson(bytes: Array[Byte], where: String): VersionManifest = {
    val (tree, m) = parse(bytes, where, classOf[VersionManifest])
    // Format 4 says whether values carry checksums: a missing flag would read them wrong.
    if (m.formatVersion >= 4 && !tree.path("rowChecksums").isBoolean) throw missingFields(where)
    val complete = m.formatVersion match {
      case 1 => m.files != null
      case 2 => m.changelogs != null && m.snapshot != null && m.columnFamilies != null
      case _ => m.changelogs != null && m.snapshot != null && m.columnFamilies != null &&
        m.commit != null && m.commit.isDefined
    }
    if (!complete || !familiesComplete(m.columnFamilies)) throw missingFields(where)
    // Checkpoint input: every name it gives a file must stay inside the store (the files a
    // cleanup deletes and a load reads are these), checked before anything uses them.
    if (m.isFormat1 || m.files != null) checkFiles(m.files, where) // format 2+: empty, if any
    if (!m.isFormat1) {
      m.snapshot.foreach(s => CheckpointPath.relative(s.path, s"manifest $where, snapshot.path"))
      m.changelogs.zipWithIndex.foreach { case (c, i) =>
        if (c == null) throw missingFields(where)
        CheckpointPath.relative(c.path, s"manifest $where, changelogs[$i].path (version " +
          s"${c.version})")
      }
    }
    // Format 1 lists plain files only (packs came with format 5); Jackson reads no inPack as null.
    val files = if (m.files == null) m.files else m.files.map { f =>
      if (f.inPack != null && f.inPack.isDefined) {
        throw new CorruptCheckpointException(s"rockstate: manifest $where of format " +
          s"${m.formatVersion} names a packed file (${f.path}), which only format 5 has; it " +
          "is corrupt.")
      }
      f.copy(inPack = None)
    }
    if (m.isFormat1) m.copy(files = files, snapshot = None, changelogs = Nil, commit = None)
    else m.copy(files = files)
  }

  def snapshotFromJson(bytes: Array[Byte], where: String): SnapshotManifest = {
    val (_, m) = parse(bytes, where, classOf[SnapshotManifest])
    if (m.files == null || m.stateId == null || m.columnFamilies == null ||
      !familiesComplete(m.columnFamilies)) throw missingFields(where)
    // Format 3 keeps RocksDB's small files in the pack: without its data the snapshot cannot
    // open (the JVM's parser fuzz found a pack without `data` reaching the unpacker).
    if ((m.formatVersion >= 3 && (m.metaPack == null || m.metaPack.isEmpty)) ||
      (m.metaPack != null && m.metaPack.exists(_.data == null))) {
      throw missingFields(where)
    }
    checkFiles(m.files, where)
    // Jackson reads an absent Option as null.
    val files = m.files.map(f => if (f.inPack == null) f.copy(inPack = None) else f)
    if (m.formatVersion < 5 && files.exists(_.inPack.isDefined)) {
      throw new CorruptCheckpointException(s"rockstate: manifest $where of format " +
        s"${m.formatVersion} names packed files, which only format 5 has; it is corrupt.")
    }
    checkPacks(files, where)
    m.copy(files = files, metaPack = if (m.metaPack == null) None else m.metaPack)
  }

  /**
   * Checkpoint input: each pack member lies inside its pack, and every member of one pack
   * agrees on its size (the completion check and the listing compare against it).
   */
  private def checkPacks(files: Seq[StateFile], where: String): Unit = {
    files.zipWithIndex.foreach { case (f, i) =>
      f.inPack.foreach { p =>
        if (f.size < 0 || p.offset < 0 || p.packSize < 0 || p.offset > p.packSize - f.size) {
          throw new CorruptCheckpointException(s"rockstate: manifest $where, files[$i] " +
            s"(${f.path}) lies outside its pack: ${f.size} bytes at offset ${p.offset} of a " +
            s"${p.packSize}-byte pack. The manifest is corrupt; restore it from a trusted copy.")
        }
      }
    }
    files.filter(_.inPack.isDefined).groupBy(_.path).foreach { case (path, members) =>
      val sizes = members.flatMap(_.inPack).map(_.packSize).distinct
      if (sizes.size > 1) {
        throw new CorruptCheckpointException(s"rockstate: manifest $where gives pack $path " +
          s"several sizes (${sizes.mkString(", ")}); it is corrupt.")
      }
    }
    val plainAndPacked = files.filter(_.inPack.isEmpty).map(_.path).toSet
      .intersect(files.filter(_.inPack.isDefined).map(_.path).toSet)
    if (plainAndPacked.nonEmpty) {
      throw new CorruptCheckpointException(s"rockstate: manifest $where names " +
        s"${plainAndPacked.head} both as a file and as a pack; it is corrupt.")
    }
  }

  /** Column family entries, when a manifest has them: each with a name. */
  private def familiesComplete(families: Seq[ColumnFamilyEntry]): Boolean =
    families == null || families.forall(c => c != null && c.name != null)

  /** A manifest's files: each `path` inside the store, each `localName` one plain name. */
  private def checkFiles(files: Seq[StateFile], where: String): Unit =
    files.zipWithIndex.foreach { case (f, i) =>
      if (f == null) throw missingFields(where)
      CheckpointPath.relative(f.path, s"manifest $where, files[$i].path")
      CheckpointPath.fileName(f.localName, s"manifest $where, files[$i].localName (${f.path})")
    }

  private def parse[T](bytes: Array[Byte], where: String, cls: Class[T])
      : (com.fasterxml.jackson.databind.JsonNode, T) = {
    val tree = CheckpointJson.parse(bytes, (why, e) => new CorruptCheckpointException(
      s"rockstate: manifest $where is not valid JSON ($why); the checkpoint is corrupt. " +
        "Restore the file from a backup or run `rockstate verify` on the checkpoint location " +
        "to see what else is affected.", e))
    // A whole number: Jackson would read 1.5 as format 1.
    val format = if (tree.path("formatVersion").isIntegralNumber) {
      tree.path("formatVersion").asInt(0)
    } else 0
    if (format <= 0) throw missingFields(where)
    if (format > FormatVersion) {
      throw new CorruptCheckpointException(
        s"rockstate: manifest $where has format version $format, newer than this rockstate " +
          s"reads ($FormatVersion); upgrade rockstate to read this checkpoint.")
    }
    val m = CheckpointJson.bind(tree, cls, (why, e) => new CorruptCheckpointException(
      s"rockstate: manifest $where does not match the manifest schema ($why); the checkpoint " +
        "is corrupt.", e))
    if (m == null) throw missingFields(where)
    (tree, m)
  }

  private def missingFields(where: String) = new CorruptCheckpointException(
    s"rockstate: manifest $where is missing required fields; the checkpoint is corrupt.")
}
