package io.rockstate.storage

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import com.fasterxml.jackson.databind.node.ObjectNode

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{CheckpointJson, CorruptCheckpointException, RemoteFile,
  SnapshotManifest, VersionManifest}
import io.rockstate.storage.local.{LocalStoreFiles, SstPacks}
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.restore.CheckpointFetch

/** Snapshots whose small SSTs share one object (`SstPacks`, format 5). */
class SstPacksSuite extends AnyFunSuite {

  private def withWork[T](f: File => T): T = {
    val dir = Files.createTempDirectory("rockstate-packs").toFile
    try f(dir) finally FileUtils.deleteDirectory(dir)
  }

  private def conf(local: File, settings: Map[String, String] = Map.empty) = RockstateConf.from(
    Map(RockstateConf.SnapshotInterval.key -> "1000") ++ settings, 2)
    .updated(RockstateConf.LocalRecovery, "false")
    .updated(RockstateConf.LocalDir, local.getPath)

  private def storeDir(work: File): StoreCheckpointDir = {
    val store = new File(work, "query/store")
    Files.createDirectories(store.toPath)
    new StoreCheckpointDir(new Path("file:" + store.getAbsolutePath), new Configuration())
  }

  private def open(dir: StoreCheckpointDir, work: File, label: String,
      settings: Map[String, String] = Map.empty) = {
    val local = new File(work, label)
    new VersionedRocksDB(0, 0, "default", dir,
      LocalStoreFiles.forStore(dir.root.toString, label, local.getPath), conf(local, settings),
      useColumnFamilies = false)
  }

  private def key(i: Int) = f"key-$i%06d".getBytes(StandardCharsets.UTF_8)
  private def value(i: Int) = s"value-$i-${"x" * 40}".getBytes(StandardCharsets.UTF_8)

  /**
   * Version 1 of a store written in three flushes (three SSTs, below RocksDB's L0 compaction
   * trigger), snapshotted, and version 2 on that snapshot; returns the snapshot manifest's path
   * and the manifest.
   */
  private def writeThreeSsts(dir: StoreCheckpointDir, work: File,
      settings: Map[String, String] = Map.empty): (String, SnapshotManifest) = {
    val db = open(dir, work, "writer", settings)
    try {
      db.load(0)
      (0 until 3).foreach { part =>
        (part * 1000 until (part + 1) * 1000).foreach(i => db.put(key(i), value(i)))
        if (part < 2) {
          // The flush runs in the background; one still pending would share the next one's SST.
          val before = db.rocksDB.sstBytes
          assert(db.rocksDB.flushIfAbove(0))
          val deadline = System.nanoTime() + 30L * 1000 * 1000 * 1000
          while (db.rocksDB.sstBytes == before && System.nanoTime() < deadline) Thread.sleep(5)
        }
      }
      db.commit(1, forceSnapshot = true)
      assert(db.awaitUploads(60000))
      db.put(key(5000), value(5000))
      assert(db.commit(2, forceSnapshot = false).snapshot.map(_.version).contains(1L))
    } finally db.close()
    val (path, version, _) = dir.listSnapshots().last
    assert(version == 1L)
    (path, dir.readSnapshotManifest(path, "the test"))
  }

  private def sstObjects(work: File): Seq[String] =
    Option(new File(work, "query/store/sst").list()).toSeq.flatten.filterNot(_.endsWith(".crc"))
      .sorted

  private def readsBack(dir: StoreCheckpointDir, work: File, label: String): Unit = {
    val reader = open(dir, work, label)
    try {
      reader.load(2)
      assert(reader.loadStats.changelogsReplayed == 1)
      Seq(0, 999, 1000, 2500, 2999, 5000).foreach { i =>
        assert(reader.rocksDB.get(key(i)).sameElements(value(i)), s"key $i")
      }
    } finally reader.close()
  }

  test("a snapshot's small SSTs go up as one pack and a fresh executor restores from it") {
    withWork { work =>
      val dir = storeDir(work)
      val (_, m) = writeThreeSsts(dir, work)
      val ssts = m.files.filter(_.kind == "sst")
      assert(ssts.size == 3, m.files)
      assert(m.formatVersion == 5)
      assert(ssts.map(_.path).distinct.size == 1 && ssts.head.path.endsWith(SstPacks.Suffix))
      // Members lie end to end and fill the pack exactly.
      val slices = ssts.map(_.inPack.get)
      assert(slices.map(_.offset) == ssts.scanLeft(0L)(_ + _.size).init)
      assert(slices.map(_.packSize).distinct == Seq(ssts.map(_.size).sum))
      assert(sstObjects(work) == Seq(ssts.head.path.stripPrefix("sst/")))
      assert(new File(work, s"query/store/${ssts.head.path}").length == ssts.map(_.size).sum)
      readsBack(dir, work, "reader")
    }
  }

  test("with sstPackMB 0, or SSTs larger than it, every SST is an object of its own") {
    withWork { work =>
      val dir = storeDir(work)
      val (_, m) = writeThreeSsts(dir, work, Map(RockstateConf.SstPackMB.key -> "0"))
      assert(m.files.count(_.kind == "sst") == 3)
      assert(m.files.forall(f => f.inPack.isEmpty && f.path.endsWith(".sst")), m.files)
      assert(sstObjects(work).size == 3)
      readsBack(dir, work, "reader")
      // Written without packs, the manifest has no "inPack" at all.
      val text = new String(Files.readAllBytes(new File(work,
        s"query/store/${dir.listSnapshots().last._1}").toPath), StandardCharsets.UTF_8)
      assert(!text.contains("inPack"), text)
    }
  }

  test("SstPacks.plan closes a pack before it grows past the bound, larger files alone") {
    withWork { work =>
      def file(name: String, bytes: Int): File = {
        val f = new File(work, name)
        Files.write(f.toPath, new Array[Byte](bytes))
        f
      }
      val files = Seq(file("1.sst", 40), file("2.sst", 40), file("3.sst", 150), file("4.sst", 20),
        file("5.sst", 100))
      val (packs, alone) = SstPacks.plan(files, 100)
      assert(packs.map(_.map(_.getName)) == Seq(Seq("1.sst", "2.sst", "4.sst"), Seq("5.sst")))
      assert(alone.map(_.getName) == Seq("3.sst"))
      assert(SstPacks.plan(files, 0) == ((Nil, files)))
    }
  }

  test("a damaged or cut pack member is refused on download, never read as empty state") {
    withWork { work =>
      val dir = storeDir(work)
      val (_, m) = writeThreeSsts(dir, work)
      val second = m.files.filter(_.kind == "sst")(1)
      val pack = new File(work, s"query/store/${second.path}").toPath
      val original = Files.readAllBytes(pack)
      def fetchSecond(label: String): File = {
        val local = new File(work, label)
        val files = LocalStoreFiles.forStore(dir.root.toString, label, local.getPath)
        new CheckpointFetch(files, dir, conf(local), "the test")(second.remote)
      }
      // Intact: exactly the member's bytes.
      val fetched = fetchSecond("intact")
      val offset = second.inPack.get.offset.toInt
      assert(Files.readAllBytes(fetched.toPath).sameElements(
        original.slice(offset, offset + second.size.toInt)))
      // One byte of the member flipped.
      val flipped = original.clone()
      flipped(offset + 10) = (flipped(offset + 10) ^ 0xff).toByte
      Files.write(pack, flipped)
      val e1 = intercept[CorruptCheckpointException](fetchSecond("flipped"))
      assert(e1.getMessage.contains(s"offset $offset of pack") && e1.getMessage.contains("damaged"))
      // The pack cut inside the member.
      Files.write(pack, original.take(offset + 5))
      val e2 = intercept[CorruptCheckpointException](fetchSecond("cut"))
      assert(e2.getMessage.contains(s"found 5 bytes"), e2.getMessage)
      // A byte flipped in another member leaves this one readable.
      val other = original.clone()
      other(3) = (other(3) ^ 0xff).toByte
      Files.write(pack, other)
      assert(fetchSecond("other").length == second.size)
    }
  }

  /** The snapshot manifest at `path` with `edit` applied to its files; parsed or refused. */
  private def parseEdited(dir: StoreCheckpointDir, work: File, path: String)(
      edit: (ObjectNode, Seq[ObjectNode]) => Unit): SnapshotManifest = {
    val file = new File(work, s"query/store/$path")
    val tree = CheckpointJson.mapper.readTree(file).asInstanceOf[ObjectNode]
    val files = (0 until tree.get("files").size).map(i =>
      tree.get("files").get(i).asInstanceOf[ObjectNode])
    edit(tree, files)
    VersionManifest.snapshotFromJson(CheckpointJson.mapper.writeValueAsBytes(tree), path)
  }

  test("a manifest placing a member outside its pack, or sizing one pack twice, is corrupt") {
    withWork { work =>
      val dir = storeDir(work)
      val (path, m) = writeThreeSsts(dir, work)
      assert(m.files.count(_.kind == "sst") == 3)
      assert(parseEdited(dir, work, path)((_, _) => ()) == m)
      val packSize = m.files.head.inPack.get.packSize
      def slice(f: ObjectNode) = f.get("inPack").asInstanceOf[ObjectNode]
      val refusals = Seq[(String, (ObjectNode, Seq[ObjectNode]) => Unit)](
        "outside its pack" -> ((_, fs) => slice(fs(2)).put("offset", packSize)),
        "outside its pack" -> ((_, fs) => slice(fs(0)).put("offset", -1)),
        "outside its pack" -> ((_, fs) => slice(fs(0)).put("offset", Long.MaxValue)),
        "outside its pack" -> ((_, fs) => fs(1).put("size", packSize + 1)),
        "several sizes" -> ((_, fs) => slice(fs(1)).put("packSize", packSize + 10)),
        "only format 5" -> ((t, _) => t.put("formatVersion", 4)),
        "both as a file and as a pack" -> ((_, fs) => fs(0).remove("inPack")))
      refusals.foreach { case (why, edit) =>
        val e = intercept[CorruptCheckpointException](parseEdited(dir, work, path)(edit))
        assert(e.getMessage.contains(why), e.getMessage)
      }
    }
  }

  test("a cached member stays while its pack is referenced and goes with it") {
    withWork { work =>
      val dir = storeDir(work)
      val (_, m) = writeThreeSsts(dir, work)
      assert(m.files.count(_.kind == "sst") == 3)
      val member = m.files.filter(_.kind == "sst").head
      val local = new File(work, "cache-reader")
      val files = LocalStoreFiles.forStore(dir.root.toString, "cache-reader", local.getPath)
      val cached = new CheckpointFetch(files, dir, conf(local), "the test")(member.remote)
      assert(cached.getName.endsWith(s"${SstPacks.Suffix}${RemoteFile.MemberMark}0"))
      files.prune(Set(member.path), System.nanoTime())
      assert(cached.isFile, "pruned although its pack is kept")
      files.prune(Set("sst/another.pack"), System.nanoTime())
      assert(!cached.exists, "kept although its pack is not")
    }
  }
}
