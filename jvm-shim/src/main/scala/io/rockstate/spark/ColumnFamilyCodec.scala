package io.rockstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{RangeKeyScanStateEncoderSpec, RocksDBKeyStateEncoder, RocksDBValueStateEncoder, UnsafeRowDataEncoder}

import io.rockstate.spark.line.SparkLine
import io.rockstate.storage.LocalRocksDB

/**
 * Turns one column family's rows into RocksDB bytes and back. Rows are encoded by Spark's own
 * encoders (the same byte layout as Spark's RocksDB provider, including the order-preserving
 * range-scan encoding); a store with column families puts a 2-byte family id in front, so
 * every family is one contiguous key range of a single RocksDB instance.
 */
final class ColumnFamilyCodec(val name: String, val id: Int, useColumnFamilies: Boolean,
    val spec: ColumnFamilySpec) {

  val prefix: Array[Byte] =
    if (useColumnFamilies) ColumnFamilyCodec.prefixOf(id) else Array.emptyByteArray

  /** First key after this family's range, or None when the family is the whole key space. */
  val upperBound: Option[Array[Byte]] =
    if (useColumnFamilies) Some(ColumnFamilyCodec.prefixOf(id + 1)) else None

  private val dataEncoder = new UnsafeRowDataEncoder(spec.keySpec, spec.valueSchema)
  private val keyEncoder: RocksDBKeyStateEncoder = spec.keySpec.toEncoder(dataEncoder, useColumnFamilies)
  private val valueEncoder: RocksDBValueStateEncoder =
    SparkLine.valueEncoder(dataEncoder, spec.valueSchema, spec.multipleValues)

  def multipleValues: Boolean = valueEncoder.supportsMultipleValuesPerKey
  def supportsPrefixScan: Boolean = keyEncoder.supportPrefixKeyScan
  def supportsRangeScan: Boolean = spec.keySpec.isInstanceOf[RangeKeyScanStateEncoderSpec]

  def encodeKey(key: UnsafeRow): Array[Byte] = withPrefix(keyEncoder.encodeKey(key))

  def encodePrefixKey(prefixKey: UnsafeRow): Array[Byte] =
    withPrefix(keyEncoder.encodePrefixKey(prefixKey))

  def decodeKey(bytes: Array[Byte]): UnsafeRow =
    decodeStoredKey(if (prefix.isEmpty) bytes else java.util.Arrays.copyOfRange(
      bytes, prefix.length, bytes.length))

  /** A key without its family id (as `SparkStateStore.storedRows` returns it). */
  def decodeStoredKey(body: Array[Byte]): UnsafeRow = keyEncoder.decodeKey(body)

  def encodeValue(value: UnsafeRow): Array[Byte] = valueEncoder.encodeValue(value)

  /** Several values as one merged RocksDB value, the layout the merge operator produces. */
  def encodeValues(values: Array[UnsafeRow]): Array[Byte] = {
    val parts = values.map(valueEncoder.encodeValue)
    val out = new java.io.ByteArrayOutputStream(parts.map(_.length + 1).sum)
    parts.zipWithIndex.foreach { case (p, i) =>
      if (i > 0) out.write(LocalRocksDB.Delimiter.toInt)
      out.write(p)
    }
    out.toByteArray
  }

  def decodeValue(bytes: Array[Byte]): UnsafeRow = valueEncoder.decodeValue(bytes)

  def decodeValues(bytes: Array[Byte]): Iterator[UnsafeRow] =
    if (bytes == null) Iterator.empty else valueEncoder.decodeValues(bytes)

  private def withPrefix(body: Array[Byte]): Array[Byte] =
    if (prefix.isEmpty) body
    else {
      val out = new Array[Byte](prefix.length + body.length)
      System.arraycopy(prefix, 0, out, 0, prefix.length)
      System.arraycopy(body, 0, out, prefix.length, body.length)
      out
    }
}

object ColumnFamilyCodec {
  /** The bytes before every key of family `id`: the id, 2 bytes big-endian. */
  def prefixOf(id: Int): Array[Byte] = Array(((id >> 8) & 0xff).toByte, (id & 0xff).toByte)
}
