package io.rockstate.checkpoint

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import io.rockstate.storage.{CheckpointReader, FileKind}

/**
 * The store instances a query's checkpoint expects, from the operator metadata Spark writes
 * under `<checkpoint>/state/<operatorId>/_metadata/` before a query's first batch runs (v1:
 * one `metadata` file; v2: one file per batch under `v2/`). Each names the operator's stores
 * and its number of partitions, so a checkpoint never completes without an operator whose
 * partitions all failed to acknowledge.
 */
object ExpectedStores {

  /** Every (operator, store, partition), or why it cannot be known. */
  def read(checkpointRoot: String, hadoopConf: Configuration): Either[String, Set[StoreKey]] = {
    val stateDir = new Path(new Path(checkpointRoot), "state")
    val fs = stateDir.getFileSystem(hadoopConf)
    if (!fs.exists(stateDir)) return Left(s"$stateDir does not exist yet")
    val operators = fs.listStatus(stateDir).filter(_.isDirectory)
      .flatMap(s => s.getPath.getName.toLongOption.map(_ -> s.getPath)).toSeq
    if (operators.isEmpty) return Left(s"$stateDir has no operator directories yet")
    val reader = new CheckpointReader(fs, new Path(checkpointRoot))
    val perOperator = operators.map { case (id, dir) => id -> readOperator(fs, reader, dir) }
    perOperator.collectFirst { case (_, Left(why)) => why } match {
      case Some(why) => Left(why)
      case None => Right(perOperator.flatMap {
        case (id, Right(stores)) =>
          stores.flatMap { case (name, n) => (0 until n).map(p => StoreKey(id, name, p)) }
        case _ => Nil
      }.toSet)
    }
  }

  /** (store name, number of partitions) of one operator. */
  private def readOperator(fs: FileSystem, reader: CheckpointReader,
      operatorDir: Path): Either[String, Seq[(String, Int)]] = {
    val v1 = new Path(operatorDir, "_metadata/metadata")
    val v2Dir = new Path(operatorDir, "_metadata/v2")
    val file =
      if (fs.exists(v2Dir)) {
        fs.listStatus(v2Dir).map(_.getPath).filter(_.getName.toLongOption.isDefined)
          .sortBy(_.getName.toLong).lastOption
      } else if (fs.exists(v1)) Some(v1) else None
    file match {
      case None => Left(s"Spark wrote no operator metadata in $operatorDir/_metadata")
      case Some(path) =>
        val text = new String(reader.readAll(path, FileKind.SparkMetadata,
          s"the stores expected at $operatorDir"), StandardCharsets.UTF_8)
        // A version line ("v1", "v2"), then the JSON document.
        val json = text.dropWhile(_ != '\n').trim
        val tree = io.rockstate.storage.VersionManifest.mapper.readTree(json)
        val stores = tree.path("stateStoreInfo").elements().asScala.map { s =>
          (s.path("storeName").asText(""), s.path("numPartitions").asInt(0))
        }.toSeq
        if (stores.isEmpty || stores.exists { case (n, p) => n.isEmpty || p <= 0 }) {
          Left(s"operator metadata $path names no store with partitions")
        } else Right(stores)
    }
  }
}
