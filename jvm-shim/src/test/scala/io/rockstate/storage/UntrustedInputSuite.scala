package io.rockstate.storage

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.{Base64, UUID}
import java.util.zip.CRC32

import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success, Try}

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/**
 * Checkpoint files are untrusted input (docs/guarantees.md, "Trust model"): the shared rules
 * and hostile inputs of tests/fixtures/untrusted (the Python suite reads the same ones), and
 * stores written by the real code whose manifests were then edited to reach outside.
 */
class UntrustedInputSuite extends AnyFunSuite {

  private val fixtures: File = TestFixtures.dir("untrusted")

  private val rules = VersionManifest.mapper.readTree(new File(fixtures, "rules.json"))

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

  private val cases = VersionManifest.mapper.readTree(new File(fixtures, "cases.json"))
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
    RockstateConf.OrphanFileGraceMs -> "0", RockstateConf.SnapshotInterval -> "1"), 2)
    .copy(localRecovery = false, localDir = local.getPath)

  private def openDb(dir: StoreCheckpointDir, local: File, label: String) = new VersionedRocksDB(
    0, 0, "default", dir, LocalStoreFiles.forStore(dir.root.toString, label, local.getPath),
    conf(local), useColumnFamilies = false)

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
    val tree = VersionManifest.mapper.readTree(file).asInstanceOf[ObjectNode]
    edit(tree.get("files").get(0).asInstanceOf[ObjectNode])
    Files.write(file.toPath, VersionManifest.mapper.writeValueAsBytes(tree))
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
}
