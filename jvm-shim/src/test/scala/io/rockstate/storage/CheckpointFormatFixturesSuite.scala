package io.rockstate.storage

import java.io.File
import java.nio.file.Files

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{CheckpointJson, RowChecksum, VersionManifest}
import io.rockstate.storage.local.LocalStoreFiles
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.testing.StoreDirReads._

/**
 * The golden fixtures of every checkpoint format rockstate ever wrote
 * (`tests/fixtures/checkpoint-format/v<N>`, see tests/fixtures/generate.py): each version of
 * each loads, from the checkpoint files alone, to exactly the keys and values recorded beside
 * it. The Python tests read the same fixtures, so neither side can drift from the format.
 */
class CheckpointFormatFixturesSuite extends AnyFunSuite {

  private val fixtures: File = TestFixtures.dir("checkpoint-format")

  private val formats = Option(fixtures.listFiles()).toSeq.flatten.filter(_.isDirectory)
    .map(_.getName).sorted

  test("there is a fixture for every format version up to the current one") {
    assert(formats == (1 to VersionManifest.FormatVersion).map(v => s"v$v"))
  }

  formats.foreach { format =>
    test(s"every version of the format $format fixture loads to its recorded state") {
      val expected = CheckpointJson.mapper.readTree(new File(fixtures, s"$format/expected.json"))
      val versions = expected.get("versions").fieldNames().asScala.map(_.toLong).toSeq.sorted
      assert(versions.nonEmpty)
      // A copy: loading a format 1 version writes a snapshot manifest beside it.
      val work = Files.createTempDirectory("rockstate-fixture").toFile
      try {
        val store = new File(work, "store")
        FileUtils.copyDirectory(new File(fixtures, s"$format/store"), store)
        val dir = new StoreCheckpointDir(new Path(store.getAbsolutePath), new Configuration())
        assert(dir.listVersions() == versions)
        versions.foreach { v =>
          val db = new VersionedRocksDB(0, 0, "default", dir,
            LocalStoreFiles.forStore(store.getAbsolutePath, s"fixture-$v",
              new File(work, s"local-$v").getPath),
            RockstateConf.from(Map(RockstateConf.LocalRecovery.key -> "false"), 100),
            useColumnFamilies = false)
          try {
            db.load(v)
            val it = db.rocksDB.scan(Array.emptyByteArray, None)
            val found = try it.map { case (k, value) => Seq(hex(k), hex(value)) }.toSeq
              finally it.close()
            assert(found == entries(expected.get("versions").get(v.toString)),
              s"version $v of the $format fixture")
            assert(db.numKeys == found.size, s"key count of version $v of the $format fixture")
            // Format 4 on: row checksums, each value's checked against the bytes Python sealed.
            assert(db.rowChecksums == (format.drop(1).toInt >= 4))
            if (db.rowChecksums) {
              val rows = db.rocksDB.scan(Array.emptyByteArray, None)
              try rows.foreach { case (k, value) =>
                RowChecksum.open(k, 0, value, ',', () => true, s"the $format fixture")
              } finally rows.close()
            }
          } finally db.close()
        }
      } finally FileUtils.deleteDirectory(work)
    }
  }

  private def entries(node: JsonNode): Seq[Seq[String]] =
    node.elements().asScala.map(kv => Seq(kv.get(0).asText, kv.get(1).asText)).toSeq
      .sortBy(_.head)

  private def hex(b: Array[Byte]): String = b.map("%02x".format(_)).mkString
}
