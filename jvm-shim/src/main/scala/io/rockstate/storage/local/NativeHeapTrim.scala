package io.rockstate.storage.local

import java.lang.management.ManagementFactory
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong}
import javax.management.ObjectName

import scala.util.Try

import org.apache.spark.internal.Logging

/**
 * Hands the memory closed RocksDB instances freed back to the OS. glibc keeps what a close
 * frees in its arenas: after a thousand closes and reopens a batch an executor holds 62-74 MB
 * past the bound that no instance uses (docs/performance.md, "Native memory at 1000 stores").
 * The JDK's diagnostic command `System.trim_native_heap` (glibc's `malloc_trim`; JDK 17.0.9+
 * and 21+) returns it. A trim walks every arena under its lock, so it runs on a thread of its
 * own, only after closes, and at most once every `intervalMs`; where the command is missing or
 * the allocator cannot trim (jemalloc, musl), the first attempt turns it off.
 */
final class NativeHeapTrim(trim: () => Option[String], intervalMs: Long,
    schedule: (Runnable, Long) => Unit, nanoTime: () => Long) extends Logging {
  private val pending = new AtomicBoolean(false)
  private val available = new AtomicBoolean(true)
  @volatile private var lastTrimNanos = nanoTime() - intervalMs * 1000000
  private val done = new AtomicLong()

  /** An instance closed: a trim runs once `intervalMs` passed since the last one. */
  def afterClose(): Unit =
    if (available.get && pending.compareAndSet(false, true)) {
      val sinceLast = (nanoTime() - lastTrimNanos) / 1000000
      schedule(() => run(), math.max(0L, intervalMs - sinceLast))
    }

  /** Trims done since the executor started. */
  def trims: Long = done.get

  private def run(): Unit = {
    pending.set(false) // a close from now on asks for the next trim
    lastTrimNanos = nanoTime()
    trim() match {
      case Some(out) if !out.contains("Not available") =>
        done.incrementAndGet()
        logDebug(s"rockstate: native heap trimmed: ${out.trim}")
      case other =>
        available.set(false)
        logInfo("rockstate: the C allocator's free memory cannot be trimmed in this JVM " +
          s"(${other.fold("no System.trim_native_heap")(_.trim)}); trimNativeHeap is off")
    }
  }
}

object NativeHeapTrim {
  /** At most one trim a second: the JDK's own periodic trimmer's tested interval. */
  val IntervalMs: Long = 1000

  /** The executor's trimmer, through the JDK's DiagnosticCommand MBean, on its own thread. */
  lazy val executor: NativeHeapTrim = {
    val timer: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor {
      (r: Runnable) =>
        val t = new Thread(r, "rockstate-native-heap-trim")
        t.setDaemon(true)
        t
    }
    new NativeHeapTrim(() => diagnosticTrim(), IntervalMs,
      (r, delayMs) => timer.schedule(r, delayMs, TimeUnit.MILLISECONDS), () => System.nanoTime())
  }

  /** `System.trim_native_heap`'s output, None where this JVM lacks the command. */
  def diagnosticTrim(): Option[String] = Try(ManagementFactory.getPlatformMBeanServer.invoke(
    new ObjectName("com.sun.management:type=DiagnosticCommand"), "systemTrimNativeHeap",
    Array[AnyRef](Array.empty[String]), Array("[Ljava.lang.String;")).toString).toOption
}
