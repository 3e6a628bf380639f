package io.rockstate.storage.local

import org.rocksdb.{InfoLogLevel, Logger}

import org.apache.spark.internal.Logging

/**
 * RocksDB's own messages, warnings and errors only, into the executor's log (as Spark's
 * provider does), instead of a LOG file per instance: one open file fewer for every store an
 * executor holds (a thousand stores: a thousand files).
 */
object RocksDBLog extends Logging {
  lazy val logger: Logger = new Logger(InfoLogLevel.WARN_LEVEL) {
    override protected def log(level: InfoLogLevel, message: String): Unit = level match {
      case InfoLogLevel.ERROR_LEVEL | InfoLogLevel.FATAL_LEVEL | InfoLogLevel.HEADER_LEVEL =>
        logError(s"rocksdb: $message")
      case InfoLogLevel.WARN_LEVEL => logWarning(s"rocksdb: $message")
      case _ => logInfo(s"rocksdb: $message")
    }
  }
}
