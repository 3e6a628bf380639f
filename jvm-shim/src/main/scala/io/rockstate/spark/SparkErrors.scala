package io.rockstate.spark

import org.apache.spark.{SparkException, SparkThrowable}
import org.apache.spark.sql.execution.streaming.state.StateStoreId

import io.rockstate.spark.line.SparkLine
import io.rockstate.storage.format.{MissingVersionException, RowChecksumMismatchException}

/**
 * Spark's error contract for state store providers, as its own RocksDB provider keeps it on
 * every 4.x line (docs/configuration.md, "Errors"): tools and users match on these error
 * conditions. A version that does not exist is CANNOT_READ_STREAMING_STATE_FILE ("does not
 * exist"), a negative one UNEXPECTED_VERSION, any other failed load UNCATEGORIZED with
 * rockstate's own error (the file and version named) as its cause, a failed commit
 * CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT, a row failing its checksum
 * STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED (4.2+). Every other condition used here exists
 * in 4.0's error-conditions.json and later ones, with the same parameters.
 */
object SparkErrors {
  private val CannotLoad = "CANNOT_LOAD_STATE_STORE"

  /** getStore / getReadStore of a negative version. */
  def unexpectedVersion(version: Long): SparkException =
    new SparkException(s"$CannotLoad.UNEXPECTED_VERSION", Map("version" -> version.toString),
      null)

  /** What a failed load throws: `e` as Spark's providers report the same failure. */
  def cannotLoad(e: Throwable, id: StateStoreId): Throwable = e match {
    case s: SparkThrowable if Option(s.getCondition).exists(_.startsWith(CannotLoad)) => e
    case m: MissingVersionException =>
      new SparkException(s"$CannotLoad.CANNOT_READ_STREAMING_STATE_FILE",
        Map("fileToRead" -> m.expectedPath), m)
    case _: OutOfMemoryError =>
      new SparkException(s"$CannotLoad.ROCKSDB_STORE_PROVIDER_OUT_OF_MEMORY",
        Map("stateStoreId" -> id.toString), e)
    case _ => new SparkException(s"$CannotLoad.UNCATEGORIZED", Map.empty[String, String], e)
  }

  /**
   * A row that fails its checksum: Spark's own condition where the line has it (4.2+), else
   * rockstate's error as it is.
   */
  def rowChecksumFailed(storeId: String, e: RowChecksumMismatchException): Throwable =
    SparkLine.rowChecksumFailed(storeId, e.expected, e.computed, e)

  /** What a failed commit of `store` (its description) throws. */
  def cannotCommit(store: String, e: Throwable): SparkException =
    new SparkException("CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT", Map("providerClass" -> store), e)
}
