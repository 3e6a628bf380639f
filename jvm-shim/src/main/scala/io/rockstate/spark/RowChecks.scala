package io.rockstate.spark

import io.rockstate.storage.format.{RowChecksum, RowChecksumMismatchException}
import io.rockstate.storage.local.{LocalRocksDB, RowChecksumSampler}

/**
 * How one store seals and opens its values: with row checksums (`RowChecksum`, checked as
 * `sampler` says) or, in a store created without them, as they are. A failed check is Spark's
 * STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED where the line has it. Keys are given from
 * `keyFrom` on: the checksum covers a key without its column family id.
 */
final class RowChecks(sampler: Option[RowChecksumSampler], storeId: String) {
  import RowChecks.Delimiter

  def checksummed: Boolean = sampler.isDefined

  def seal(key: Array[Byte], keyFrom: Int, value: Array[Byte]): Array[Byte] =
    if (sampler.isEmpty) value else RowChecksum.seal(key, keyFrom, value)

  /** Values of one key as one stored value, joined as the merge operator joins them. */
  def sealAll(key: Array[Byte], keyFrom: Int, values: Seq[Array[Byte]]): Array[Byte] =
    if (sampler.isDefined) RowChecksum.sealAll(key, keyFrom, values, Delimiter)
    else RowChecksum.joined(values, Delimiter)

  /** A stored value as Spark's encoders wrote it; `where` names its family for errors. */
  def open(key: Array[Byte], keyFrom: Int, stored: Array[Byte], where: => String)
      : Array[Byte] = sampler match {
    case None => stored
    case Some(s) =>
      try RowChecksum.open(key, keyFrom, stored, Delimiter, () => s.next(), s"$where of $storeId")
      catch {
        case e: RowChecksumMismatchException => throw SparkErrors.rowChecksumFailed(storeId, e)
      }
  }
}

object RowChecks {
  private val Delimiter: Byte = LocalRocksDB.Delimiter.toByte
}
