package io.rockstate.plugin

import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, SparkPlugin}

/**
 * rockstate's Spark plugin (`spark.plugins=io.rockstate.plugin.RockstatePlugin`). The executor
 * side sets up the RocksDB memory all stores of that executor share, from the session's
 * rockstate settings, before any task runs, and reports it to the driver over Spark's plugin
 * RPC; the driver side keeps what the executors reported.
 */
class RockstatePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new RockstateDriverPlugin
  override def executorPlugin(): ExecutorPlugin = new RockstateExecutorPlugin
}
