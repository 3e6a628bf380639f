package io.rockstate.spark.rewrite

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.Dataset
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * The Spark job of a state rewrite, called from Python (`rockstate.rewrite`): `state` holds one
 * store's rows as (key struct, value struct), already repartitioned the way the query's shuffle
 * will send each key; every one of its partitions becomes that partition's whole state.
 */
object StateRewrite {

  /** Writes `state` as `target`; returns the keys written per new partition. */
  def write(state: Dataset[_], target: RewriteTarget): Array[Long] = {
    val ds = state.asInstanceOf[org.apache.spark.sql.classic.Dataset[_]]
    val hadoopConf = new SerializableConfiguration(
      ds.sparkSession.sessionState.newHadoopConf())
    ds.queryExecution.toRdd.mapPartitionsWithIndex { (partition, rows) =>
      Iterator(PartitionWriter.write(target, partition, rows, hadoopConf.value))
    }.collect()
  }

  /** The same, with py4j-friendly arguments (schemas as JSON, confs as a Java map). */
  def write(state: Dataset[_], stateRoot: String, stagingRoot: String, newFrom: Int,
      operatorId: Long, storeName: String, version: Long, providerClass: String,
      keySchemaJson: String, valueSchemaJson: String, numColsPrefixKey: Int,
      confs: java.util.Map[String, String]): Array[Long] =
    write(state, RewriteTarget(stateRoot, stagingRoot, newFrom, operatorId, storeName, version,
      providerClass,
      DataType.fromJson(keySchemaJson).asInstanceOf[StructType],
      DataType.fromJson(valueSchemaJson).asInstanceOf[StructType], numColsPrefixKey,
      confs.asScala.toMap))
}
