package io.rockstate.spark.rewrite

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreId}

/**
 * A partition's whole state written as version `V = target.version + 1` of Spark's own RocksDB
 * provider on the lines whose providers cannot start a chosen version from empty state (4.0,
 * 4.1; 4.2 has `getStore(loadEmpty)`).
 *
 * The rows are committed as version 1 of a scratch store under the staging folder, with
 * changelog checkpointing off, so that commit uploads a full snapshot: `1.zip` (RocksDB's
 * metadata files and Spark's file list, which names no version) and its SST files under
 * `SSTs/` (named by a random id, not by version). The SSTs are moved into the partition's
 * `SSTs/` folder with their names, then `1.zip` becomes `V.zip`, last: a version exists once
 * its zip does. Loading `V` reads `V.zip` and nothing older; the restarted query's changelogs
 * and snapshots build on it. SSTs of an attempt that stopped before its zip are orphans that
 * Spark's maintenance deletes.
 */
object SparkSnapshotMove {
  private val ChangelogCheckpointing =
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

  def write(target: RewriteTarget, id: StateStoreId, hadoopConf: Configuration,
      fill: StateStore => Long): Long = {
    val version = target.version + 1
    val scratchRoot = new Path(target.stagingRoot, s"_scratch/${UUID.randomUUID()}")
    val scratch = StateStoreId(scratchRoot.toString, id.operatorId, id.partitionId, id.storeName)
    val provider = PartitionWriter.newProvider(target, scratch, hadoopConf,
      Map(ChangelogCheckpointing -> "false"))
    val store = try provider.getStore(0) catch { case e: Throwable => provider.close(); throw e }
    val written = PartitionWriter.commitAll(provider, store, fill)

    val from = scratch.storeCheckpointLocation()
    val to = id.storeCheckpointLocation()
    val fs = to.getFileSystem(hadoopConf)
    val zip = new Path(from, "1.zip")
    if (!fs.exists(zip)) {
      throw new IllegalStateException(s"rockstate: Spark's provider committed version 1 of " +
        s"the scratch store $from without a snapshot (1.zip); the rewrite stops before the " +
        "checkpoint names anything it wrote.")
    }
    Seq("SSTs", "logs").foreach { sub =>
      val files = new Path(from, sub)
      if (fs.exists(files)) {
        fs.mkdirs(new Path(to, sub))
        fs.listStatus(files).filter(_.isFile).foreach { f =>
          move(fs, f.getPath, new Path(new Path(to, sub), f.getPath.getName))
        }
      }
    }
    val published = new Path(to, s"$version.zip")
    fs.delete(published, false) // an earlier attempt's: this attempt's replaces it
    move(fs, zip, published)
    fs.delete(scratchRoot, true)
    written
  }

  private def move(fs: FileSystem, from: Path, to: Path): Unit = {
    if (!fs.rename(from, to)) {
      throw new IllegalStateException(s"rockstate: could not move $from to $to; the rewrite " +
        "stops before the checkpoint names anything it wrote (run it again).")
    }
  }
}
