package org.apache.spark.ui.rockstate

import org.apache.spark.SparkConf

/**
 * What the rockstate tab keeps and shows, whatever an event log holds. The History Server
 * replays logs written by other people's applications, so every count the listener keeps is
 * capped by a setting (the oldest dropped first) and every page renders a bounded number of
 * rows. The settings are Spark conf keys of the application, or of the History Server.
 */
final case class UiLimits(
    retainedRuns: Int,
    retainedCheckpoints: Int, // ended ones, per run
    retainedPendingCheckpoints: Int, // per run
    retainedAcknowledgements: Int, // over every checkpoint of the application
    retainedExecutors: Int)

object UiLimits {
  val RetainedRuns = "spark.rockstate.ui.retainedRuns"
  val RetainedCheckpoints = "spark.rockstate.ui.retainedCheckpoints"
  val RetainedPendingCheckpoints = "spark.rockstate.ui.retainedPendingCheckpoints"
  val RetainedAcknowledgements = "spark.rockstate.ui.retainedAcknowledgements"
  val RetainedExecutors = "spark.rockstate.ui.retainedExecutors"

  /** Rows of one table a page renders; the rest are counted, and the JSON API pages them. */
  val ShownRows = 500
  /** Acknowledgements in one answer of the JSON API (`?offset=` pages through the rest). */
  val ApiPage = 1000
  /** Characters kept of a name, id or path; of a reason or an exception's text. */
  val MaxName = 1024
  val MaxText = 4096

  def apply(conf: SparkConf): UiLimits = UiLimits(
    math.max(1, conf.getInt(RetainedRuns, 50)),
    math.max(1, conf.getInt(RetainedCheckpoints, 100)),
    math.max(1, conf.getInt(RetainedPendingCheckpoints, 20)),
    math.max(0, conf.getInt(RetainedAcknowledgements, 20000)),
    math.max(1, conf.getInt(RetainedExecutors, 1000)))

  /** `s` cut to `max` characters, saying how long it was; null stays null. */
  def cut(s: String, max: Int): String =
    if (s == null || s.length <= max) s
    else s.substring(0, max) + s"… (cut: ${s.length} characters)"
}
