package io.rockstate.spark.rewrite

import scala.jdk.CollectionConverters._
import scala.reflect.ClassTag

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.{Dataset, SparkSession}
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

  /**
   * Rewrites a store with column families (transformWithState, rockstate to rockstate): reads
   * every old partition's rows at `readVersion` as stored, sends each to the new partition of
   * its grouping key, and writes each new partition as `target`; returns the rows written per
   * new partition.
   */
  def writeStored(session: SparkSession, target: RewriteTarget, readVersion: Long,
      partitionsBefore: Int, partitions: Int): Array[Long] =
    byGroupingKey[StoredRow](session, partitionsBefore, partitions)(
      (old, conf) => StoredRowsReader.read(target, readVersion, old, partitions, conf),
      (partition, rows, conf) => PartitionWriter.writeStored(target, partition, rows, conf))

  /**
   * Rewrites a transformWithState store across providers (from `sourceProvider`, the
   * provider the old state is on, to `target.providerClass`): the same job as `writeStored`,
   * its rows read and written through each provider's state store API.
   */
  def writeRows(session: SparkSession, target: RewriteTarget, sourceProvider: String,
      readVersion: Long, partitionsBefore: Int, partitions: Int): Array[Long] = {
    val source = target.copy(providerClass = sourceProvider)
    byGroupingKey[FamilyRow](session, partitionsBefore, partitions)(
      (old, conf) => FamilyRowsReader.read(source, readVersion, old, partitions, conf),
      (partition, rows, conf) => PartitionWriter.writeRows(target, partition, rows, conf))
  }

  /**
   * The job both run: one task per old partition `read`s it (each row paired with its new
   * partition), a shuffle sends each row there, and one task per new partition `write`s it.
   */
  private def byGroupingKey[R: ClassTag](session: SparkSession, partitionsBefore: Int,
      partitions: Int)(
      read: (Int, Configuration) => Iterator[(Int, R)],
      write: (Int, Iterator[R], Configuration) => Long): Array[Long] = {
    val hadoopConf = new SerializableConfiguration(
      session.asInstanceOf[org.apache.spark.sql.classic.SparkSession].sessionState.newHadoopConf())
    session.sparkContext.parallelize(0 until partitionsBefore, partitionsBefore)
      .mapPartitionsWithIndex((old, _) => read(old, hadoopConf.value))
      .partitionBy(new NewPartitions(partitions))
      .mapPartitionsWithIndex { (partition, rows) =>
        Iterator(write(partition, rows.map(_._2), hadoopConf.value))
      }.collect()
  }

  /** writeStored with py4j-friendly arguments; `families` is a JSON array of layouts. */
  def writeStored(session: SparkSession, stateRoot: String, stagingRoot: String, newFrom: Int,
      operatorId: Long, storeName: String, version: Long, providerClass: String,
      keySchemaJson: String, valueSchemaJson: String, confs: java.util.Map[String, String],
      familiesJson: String, schemaFiles: java.util.List[String], readVersion: Long,
      partitionsBefore: Int, partitions: Int): Array[Long] =
    writeStored(session, RewriteTarget(stateRoot, stagingRoot, newFrom, operatorId, storeName,
      version, providerClass, struct(keySchemaJson), struct(valueSchemaJson), 0,
      confs.asScala.toMap, FamilyLayouts.fromJson(familiesJson), schemaFiles.asScala.toSeq),
      readVersion, partitionsBefore, partitions)

  /** writeRows with py4j-friendly arguments. */
  def writeRows(session: SparkSession, stateRoot: String, stagingRoot: String, newFrom: Int,
      operatorId: Long, storeName: String, version: Long, providerClass: String,
      sourceProvider: String, keySchemaJson: String, valueSchemaJson: String,
      confs: java.util.Map[String, String], familiesJson: String,
      schemaFiles: java.util.List[String], readVersion: Long, partitionsBefore: Int,
      partitions: Int): Array[Long] =
    writeRows(session, RewriteTarget(stateRoot, stagingRoot, newFrom, operatorId, storeName,
      version, providerClass, struct(keySchemaJson), struct(valueSchemaJson), 0,
      confs.asScala.toMap, FamilyLayouts.fromJson(familiesJson), schemaFiles.asScala.toSeq),
      sourceProvider, readVersion, partitionsBefore, partitions)

  private def struct(json: String): StructType = DataType.fromJson(json).asInstanceOf[StructType]

  /** The same, with py4j-friendly arguments (schemas as JSON, confs as a Java map). */
  def write(state: Dataset[_], stateRoot: String, stagingRoot: String, newFrom: Int,
      operatorId: Long, storeName: String, version: Long, providerClass: String,
      keySchemaJson: String, valueSchemaJson: String, numColsPrefixKey: Int,
      confs: java.util.Map[String, String]): Array[Long] =
    write(state, RewriteTarget(stateRoot, stagingRoot, newFrom, operatorId, storeName, version,
      providerClass,
      struct(keySchemaJson), struct(valueSchemaJson), numColsPrefixKey,
      confs.asScala.toMap))
}
