package io.rockstate.spark.line

import org.apache.spark.sql.internal.SQLConf

import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadata

/**
 * The confs a query restarting from an offset log entry runs with, by Spark's own rule
 * (OffsetSeqMetadata moved to `execution.streaming.checkpointing` in 4.1).
 */
object RecordedConfs {
  /**
   * Sets `sqlConf` as a query restarting from an entry with `confs` has it: the recorded
   * confs, and for a state conf the entry predates, the value Spark assumes for old
   * checkpoints (not the current default: e.g. RocksDB's merge operator version).
   */
  def apply(confs: Map[String, String], sqlConf: SQLConf): Unit = {
    OffsetSeqMetadata.setSessionConf(OffsetSeqMetadata(0L, 0L, confs), sqlConf)
    confs.foreach { case (k, v) => sqlConf.setConfString(k, v) }
  }
}
