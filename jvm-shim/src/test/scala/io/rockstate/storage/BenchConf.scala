package io.rockstate.storage

import io.rockstate.storage.conf.RockstateConf

/** rockstate settings given to a benchmark as `--conf name=value,...` (names without the prefix). */
object BenchConf {
  def parse(arg: Option[String]): Map[String, String] =
    arg.toSeq.flatMap(_.split(",")).map { kv =>
      val Array(k, v) = kv.split("=", 2)
      (RockstateConf.Prefix + k) -> v
    }.toMap
}
