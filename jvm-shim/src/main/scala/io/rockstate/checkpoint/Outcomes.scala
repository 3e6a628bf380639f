package io.rockstate.checkpoint

import io.rockstate.storage.format.CheckpointJson

final case class Outcomes(roots: Seq[RootOutcome])

object Outcomes {
  private val mapper = CheckpointJson.mapper
  def toJson(o: Outcomes): String = mapper.writeValueAsString(o)
  def fromJson(json: String): Outcomes = mapper.readValue(json, classOf[Outcomes])
}
