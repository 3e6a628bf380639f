package io.rockstate.storage.local

import java.util.concurrent.atomic.AtomicLong

/**
 * Which row reads check their checksum: every `ratio`-th (1: every read, 0: none), Spark's
 * `rowChecksum.readVerificationRatio`. Counts what it was asked and what it checked.
 */
final class RowChecksumSampler(val ratio: Long) {
  require(ratio >= 0, s"rockstate: a row checksum verification ratio is at least 0, got $ratio")
  private val requests = new AtomicLong()
  private val checked = new AtomicLong()

  def next(): Boolean = ratio != 0 && {
    val verify = requests.incrementAndGet() % ratio == 0
    if (verify) checked.incrementAndGet()
    verify
  }

  def requested: Long = requests.get()
  def verified: Long = checked.get()
}
