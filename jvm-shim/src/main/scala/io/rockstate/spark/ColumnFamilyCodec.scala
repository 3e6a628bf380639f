package io.rockstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{RangeKeyScanStateEncoderSpec, RocksDBKeyStateEncoder, RocksDBValueStateEncoder}

import io.rockstate.spark.line.SparkLine

/**
 * Turns one column family's rows into RocksDB bytes and back. Rows are encoded by Spark's own
 * encoders, UnsafeRow or Avro as the query's `RowEncoding` says (the same byte layout as
 * Spark's RocksDB provider, including the order-preserving range-scan encoding); a store with
 * column families puts a 2-byte family id in front, so every family is one contiguous key
 * range of a single RocksDB instance.
 *
 * In a store with row checksums every value is sealed with the checksum of its key and value
 * (`RowChecks`), and opened, checked as the store's sampler says, on every read. Value methods
 * therefore take the key: as stored (with the family id), or its `body` (without, as the
 * change feed gives it).
 */
final class ColumnFamilyCodec(val name: String, val id: Int, useColumnFamilies: Boolean,
    val spec: ColumnFamilySpec, checks: RowChecks, encoding: RowEncoding) {

  val prefix: Array[Byte] =
    if (useColumnFamilies) ColumnFamilyCodec.prefixOf(id) else Array.emptyByteArray

  /** First key after this family's range, or None when the family is the whole key space. */
  val upperBound: Option[Array[Byte]] =
    if (useColumnFamilies) Some(ColumnFamilyCodec.prefixOf(id + 1)) else None

  private val dataEncoder = encoding.dataEncoder(name, spec)
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

  /** Whether values are sealed with row checksums. */
  def checksummed: Boolean = checks.checksummed

  def encodeValue(key: Array[Byte], value: UnsafeRow): Array[Byte] =
    checks.seal(key, prefix.length, valueEncoder.encodeValue(value))

  /** Several values as one merged RocksDB value, the layout the merge operator produces. */
  def encodeValues(key: Array[Byte], values: Array[UnsafeRow]): Array[Byte] =
    checks.sealAll(key, prefix.length, values.toSeq.map(valueEncoder.encodeValue))

  def decodeValue(key: Array[Byte], stored: Array[Byte]): UnsafeRow =
    if (stored == null) null else valueEncoder.decodeValue(open(key, prefix.length, stored))

  def decodeValues(key: Array[Byte], stored: Array[Byte]): Iterator[UnsafeRow] =
    if (stored == null) Iterator.empty
    else valueEncoder.decodeValues(open(key, prefix.length, stored))

  /** `decodeValue` of a value whose key is given without its family id. */
  def decodeBodyValue(body: Array[Byte], stored: Array[Byte]): UnsafeRow =
    if (stored == null) null else valueEncoder.decodeValue(open(body, 0, stored))

  /** `decodeValues` of a value whose key is given without its family id. */
  def decodeBodyValues(body: Array[Byte], stored: Array[Byte]): Iterator[UnsafeRow] =
    if (stored == null) Iterator.empty else valueEncoder.decodeValues(open(body, 0, stored))

  private def open(key: Array[Byte], keyFrom: Int, stored: Array[Byte]): Array[Byte] =
    checks.open(key, keyFrom, stored, s"column family '$name'")

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
