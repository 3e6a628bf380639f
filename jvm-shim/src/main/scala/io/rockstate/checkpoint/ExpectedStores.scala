package io.rockstate.checkpoint

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import io.rockstate.storage.format.{CheckpointJson, CorruptCheckpointException, FileKind}
import io.rockstate.storage.location.CheckpointReader

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
    val total = perOperator.flatMap(_._2.toSeq.flatten).map(_._2.toLong).sum
    perOperator.collectFirst { case (_, Left(why)) => why } match {
      case Some(why) => Left(why)
      case None if total > MaxStores => throw new CorruptCheckpointException(
        s"rockstate: Spark's operator metadata under $stateDir names $total partitions of " +
          s"stores in all, more than a query may have ($MaxStores); it is damaged.")
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
        parse(reader.readAll(path, FileKind.SparkMetadata, s"the stores expected at $operatorDir"),
          path.toString)
    }
  }

  /**
   * Store instances (partitions of every store of every operator) a query may have: far beyond
   * any query's (each partition is a task of every batch), low enough that what a damaged file
   * makes the driver expect stays small.
   */
  val MaxStores: Int = 1 << 20

  /**
   * (store name, number of partitions) of an operator metadata file (`where`): a version line
   * ("v1", "v2"), then the JSON document. Left when it names no store with partitions; a
   * damaged document (`CheckpointJson`'s refusals, a store entry that is no object, a name
   * that is no string, a count that is no whole number, more than `MaxStores` in all) is a
   * `CorruptCheckpointException` naming `where`.
   */
  private[rockstate] def parse(bytes: Array[Byte], where: String)
      : Either[String, Seq[(String, Int)]] = {
    def damaged(why: String, cause: Throwable = null) = new CorruptCheckpointException(
      s"rockstate: Spark's operator metadata $where is damaged ($why); restore it from a " +
        "trusted copy.", cause)
    val text = new String(bytes, StandardCharsets.UTF_8)
    val json = text.dropWhile(_ != '\n').trim
    val tree = CheckpointJson.parse(json.getBytes(StandardCharsets.UTF_8), damaged(_, _))
    val info = tree.path("stateStoreInfo")
    if (!info.isMissingNode && !info.isArray) throw damaged("stateStoreInfo is not a list")
    val stores = info.elements().asScala.zipWithIndex.map { case (s, i) =>
      val name = s.path("storeName")
      val partitions = s.path("numPartitions")
      if (!s.isObject) throw damaged(s"stateStoreInfo[$i] is not a JSON object")
      if (!name.isTextual) throw damaged(s"stateStoreInfo[$i].storeName is not a string")
      if (!partitions.isInt) {
        throw damaged(s"stateStoreInfo[$i].numPartitions is not a whole number")
      }
      (name.textValue, partitions.intValue)
    }.toSeq
    val total = stores.map(_._2.toLong.max(0L)).sum
    if (total > MaxStores) {
      throw damaged(s"it names $total partitions of its stores, more than a query may have " +
        s"($MaxStores)")
    }
    if (stores.isEmpty || stores.exists { case (n, p) => n.isEmpty || p <= 0 }) {
      Left(s"operator metadata $where names no store with partitions")
    } else Right(stores)
  }
}
