package io.rockstate.checkpoint

import com.fasterxml.jackson.databind.annotation.JsonDeserialize

/**
 * What the coordinator decided for one checkpoint location: the newest completed checkpoint
 * (every older pending one is subsumed), the retained ones, and recently aborted versions.
 */
final case class RootOutcome(
    checkpointRoot: String,
    latestCompleted: Long,
    // Erased element types: without these Jackson reads small numbers as Integers.
    @JsonDeserialize(contentAs = classOf[java.lang.Long]) retained: Seq[Long],
    @JsonDeserialize(contentAs = classOf[java.lang.Long]) aborted: Seq[Long])
