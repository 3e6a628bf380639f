package io.rockstate.storage

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataOutputStream, File}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path => NioPath}
import java.util.Base64
import java.util.concurrent.{Callable, Executors, ThreadFactory, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.AtomicInteger
import java.util.zip.CRC32

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{ArrayNode, JsonNodeFactory, ObjectNode}
import com.github.luben.zstd.Zstd
import org.apache.commons.io.FileUtils
import org.scalacheck.{Arbitrary, Gen}
import org.scalactic.anyvals.PosInt
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckDrivenPropertyChecks

import io.rockstate.checkpoint.{CheckpointMetadata, ExpectedStores}
import io.rockstate.storage.format.{Changelog, CheckpointJson, CheckpointPath,
  CorruptCheckpointException, MetaPack, MetaPackRef, VersionFile, VersionManifest}

/**
 * Property-based fuzzing of the JVM's checkpoint parsers, the twin of
 * tests/test_fuzz_parsers.py. Checkpoint files are untrusted input (docs/guarantees.md, "Trust
 * model"): fed inputs built around the real thing (the golden fixtures' files, mutated, JSON
 * pathologies put into their fields, and well-formed containers with hostile lengths and
 * names), every parser either succeeds or
 * refuses with `CorruptCheckpointException`: no other exception, no run past `BoundSeconds`, no
 * path accepted that leaves its folder, no file written outside the directory it was given.
 *
 * CI runs `ROCKSTATE_FUZZ_EXAMPLES` (default 150) inputs per parser; a long run sets it higher
 * (the environment variable reaches the forked test JVM; a system property of that name also
 * works inside it):
 *
 *   ROCKSTATE_FUZZ_EXAMPLES=5000 dev/sbt "shim/testOnly io.rockstate.storage.ParserFuzzSuite"
 */
class ParserFuzzSuite extends AnyFunSuite with ScalaCheckDrivenPropertyChecks
    with BeforeAndAfterAll {

  private val Examples: Int = sys.props.get("ROCKSTATE_FUZZ_EXAMPLES")
    .orElse(sys.env.get("ROCKSTATE_FUZZ_EXAMPLES")).map(_.trim.toInt).getOrElse(150)
  private val BoundSeconds = 20L
  // An absolute path the fuzzer offers as a name: it must stay absent.
  private val Escape = new File("/tmp/rockstate-jvm-fuzz-escape")

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = PosInt.ensuringValid(Examples),
      maxDiscardedFactor = 1.0, workers = 1)

  // ---- fixtures (the seeds) ----

  private val fixtures: File = TestFixtures.dir("untrusted").getParentFile

  private def listed(dir: String, suffix: String): Seq[File] =
    Option(new File(fixtures, dir).listFiles()).toSeq.flatten
      .filter(_.getName.endsWith(suffix)).sortBy(_.getName)

  private val twsStore = "transform-with-state/spark-4.0/checkpoint/state/0/0"
  private val v3Store = "checkpoint-format/v3/store"

  private val versionFiles: Seq[(String, Array[Byte])] =
    (listed(s"$twsStore/versions", ".rsv") ++ listed(s"$v3Store/versions", ".rsv"))
      .map(f => f.getName -> Files.readAllBytes(f.toPath))

  private val snapshotFiles: Seq[(String, Array[Byte])] =
    (listed(s"$twsStore/snapshots", ".json") ++ listed(s"$v3Store/snapshots", ".json"))
      .map(f => f.getName -> Files.readAllBytes(f.toPath))

  private def headerLength(file: Array[Byte]): Int = ByteBuffer.wrap(file, 5, 4).getInt

  private def headerOf(file: Array[Byte]): Array[Byte] =
    java.util.Arrays.copyOfRange(file, 9, 9 + headerLength(file))

  private def changesOf(file: Array[Byte]): Array[Byte] =
    java.util.Arrays.copyOfRange(file, 9 + headerLength(file), file.length - 8)

  private val json = CheckpointJson.mapper
  private val nodes = JsonNodeFactory.instance

  // Version manifests: the version files' headers (format 3), and a format 1 manifest made of
  // one (format 1 listed the snapshot's files in `files`), so the legacy checks are reached.
  private val versionManifestSeeds: Seq[JsonNode] = {
    val headers = versionFiles.map { case (_, b) => json.readTree(headerOf(b)) }
    val legacy = headers.head.deepCopy[JsonNode]().asInstanceOf[ObjectNode]
    legacy.put("formatVersion", 1)
    legacy.set[JsonNode]("files", json.readTree(snapshotFiles.head._2).get("files"))
    headers :+ legacy
  }

  private val snapshotManifestSeeds: Seq[JsonNode] = snapshotFiles.map(f => json.readTree(f._2))

  override def beforeAll(): Unit = {
    assert(versionFiles.size == 7, versionFiles.map(_._1))
    assert(snapshotFiles.size == 3, snapshotFiles.map(_._1))
    if (Escape.exists) FileUtils.forceDelete(Escape) // a previous run's failure, not this one's
  }

  // ---- the property: succeed or refuse as corrupt, within the bound ----

  private val pool = Executors.newCachedThreadPool(new ThreadFactory {
    private val n = new AtomicInteger()
    def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"parser-fuzz-${n.incrementAndGet()}")
      t.setDaemon(true) // one that overruns the bound must not keep the JVM up
      t
    }
  })

  override def afterAll(): Unit = pool.shutdownNow()

  /** Outcomes per parser, for the report of each test: accepted, and refused by reason. */
  private final class Tally {
    var accepted = 0
    val refused: mutable.Map[String, Int] = mutable.Map.empty.withDefaultValue(0)
    def total: Int = accepted + refused.values.sum
    def summary: String = s"$total inputs: $accepted accepted, ${total - accepted} refused as " +
      s"corrupt; refusals by reason: " + refused.toSeq.sortBy(-_._2).take(12)
        .map { case (r, n) => s"$n× $r" }.mkString("; ")
  }

  /** The reason of a refusal, without numbers and paths, to count how deep inputs reach. */
  private def reason(e: Throwable): String = {
    val m = Option(e.getMessage).getOrElse("")
    val inner = "(?:damaged|JSON|schema|refused) \\((.*?)\\)(?:[.;:] |\\.$)".r
      .findFirstMatchIn(m).map(_.group(1)).getOrElse(m.stripPrefix("rockstate: ").take(60))
    inner.replaceAll("-?[0-9]+", "N").replaceAll("'[^']*'", "'…'").take(60)
  }

  /**
   * Runs `parse` on a thread of its own: it must return, or throw CorruptCheckpointException,
   * within `BoundSeconds`; anything else fails the property with `input` shown.
   */
  private def refusesOrReads(tally: Tally, input: => String)(parse: => Unit): Unit = {
    val future = pool.submit(new Callable[Option[Throwable]] {
      def call(): Option[Throwable] = try { parse; None } catch { case t: Throwable => Some(t) }
    })
    val outcome = try future.get(BoundSeconds, TimeUnit.SECONDS) catch {
      case _: TimeoutException =>
        future.cancel(true)
        fail(s"the parser ran past $BoundSeconds s on $input")
    }
    outcome match {
      case None => tally.accepted += 1
      case Some(e: CorruptCheckpointException) => tally.refused(reason(e)) += 1
      case Some(e) => fail(s"the parser threw ${e.getClass.getName} (not a " +
        s"CorruptCheckpointException): ${e.getMessage}\n  on $input", e)
    }
  }

  private def withTempDir[T](f: File => T): T = {
    val dir = Files.createTempDirectory("rockstate-jvm-fuzz").toFile
    try f(dir) finally FileUtils.deleteDirectory(dir)
  }

  /** Every path under `parent` that is neither `inside` nor in it. */
  private def outside(parent: File, inside: File): Seq[NioPath] = {
    val walk = Files.walk(parent.toPath)
    try walk.iterator().asScala.filter(p => p != parent.toPath &&
      !p.startsWith(inside.toPath)).toList finally walk.close()
  }

  private def crcOf(bytes: Array[Byte], length: Int): Long = {
    val crc = new CRC32()
    crc.update(bytes, 0, length)
    crc.getValue
  }

  private def hex(bytes: Array[Byte]): String = bytes.map(b => f"${b & 0xff}%02x").mkString

  // ---- generators ----

  private def bytesOf(max: Int, min: Int = 0): Gen[Array[Byte]] =
    Gen.choose(min, max).flatMap(n => Gen.listOfN(n, Arbitrary.arbitrary[Byte])).map(_.toArray)

  private def int32(v: Int): Array[Byte] = ByteBuffer.allocate(4).putInt(v).array()
  private def int64(v: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(v).array()

  private val hostileInt32: Gen[Int] =
    Gen.oneOf(-1, -2, Int.MinValue, Int.MaxValue, 1 << 20, 0, 7)

  /** A record or file length: the actual one mostly, else hostile, else small and wrong. */
  private def length32(actual: Int): Gen[Int] = Gen.frequency(
    5 -> Gen.const(actual),
    4 -> Gen.oneOf(-1, -2, Int.MinValue, Int.MaxValue, 1 << 30, 1 << 25),
    2 -> Gen.choose(-3, 64),
    1 -> Arbitrary.arbitrary[Int])

  private def length64(actual: Long): Gen[Long] = Gen.frequency(
    5 -> Gen.const(actual),
    4 -> Gen.oneOf(-1L, -2L, Long.MinValue, Long.MaxValue, Int.MinValue.toLong,
      Int.MaxValue.toLong, 1L << 30, (1L << 30) + 1, 1L << 25, 1L << 40),
    2 -> Gen.choose(-3L, 64L),
    1 -> Arbitrary.arbitrary[Long])

  /** One edit of a byte string, at a position drawn by `at`. */
  private def mutation(data: Array[Byte], at: Gen[Int]): Gen[Array[Byte]] = {
    at.flatMap { pos0 =>
      val b = mutable.ArrayBuffer.from(data) // a fresh copy per draw
      val pos = math.max(0, math.min(pos0, math.max(b.length - 1, 0)))
      Gen.oneOf("flip", "insert", "delete", "truncate", "int32").flatMap {
        case "flip" if b.nonEmpty => Gen.choose(1, 255).map { x =>
          b(pos) = (b(pos) ^ x).toByte; b.toArray }
        case "insert" => bytesOf(16, 1).map { x => b.insertAll(pos, x); b.toArray }
        case "delete" if b.nonEmpty => Gen.choose(1, 16).map { n =>
          b.remove(pos, math.min(n, b.length - pos)); b.toArray }
        case "truncate" => Gen.const(b.take(pos).toArray)
        case "int32" if b.length >= pos + 4 => hostileInt32.map { v =>
          val w = int32(v); (0 until 4).foreach(i => b(pos + i) = w(i)); b.toArray }
        case _ => Gen.const(b.toArray)
      }
    }
  }

  /** `data` with 1 to 4 edits at positions drawn by `at(current length)`. */
  private def mutated(data: Array[Byte], at: Int => Gen[Int]): Gen[Array[Byte]] =
    Gen.choose(1, 4).flatMap { n =>
      (1 to n).foldLeft(Gen.const(data)) { (g, _) => g.flatMap(d => mutation(d, at(d.length))) }
    }

  private def anywhere(length: Int): Gen[Int] = Gen.choose(0, math.max(length - 1, 0))

  /** The trailer of a version file made right again: CRC32 of all before it, then "RSVE". */
  private def withTrailer(body: Array[Byte]): Array[Byte] =
    body ++ int32(crcOf(body, body.length).toInt) ++ VersionFile.EndMagic

  private def recomputeTrailer(file: Array[Byte]): Array[Byte] =
    if (file.length < 8) file else withTrailer(file.dropRight(8))

  private val hostilePaths: Gen[String] = Gen.oneOf("../x", s"${Escape.getPath}/x", "a/../../b",
    "", "s3a://b/k", "x\\..\\y", "a//b", ".", "..", Escape.getPath, "x/", "/", "a/./b", "a\u0000b")

  private val jsonLeaf: Gen[JsonNode] = Gen.oneOf[JsonNode](
    Gen.const(nodes.nullNode()),
    Gen.oneOf(true, false).map(b => nodes.booleanNode(b)),
    Gen.choose(-2, 5).map(i => nodes.numberNode(i)),
    Gen.choose(-(1L << 40), 1L << 40).map(l => nodes.numberNode(l)),
    Gen.oneOf(Long.MinValue, Long.MaxValue, Int.MinValue.toLong, Int.MaxValue.toLong + 1)
      .map(l => nodes.numberNode(l)),
    Gen.oneOf(1.5, -0.5, 1e300, 3.0).map(d => nodes.numberNode(d)),
    Gen.const(nodes.numberNode(new java.math.BigInteger("123456789012345678901234567890"))),
    Gen.oneOf(Gen.alphaNumStr.map(_.take(12)), Arbitrary.arbitrary[String].map(_.take(12)),
      hostilePaths).map(s => nodes.textNode(s)))

  private def jsonValue(depth: Int): Gen[JsonNode] =
    if (depth <= 0) jsonLeaf
    else Gen.frequency(
      4 -> jsonLeaf,
      1 -> Gen.choose(0, 3).flatMap(n => Gen.listOfN(n, jsonValue(depth - 1))).map { xs =>
        val a = nodes.arrayNode(); xs.foreach(a.add); a: JsonNode },
      1 -> Gen.choose(0, 3).flatMap(n => Gen.listOfN(n, Gen.zip(Gen.oneOf(Gen.alphaNumStr
        .map(_.take(8)), Gen.oneOf("path", "localName", "version", "size", "crc32", "data")),
        jsonValue(depth - 1)))).map { kvs =>
        val o = nodes.objectNode(); kvs.foreach { case (k, v) => o.set[JsonNode](k, v) }; o })

  /**
   * `node` with fields deleted, replaced by arbitrary JSON, or (`path`, `localName`) made
   * hostile, each field with probability `rate` per kind of edit; the rest walked into.
   */
  private def mutateJson(node: JsonNode, rate: Double): Gen[JsonNode] = node match {
    case o: ObjectNode =>
      val fields = o.fields().asScala.map(e => e.getKey -> e.getValue).toList
      Gen.sequence[List[Option[(String, JsonNode)]], Option[(String, JsonNode)]](fields.map {
        case (k, v) => Gen.choose(0.0, 1.0).flatMap { r =>
          val isPath = k == "path" || k == "localName"
          if (r < rate) Gen.const(None)
          else if (r < 2 * rate) jsonValue(2).map(x => Some(k -> x))
          else if (isPath && r < 5 * rate) hostilePaths.map(p => Some(k -> nodes.textNode(p)))
          else mutateJson(v, rate).map(x => Some(k -> x))
        }
      }).map { kept =>
        val out = nodes.objectNode()
        kept.flatten.foreach { case (k, v) => out.set[JsonNode](k, v) }
        out
      }
    case a: ArrayNode =>
      Gen.sequence[List[JsonNode], JsonNode](a.elements().asScala.toList
        .map(mutateJson(_, rate))).map { xs =>
        val out = nodes.arrayNode(); xs.foreach(out.add); out }
    case other => Gen.const(other)
  }

  private val rates: Gen[Double] = Gen.oneOf(0.02, 0.06, 0.12, 0.2)

  /**
   * A JSON value no writer produces, as raw text (Python's PATHOLOGIES and more): NaN and
   * Infinity, numbers past a double or a long, too many digits, nesting past 64 (just past,
   * past Jackson's own 1000, 100,000 deep), and values of the wrong JSON type for most fields.
   */
  private val pathology: Gen[String] = Gen.frequency(
    6 -> Gen.oneOf("NaN", "-NaN", "Infinity", "-Infinity", "+Infinity", "1e400", "-1e400",
      "1e308", "-0", "99999999999999999999999", "-99999999999999999999999",
      "9223372036854775808", "2147483648", "4294967299", "1.5", "-0.0"),
    4 -> Gen.oneOf("\"5\"", "\"1e400\"", "\"NaN\"", "\"\"", "\"true\"", "true", "false", "null",
      "[]", "{}", "[1]", "[{}]", "{\"a\":1}", "\"x\"", "5", "0"),
    2 -> Gen.oneOf(65, 1000, 100000).map(n => "[" * n + "]" * n),
    1 -> Gen.oneOf(65, 1000, 100000).map(n => "{\"a\":" * n + "1" + "}" * n),
    1 -> Gen.const("9" * 5000))

  /**
   * `node` with values replaced, each with probability `rate`, by a pathology: in the tree a
   * marker string, with (marker, raw text) to put in its place once the tree is written out.
   */
  private def withPathologies(node: JsonNode, rate: Double)
      : Gen[(JsonNode, List[(String, String)])] = {
    def value(v: JsonNode): Gen[(JsonNode, List[(String, String)])] =
      Gen.choose(0.0, 1.0).flatMap { r =>
        if (r < rate) for {
          raw <- pathology
          id <- Gen.choose(0L, Long.MaxValue)
        } yield {
          val marker = s"@pathology$id@"
          (nodes.textNode(marker): JsonNode, List(marker -> raw))
        }
        else withPathologies(v, rate)
      }
    node match {
      case o: ObjectNode =>
        val fields = o.properties().asScala.map(e => e.getKey -> e.getValue).toList
        Gen.sequence[List[(String, (JsonNode, List[(String, String)]))],
          (String, (JsonNode, List[(String, String)]))](fields.map { case (k, v) =>
          value(v).map(k -> _) }).map { kvs =>
          val out = nodes.objectNode()
          kvs.foreach { case (k, (v, _)) => out.set[JsonNode](k, v) }
          (out, kvs.flatMap(_._2._2))
        }
      case a: ArrayNode =>
        Gen.sequence[List[(JsonNode, List[(String, String)])], (JsonNode, List[(String, String)])](
          a.elements().asScala.toList.map(value)).map { xs =>
          val out = nodes.arrayNode()
          xs.foreach(x => out.add(x._1))
          (out, xs.flatMap(_._2))
        }
      case other => Gen.const((other, Nil))
    }
  }

  /** `seed` with pathologies in some of its fields (at least one), written out. */
  private def pathologicalFields(seed: JsonNode): Gen[Array[Byte]] =
    Gen.oneOf(0.02, 0.05, 0.1).flatMap(r => withPathologies(seed, r))
      .retryUntil(_._2.nonEmpty, 1000).map { case (tree, marks) =>
        marks.foldLeft(json.writeValueAsString(tree)) { case (text, (marker, raw)) =>
          text.replace("\"" + marker + "\"", raw)
        }.getBytes(StandardCharsets.UTF_8)
      }

  /** A mutated JSON document: edited as JSON mostly, else as bytes (then rarely valid). */
  private def mutatedDocument(seed: JsonNode): Gen[Array[Byte]] = Gen.frequency(
    24 -> rates.flatMap(r => mutateJson(seed, r)).map(json.writeValueAsBytes),
    10 -> pathologicalFields(seed),
    5 -> mutated(json.writeValueAsBytes(seed), anywhere),
    1 -> pathologicalJson)

  /** Documents a JSON parser can choke on: deep nesting, huge numbers, long strings. */
  private lazy val pathologicalJson: Gen[Array[Byte]] = Gen.oneOf[String](
    Gen.choose(900, 200000).map(n => "[" * n + "]" * n),
    Gen.choose(900, 200000).map(n => "{\"a\":" * n + "1" + "}" * n),
    Gen.choose(900, 200000).map(n => "[" * n), // never closed
    Gen.choose(1000, 100000).map(n => "{\"formatVersion\":3,\"version\":" + "9" * n + "}"),
    Gen.choose(1000, 100000).map(n => "{\"formatVersion\":1" + "0" * n + "}"),
    Gen.oneOf("1e999999", "-1e-999999", "NaN", "null", "[]", "\"x\"", "", "{}",
      "{\"formatVersion\":3}"),
    Gen.choose(1, 5000000).map(n => "{\"formatVersion\":3,\"storeName\":\"" + "a" * n + "\"}")
  ).map(_.getBytes(StandardCharsets.UTF_8))

  // ---- 1. version files, then the replay of their changes ----

  /** A fuzzed version file: `how` it was made (for the report), its bytes. */
  private final case class VersionFileInput(seed: String, how: String, bytes: Array[Byte]) {
    override def toString: String =
      s"version file from $seed ($how, ${bytes.length} bytes): ${hex(bytes)}"
  }

  private val versionFileInputs: Gen[VersionFileInput] =
    Gen.oneOf(versionFiles).flatMap { case (name, original) =>
      val headerEnd = 9 + headerLength(original)
      // Where edits land: anywhere, the header length field, or the changes.
      val at: Int => Gen[Int] = len => Gen.frequency(
        3 -> anywhere(len), 1 -> Gen.const(5), 1 -> Gen.choose(0, 8),
        3 -> Gen.choose(math.min(headerEnd, len), math.max(len - 9, math.min(headerEnd, len))))
      Gen.frequency(
        // Edited bytes, the trailer left as it was: the CRC32 catches nearly all of these.
        2 -> mutated(original, at).map(VersionFileInput(name, "mutated", _)),
        // Edited bytes, the trailer recomputed: the parser's inner checks are reached.
        5 -> mutated(original, at).map(b => VersionFileInput(name, "mutated, CRC recomputed",
          recomputeTrailer(b))),
        // A header of hostile JSON with its length right, the changes as they were.
        2 -> mutatedDocument(json.readTree(headerOf(original))).map { h =>
          VersionFileInput(name, "hostile header, CRC recomputed", withTrailer(
            VersionFile.Magic ++ Array(VersionFile.Layout) ++ int32(h.length) ++ h ++
              changesOf(original)))
        },
        // Changes rebuilt with hostile records (below) behind the real header.
        2 -> changelogInputs.map { c =>
          val h = headerOf(original)
          VersionFileInput(name, s"hostile changes (${c.how}), CRC recomputed", withTrailer(
            VersionFile.Magic ++ Array(VersionFile.Layout) ++ int32(h.length) ++ h ++ c.bytes))
        })
    }

  private val versionFileTally = new Tally

  test("version files: read, then their changes replayed, or refused as corrupt") {
    try {
      forAll(versionFileInputs) { input =>
        withTempDir { dir =>
          val file = new File(dir, "1-a.rsv")
          Files.write(file.toPath, input.bytes)
          val where = file.getPath
          refusesOrReads(versionFileTally, input.toString) {
            // As a load does: the whole file checked, then its changes replayed.
            val parsed = VersionFile.read(file, "versions/1-a.rsv", where, file.length,
              crcOf(input.bytes, input.bytes.length))
            parsed.manifest.references.foreach(CheckpointPath.relative(_, "checked again"))
            val target = new CountingTarget
            val n = Changelog.replay(VersionFile.changes(file, parsed), parsed.changesLength, where,
              target)
            assert(n == target.records)
          }
          // As cleanup and listings do: the header alone.
          refusesOrReads(new Tally, input.toString) {
            VersionFile.readHeader(new ByteArrayInputStream(input.bytes), where).references
              .foreach(CheckpointPath.relative(_, "checked again"))
          }
          assert(dir.list().toSeq == Seq("1-a.rsv"), "reading a version file wrote beside it")
        }
        succeed
      }
    } finally info(versionFileTally.summary) // also when an input fails
  }

  // ---- 2. version manifests and snapshot manifests (JSON) ----

  private final case class JsonInput(seed: String, bytes: Array[Byte]) {
    override def toString: String = {
      val text = new String(bytes, StandardCharsets.UTF_8)
      val exact = java.util.Arrays.equals(text.getBytes(StandardCharsets.UTF_8), bytes)
      s"manifest from $seed (${bytes.length} bytes): " +
        (if (exact) text.take(4000) else s"hex ${hex(bytes).take(8000)}")
    }
  }

  private val versionManifestTally = new Tally

  test("version manifests: parsed with every path contained, or refused as corrupt") {
    val inputs = Gen.oneOf(versionManifestSeeds.zipWithIndex).flatMap { case (seed, i) =>
      mutatedDocument(seed).map(JsonInput(s"version manifest seed $i", _)) }
    try {
      forAll(inputs) { input =>
        refusesOrReads(versionManifestTally, input.toString) {
          val m = VersionManifest.fromJson(input.bytes, "fuzzed.json")
          m.references.foreach(CheckpointPath.relative(_, "checked again"))
          m.files.foreach { f =>
            CheckpointPath.relative(f.path, "checked again")
            CheckpointPath.fileName(f.localName, "checked again")
          }
          // As VersionFile.read does next with a format 3 header.
          if (m.formatVersion >= 3) {
            VersionFile.withOwnChanges(m, "versions/1-a.rsv", 1, 1).references
              .foreach(CheckpointPath.relative(_, "checked again"))
          }
        }
        succeed
      }
    } finally info(versionManifestTally.summary) // also when an input fails
  }

  private val snapshotManifestTally = new Tally

  test("snapshot manifests: parsed with every path contained and the meta pack unpacked " +
    "inside its directory, or refused as corrupt") {
    val inputs = Gen.oneOf(snapshotManifestSeeds.zipWithIndex).flatMap { case (seed, i) =>
      mutatedDocument(seed).map(JsonInput(s"snapshot manifest ${snapshotFiles(i)._1}", _)) }
    try {
      forAll(inputs) { input =>
        withTempDir { parent =>
          val into = new File(parent, "db")
          Files.createDirectories(into.toPath)
          refusesOrReads(snapshotManifestTally, input.toString) {
            val s = VersionManifest.snapshotFromJson(input.bytes, "fuzzed.json")
            s.files.foreach { f =>
              CheckpointPath.relative(f.path, "checked again")
              CheckpointPath.fileName(f.localName, "checked again")
              CheckpointPath.localFile(into, f.localName, "checked again")
            }
            // As a load does next: the small files unpacked into the work directory.
            s.metaPack.foreach(MetaPack.unpackInline(_, into, "fuzzed.json"))
          }
          assert(outside(parent, into).isEmpty, s"written outside $into: ${outside(parent, into)}")
          assert(!Escape.exists, s"$Escape was written")
        }
        succeed
      }
    } finally info(snapshotManifestTally.summary) // also when an input fails
  }

  // The minimal input the fuzzer found for the test above: a format 3 snapshot manifest whose
  // meta pack has no `data` (or `"data": null`) is accepted by `snapshotFromJson`, and
  // `MetaPack.unpackInline` (as a load calls it) then throws a NullPointerException from
  // Base64.Decoder.decode(null) instead of refusing the checkpoint as corrupt.
  Seq("""{"size":0,"crc32":0}""", """{"size":0,"crc32":0,"data":null}""").foreach { pack =>
    test(s"a snapshot manifest with the meta pack $pack is refused as corrupt on load") {
      val doc = """{"formatVersion":3,"stateId":"s","files":[],"columnFamilies":[],""" +
        s""""metaPack":$pack}"""
      withTempDir { dir =>
        val outcome = try {
          val s = VersionManifest.snapshotFromJson(doc.getBytes(StandardCharsets.UTF_8), "m.json")
          s.metaPack.foreach(MetaPack.unpackInline(_, dir, "m.json"))
          None
        } catch { case e: Throwable => Some(e) }
        outcome match {
          case Some(_: CorruptCheckpointException) =>
          case Some(e) => fail(s"$doc: expected a CorruptCheckpointException, got $e", e)
          case None => fail(s"$doc was accepted")
        }
      }
    }
  }

  // ---- 2b. the coordinator's documents: completed checkpoints and Spark's operator metadata ----

  private val twsCheckpoints = Seq("spark-4.0", "spark-4.0-avro")
    .map(f => s"transform-with-state/$f/checkpoint")

  // `_metadata` of completed checkpoints (the driver reads them when a run starts). Abort
  // records (`checkpoints/aborted/<version>.json`) the JVM only writes: Python reads them.
  private val checkpointMetadataSeeds: Seq[(String, JsonNode)] = twsCheckpoints.map { c =>
    s"$c/rockstate/checkpoints/2/_metadata" ->
      json.readTree(new File(fixtures, s"$c/rockstate/checkpoints/2/_metadata"))
  }

  // Spark's operator metadata: the v2 files of the fixtures, and a v1 file as Spark 4 writes it
  // for operators other than transformWithState.
  private val operatorMetadataSeeds: Seq[(String, String, JsonNode)] = {
    val v2 = twsCheckpoints.map(c => s"$c/state/0/_metadata/v2/0").map { f =>
      val text = new String(Files.readAllBytes(new File(fixtures, f).toPath),
        StandardCharsets.UTF_8)
      (f, text.takeWhile(_ != '\n'), json.readTree(text.dropWhile(_ != '\n')))
    }
    v2 :+ (("a v1 file", "v1", json.readTree("{\"operatorInfo\":{\"operatorId\":1," +
      "\"operatorName\":\"symmetricHashJoin\"},\"stateStoreInfo\":[{\"storeName\":" +
      "\"left-keyToNumValues\",\"numColsPrefixKey\":0,\"numPartitions\":5},{\"storeName\":" +
      "\"left-keyWithIndexToValue\",\"numColsPrefixKey\":0,\"numPartitions\":5}]}")))
  }

  private val checkpointMetadataTally = new Tally

  test("completed checkpoints' _metadata: parsed with every path contained, or refused as " +
    "corrupt") {
    val inputs = Gen.oneOf(checkpointMetadataSeeds).flatMap { case (name, seed) =>
      mutatedDocument(seed).map(JsonInput(name, _)) }
    try {
      forAll(inputs) { input =>
        refusesOrReads(checkpointMetadataTally, input.toString) {
          val m = CheckpointMetadata.fromJson(input.bytes, "fuzzed/_metadata")
          assert(m.totals != null)
          m.stores.foreach { s =>
            assert(s.storeName != null && s.executorId != null && s.figures != null)
            Seq(s.storeDir, s.snapshotManifest, s.versionManifest)
              .foreach(CheckpointPath.relative(_, "checked again"))
          }
        }
        succeed
      }
    } finally info(checkpointMetadataTally.summary) // also when an input fails
  }

  private val operatorMetadataTally = new Tally

  test("Spark's operator metadata: the stores it expects read, or refused as corrupt") {
    val inputs = Gen.oneOf(operatorMetadataSeeds).flatMap { case (name, head, seed) =>
      Gen.frequency(8 -> Gen.const(head), 1 -> Gen.oneOf("", "v3", "v1 v2"))
        .flatMap(h => mutatedDocument(seed).map(d =>
          JsonInput(name, (h + "\n").getBytes(StandardCharsets.UTF_8) ++ d)))
    }
    try {
      forAll(inputs) { input =>
        refusesOrReads(operatorMetadataTally, input.toString) {
          ExpectedStores.parse(input.bytes, "fuzzed/metadata").foreach { stores =>
            assert(stores.nonEmpty && stores.forall { case (n, p) => n.nonEmpty && p > 0 })
            assert(stores.map(_._2.toLong).sum <= ExpectedStores.MaxStores)
          }
        }
        succeed
      }
    } finally info(operatorMetadataTally.summary) // also when an input fails
  }

  // ---- 3. changelogs: well-formed containers with hostile records ----

  private final case class ChangelogInput(how: String, bytes: Array[Byte]) {
    override def toString: String = s"changelog ($how, ${bytes.length} bytes): ${hex(bytes)}"
  }

  private lazy val record: Gen[Array[Byte]] = for {
    op <- Gen.frequency(6 -> Gen.oneOf(1, 2, 3, 4), 1 -> Gen.choose(0, 255))
    key <- bytesOf(12)
    keyLen <- length32(key.length)
    value <- bytesOf(12)
    valueLen <- length32(value.length)
  } yield Array(op.toByte) ++ int32(keyLen) ++ key ++
    (if (op == Changelog.Delete) Array.emptyByteArray else int32(valueLen) ++ value)

  private lazy val changelogBodies: Gen[(Array[Byte], String)] = for {
    records <- Gen.choose(0, 6).flatMap(n => Gen.listOfN(n, record))
    end <- Gen.option(length64(records.size.toLong))
  } yield (records.foldLeft(Array.emptyByteArray)(_ ++ _) ++
    end.map(c => Array(Changelog.End) ++ int64(c)).getOrElse(Array.emptyByteArray),
    s"${records.size} records, " + end.map(c => s"end record $c").getOrElse("no end record"))

  private lazy val changelogInputs: Gen[ChangelogInput] = for {
    (body, what) <- changelogBodies
    codec <- Gen.frequency(4 -> Gen.const(0), 4 -> Gen.const(1), 1 -> Gen.choose(2, 255))
    format <- Gen.frequency(12 -> Gen.const(Changelog.Format.toInt), 1 -> Gen.choose(0, 255))
    compressed = if (codec == 1) Zstd.compress(body) else body
    // A zstd frame edited (its checksum, if any, or its blocks then disagree).
    framed <- if (codec == 1) Gen.frequency(6 -> Gen.const(compressed),
      1 -> mutated(compressed, anywhere)) else Gen.const(compressed)
    tail <- Gen.frequency(4 -> Gen.const(Array.emptyByteArray), 1 -> bytesOf(4, 1))
  } yield ChangelogInput(s"$what, codec $codec, format $format, ${tail.length} trailing bytes",
    Changelog.Magic ++ Array(format.toByte, codec.toByte) ++ framed ++ tail)

  private val changelogTally = new Tally

  test("changelogs: replayed, or refused as corrupt") {
    try {
      forAll(changelogInputs) { input =>
        refusesOrReads(changelogTally, input.toString) {
          val target = new CountingTarget
          val n = Changelog.replay(new ByteArrayInputStream(input.bytes), input.bytes.length,
            "fuzzed", target)
          assert(n == target.records)
        }
        succeed
      }
    } finally info(changelogTally.summary) // also when an input fails
  }

  // ---- 4. meta packs: well-formed packs with hostile names and lengths ----

  private val names: Gen[Array[Byte]] = Gen.oneOf(
    Seq("CURRENT", "MANIFEST-000005", "OPTIONS-7", "../x", Escape.getPath, ".", "..", "a/b", "",
      "x\\..\\y", "../" + "a" * 300).map(_.getBytes(StandardCharsets.UTF_8)) ++
      Seq(Array(0xff, 0xfe).map(_.toByte), Array(0xc0, 0xaf).map(_.toByte),
        Array(0x2e, 0x2e, 0x2f, 0xc0).map(_.toByte)))

  private final case class MetaPackInput(how: String, body: Array[Byte], pack: Array[Byte],
      ref: MetaPackRef) {
    override def toString: String = s"meta pack ($how): body ${hex(body)}, pack ${hex(pack)}"
  }

  private val metaPackEntry: Gen[Array[Byte]] = for {
    name <- names
    nameLen <- length32(name.length)
    content <- bytesOf(32)
    length <- length64(content.length.toLong)
  } yield int32(nameLen) ++ name ++ int64(length) ++ content

  private val metaPackInputs: Gen[MetaPackInput] = for {
    entries <- Gen.choose(0, 4).flatMap(n => Gen.listOfN(n, metaPackEntry))
    count <- Gen.frequency(4 -> Gen.const(entries.size), 2 -> Gen.choose(-2, 6),
      1 -> Gen.oneOf(Int.MinValue, Int.MaxValue, 10000, 10001, 1 << 20),
      1 -> Arbitrary.arbitrary[Int])
    body = int32(count) ++ entries.foldLeft(Array.emptyByteArray)(_ ++ _)
    compress <- Gen.frequency(5 -> true, 1 -> false)
    header <- Gen.frequency(12 -> Gen.const(MetaPack.Magic ++ Array(MetaPack.Format)),
      1 -> bytesOf(5))
    ref <- Gen.frequency(12 -> Gen.const("right"), 1 -> Gen.oneOf("wrong size", "wrong crc",
      "not base64"))
  } yield {
    val pack = header ++ (if (compress) Zstd.compress(body) else body)
    val crc = crcOf(pack, pack.length)
    val data = Base64.getEncoder.encodeToString(pack)
    val r = ref match {
      case "right" => MetaPackRef(pack.length, crc, data)
      case "wrong size" => MetaPackRef(pack.length + 1L, crc, data)
      case "wrong crc" => MetaPackRef(pack.length, crc ^ 1L, data)
      case _ => MetaPackRef(pack.length, crc, data + "*!")
    }
    MetaPackInput(s"${entries.size} entries, count $count, " +
      s"${if (compress) "zstd" else "raw (uncompressed)"}, ref $ref", body, pack, r)
  }

  private val metaPackTally = new Tally

  test("meta packs: unpacked only inside their directory, or refused as corrupt") {
    try {
      forAll(metaPackInputs) { input =>
        withTempDir { parent =>
          val into = new File(parent, "db")
          Files.createDirectories(into.toPath)
          refusesOrReads(metaPackTally, input.toString) {
            val written = MetaPack.unpackInline(input.ref, into, "fuzzed.json")
            written.foreach(n => assert(CheckpointPath.localFile(into, n, "x").isFile, n))
            assert(input.how.contains("zstd"), "an uncompressed pack was accepted")
          }
          assert(outside(parent, into).isEmpty, s"written outside $into: ${outside(parent, into)}")
          assert(!Escape.exists, s"$Escape was written")
        }
        succeed
      }
    } finally info(metaPackTally.summary) // also when an input fails
  }

  // ---- the seeds are sound ----

  test("unmutated, every seed parses (so mutations start from truth)") {
    versionFiles.foreach { case (name, bytes) =>
      withTempDir { dir =>
        val file = new File(dir, name)
        Files.write(file.toPath, bytes)
        val parsed = VersionFile.read(file, s"versions/$name", name, bytes.length,
          crcOf(bytes, bytes.length))
        val target = new CountingTarget
        Changelog.replay(VersionFile.changes(file, parsed), parsed.changesLength, name, target)
        assert(target.records == parsed.manifest.commit.get.changelogRecords)
        assert(recomputeTrailer(bytes).sameElements(bytes), s"$name: the trailer as recomputed")
      }
    }
    versionManifestSeeds.foreach(s => VersionManifest.fromJson(json.writeValueAsBytes(s), "seed"))
    snapshotManifestSeeds.foreach { s =>
      withTempDir { dir =>
        val m = VersionManifest.snapshotFromJson(json.writeValueAsBytes(s), "seed")
        assert(MetaPack.unpackInline(m.metaPack.get, dir, "seed").contains("CURRENT"))
      }
    }
    checkpointMetadataSeeds.foreach { case (name, s) =>
      assert(CheckpointMetadata.fromJson(json.writeValueAsBytes(s), name).stores.nonEmpty)
    }
    operatorMetadataSeeds.foreach { case (name, head, s) =>
      val bytes = (head + "\n").getBytes(StandardCharsets.UTF_8) ++ json.writeValueAsBytes(s)
      assert(ExpectedStores.parse(bytes, name).exists(_.nonEmpty), name)
    }
  }
}
