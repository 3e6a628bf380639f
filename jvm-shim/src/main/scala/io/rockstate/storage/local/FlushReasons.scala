package io.rockstate.storage.local

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.LongAdder

import scala.jdk.CollectionConverters._

import org.rocksdb.{AbstractEventListener, FlushJobInfo, RocksDB}
import org.rocksdb.AbstractEventListener.EnabledEventCallback

/**
 * Why one RocksDB instance's flushes ran, as RocksDB reports each one ended: a memtable that
 * filled (`WRITE_BUFFER_FULL`), the executor's write buffer manager making room
 * (`WRITE_BUFFER_MANAGER`), a snapshot's or an idle store's flush (`MANUAL_FLUSH`), and the
 * bytes each reason's SSTs hold. Only this callback is enabled: one JNI call a flush.
 */
final class FlushReasons extends AbstractEventListener(EnabledEventCallback.ON_FLUSH_COMPLETED) {
  private val counts = new ConcurrentHashMap[String, (LongAdder, LongAdder)]()

  override def onFlushCompleted(db: RocksDB, info: FlushJobInfo): Unit = {
    val (n, bytes) = counts.computeIfAbsent(info.getFlushReason.name,
      _ => (new LongAdder, new LongAdder))
    n.increment()
    // The SST's size as written (data, index and filter blocks); none for an empty flush.
    Option(info.getTableProperties).foreach { p =>
      bytes.add(p.getDataSize + p.getIndexSize + p.getFilterSize)
    }
  }

  /** `flush.<REASON>.Count` and `flush.<REASON>.Bytes` for each reason seen so far. */
  def figures: Map[String, String] = counts.asScala.toSeq.flatMap { case (reason, (n, b)) =>
    Seq(s"flush.$reason.Count" -> n.sum.toString, s"flush.$reason.Bytes" -> b.sum.toString)
  }.toMap
}
