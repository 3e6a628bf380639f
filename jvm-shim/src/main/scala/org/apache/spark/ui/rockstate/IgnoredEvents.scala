package org.apache.spark.ui.rockstate

import scala.annotation.meta.getter

import org.apache.spark.util.kvstore.KVIndex

/**
 * Events the tab could not take (a field missing), counted: the page says how many and why the
 * first was refused, so a damaged or crafted event log shows up on its own tab, not elsewhere.
 */
final case class IgnoredEvents(
    @(KVIndex @getter) key: String,
    count: Long,
    first: String)

object IgnoredEvents {
  val Key = "ignored"
}
