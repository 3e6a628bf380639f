package io.rockstate.storage.local

/**
 * Shares a task thread's RocksDB block reads out among the stores it commits. RocksDB counts
 * them per thread (`PerfContext` at `PerfLevel.ENABLE_COUNT`, cheap counters), not per
 * instance, and one task may hold several stores whose reads interleave (a stream-stream join
 * holds four). A commit takes what its thread read since the previous commit of the same task
 * on it, or since the task's first store began: summed over a task's stores the figure is
 * exact; which of its stores a read is charged to is not.
 */
object ThreadBlockReads {
  /** The owner of stores opened outside a task: each store counts from its own start. */
  val NoOwner: Long = -1L

  private final class Ledger {
    var owner: Long = NoOwner
    var mark: BlockReads = BlockReads.Zero
  }

  private val ledgers = ThreadLocal.withInitial[Ledger](() => new Ledger)

  /** A store of `owner` (a task attempt's id) starts its reads on this thread. */
  def begin(db: LocalRocksDB, owner: Long): Unit = {
    db.countThreadReads()
    val ledger = ledgers.get
    if (owner == NoOwner || ledger.owner != owner) {
      ledger.owner = owner
      ledger.mark = db.threadBlockReads
    }
  }

  /** A store of this thread commits: the reads it is charged with. */
  def end(db: LocalRocksDB): BlockReads = {
    val ledger = ledgers.get
    val now = db.threadBlockReads
    val reads = now.since(ledger.mark)
    ledger.mark = now
    reads
  }
}
