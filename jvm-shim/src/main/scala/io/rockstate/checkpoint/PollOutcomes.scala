package io.rockstate.checkpoint

/** An executor asks what became of the checkpoints it acknowledged. */
final case class PollOutcomes(executorId: String, checkpointRoots: Seq[String])
