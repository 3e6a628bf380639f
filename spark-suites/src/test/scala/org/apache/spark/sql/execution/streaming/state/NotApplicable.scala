package org.apache.spark.sql.execution.streaming.state

/**
 * The tests of Spark's generic suites that cannot apply to a provider other than Spark's own,
 * with why. Only tests that assert something of Spark's providers themselves belong here (their
 * file names, their private members, their classes); a test rockstate fails for a reason of its
 * own is a failure, never listed here.
 */
object NotApplicable {

  /** Test name prefix -> why, per suite (a prefix covers every codec/column family variant). */
  private val tests: Map[String, Seq[(String, String)]] = Map(
    "RockstateStateStoreSuite" -> Seq(
      "SPARK-18342: commit fails when rename fails" ->
        ("asserts the message names Spark's HDFSStateStore or RocksDBStateStore class; " +
          "'rockstate: SPARK-18342's checks' asserts the rest of it"),
      "SPARK-38320 - state store iterator behavior differences" ->
        ("expects an iterator made midway to see the final state of any class not named " +
          "RocksDBStateStore (HDFS's live map); rockstate's iterators see what Spark's " +
          "RocksDB store's do, checked by 'rockstate: SPARK-38320's iterators'")))

  def reason(suite: Class[_], testName: String): Option[String] =
    tests.getOrElse(suite.getSimpleName, Nil).collectFirst {
      case (prefix, why) if testName.startsWith(prefix) => why
    }
}
