package io.rockstate.checkpoint

final case class Outcomes(roots: Seq[RootOutcome])

object Outcomes {
  private val mapper = io.rockstate.storage.format.VersionManifest.mapper
  def toJson(o: Outcomes): String = mapper.writeValueAsString(o)
  def fromJson(json: String): Outcomes = mapper.readValue(json, classOf[Outcomes])
}
