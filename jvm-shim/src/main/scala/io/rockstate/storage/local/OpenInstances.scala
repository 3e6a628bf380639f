package io.rockstate.storage.local

import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

/**
 * The RocksDB instances this executor's stores keep open between their tasks, in the order
 * their tasks released them, and the cap `maxOpenStores` puts on them (by default one per MB
 * of the bound, `ExecutorMemory.openInstanceCap`). An open instance holds about 160 KB of
 * native memory of its own outside the shared cache (docs/performance.md), so a thousand of
 * them would hold twice the default 128 MB bound; past the cap, the least recently released
 * instances that no task holds are closed (`IdleInstance.closeIfIdle`), and each one's next
 * load reopens it from its local files. The closing runs on `run` (one background thread
 * for the executor), never on the releasing task: a close waits for RocksDB's background work
 * and takes another store's lock, and a task holding its own store's lock must not take
 * another's.
 *
 * Lock order: a store's lock, then this registry's; a closing pass holds no lock of this
 * registry while it asks a store to close.
 */
final class OpenInstances(run: Runnable => Unit) extends Logging {
  // Each open instance with the number of its last release, the one released longest ago
  // first (a release moves an instance to the end).
  private val instances = new java.util.LinkedHashMap[IdleInstance, java.lang.Long]()
  private val releases = new AtomicLong()
  private val scheduled = new AtomicBoolean(false)
  @volatile private var cap = 0
  private val closedIdle = new AtomicLong()

  /**
   * `instance` was just released by its task attempt with its RocksDB open: it becomes the most
   * recently released. With a cap above 0 (the releasing store's), a closing pass is scheduled
   * when more than that many instances are open.
   */
  def released(instance: IdleInstance, maxOpenStores: Int): Unit = {
    val over = synchronized {
      instances.remove(instance)
      instances.put(instance, releases.incrementAndGet())
      maxOpenStores > 0 && instances.size > maxOpenStores
    }
    if (over) {
      cap = maxOpenStores
      if (scheduled.compareAndSet(false, true)) run(() => closePass())
    }
  }

  /** `instance` closed its RocksDB (or its store closed). */
  def forget(instance: IdleInstance): Unit = synchronized(instances.remove(instance))

  /** Instances open as their tasks last released them (held ones included). */
  def open: Int = synchronized(instances.size)

  /** Instances closed for the cap since the executor started. */
  def closedForCap: Long = closedIdle.get

  /**
   * Closes idle instances, least recently released first, until no more than the cap are
   * open or none of the rest is idle (a held one closes at a later pass, after its release).
   * Each round takes the oldest from the order as it is then: a store released while the pass
   * runs moves behind the others and is not closed in their place.
   */
  private def closePass(): Unit = {
    scheduled.set(false) // a release from now on schedules another pass
    val target = cap
    val stayOpen = scala.collection.mutable.Set.empty[IdleInstance] // held, or released since
    def oldestToTry(): Option[(IdleInstance, Long)] = synchronized {
      if (instances.size <= target) None
      else instances.entrySet.asScala.find(e => !stayOpen.contains(e.getKey))
        .map(e => (e.getKey, e.getValue.longValue))
    }
    // A chosen instance's task may release it again while the pass waits for its lock: it is
    // then the most recently released, and stays open.
    def unreleased(instance: IdleInstance, release: Long)(): Boolean =
      synchronized(Option(instances.get(instance)).exists(_.longValue == release))
    Iterator.continually(oldestToTry()).takeWhile(_.isDefined).flatten.foreach {
      case (instance, release) =>
        val closed = try instance.closeIfIdle(unreleased(instance, release)) catch {
          case NonFatal(e) =>
            logWarning(s"rockstate: closing the idle $instance for maxOpenStores failed; its " +
              "next load opens it again", e)
            forget(instance)
            false
        }
        if (closed) closedIdle.incrementAndGet() else stayOpen += instance
    }
  }
}

object OpenInstances {
  /** The executor's registry; its closing passes run on one daemon thread. */
  lazy val executor: OpenInstances = {
    val pool = DaemonThreadPool.fixed("rockstate-idle-close", 1)
    new OpenInstances(r => pool.execute(r))
  }
}
