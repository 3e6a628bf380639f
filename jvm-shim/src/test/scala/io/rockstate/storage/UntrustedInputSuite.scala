package io.rockstate.storage

import java.io.{File, RandomAccessFile}
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.{Base64, UUID}
import java.util.concurrent.TimeoutException
import java.util.zip.CRC32

import scala.concurrent.{Await, Future}
import scala.concurrent.ExecutionContext.Implicits.global
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success, Try, Using}

import com.fasterxml.jackson.databind.node.{ArrayNode, ObjectNode}
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.checkpoint.{CheckpointFiles, CheckpointMetadata, ExpectedStores}
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{Changelog, CheckpointJson, CheckpointPath,
  CorruptCheckpointException, DecompressionBound, FileKind, MetaPack, MetaPackRef, VersionFile,
  VersionManifest}
import io.rockstate.storage.local.LocalStoreFiles
import io.rockstate.storage.location.{CheckpointReader, StoreCheckpointDir}
import io.rockstate.storage.retention.RetentionCleaner
import io.rockstate.testing.StoreDirReads._

/**
 * Checkpoint files are untrusted input (docs/guarantees.md, "Trust model"): the shared rules
 * and hostile inputs of tests/fixtures/untrusted (the Python suite reads the same ones), and
 * stores written by the real code whose manifests were then edited to reach outside.
 */
class UntrustedInputSuite extends AnyFunSuite {

  private val fixtures: File = TestFixtures.dir("untrusted")

  private val rules = CheckpointJson.mapper.readTree(new File(fixtures, "rules.json"))

  private def strings(field: String): Seq[String] =
    rules.get("paths").get(field).elements().asScala.map(_.asText).toSeq

  /** Runs `f` and returns the CorruptCheckpointException it must throw (nothing else). */
  private def refused(what: String)(f: => Any): CorruptCheckpointException = {
    val outcome = try { f; None } catch { case e: Throwable => Some(e) }
    outcome match {
      case Some(e: CorruptCheckpointException) => e
      case Some(e) => fail(s"$what: expected a CorruptCheckpointException, got $e", e)
      case None => fail(s"$what was accepted")
    }
  }

  private def withTempDir[T](f: File => T): T = {
    val dir = Files.createTempDirectory("rockstate-untrusted").toFile
    try f(dir) finally FileUtils.deleteDirectory(dir)
  }

  // ---- (a) the shared rules ----

  test("the decompression bound is the one rules.json pins") {
    assert(DecompressionBound.MinLimitBytes == rules.get("minDecompressionLimitBytes").asLong)
    assert(DecompressionBound.MaxRatio == rules.get("maxDecompressionRatio").asLong)
    assert(DecompressionBound.MaxHeldBytes == rules.get("maxDecompressedBytes").asLong)
    assert(DecompressionBound.limitFor(10) == DecompressionBound.MinLimitBytes)
    assert(DecompressionBound.limitFor(1L << 20) == (1L << 20) * DecompressionBound.MaxRatio)
  }

  test("every path rules.json accepts is contained, every one it refuses is refused") {
    val root = new Path("file:/data/checkpoint/state/0/0")
    strings("accepted").foreach { p =>
      assert(CheckpointPath.relative(p, "test") == p)
      assert(CheckpointPath.within(root, p, "test").toUri.getPath.startsWith("/data/checkpoint/"))
    }
    assert(strings("refused").nonEmpty)
    strings("refused").foreach { p =>
      val e = refused(s"path '$p'")(CheckpointPath.relative(p, "manifest m.json, files[3].path"))
      assert(e.getMessage.contains("manifest m.json, files[3].path"), p)
      assert(e.getMessage.contains("restore it from a trusted copy"), p)
      refused(s"file name '$p'")(CheckpointPath.fileName(p, "test"))
      refused(s"path '$p' under a root")(CheckpointPath.within(root, p, "test"))
    }
    refused("a name with '/'")(CheckpointPath.fileName("sst/1.sst", "test"))
    withTempDir { dir =>
      assert(CheckpointPath.localFile(dir, "CURRENT", "test") == new File(dir, "CURRENT"))
      Seq("../x", "/tmp/x", "..", "a/b").foreach(n =>
        refused(s"local name '$n'")(CheckpointPath.localFile(dir, n, "test")))
    }
  }

  // ---- (b) the hostile inputs every reader refuses ----

  private val cases = CheckpointJson.mapper.readTree(new File(fixtures, "cases.json"))
    .get("cases").elements().asScala.toSeq
    .filter(_.get("readers").elements().asScala.exists(_.asText == "jvm"))

  test("there are hostile inputs of every kind the JVM reads") {
    assert(cases.map(_.get("kind").asText).toSet == Set("metaPack", "changelog", "versionFile"))
  }

  cases.foreach { c =>
    val name = c.get("file").asText
    val kind = c.get("kind").asText
    test(s"$kind $name is refused as corrupt") {
      val file = new File(fixtures, name)
      kind match {
        case "metaPack" => info(checkMetaPack(file).getMessage)
        case "changelog" =>
          info(refused(name)(Changelog.replay(file, name, new CountingTarget)).getMessage)
        case "versionFile" =>
          val crc = crcOf(Files.readAllBytes(file.toPath))
          info(refused(name) {
            // As a load does: the whole file checked, then its changes replayed.
            val parsed = VersionFile.read(file, "versions/1-a.rsv", name, file.length, crc)
            Changelog.replay(VersionFile.changes(file, parsed), parsed.changesLength, name,
              new CountingTarget)
          }.getMessage)
        case other => fail(s"unknown kind $other")
      }
    }
  }

  test("a version file whose header length reaches past its end is refused by name") {
    withTempDir { dir =>
      // A well-formed file (its CRC32 matches) whose header length is within the maximum but
      // past the file's end.
      val bytes = Files.readAllBytes(new File(fixtures, "version-header-past-end.bin").toPath)
      val body = bytes.dropRight(8)
      java.nio.ByteBuffer.wrap(body).putInt(5, bytes.length + 1000)
      val crc = java.nio.ByteBuffer.allocate(4).putInt(crcOf(body).toInt).array()
      val file = new File(dir, "1-a.rsv")
      Files.write(file.toPath, body ++ crc ++ VersionFile.EndMagic)
      val e = refused("header past the end")(VersionFile.read(file, "versions/1-a.rsv",
        file.getPath, file.length, crcOf(Files.readAllBytes(file.toPath))))
      assert(e.getMessage.contains(file.getPath) && e.getMessage.contains("past the end"))
    }
  }

  private def checkMetaPack(file: File): CorruptCheckpointException = withTempDir { outer =>
    val bytes = Files.readAllBytes(file.toPath)
    val pack = MetaPackRef(bytes.length, crcOf(bytes), Base64.getEncoder.encodeToString(bytes))
    val into = new File(outer, "parent/db")
    Files.createDirectories(into.toPath)
    val pwned = new File("/tmp/rockstate-pwned")
    val pwnedBefore = pwned.exists
    val e = refused(file.getName)(MetaPack.unpackInline(pack, into, file.getName))
    val written = Files.walk(outer.toPath).iterator().asScala.filter(Files.isRegularFile(_)).toSeq
    val outside = written.filterNot(_.startsWith(into.toPath))
    assert(outside.isEmpty, s"${file.getName} wrote outside its directory")
    assert(!written.exists(Files.size(_) > DecompressionBound.MinLimitBytes))
    assert(pwnedBefore || !pwned.exists, s"${file.getName} wrote $pwned")
    e
  }

  private def crcOf(bytes: Array[Byte]): Long = {
    val crc = new CRC32()
    crc.update(bytes)
    crc.getValue
  }

  // ---- (b2) JSON no writer produces, in every JSON document the JVM reads ----

  private val fixtureRoot: File = fixtures.getParentFile

  private def fixtureBytes(relative: String): Array[Byte] =
    Files.readAllBytes(new File(fixtureRoot, relative).toPath)

  /** A version file's header: its JSON, between the 9-byte prefix and its changes. */
  private def headerOf(file: Array[Byte]): Array[Byte] = {
    val length = java.nio.ByteBuffer.wrap(file, 5, 4).getInt
    java.util.Arrays.copyOfRange(file, 9, 9 + length)
  }

  /**
   * A JSON document the JVM reads from a checkpoint: a real one (a fixture's), how it is read
   * (`where` naming the file; a refusal must name `named(where)`), and fields to put a
   * pathology in: (JSON pointer of the object or array, its field or index, the kind of value
   * the field holds).
   */
  private final case class JsonDocument(name: String, seed: String,
      read: (Array[Byte], String) => Any, fields: Seq[(String, String, String)],
      named: String => String = identity)

  private lazy val jsonDocuments: Seq[JsonDocument] = {
    val versions = "checkpoint-format/v5/store/versions"
    val firstVersion = new File(fixtureRoot, versions).list().sorted.head
    val snapshots = "checkpoint-format/v5/store/snapshots"
    val firstSnapshot = new File(fixtureRoot, snapshots).list().sorted.head
    val tws = "transform-with-state/spark-4.0/checkpoint"
    val operator = new String(fixtureBytes(s"$tws/state/0/_metadata/v2/0"), StandardCharsets.UTF_8)
    Seq(
      JsonDocument("a version file's header (format 5)", new String(headerOf(
        fixtureBytes(s"$versions/$firstVersion")), StandardCharsets.UTF_8),
        VersionManifest.fromJson, Seq(("", "version", "number"), ("", "storeName", "string"),
          ("", "useColumnFamilies", "boolean"), ("", "commit", "object"),
          ("/commit", "changelogRecords", "number"))),
      JsonDocument("a version manifest (format 2)", new String(fixtureBytes(
        "checkpoint-format/v2/store/manifests/2.json"), StandardCharsets.UTF_8),
        // (format 2 has no commit, or `"commit": null`: Python reads it so too)
        VersionManifest.fromJson, Seq(("", "numKeys", "number"),
          ("", "commit", "optional object"),
          ("/changelogs/0", "path", "string"), ("/changelogs/0", "crc32", "number"),
          ("/columnFamilies/0", "id", "number"))),
      JsonDocument("a snapshot manifest (format 5)", new String(fixtureBytes(
        s"$snapshots/$firstSnapshot"), StandardCharsets.UTF_8),
        VersionManifest.snapshotFromJson, Seq(("", "numKeys", "number"),
          ("", "stateId", "string"), ("", "metaPack", "object"), ("/metaPack", "size", "number"),
          // null, or none, for a file of its own (Python reads it so too)
          ("/files/0", "inPack", "optional object"), ("/files/0/inPack", "offset", "number"))),
      JsonDocument("a completed checkpoint's _metadata", new String(fixtureBytes(
        s"$tws/rockstate/checkpoints/2/_metadata"), StandardCharsets.UTF_8),
        CheckpointMetadata.fromJson, Seq(("", "version", "number"), ("", "totals", "object"),
          ("/stores/0", "storeDir", "string"), ("/stores/0", "figures", "object"),
          ("/stores/0/figures", "numKeys", "number"), ("/stores", "0", "object"))),
      JsonDocument("Spark's operator metadata (v2)", operator.dropWhile(_ != '\n').trim,
        (bytes, where) => readOperatorMetadata(bytes, where),
        Seq(("/stateStoreInfo/0", "numPartitions", "number"),
          ("/stateStoreInfo/0", "storeName", "string"), ("/stateStoreInfo", "0", "object"),
          ("", "stateStoreInfo", "array")), _ => "query/state/0/_metadata/metadata"))
  }

  /** Spark's operator metadata `json` read as the coordinator does, from a checkpoint location. */
  private def readOperatorMetadata(json: Array[Byte], where: String): Any = withTempDir { work =>
    val metadata = new File(work, "query/state/0/_metadata")
    Files.createDirectories(metadata.toPath)
    Files.write(new File(metadata, "metadata").toPath, "v1\n".getBytes(StandardCharsets.UTF_8) ++
      json)
    ExpectedStores.read("file:" + new File(work, "query").getAbsolutePath, new Configuration())
      .fold(why => fail(s"$where: not refused, but read as unknown: $why"), identity)
  }

  private val deep = 100000

  /** Every pathology for a field of `kind`: the ones for any field, then the wrong types. */
  private def pathologies(kind: String): Seq[String] = Seq("NaN", "Infinity", "-Infinity",
    "1e400", "-1e400", "99999999999999999999999", "9" * 5000, "[" * deep + "]" * deep,
    "{\"a\":" * deep + "1" + "}" * deep) ++ (kind match {
    case "number" => Seq("\"5\"", "1.5", "true", "null", "[]", "{}", "\"1e400\"")
    case "string" => Seq("5", "1.5", "true", "[]", "{}")
    case "boolean" => Seq("\"true\"", "1", "null", "[]")
    case "object" => Seq("[]", "\"x\"", "5", "null", "true")
    case "optional object" => Seq("[]", "\"x\"", "5", "true")
    case "array" => Seq("{}", "\"x\"", "5", "true")
  })

  /** `seed` with the field at (`pointer`, `field`) replaced by the raw JSON text `raw`. */
  private def withValue(seed: String, pointer: String, field: String, raw: String): Array[Byte] = {
    val tree = CheckpointJson.mapper.readTree(seed)
    val marker = "@pathology@"
    tree.at(pointer) match {
      case o: ObjectNode =>
        assert(o.has(field), s"$pointer/$field")
        o.put(field, marker)
      case a: ArrayNode => a.set(field.toInt, a.textNode(marker))
      case other => fail(s"$pointer is $other")
    }
    val text = CheckpointJson.mapper.writeValueAsString(tree)
    assert(text.split(marker, -1).length == 2)
    text.replace("\"" + marker + "\"", raw).getBytes(StandardCharsets.UTF_8)
  }

  test("JSON no writer produces (NaN, 1e400, a long's overflow, deep nesting, wrong types) is " +
    "refused as corrupt, naming the file, by every JSON parser") {
    val where = "/checkpoint/fuzzed-file.json"
    val failures = for {
      doc <- jsonDocuments
      _ = doc.read(doc.seed.getBytes(StandardCharsets.UTF_8), where) // the seed itself reads
      (pointer, field, kind) <- doc.fields
      raw <- pathologies(kind)
      failure <- {
        val input = withValue(doc.seed, pointer, field, raw)
        val outcome = try { doc.read(input, where); None } catch { case e: Throwable => Some(e) }
        val shown = if (raw.length > 24) raw.take(12) + s"… (${raw.length} chars)" else raw
        outcome match {
          case Some(e: CorruptCheckpointException) if e.getMessage.contains(doc.named(where)) =>
            None
          case Some(e: CorruptCheckpointException) =>
            Some(s"${doc.name}, $pointer/$field = $shown: refused without naming the file: $e")
          case Some(e) => Some(s"${doc.name}, $pointer/$field = $shown: threw $e")
          case None => Some(s"${doc.name}, $pointer/$field = $shown: accepted")
        }
      }
    } yield failure
    assert(failures.isEmpty, s"${failures.size} inputs not refused as corrupt:\n" +
      failures.mkString("\n"))
  }

  test("JSON nested 64 deep is read, 65 deep refused (Python's MAX_DEPTH)") {
    def refusal(why: String, e: Throwable) = new CorruptCheckpointException(s"f.json: $why", e)
    val at64 = "[" * 64 + "]" * 64
    assert(CheckpointJson.parse(at64.getBytes(StandardCharsets.UTF_8), refusal).isArray)
    val e = refused("65 deep")(CheckpointJson.parse(
      ("[" * 32 + "{\"a\":" * 33 + "1" + "}" * 33 + "]" * 32).getBytes(StandardCharsets.UTF_8),
      refusal))
    assert(e.getMessage.contains("nested more than 64 deep"), e.getMessage)
  }

  // ---- writers never produce what readers refuse ----

  test("a changelog past the decompression bound is stored uncompressed and replays") {
    withTempDir { dir =>
      val file = new File(dir, "log")
      val w = new Changelog.Writer(file, "zstd")
      val value = new Array[Byte](16 << 20) // zeros: zstd packs these far past the ratio
      (1 to 5).foreach(i => w.put(Array(i.toByte), value))
      w.finish()
      val head = Files.readAllBytes(file.toPath).take(6)
      assert(head(5) == Changelog.Codecs("none"), "stored with codec none")
      assert(file.length > 5L * value.length)
      val target = new CountingTarget
      assert(Changelog.replay(file, "log", target) == 5 && target.records == 5)
    }
  }

  test("an ordinary zstd changelog stays compressed") {
    withTempDir { dir =>
      val file = new File(dir, "log")
      val w = new Changelog.Writer(file, "zstd")
      (1 to 1000).foreach(i => w.put(s"key$i".getBytes(StandardCharsets.UTF_8), new Array[Byte](100)))
      w.finish()
      assert(Files.readAllBytes(file.toPath)(5) == Changelog.Codecs("zstd"))
      assert(Changelog.replay(file, "log", new CountingTarget) == 1000)
    }
  }

  // ---- (c) stores written by the real code, then edited ----

  private def conf(local: File) = RockstateConf.from(Map(
    RockstateConf.OrphanFileGraceMs.key -> "0", RockstateConf.SnapshotInterval.key -> "1"), 2)
    .updated(RockstateConf.LocalRecovery, "false")
    .updated(RockstateConf.LocalDir, local.getPath)

  private def openDb(dir: StoreCheckpointDir, local: File, label: String,
      adjust: RockstateConf => RockstateConf = identity) = new VersionedRocksDB(
    0, 0, "default", dir, LocalStoreFiles.forStore(dir.root.toString, label, local.getPath),
    adjust(conf(local)), useColumnFamilies = false)

  /** A store with versions 1 to 6, a snapshot of each, under `work/query/store`. */
  private def writeStore(work: File): StoreCheckpointDir = {
    val store = new File(work, "query/store")
    Files.createDirectories(store.toPath)
    val dir = new StoreCheckpointDir(new Path("file:" + store.getAbsolutePath), new Configuration())
    val db = openDb(dir, new File(work, "writer"), "writer")
    try {
      db.load(0)
      (1 to 6).foreach { v =>
        (1 to 20).foreach(i => db.put(s"k$v-$i".getBytes(StandardCharsets.UTF_8),
          Array.fill[Byte](100)(v.toByte)))
        db.commit(v, forceSnapshot = true)
        assert(db.awaitUploads(60000), s"snapshot of version $v")
      }
    } finally db.close()
    dir
  }

  /** Rewrites a snapshot manifest's first file entry with `edit` (sizes and CRCs untouched). */
  private def editSnapshot(dir: StoreCheckpointDir, relative: String)(
      edit: ObjectNode => Unit): File = {
    val file = new File(dir.root.toUri.getPath, relative)
    val tree = CheckpointJson.mapper.readTree(file).asInstanceOf[ObjectNode]
    edit(tree.get("files").get(0).asInstanceOf[ObjectNode])
    Files.write(file.toPath, CheckpointJson.mapper.writeValueAsBytes(tree))
    Files.deleteIfExists(new File(file.getParentFile, s".${file.getName}.crc").toPath)
    file
  }

  private def snapshotOf(dir: StoreCheckpointDir, version: Long): String =
    dir.readVersionManifest(version).snapshot.get.path

  test("a snapshot manifest naming ../../victim.txt fails the load and cleanup spares it") {
    withTempDir { work =>
      val dir = writeStore(work)
      val victim = new File(work, "victim.txt") // work/query/store/../../victim.txt
      Files.write(victim.toPath, "another query's file\n".getBytes(StandardCharsets.UTF_8))
      val victimCrc = crcOf(Files.readAllBytes(victim.toPath))
      // The snapshot version 6 loads from names the victim, with its very size and CRC32.
      val loaded = snapshotOf(dir, 6)
      val original = Files.readAllBytes(new File(dir.root.toUri.getPath, loaded).toPath)
      editSnapshot(dir, loaded) { f =>
        f.put("path", "../../victim.txt")
        f.put("size", victim.length)
        f.put("crc32", victimCrc)
      }
      val db = openDb(dir, new File(work, "reader"), "reader")
      val e = try refused("loading version 6")(db.load(6)) finally db.close()
      assert(e.getMessage.contains("files[0].path") && e.getMessage.contains(loaded))
      assert(e.getMessage.contains("../../victim.txt") && e.getMessage.contains("untrusted"))
      Files.write(new File(dir.root.toUri.getPath, loaded).toPath, original)
      // An expired snapshot naming it: retention would free, and delete, what it names.
      val expired = dir.listSnapshots().head
      assert(expired._2 == 1L)
      val edited = editSnapshot(dir, expired._1)(_.put("path", "../../victim.txt"))
      edited.setLastModified(System.currentTimeMillis() - 3600000) // past the grace
      Try(new RetentionCleaner(dir, conf(new File(work, "cleaner"))).clean()) match {
        case Failure(err) => assert(err.isInstanceOf[CorruptCheckpointException], err.toString)
        case Success(_) =>
      }
      assert(victim.isFile, "cleanup deleted a file outside the store")
      refused("deleting outside the store")(dir.delete("../../victim.txt"))
      assert(victim.isFile)
    }
  }

  Seq("is absolute" -> s"/tmp/rockstate-untrusted-${UUID.randomUUID()}.sst",
    "climbs out" -> "../escaped.sst").foreach { case (label, localName) =>
    test(s"a snapshot manifest whose localName $label fails the load, writing nothing there") {
      withTempDir { work =>
        val dir = writeStore(work)
        editSnapshot(dir, snapshotOf(dir, 6))(_.put("localName", localName))
        val local = new File(work, "reader")
        val db = openDb(dir, local, "reader")
        try {
          val e = refused("loading version 6")(db.load(6))
          assert(e.getMessage.contains("files[0].localName") && e.getMessage.contains(localName))
          assert(!new File(localName).exists, s"$localName was written")
          // Looked for before the close, which deletes the store's local files.
          val escaped = Files.walk(local.toPath).iterator().asScala
            .filter(_.getFileName.toString == "escaped.sst").toSeq
          assert(escaped.isEmpty, s"written outside the work directory: $escaped")
        } finally db.close()
      }
    }
  }

  // ---- (d) the local disk: links, special files, sizes ----

  /** Moves folder `name` of `parent` to a copy under `elsewhere`, leaving a link to the copy. */
  private def linkElsewhere(parent: File, name: String, elsewhere: File): File = {
    val folder = new File(parent, name)
    val copy = new File(elsewhere, s"${parent.getName}-$name")
    FileUtils.moveDirectory(folder, copy)
    Files.createSymbolicLink(folder.toPath, copy.toPath)
    folder
  }

  private def storeFolder(dir: StoreCheckpointDir): File = new File(dir.root.toUri.getPath)

  Seq("versions", "snapshots").foreach { folder =>
    test(s"a store whose $folder/ folder links to a copy elsewhere fails the load, naming the link") {
      withTempDir { work =>
        val dir = writeStore(work)
        val link = linkElsewhere(storeFolder(dir), folder, new File(work, "elsewhere"))
        val db = openDb(dir, new File(work, "reader"), "reader")
        val e = try refused(s"loading through $folder/")(db.load(6)) finally db.close()
        assert(e.getMessage.contains(s"symbolic link $link"), e.getMessage)
        assert(e.getMessage.contains("Replace the link"), e.getMessage)
      }
    }
  }

  /**
   * Runs `f` with `file` replaced by a FIFO, which is deleted again before the temporary
   * folder is (commons-io's delete opens every file it deletes, and would wait on it).
   */
  private def withFifo[T](file: File)(f: => T): T = {
    Files.deleteIfExists(file.toPath)
    assert(new ProcessBuilder("mkfifo", file.getPath).start().waitFor() == 0, "mkfifo")
    try f finally Files.deleteIfExists(file.toPath)
  }

  /** How loading `version` fails, within 30 s: a reader that opened `fifo` would wait. */
  private def loadFailure(db: VersionedRocksDB, version: Long,
      fifo: File): CorruptCheckpointException = {
    val load = Future(Try(db.load(version)))
    val outcome = try Await.result(load, 30.seconds) catch {
      case _: TimeoutException =>
        // Frees the reader waiting in open(2): opening a FIFO for reading and writing never
        // waits, and closing it ends the reader's input.
        new RandomAccessFile(fifo, "rw").close()
        fail(s"the load blocked on the FIFO $fifo")
    }
    outcome match {
      case Failure(e: CorruptCheckpointException) => e
      case other => fail(s"expected a CorruptCheckpointException, got $other")
    }
  }

  test("a store whose sst/ folder links to a copy elsewhere has no SST read through the link") {
    withTempDir { work =>
      val dir = writeStore(work)
      val link = linkElsewhere(storeFolder(dir), "sst", new File(work, "elsewhere"))
      // Snapshot repair off: the snapshot's failure is the load's.
      val db = openDb(dir, new File(work, "reader"), "reader",
        _.updated(RockstateConf.AutoSnapshotRepair, "false"))
      val e = try refused("loading through sst/")(db.load(6)) finally db.close()
      assert(e.getMessage.contains(s"symbolic link $link"), e.getMessage)
      // On (the default), the snapshot is passed over as damaged: the version is rebuilt from
      // its changes, and none of its SSTs is read through the link.
      val repairing = openDb(dir, new File(work, "repairing"), "repairing")
      try {
        repairing.load(6)
        assert(repairing.loadStats.snapshotsRepaired == 1)
        assert(repairing.rocksDB.get("k6-20".getBytes(StandardCharsets.UTF_8)).head == 6)
      } finally repairing.close()
    }
  }

  test("cleanup deletes nothing through a store folder that is a link") {
    withTempDir { work =>
      val dir = writeStore(work)
      val link = linkElsewhere(storeFolder(dir), "sst", new File(work, "elsewhere"))
      // Another query's file where the link leads: to this store's cleanup, an old orphan.
      val victim = new File(link.toPath.toRealPath().toFile, "victim.sst")
      Files.write(victim.toPath, "another query's SST".getBytes(StandardCharsets.UTF_8))
      victim.setLastModified(System.currentTimeMillis() - 3600000)
      val e = refused("cleaning up through sst/")(
        new RetentionCleaner(dir, conf(new File(work, "cleaner"))).clean())
      assert(e.getMessage.contains(s"symbolic link $link"), e.getMessage)
      assert(victim.isFile, "cleanup deleted a file through the link")
    }
  }

  test("a FIFO in place of a version file fails the load without blocking it") {
    withTempDir { work =>
      val dir = writeStore(work)
      val file = new File(storeFolder(dir), dir.findVersion(6).get.path)
      withFifo(file) {
        val db = openDb(dir, new File(work, "reader"), "reader")
        val e = try loadFailure(db, 6, file) finally db.close()
        assert(e.getMessage.contains(file.getPath), e.getMessage)
        assert(e.getMessage.contains("not a regular file"), e.getMessage)
      }
    }
  }

  test("a FIFO as a version file's Hadoop checksum file fails the load without blocking it") {
    withTempDir { work =>
      val dir = writeStore(work)
      val file = new File(storeFolder(dir), dir.findVersion(6).get.path)
      // Hadoop's local file system reads `.<name>.crc` beside a file it opens, if it is there.
      val sidecar = new File(file.getParentFile, s".${file.getName}.crc")
      withFifo(sidecar) {
        val db = openDb(dir, new File(work, "reader"), "reader")
        val e = try loadFailure(db, 6, sidecar) finally db.close()
        assert(e.getMessage.contains(s"checksum file $sidecar"), e.getMessage)
      }
    }
  }

  test("a snapshot manifest larger than a document may be fails the load before it is read") {
    withTempDir { work =>
      val dir = writeStore(work)
      val manifest = new File(storeFolder(dir), snapshotOf(dir, 6))
      // Sparse: the file takes no disk; its JSON stays at its start, zeros after it.
      val size = (256L << 20) + 1
      Using.resource(new RandomAccessFile(manifest, "rw"))(_.setLength(size))
      val db = openDb(dir, new File(work, "reader"), "reader")
      val e = try refused("loading version 6")(db.load(6)) finally db.close()
      assert(e.getMessage.contains(manifest.getPath), e.getMessage)
      assert(e.getMessage.contains(s"holds $size bytes, more than such a file may " +
        s"(${256L << 20})"), e.getMessage)
    }
  }

  private val commitEntry = "v1\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{\"0\":[[\"a\"]]}}\n"

  test("the driver reads no commit log entry or checkpoint metadata through a link") {
    withTempDir { work =>
      val location = new File(work, "query")
      val commits = new File(location, "commits")
      Files.createDirectories(commits.toPath)
      Files.write(new File(commits, "0").toPath, commitEntry.getBytes(StandardCharsets.UTF_8))
      val files = new CheckpointFiles("file:" + location.getAbsolutePath, new Configuration())
      files.write(CheckpointMetadata.build(1, "q", "r", 0L, 0L, Nil))
      // Read as they are, first.
      assert(files.recordedStateIds(0).isDefined)
      assert(files.read(1).version == 1)
      val elsewhere = new File(work, "elsewhere")
      val linkedCommits = linkElsewhere(location, "commits", elsewhere)
      val e = refused("commits/0 through a link")(files.recordedStateIds(0))
      assert(e.getMessage.contains(s"symbolic link $linkedCommits"), e.getMessage)
      val linkedCheckpoint = linkElsewhere(new File(location, "rockstate/checkpoints"), "1",
        elsewhere)
      val e2 = refused("_metadata through a link")(files.read(1))
      assert(e2.getMessage.contains(s"symbolic link $linkedCheckpoint"), e2.getMessage)
    }
  }

  test("Spark's operator metadata is not read through a link") {
    withTempDir { work =>
      val location = new File(work, "query")
      val metadata = new File(location, "state/0/_metadata")
      Files.createDirectories(metadata.toPath)
      Files.write(new File(metadata, "metadata").toPath, ("v1\n{\"operatorInfo\":{}," +
        "\"stateStoreInfo\":[{\"storeName\":\"default\",\"numColsPrefixKey\":0," +
        "\"numPartitions\":2}]}\n").getBytes(StandardCharsets.UTF_8))
      val root = "file:" + location.getAbsolutePath
      assert(ExpectedStores.read(root, new Configuration()).map(_.size) == Right(2))
      val link = linkElsewhere(metadata.getParentFile, "_metadata", new File(work, "elsewhere"))
      val e = refused("operator metadata through a link")(ExpectedStores.read(root,
        new Configuration()))
      assert(e.getMessage.contains(s"symbolic link $link"), e.getMessage)
    }
  }

  test("a version file larger than a data file may be fails the load before it is downloaded") {
    withTempDir { work =>
      val dir = writeStore(work)
      val file = new File(storeFolder(dir), dir.findVersion(6).get.path)
      // Sparse: the file takes no disk.
      val size = FileKind.Data.limit + 1
      Using.resource(new RandomAccessFile(file, "rw"))(_.setLength(size))
      val local = new File(work, "reader")
      val db = openDb(dir, local, "reader")
      try {
        val e = refused("loading version 6")(db.load(6))
        assert(e.getMessage.contains(file.getPath), e.getMessage)
        assert(e.getMessage.contains(s"holds $size bytes, more than such a file may " +
          s"(${FileKind.Data.limit})"), e.getMessage)
        val held = Files.walk(local.toPath).iterator().asScala.filter(Files.isRegularFile(_))
          .map(Files.size).sum
        assert(held < (64L << 20), s"$held bytes were downloaded")
      } finally db.close()
    }
  }

  test("a link between the checkpoint location and a store is refused; the location may be one") {
    withTempDir { work =>
      val dir = writeStore(work)
      val query = new File(work, "query")
      // The location's root itself a link: the user named it, it is resolved once.
      val alias = new File(work, "alias")
      Files.createSymbolicLink(alias.toPath, query.toPath)
      val viaAlias = new StoreCheckpointDir(new Path("file:" + alias + "/store"),
        new Configuration(), Some(new Path("file:" + alias)))
      val db = openDb(viaAlias, new File(work, "reader"), "reader")
      try {
        db.load(6)
        assert(db.rocksDB.get("k6-20".getBytes(StandardCharsets.UTF_8)).head == 6)
      } finally db.close()
      // The store's folder a link inside the location: refused, even though the store
      // directory Spark names is the link itself.
      val link = linkElsewhere(query, "store", new File(work, "elsewhere"))
      val linked = new StoreCheckpointDir(dir.root, new Configuration(),
        Some(new Path("file:" + query)))
      val db2 = openDb(linked, new File(work, "reader2"), "reader2")
      val e = try refused("loading through the store's link")(db2.load(6)) finally db2.close()
      assert(e.getMessage.contains(s"symbolic link $link"), e.getMessage)
    }
  }

  test("the file kinds and their limits are the offline tools'") {
    val python = Iterator.iterate(new File(".").getAbsoluteFile)(_.getParentFile)
      .takeWhile(_ != null).map(d => new File(d, "python/rockstate/checkpoint/file_kind.py"))
      .find(_.isFile).getOrElse(fail("python/rockstate/checkpoint/file_kind.py not found"))
    val text = new String(Files.readAllBytes(python.toPath), StandardCharsets.UTF_8)
    val declared = "(?m)^    ([A-Z_]+) = (\\d+) \\* _MIB$".r.findAllMatchIn(text)
      .map(m => m.group(1) -> m.group(2).toLong * (1L << 20)).toMap
    assert(declared == FileKind.all.map(k => k.name -> k.limit).toMap)
  }

  test("a whole read holds at most its kind's limit, checked first on the local disk") {
    withTempDir { work =>
      val conf = new Configuration()
      conf.set("fs.rsfault.impl", classOf[io.rockstate.testing.FaultInjectingFileSystem].getName)
      val limit = FileKind.QueryMetadata.limit
      val atLimit = new File(work, "at-limit")
      Files.write(atLimit.toPath, new Array[Byte](limit.toInt))
      val past = new File(work, "past-limit")
      Using.resource(new RandomAccessFile(past, "rw"))(_.setLength(limit + 1))
      val huge = new File(work, "huge")
      Using.resource(new RandomAccessFile(huge, "rw"))(_.setLength(FileKind.Document.limit + 1))
      // The local disk (the length read first) and another file system (the bytes counted).
      Seq("file:", "rsfault://").foreach { scheme =>
        val location = new Path(scheme + work.getAbsolutePath)
        val reader = new CheckpointReader(location.getFileSystem(conf), location)
        def at(f: File) = new Path(location, f.getName)
        assert(reader.readAll(at(atLimit), FileKind.QueryMetadata, "test").length == limit)
        val e = refused(s"$scheme past the limit")(
          reader.readAll(at(past), FileKind.QueryMetadata, "test"))
        assert(e.getMessage.contains(s"$limit"), e.getMessage)
        if (scheme == "file:") {
          // Refused by its length: the 256 MiB are never read (nor held).
          val e2 = refused("past the document limit")(
            reader.readAll(at(huge), FileKind.Document, "test"))
          assert(e2.getMessage.contains(s"holds ${FileKind.Document.limit + 1} bytes"))
        }
      }
    }
  }
}
