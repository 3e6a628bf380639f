package io.rockstate.storage.conf

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.internal.Logging

/**
 * Old setting keys still in use: each is logged once per JVM, naming the key that replaced it,
 * however many stores read it.
 */
object DeprecatedKeys extends Logging {
  private val warned = ConcurrentHashMap.newKeySet[String]()

  /** Logs that `old` is deprecated for `now`, the first time only; whether it did. */
  def warnOnce(old: String, now: String): Boolean = {
    val first = warned.add(old)
    if (first) logWarning(s"rockstate: the setting $old is deprecated and still works; its " +
      s"name is now $now (docs/configuration.md)")
    first
  }

  /** The old keys used so far in this JVM (tests). */
  def used: Set[String] = warned.toArray(Array.empty[String]).toSet
}
