package io.rockstate.checkpoint

import java.io.File
import java.lang.management.ManagementFactory
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration

import io.rockstate.storage.format.{CheckpointJson, SnapshotManifest, SnapshotStats, StateFile}
import io.rockstate.testing.CountingFileSystem

/**
 * The driver's checkpoint coordinator fed synthetic acknowledgements of one checkpoint of
 * `--stores` stores (each a landed version file and a snapshot of `--files` SSTs on the local
 * disk, behind the counting file system, each request taking `--latency-ms` as on an object
 * store). Prints the time to take the acknowledgements, the completion's time (the last
 * acknowledgement: checking every store and writing the metadata), its requests by kind, and
 * the heap a pending checkpoint holds per store. A benchmark, never a test:
 *
 *   dev/sbt "shim/Test/runMain io.rockstate.checkpoint.CoordinatorScaleBench --stores 10000"
 */
object CoordinatorScaleBench {

  def main(args: Array[String]): Unit = {
    val opts = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val stores = opts.getOrElse("stores", "10000").toInt
    val files = opts.getOrElse("files", "8").toInt
    val latencyMs = opts.getOrElse("latency-ms", "0").toLong
    val dir = Files.createTempDirectory("rockstate-coordinator-bench").toFile
    try run(dir, stores, files, latencyMs) finally FileUtils.deleteDirectory(dir)
  }

  private def run(dir: File, stores: Int, files: Int, latencyMs: Long): Unit = {
    val version = 10L
    val hadoopConf = new Configuration()
    hadoopConf.set("fs.rscount.impl", classOf[CountingFileSystem].getName)
    hadoopConf.setLong("fs.rscount.latencyMs", latencyMs)
    val root = s"${CountingFileSystem.Scheme}://${dir.getAbsolutePath}"
    val keys = (0 until stores).map(p => StoreKey(0, "default", p))
    val settings = CoordinatorSettings(3, 600000, 5)
    val started = System.nanoTime()
    keys.foreach(k => writeStore(dir, k, version, files))
    write(dir, s"commits/${version - 1}", "v1\n{}".getBytes(StandardCharsets.UTF_8))
    println(f"wrote $stores%d stores of $files%d SSTs in ${ms(started)}%.0f ms")

    val coordinator = new CheckpointCoordinator(hadoopConf, () => System.currentTimeMillis(),
      _ => Right(keys.toSet), (_, message) => println(s"query failed: $message"))
    coordinator.runStarted("run-1")
    // Each string its own copy, as every acknowledgement arrives deserialized on its own.
    def own(s: String): String = new String(s.toCharArray)
    def ack(k: StoreKey): SnapshotAck = {
      val storeDir = s"state/0/${k.partitionId}"
      SnapshotAck(AckSource(own("1f6ffa3c-2b7e-4a8e-9c55-3f3c0b1f8a11"),
        own("run-1"), own(root), 10, settings.copy(), k.copy(storeName = own(k.storeName)),
        version, own("17")), storeDir, own(s"snapshots/$version-a.json"),
        own(s"versions/$version-a.rsv"), own(s"versions/$version-a.rsv"),
        SnapshotAckStats(5, 50, 1000, 9000, 1, files - 1, 10000, 100), System.currentTimeMillis())
    }
    val heapBefore = usedHeap()
    val acking = System.nanoTime()
    keys.init.foreach(k => require(coordinator.acknowledge(ack(k)) == AckResult.Success))
    val ackMs = ms(acking)
    val heapPending = usedHeap() - heapBefore
    CountingFileSystem.reset()
    val completing = System.nanoTime()
    require(coordinator.acknowledge(ack(keys.last)) == AckResult.Success)
    val completionMs = ms(completing)
    require(new File(dir, s"rockstate/checkpoints/$version/_metadata").isFile,
      s"checkpoint $version did not complete: ${coordinator.view("run-1")}")
    val requests = CountingFileSystem.counts.toSeq.sorted.map { case (k, v) => s"$k=$v" }
    println(f"stores=$stores%d files/snapshot=$files%d latency=${latencyMs}%d ms/request")
    println(f"  acknowledgements: ${stores - 1}%d in $ackMs%.0f ms " +
      f"(${ackMs * 1000 / math.max(1, stores - 1)}%.1f us each)")
    println(f"  completion (checks every store, writes the metadata): $completionMs%.0f ms")
    println(s"  completion requests: ${requests.mkString(" ")}")
    println(f"  pending checkpoint heap: ${heapPending / 1e6}%.1f MB " +
      f"(${heapPending.toDouble / stores}%.0f bytes a store)")
  }

  private def writeStore(dir: File, k: StoreKey, version: Long, files: Int): Unit = {
    val storeDir = s"state/0/${k.partitionId}"
    val ssts = (1 to files).map(i => StateFile(f"$i%06d.sst", s"sst/$i-$version.sst", 4, 0, "sst"))
    ssts.foreach(f => write(dir, s"$storeDir/${f.path}", "sst!".getBytes(StandardCharsets.UTF_8)))
    write(dir, s"$storeDir/snapshots/$version-a.json", CheckpointJson.pretty(SnapshotManifest(2,
      version, k.operatorId, k.partitionId, k.storeName, s"versions/$version-a.rsv", 100,
      false, Nil, ssts, SnapshotStats.Zero, 0L, "bench")))
    write(dir, s"$storeDir/versions/$version-a.rsv", Array[Byte](1))
  }

  private def write(dir: File, relative: String, bytes: Array[Byte]): Unit = {
    val f = new File(dir, relative)
    f.getParentFile.mkdirs()
    Files.write(f.toPath, bytes)
  }

  private def usedHeap(): Long = {
    (1 to 3).foreach { _ => System.gc(); Thread.sleep(100) }
    ManagementFactory.getMemoryMXBean.getHeapMemoryUsage.getUsed
  }

  private def ms(since: Long): Double = (System.nanoTime() - since) / 1e6
}
