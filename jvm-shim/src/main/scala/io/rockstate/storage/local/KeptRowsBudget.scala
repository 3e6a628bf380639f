package io.rockstate.storage.local

import java.util.concurrent.atomic.AtomicLong

/**
 * The heap an executor lets its stores keep of the rows their last batch read and wrote
 * (`keptRowsMB`), so that each store's next batch on the same instance starts with them
 * (`BatchRows.endBatch`). A store keeps its table only if it fits what the others left;
 * otherwise the table ends with its batch, as every table does with a budget of 0.
 */
final class KeptRowsBudget(val limitBytes: Long) {
  private val used = new AtomicLong

  /** Takes `bytes` more of the budget if they fit; whether they did. */
  def reserve(bytes: Long): Boolean = {
    var done = bytes <= 0
    var fits = true
    while (!done && fits) {
      val now = used.get
      fits = now + bytes <= limitBytes
      done = fits && used.compareAndSet(now, now + bytes)
    }
    fits
  }

  /** Gives back `bytes` a `reserve` took. */
  def release(bytes: Long): Unit = if (bytes > 0) used.addAndGet(-bytes)

  /** The bytes the executor's stores keep now. */
  def usedBytes: Long = used.get
}
