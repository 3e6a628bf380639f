package io.rockstate.plugin

import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.format.CheckpointJson

/** What the driver plugin answers Python with is JSON, whatever the text in it. */
class DriverRepliesSuite extends AnyFunSuite {

  test("replies escape quotes and backslashes in host names and run ids") {
    val host = "rack \"7\" \\ node"
    RockstateDriverPlugin.record(ExecutorReady("exec \"1\"", host, 40, 32, 64, 8))
    val ready = CheckpointJson.mapper.readTree(RockstateDriverPlugin.readyExecutorsJson)
    val mine = (0 until ready.size).map(ready.get).find(_.path("executorId").asText == "exec \"1\"")
    assert(mine.map(_.path("host").asText).contains(host))
    assert(mine.map(_.path("blockCacheBytes").asLong).contains(32L))

    val hadoopConf = new org.apache.hadoop.conf.Configuration()
    val dir = java.nio.file.Files.createTempDirectory("rockstate \"quoted\"").toFile
    try {
      val c = new io.rockstate.checkpoint.CheckpointCoordinator(hadoopConf, () => 0L,
        _ => Right(Set.empty), (_, _) => ())
      RockstateDriverPlugin.coordinator = Some(c)
      assert(CheckpointJson.mapper.readTree(RockstateDriverPlugin.completedSinceJson(-1)).size == 0)
      assert(RockstateDriverPlugin.checkpointsJson("run \"x\"") == "null")
    } finally {
      RockstateDriverPlugin.coordinator = None
      org.apache.commons.io.FileUtils.deleteDirectory(dir)
    }
  }
}
